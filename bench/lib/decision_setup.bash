# bench/lib/decision_setup.bash -- sourced by bench/pgbench.sh and bench/instructions.sh:
# the database in which one decision (read a prompt, route(), insert its reward) is measured
# against the same SQL work without the extension.
#
# decision_setup DB APP "POLICIES": creates database DB with the extension, prompts (10,000
# synthetic 384-d embeddings), the baseline's tables decisions_b and rewards_b, one selector
# per policy name (d = 384, arms m1..m5, 2,000 rewards per arm from synthetic_clusters;
# rff_ucb with 128 features (MS_RFF_FEATURES), pak_ucb with cap 10,000, pak_ucb_cap = pak_ucb with all
# defaults, POLICY_tags = POLICY whose decisions pass two tags, POLICY_budget = POLICY with a
# budget and its cost model, POLICY_budgetmean = the same priced at each arm's mean cost, both
# with rewards that cost 1 + m·|x₁| on arm m, pak_ucb's with cap 10,000), and the application role APP
# with route and reward on every selector, SELECT on prompts and the baseline's rights on its
# tables.  Needs PGHOST etc. of a superuser.
decision_setup() {
    local DB=$1 APP=$2 POLICIES=$3 pol settings cap a
    setup_q() { psql -X -q -A -t -v ON_ERROR_STOP=1 -d "$DB" "$@"; }
    createdb "$DB"
    setup_q >/dev/null <<'SQL'
CREATE EXTENSION model_select;
CREATE TABLE prompts (id int PRIMARY KEY, emb float8[] NOT NULL);
INSERT INTO prompts SELECT round, context FROM model_select.synthetic_clusters(10000, 384, 5, NULL, 7);
-- baseline: the same rows without the extension
CREATE TABLE decisions_b (decision_id bigserial PRIMARY KEY, prompt_id int NOT NULL,
                          context float8[] NOT NULL, arm text NOT NULL,
                          created_at timestamptz NOT NULL DEFAULT now());
CREATE TABLE rewards_b (reward_id bigserial PRIMARY KEY,
                        decision_id bigint NOT NULL UNIQUE REFERENCES decisions_b,
                        reward float8 NOT NULL, created_at timestamptz NOT NULL DEFAULT now());
CREATE TABLE preload AS
SELECT round, context, reward FROM model_select.synthetic_clusters(2000, 384, 5, NULL, 8);
-- Compactions a default pak_ucb arm (cap 2,000) has made by its n-th reward:
-- at rewards 2,001, 3,002, 4,003, ... (docs/policies.md).
CREATE FUNCTION compactions(sel text) RETURNS bigint LANGUAGE sql AS $f$
  SELECT coalesce(sum(CASE WHEN n > 2000 THEN (n - 2001) / 1001 + 1 ELSE 0 END), 0)::bigint
    FROM (SELECT count(*) AS n FROM model_select.rewards WHERE selector = sel GROUP BY arm) a
$f$;
SQL
    for pol in $POLICIES; do
        case $pol in
            rff_ucb) settings="{\"features\": ${MS_RFF_FEATURES:-128}}" ;;
            *_budget) settings='{"budget": 1}' ;;
            *_budgetmean) settings='{"budget": 1, "cost_model": false}' ;;
            *) settings='{}' ;;
        esac
        # at the default cap of 2,000 a pak_ucb arm compacts in the measured sessions, a
        # rebuild of 1,000 rows that takes tens of minutes under callgrind
        case $pol in
            pak_ucb | pak_ucb_budget | pak_ucb_budgetmean) cap='{"cap": 10000}' ;;
            *) cap='{}' ;;
        esac
        # pak_ucb with cap 10,000 may grow past the default model_select.max_model_size
        setup_q -c "SET model_select.max_model_size = '1GB'" \
                -c "SELECT model_select.create_selector('$pol', 384, ARRAY['m1','m2','m3','m4','m5'], '$(policy_of "$pol")', NULL, '$settings'::jsonb || '$cap', 1)" >/dev/null
        for a in 1 2 3 4 5; do
            setup_q -c "INSERT INTO model_select.rewards(selector, arm, context, reward, cost)
                        SELECT '$pol', 'm$a', context, reward[$a],
                               CASE WHEN '$pol' LIKE '%\\_budget%' THEN 1 + $a * abs(context[1]) END
                          FROM preload ORDER BY round"
        done
    done
    setup_q >/dev/null <<SQL
DROP ROLE IF EXISTS $APP;
CREATE ROLE $APP LOGIN;
SELECT count(*) FROM model_select.setup_role('$APP', 'application');
SELECT model_select.grant_selector(name, '$APP', p) FROM model_select.selectors, unnest(ARRAY['route', 'reward']) p;
GRANT SELECT ON prompts TO $APP;
GRANT SELECT, INSERT ON decisions_b, rewards_b TO $APP;
GRANT USAGE ON SEQUENCE decisions_b_decision_id_seq, rewards_b_reward_id_seq TO $APP;
SQL
}

# policy_of NAME: the policy of the selector NAME (pak_ucb_cap: pak_ucb, lin_ucb_tags: lin_ucb)
policy_of() {
    local pol=${1%_cap}
    pol=${pol%_tags}
    pol=${pol%_budgetmean}
    echo "${pol%_budget}"
}

# reward_values NAME DECISION REWARD: the columns and values of a decision's reward INSERT,
# with a cost for a *_budget* selector
reward_values() {
    case $1 in
        *_budget*) echo "(decision_id, reward, cost) VALUES ($2, $3, 1.5)" ;;
        *) echo "(decision_id, reward) VALUES ($2, $3)" ;;
    esac
}

# route_args NAME: route()'s arguments in a decision of selector NAME on prompt p, with two
# tags (a product surface and one of 8 tasks) for a *_tags selector
route_args() {
    case $1 in
        *_tags) echo "'$1', p.emb, ARRAY['surface/chat', 'task/' || p.id % 8]" ;;
        *) echo "'$1', p.emb" ;;
    esac
}
