-- bench/quality_split.sql, included by bench/quality_dc.sql and
-- bench/quality_routellm_warm.sql (psql variables: data, seeds, tbl, csvfile):
-- loads the outcome table :data/:csvfile into table :tbl, and ranks its prompts
-- per seed s by md5(id:s) into :tbl_split (seed, id, rk) -- the held-out
-- protocol's split: the first 2,000 by rank are the warm pool, the rest the
-- evaluation stream.  split_src() is the query of a seed's stream or pool.
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
-- split_src(table, columns, tag column, seed, tagged, warm, k): the query of the
-- seed's evaluation stream (warm false) or of its first k pool prompts (warm
-- true; NULL for k 0), with the tag column after the columns when tagged.
CREATE OR REPLACE FUNCTION split_src(tbl text, cols text, tagcol text, s int, tagged boolean, warm boolean, k int)
RETURNS text LANGUAGE sql AS $$
    SELECT CASE WHEN NOT warm OR k > 0 THEN
        format('SELECT %s%s FROM %I d JOIN %I x USING (id) WHERE x.seed = %s AND %s ORDER BY x.rk',
               cols, CASE WHEN tagged THEN ', ' || tagcol ELSE '' END, tbl, tbl || '_split', s,
               CASE WHEN warm THEN format('x.rk <= %s', k) ELSE 'x.rk > 2000' END) END $$;
