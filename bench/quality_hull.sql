-- bench/quality_hull.sql (run by bench/quality.sh; psql variables: data = the data
-- directory, seeds = '{1,2,3}', out = the markdown table, plot = a directory for
-- the plot's data files): RouteLLM's quality-vs-cost hull of the online router
-- against the single-model hull, with quality_cost().
--
-- Costs (routellm has none): a constant per call, Mixtral 0.05 and GPT-4 1.0
-- (GPT-4 costs about 20x more per token; equal prompt lengths assumed).  One
-- full shuffled pass (15,361 prompts) per point; the router's points are
-- cost weights λ and budgets (the pacer), averaged over the seeds; its hull and
-- AIQ are those of the averaged points, next to each seed's own AIQ.
\set ON_ERROR_STOP 1
SET bench.seeds = :'seeds';
CREATE TABLE rl(id int, category text, embedding real[], rewards real[], costs real[]);
\set csv :data '/routellm.csv'
-- \copy takes no variables: build the command, then run it
\set load_csv '\\copy rl FROM ' :'csv' ' CSV HEADER'
:load_csv
\echo '   routellm hull:' `date +%T` 'data loaded; 2 policies x 3 seeds x 10 replay() passes of 15,361 rounds follow'

CREATE TABLE hull_router(ord int, label text, policy text, settings jsonb);
INSERT INTO hull_router VALUES
    (1, 'lin_ucb, default settings', 'lin_ucb', '{}'),
    (2, 'lin_ucb, tuned: alpha 10, intercept 10, eta 1', 'lin_ucb', '{"alpha": 10, "intercept": 10, "eta": 1, "noise_prior": 0, "codebook": 0}');

CREATE TABLE hull_points(ord int, seed int, kind text, knob float8, cost float8, quality float8, on_hull boolean,
                         aiq float8);
DO $$
DECLARE
    r record;
    t0 timestamptz;
BEGIN
    FOR r IN SELECT h.*, s FROM hull_router h, unnest(current_setting('bench.seeds')::int[]) s ORDER BY s, h.ord LOOP
        t0 := clock_timestamp();
        INSERT INTO hull_points
        SELECT r.ord, r.s, q.* FROM model_select.quality_cost(
            'SELECT embedding, rewards, ARRAY[0.05, 1.0]::float8[] FROM rl ORDER BY id', r.policy, NULL, r.settings,
            cost_weights => '{0, 0.1, 0.2, 0.3, 0.5}', budgets => '{0.1, 0.2, 0.4, 0.6, 0.8}', seed => r.s) q;
        RAISE NOTICE '% seed %: router AIQ % (% s)', r.label, r.s,
            (SELECT round(aiq::numeric, 4) FROM hull_points WHERE ord = r.ord AND seed = r.s AND kind <> 'arm' LIMIT 1),
            round(extract(epoch FROM clock_timestamp() - t0)::numeric, 1);
    END LOOP;
END $$;

-- the points averaged over seeds, and the hull of the averages
CREATE TABLE hull_mean AS
SELECT ord, kind, knob, avg(cost) AS cost, avg(quality) AS quality FROM hull_points GROUP BY 1, 2, 3;
CREATE TABLE hull_arms AS SELECT DISTINCT knob, cost, quality FROM hull_points WHERE kind = 'arm';
CREATE TABLE hull_vertices AS
SELECT h.ord, v.* FROM hull_router h,
       LATERAL model_select.quality_hull((SELECT array_agg(cost) FROM hull_mean m WHERE m.ord = h.ord AND kind <> 'arm'),
                                         (SELECT array_agg(quality) FROM hull_mean m WHERE m.ord = h.ord AND kind <> 'arm'),
                                         (SELECT max(cost) FROM hull_arms)) v
UNION ALL
SELECT 0, v.* FROM model_select.quality_hull((SELECT array_agg(cost) FROM hull_arms),
                                             (SELECT array_agg(quality) FROM hull_arms),
                                             (SELECT max(cost) FROM hull_arms)) v;

\pset format unaligned
\pset tuples_only on
\o :out
SELECT 'RouteLLM (15,361 prompts; Mixtral costs 0.05, GPT-4 1.0 per call): mean cost and mean accuracy per prompt of one shuffled online pass, mean over seeds '
       || current_setting('bench.seeds') || '. AIQ: area under the non-decreasing concave hull of the points (and the origin) up to GPT-4''s cost, divided by it (RouterBench).';
SELECT '';
SELECT '| router | knob | mean cost | mean accuracy | on the hull |';
SELECT '|---|---:|---:|---:|---|';
SELECT format('| %s | %s %s | %s | %s | %s |', h.label, replace(m.kind, '_', ' '), m.knob, to_char(m.cost, 'FM0.0000'),
              to_char(m.quality, 'FM0.0000'),
              CASE WHEN EXISTS (SELECT FROM hull_vertices v WHERE v.ord = m.ord AND v.cost = m.cost AND v.quality = m.quality)
                   THEN 'yes' ELSE '' END)
  FROM hull_mean m JOIN hull_router h USING (ord) WHERE m.kind <> 'arm' ORDER BY m.ord, m.cost;
SELECT format('| *always %s* | | %s | %s | yes |', CASE knob WHEN 1 THEN 'Mixtral' ELSE 'GPT-4' END,
              to_char(cost, 'FM0.0000'), to_char(quality, 'FM0.0000'))
  FROM hull_arms ORDER BY knob;
SELECT '';
SELECT '| hull | AIQ of the mean points | AIQ per seed |';
SELECT '|---|---:|---|';
SELECT format('| %s | %s | %s |', h.label, to_char((SELECT aiq FROM hull_vertices v WHERE v.ord = h.ord LIMIT 1), 'FM0.0000'),
              (SELECT string_agg(to_char(a, 'FM0.0000'), ', ' ORDER BY seed)
                 FROM (SELECT DISTINCT seed, aiq AS a FROM hull_points p WHERE p.ord = h.ord AND kind <> 'arm') q))
  FROM hull_router h ORDER BY h.ord;
SELECT format('| *single models (and their random mixtures)* | *%s* | |',
              to_char((SELECT aiq FROM hull_vertices WHERE ord = 0 LIMIT 1), 'FM0.0000'));
\o
-- plot data: points per router, hull vertices per router (0: single models)
\set points :plot '/hull_points.dat'
\set vertices :plot '/hull_vertices.dat'
\o :points
SELECT ord, cost, quality, replace(kind, 'cost_weight', 'λ') || '=' || knob FROM hull_mean WHERE kind <> 'arm' ORDER BY ord, cost;
\o :vertices
SELECT ord, cost, quality FROM hull_vertices ORDER BY ord, cost;
\o
