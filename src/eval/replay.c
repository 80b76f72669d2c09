/*
 * replay.c — offline evaluation: replay(source, policy, ...) runs the online
 * loop over the rows of a query in memory, with the same policy code and
 * decision rule as a live selector, without touching any table.
 *
 * The source query yields (context, rewards[, costs[, expected]]): the
 * context and, per arm, the reward (and cost) that arm would have earned on
 * it.  Each round the policy picks an arm and learns the utility
 * reward − λ·cost of that arm only.  The metrics of Hu et al. (PAK-UCB) are
 * accumulated: regret against the best single arm in hindsight and against
 * the per-row oracle, optimal-pick ratio (cumulative and since the previous
 * checkpoint) and outscore-the-best.  They judge picks by the utility of the
 * `expected` rewards when the source gives them (synthetic environments know
 * each arm's mean, so noise does not count as regret), else by the realised
 * rewards.  A NULL reward means the arm is not available on that row (it
 * has not arrived yet, or was retired): it is neither picked nor counted.
 *
 * Feedback as it arrives in production: with `feedback` f < 1 only a seeded
 * fraction f of the rounds is rewarded (whether round t is depends on the
 * seed and t alone, not on the policy), and with `delay` k the reward of
 * round t becomes visible k rounds later: it is learned just before the
 * decision of round t + k + 1 (k = 0: before the next round's).  Rewards
 * learned tick the selector clock, as the rewards of a live log do; the
 * metrics judge every round's pick, rewarded or not.  The learner -- each
 * arm's state and model, and the rewards not visible yet -- is
 * replay_learner.c's.
 */
#include "postgres.h"

#include <math.h>

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/float.h"

#include "model/codebook.h"
#include "model/reward_value.h"
#include "pg/spi_util.h"
#include "model/state.h"
#include "pg/progress.h"
#include "eval/eval.h"
#include "eval/replay_learner.h"
#include "model/clock_ops.h"
#include "routing/decide.h"
#include "math/prng.h"
#include "model/registry.h"

PG_FUNCTION_INFO_V1(model_select_replay);

/*
 * Check the loaded values as a live selector with these settings would
 * check its rewards (range, costs finite and not negative, utilities
 * within bounds under cost weight lambda), so that no NaN or infinity
 * reaches the metrics.
 */
typedef struct ValidateCell
{
	const char *label;
	int			row;
	int			arm;
} ValidateCell;

static void
validate_context(void *arg)
{
	const ValidateCell *cell = arg;

	errcontext("%s row %d, arm %d", cell->label, cell->row + 1, cell->arm + 1);
}

static void
replay_validate(const SelectorConfig *settings, const ReplayData *data, double lambda)
{
	SelectorConfig cfg = *settings;
	ValidateCell cell = {data->label, 0, 0};
	ErrorContextCallback errcb = {error_context_stack, validate_context, &cell};

	cfg.cost_weight = lambda;
	error_context_stack = &errcb;
	for (Size i = 0; i < (Size) data->nrows * data->narms; i++)
	{
		cell.row = (int) (i / data->narms);
		cell.arm = (int) (i % data->narms);
		check_cost(data->costs[i]);
		/* an arm not available on the row is never played nor judged */
		if (!data->available[i])
			continue;
		check_reward(&cfg, "reward", data->rewards[i]);
		(void) learned_value(&cfg, data->rewards[i], false, data->costs[i]);
		if (data->expected != NULL)
		{
			check_reward(&cfg, "expected reward", data->expected[i]);
			(void) learned_value(&cfg, data->expected[i], false, data->costs[i]);
		}
	}
	error_context_stack = errcb.previous;
}

/* A round plays an available arm: a row whose rewards are all NULL has none. */
static void
check_playable(const ReplayData *data)
{
	for (int row = 0; row < data->nrows; row++)
	{
		bool		any = false;

		for (int a = 0; a < data->narms && !any; a++)
			any = data->available[(Size) row * data->narms + a];
		if (!any)
			ereport(ERROR,
					(errcode(ERRCODE_DATA_EXCEPTION),
					 errmsg("%s row %d has no available arm: every reward is NULL", data->label, row + 1)));
	}
}

static void
shuffle(int *order, int n, Prng *rng)
{
	for (int i = n - 1; i > 0; i--)
	{
		int			j = (int) (prng_uniform(rng) * (i + 1));
		int			tmp = order[i];

		order[i] = order[j];
		order[j] = tmp;
	}
}

/* An in-memory selector with arms named arm1..armG and no rewards yet. */
static Selector *
replay_selector(FunctionCallInfo fcinfo, const ReplayData *data)
{
	Selector   *sel = palloc0(sizeof(Selector));

	sel->name = "replay";
	sel->cfg.policy = policy_from_name(text_to_cstring(PG_GETARG_TEXT_PP(1)));
	sel->cfg.kernel = kernel_from_name(sel->cfg.policy,
									   PG_ARGISNULL(2) ? NULL : text_to_cstring(PG_GETARG_TEXT_PP(2)));
	settings_resolve(&sel->cfg, PG_ARGISNULL(3) ? NULL : PG_GETARG_JSONB_P(3));
	config_set_dim(&sel->cfg, data->dim);
	/* the source's dimension is unchecked so far: refuse states too large, as create does */
	state_check_limits(&sel->cfg);
	/* a source's rows have no tick column (no time): rounds are the only clock replay() has */
	if (clock_ops(sel->cfg.clock)->tick_column != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("replay() does not support \"clock\": \"time\": its rows have no time"),
				 errhint("Replay with \"clock\": \"selector\", which counts one tick per round.")));
	sel->cfg.seed = (uint64) PG_GETARG_INT64(4);
	if ((Size) data->narms > MaxAllocSize / sizeof(ArmInfo))
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("replay() takes at most %zu arms, not %d",
						MaxAllocSize / sizeof(ArmInfo), data->narms)));
	sel->narms = data->narms;
	sel->arms = palloc0(sizeof(ArmInfo) * data->narms);
	for (int a = 0; a < data->narms; a++)
	{
		sel->arms[a].arm_id = a;
		sel->arms[a].name = psprintf("arm%d", a + 1);
		sel->arms[a].ordinal = a + 1;
		sel->arms[a].active = true;
	}
	return sel;
}

static void replay_error(const char *message) pg_attribute_noreturn();

static void
replay_error(const char *message)
{
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("%s", message)));
}

/* One round on one row: learn what became visible, decide, account, defer the chosen arm's utility. */
static void
replay_round(ReplayLearner *learner, const ReplayData *data, int row, double lambda,
			 int rounds, ReplayTotals *tot)
{
	Selector   *sel = learner->sel;
	const double *x = data->contexts + (Size) row * data->dim;
	const double *r = data->rewards + (Size) row * data->narms;
	const double *c = data->costs + (Size) row * data->narms;
	const double *judge = data->expected ? data->expected + (Size) row * data->narms : r;
	const bool *avail = data->available + (Size) row * data->narms;
	double		best = -get_float8_infinity(),
				u,
				judged;
	int			chosen;
	int			t = tot->round;

	replay_deliver(learner, data, t, tot);
	pending_awaited(&learner->decided, sel);
	pending_window_lambda(&learner->decided, sel);
	for (int a = 0; a < data->narms; a++)
		sel->arms[a].active = avail[a];
	if (clock_ops(sel->cfg.clock)->ages)
		replay_age(learner, data->narms, learner->ticks);
	chosen = decide(sel, x, learner->scores);
	for (int a = 0; a < data->narms; a++)
	{
		double		ua = judge[a] - lambda * c[a];

		if (!avail[a])
			continue;
		tot->arm_utility[a] += ua;
		best = Max(best, ua);
	}
	u = r[chosen] - lambda * c[chosen];
	judged = judge[chosen] - lambda * c[chosen];
	tot->round++;
	tot->reward += r[chosen];
	tot->cost += c[chosen];
	tot->utility += u;
	tot->judged += judged;
	tot->oracle += best;
	tot->optimal += judged >= best;
	tot->window_optimal += judged >= best;
	tot->window_rounds++;
	tot->picks[chosen]++;
	pending_decided(&learner->decided, sel, t, chosen, learner->scores);
	replay_defer(learner, t, rounds, row, chosen, u, c[chosen]);
}

/*
 * With a codebook, fit it on the warm source's contexts (the first
 * codebook_max_rows()), as warm_start() does before it inserts them.
 */
static void
replay_fit_codebook(SelectorConfig *cfg, const ReplayData *warm)
{
	int			n = Min(warm->nrows, codebook_max_rows(cfg));

	if (cfg->codebook > 0 && n >= cfg->codebook)
		cfg->centroids = codebook_fit(cfg, n, warm->contexts);
}

/*
 * Before the first round: every arm learns its outcome on every row of the
 * warm source (full information: an outcome table where every model was
 * scored), row by row in query order, as warm_start() followed by online
 * decisions would.  The rows' costs count in the arms' mean costs, not in
 * the pacer's spend, as warm_start()'s rewards without a decision do.
 */
static void
replay_warm(ReplayLearner *learner, const char *source, const ReplayData *online, double lambda)
{
	ReplayData	warm;
	Selector   *sel = learner->sel;

	source_load(source, "warm source", false, &warm);
	if (warm.narms != online->narms || warm.dim != sel->cfg.embed_dim)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_EXCEPTION),
				 errmsg("warm source has %d arms and contexts of dimension %d, the replay source %d and %d",
						warm.narms, warm.dim, online->narms, sel->cfg.embed_dim)));
	replay_validate(&sel->cfg, &warm, lambda);
	replay_fit_codebook(&sel->cfg, &warm);
	source_add_tags(&warm, &sel->cfg);
	for (int i = 0; i < warm.nrows; i++)
	{
		const double *x = warm.contexts + (Size) i * warm.dim;

		CHECK_FOR_INTERRUPTS();
		for (int a = 0; a < warm.narms; a++)
		{
			Size		cell = (Size) i * warm.narms + a;

			if (!warm.available[cell])
				continue;
			replay_learn(learner, a, x, warm.rewards[cell] - lambda * warm.costs[cell],
						 !warm.row_has_costs[i], warm.costs[cell]);
			if (warm.row_has_costs[i])
			{
				sel->arms[a].cost_sum += warm.costs[cell];
				sel->arms[a].cost_n++;
			}
		}
	}
}

/*
 * delay (argument 11: rounds before a reward is visible, at least 0) and
 * feedback (12: the share of rounds rewarded, in (0, 1]); the rounds
 * rewarded are drawn from a stream of their own, so that they do not
 * depend on the shuffle or the policy.
 */
static void
replay_feedback_args(FunctionCallInfo fcinfo, ReplayLearner *learner)
{
	learner->delay = PG_NARGS() > 11 ? PG_GETARG_INT32(11) : 0;
	learner->feedback = PG_NARGS() > 12 ? PG_GETARG_FLOAT8(12) : 1.0;
	if (learner->delay < 0)
		replay_error("delay must not be negative");
	if (!(learner->feedback > 0 && learner->feedback <= 1))
		replay_error("feedback must be in (0, 1]: the share of rounds rewarded");
	learner->feedback_seed = mix64(learner->sel->cfg.seed ^ UINT64_C(0x66656564626b));
}

Datum
model_select_replay(PG_FUNCTION_ARGS)
{
	ReplayData	data;
	ReplayLearner learner;
	double		lambda;
	int			passes,
				rounds,
				every,
				nck = 0;
	int		   *order;
	Prng		rng;
	ReplayTotals tot = {0};
	ReplayTotals *checkpoints;

	for (int i = 0; i < PG_NARGS(); i++)
		if (PG_ARGISNULL(i) && i != 2 && i != 3 && i != 6 && i != 8 && i != 10)
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("replay: only kernel, settings, rounds, checkpoint and warm may be NULL")));
	lambda = PG_GETARG_FLOAT8(5);
	passes = PG_GETARG_INT32(7);
	if (!(lambda >= 0 && isfinite(lambda)))
		replay_error("cost_weight must be finite and not negative");
	if (passes < 1)
		replay_error("passes must be at least 1");

	source_load(text_to_cstring(PG_GETARG_TEXT_PP(0)), "replay source", true, &data);
	learner.sel = replay_selector(fcinfo, &data);
	if (lambda > 0 && learner.sel->cfg.budget > 0)
		replay_error("pass cost_weight 0 with a budget: the budget's pacer sets the cost weight");
	/* the cost weight of the settings, unless the argument gives one */
	if (lambda == 0)
		lambda = learner.sel->cfg.cost_weight;
	replay_validate(&learner.sel->cfg, &data, lambda);
	check_playable(&data);
	rounds = PG_ARGISNULL(6) ? (int) Min((int64) data.nrows * passes, INT_MAX) : PG_GETARG_INT32(6);
	if (rounds < 1)
		replay_error("rounds must be at least 1");
	every = PG_ARGISNULL(8) ? Max(rounds / 10, 1) : PG_GETARG_INT32(8);
	if (every < 1)
		replay_error("checkpoint must be at least 1");

	order = palloc(sizeof(int) * data.nrows);
	prng_seed(&rng, mix64(learner.sel->cfg.seed ^ UINT64_C(0x7265706c6179)));
	replay_feedback_args(fcinfo, &learner);
	replay_learner_alloc(&learner, data.narms, learner.delay, rounds);
	pending_init(&learner.decided, &learner.sel->cfg);
	tot.arm_utility = palloc0(sizeof(double) * data.narms);
	tot.picks = palloc0(sizeof(int64) * data.narms);
	/* cppcheck-suppress zerodivcond ; replay_error() does not return */
	checkpoints = checkpoints_alloc((int64) rounds / every + 1, data.narms);
	if (PG_NARGS() > 10 && !PG_ARGISNULL(10))
		replay_warm(&learner, text_to_cstring(PG_GETARG_TEXT_PP(10)), &data, lambda);
	source_add_tags(&data, &learner.sel->cfg);

	progress_begin("replay", NULL, rounds, "rounds");
	for (int t = 0; t < rounds; t++)
	{
		CHECK_FOR_INTERRUPTS();
		if (t % data.nrows == 0)
		{
			/* a new pass: rows in query order, or reshuffled */
			for (int i = 0; i < data.nrows; i++)
				order[i] = i;
			if (PG_GETARG_BOOL(9))
				shuffle(order, data.nrows, &rng);
		}
		replay_round(&learner, &data, order[t % data.nrows], lambda, rounds, &tot);
		if (tot.round % every == 0 || tot.round == rounds)
		{
			totals_copy(&checkpoints[nck++], &tot, data.narms);
			tot.window_optimal = 0;
			tot.window_rounds = 0;
		}
		progress_update(t + 1);
	}
	progress_end();

	emit_checkpoints(fcinfo, checkpoints, nck, &tot, data.narms);
	return (Datum) 0;
}
