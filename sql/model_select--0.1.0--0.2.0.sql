-- model_select 0.1.0 -> 0.2.0 upgrade script (hand-written; run by
-- ALTER EXTENSION model_select UPDATE).  After it, an updated 0.1.0 install
-- has the same catalog as a fresh 0.2.0 install (test/session/upgrade.sh
-- compares the two).  0.2.0 changes no table, column or function body:
-- it adds COMMENT ON for the public objects and corrects PARALLEL labels.

\echo Use "ALTER EXTENSION model_select UPDATE TO '0.2.0'" to load this file. \quit
