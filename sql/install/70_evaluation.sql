-- Offline evaluation: replay() and the seeded synthetic streams.

-- Offline evaluation: the online loop over (context, rewards[, costs]) rows
-- of a query, in memory; no selector or table is touched.
CREATE FUNCTION model_select.replay(
    source text, policy text DEFAULT 'pak_ucb', kernel text DEFAULT NULL,
    settings jsonb DEFAULT '{}', seed bigint DEFAULT 0, cost_weight float8 DEFAULT 0,
    rounds int DEFAULT NULL, passes int DEFAULT 1, checkpoint int DEFAULT NULL,
    shuffle boolean DEFAULT true)
    RETURNS TABLE (round int, cum_reward float8, cum_cost float8, cum_utility float8,
                   regret_best_arm float8, regret_oracle float8, opr float8,
                   opr_window float8, otb float8, picks bigint[])
    AS 'MODULE_PATHNAME', 'model_select_replay' LANGUAGE C VOLATILE PARALLEL UNSAFE;

-- Seeded synthetic stream: prompts in clusters whose best arm differs, with
-- optional changing worlds (see src/eval/synthetic.c).
CREATE FUNCTION model_select.synthetic_clusters(
    rounds int, dim int, arms int, clusters int DEFAULT NULL, seed bigint DEFAULT 0,
    noise float8 DEFAULT 0.1, new_arm_at int DEFAULT NULL, switch_every int DEFAULT NULL,
    new_cluster_every int DEFAULT NULL,
    OUT round int, OUT cluster int, OUT context float8[], OUT expected float8[],
    OUT reward float8[], OUT best_arm int)
    RETURNS SETOF record
    AS 'MODULE_PATHNAME', 'model_select_synthetic_clusters' LANGUAGE C IMMUTABLE PARALLEL SAFE;

-- Seeded synthetic stream of spec/001.md §4.1: per arm a reward function of
-- RKHS norm exactly rkhs_norm (weights on kernels at random inducing points),
-- contexts uniform in [0,1]^dim, Gaussian noise (see src/eval/synthetic_rkhs.c).
CREATE FUNCTION model_select.synthetic_rkhs(
    rounds int, dim int, arms int, seed bigint DEFAULT 0,
    kernel text DEFAULT 'rbf', bandwidth float8 DEFAULT 0.5, nu float8 DEFAULT 2.5,
    rkhs_norm float8 DEFAULT 10, noise float8 DEFAULT 0.1, inducing int DEFAULT 20,
    OUT round int, OUT context float8[], OUT expected float8[], OUT reward float8[],
    OUT best_arm int)
    RETURNS SETOF record
    AS 'MODULE_PATHNAME', 'model_select_synthetic_rkhs' LANGUAGE C IMMUTABLE PARALLEL SAFE;

-- Comments (psql: \df+, \dd).
COMMENT ON FUNCTION model_select.replay(text, text, text, jsonb, bigint, float8, int, int, int, boolean) IS
'Offline evaluation: runs a policy''s online loop over the rows (context, rewards[, costs[, expected]]) of the query source, in memory, touching no table; returns cumulative reward, cost, utility, regret, optimal-pick ratios and picks per arm every checkpoint rounds.';
COMMENT ON FUNCTION model_select.synthetic_clusters(int, int, int, int, bigint, float8, int, int, int) IS
'Seeded synthetic stream: prompts in clusters whose best arm differs, with optional changing worlds (a late arm, rotating experts, new clusters).';
COMMENT ON FUNCTION model_select.synthetic_rkhs(int, int, int, bigint, text, float8, float8, float8, float8, int) IS
'Seeded synthetic stream: per arm a reward function of given RKHS norm, contexts uniform in [0,1]^dim, Gaussian noise.';
