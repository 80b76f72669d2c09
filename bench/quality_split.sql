-- bench/quality_split.sql, included by bench/quality_dc.sql and
-- bench/quality_routellm_warm.sql (psql variables: data, seeds, tbl, csvfile):
-- loads the outcome table :data/:csvfile into table :tbl, and ranks its prompts
-- per seed s by md5(id:s) into :tbl_split (seed, id, rk) -- the held-out
-- protocol's split: the first 2,000 by rank are the warm pool, the rest the
-- evaluation stream.
CREATE TABLE :"tbl"(id int, category text, embedding real[], rewards real[], costs real[]);
\set csv :data '/' :csvfile
-- \copy takes no variables: build the command, then run it
\set load_csv '\\copy ' :"tbl" ' FROM ' :'csv' ' CSV HEADER'
:load_csv
\set split :tbl '_split'
CREATE TABLE :"split" AS
SELECT s AS seed, id, row_number() OVER (PARTITION BY s ORDER BY md5(id || ':' || s)) AS rk
  FROM :"tbl", unnest(:'seeds'::int[]) s;
CREATE INDEX ON :"split" (seed, rk);
ANALYZE :"tbl", :"split";
