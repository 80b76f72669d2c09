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
#include "utils/memutils.h"

#include "model/codebook.h"
#include "model/context.h"
#include "model/reward_value.h"
#include "pg/spi_util.h"
#include "model/state.h"
#include "pg/progress.h"
#include "eval/eval.h"
#include "model/clock_ops.h"
#include "routing/decide.h"
#include "math/prng.h"
#include "model/registry.h"

PG_FUNCTION_INFO_V1(model_select_replay);

/* Running totals; a copy is kept at every checkpoint. */
typedef struct ReplayTotals
{
	int			round;
	double		reward;
	double		cost;
	double		utility;
	double		judged;			/* utility of the picks as judged */
	double		oracle;			/* sum of the best judged utility of each row */
	int64		optimal;
	int64		window_optimal;
	int			window_rounds;
	double	   *arm_utility;	/* per arm: judged utility had it always been played */
	int64	   *picks;
} ReplayTotals;

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

/*
 * Room for n checkpoints' totals, which are all kept until the best arm in
 * hindsight is known: refused (54000) beyond 1 GB in all (checkpoint 1 over
 * 2^31 - 1 rounds would be 2^31 of them).
 */
static ReplayTotals *
checkpoints_alloc(int64 n, int narms)
{
	double		bytes = (double) n * (sizeof(ReplayTotals) + narms * (sizeof(double) + sizeof(int64)));

	if (bytes > MaxAllocSize)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("replay: " INT64_FORMAT " checkpoints of %d arms would need %.0f MB",
						n, narms, bytes / 1048576.0),
				 errhint("Raise checkpoint (rounds between result rows), or lower rounds.")));
	return palloc(sizeof(ReplayTotals) * (Size) n);
}

static void
totals_copy(ReplayTotals *dst, const ReplayTotals *src, int narms)
{
	*dst = *src;
	dst->arm_utility = palloc(sizeof(double) * narms);
	dst->picks = palloc(sizeof(int64) * narms);
	memcpy(dst->arm_utility, src->arm_utility, sizeof(double) * narms);
	memcpy(dst->picks, src->picks, sizeof(int64) * narms);
}

/* An in-memory selector with arms named arm1..armG and no rewards yet. */
static Selector *
replay_selector(FunctionCallInfo fcinfo, const ReplayData *data)
{
	Selector   *sel = palloc0(sizeof(Selector));

	sel->name = "replay";
	sel->cfg.dim = data->dim;
	sel->cfg.policy = policy_from_name(text_to_cstring(PG_GETARG_TEXT_PP(1)));
	sel->cfg.kernel = kernel_from_name(sel->cfg.policy,
									   PG_ARGISNULL(2) ? NULL : text_to_cstring(PG_GETARG_TEXT_PP(2)));
	settings_resolve(&sel->cfg, PG_ARGISNULL(3) ? NULL : PG_GETARG_JSONB_P(3));
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

/* The learner of a replay: the in-memory selector and each arm's state. */
typedef struct ReplayLearner
{
	Selector   *sel;
	StateHeader **states;
	MemoryContext *state_cxt;
	MemoryContext *model_cxt;
	ArmScore   *scores;
	int			ticks;			/* rewards learned: the selector clock */
} ReplayLearner;

/*
 * Feed utility u of context raw_x to arm a, one tick of the selector clock
 * (warm rows and rounds alike, as their rewards in a live log): new state (in
 * place, or in a fresh context that replaces the old state's), new decoded
 * model (clocked: decoded before each round instead, replay_age).
 */
static void
replay_learn(ReplayLearner *learner, int a, const double *raw_x, double u)
{
	Selector   *sel = learner->sel;
	StateHeader **states = learner->states;
	MemoryContext *state_cxt = learner->state_cxt;
	MemoryContext *model_cxt = learner->model_cxt;
	int			tick = ++learner->ticks;
	MemoryContext fresh = AllocSetContextCreate(CurrentMemoryContext, "replay arm state",
												ALLOCSET_DEFAULT_SIZES);
	MemoryContext old = MemoryContextSwitchTo(fresh);
	const ClockOps *clock = clock_ops(sel->cfg.clock);
	double	   *x = palloc(sizeof(double) * sel->cfg.dim);
	StateHeader *appended;

	memcpy(x, raw_x, sizeof(double) * sel->cfg.dim);
	context_prepare(&sel->cfg, x);
	appended = clock->append(&sel->cfg, states[a], x, u, tick);
	MemoryContextSwitchTo(old);
	if (appended == states[a])
		MemoryContextDelete(fresh);
	else
	{
		if (state_cxt[a] != NULL)
			MemoryContextDelete(state_cxt[a]);
		state_cxt[a] = fresh;
	}
	states[a] = appended;
	sel->arms[a].n++;
	if (clock->ages)
		return;
	if (model_cxt[a] == NULL)
		model_cxt[a] = AllocSetContextCreate(CurrentMemoryContext, "replay arm model",
											 ALLOCSET_DEFAULT_SIZES);
	else
		MemoryContextReset(model_cxt[a]);
	MemoryContextSwitchTo(model_cxt[a]);
	sel->arms[a].model = clock_decode(&sel->cfg, states[a], tick);
	MemoryContextSwitchTo(old);
}

static void
emit_checkpoint(ReturnSetInfo *rsinfo, const ReplayTotals *ck, int narms, int best_arm)
{
	Datum		values[10];
	bool		nulls[10] = {false};
	Datum	   *picks = palloc(sizeof(Datum) * narms);

	for (int a = 0; a < narms; a++)
		picks[a] = Int64GetDatum(ck->picks[a]);
	values[0] = Int32GetDatum(ck->round);
	values[1] = Float8GetDatum(ck->reward);
	values[2] = Float8GetDatum(ck->cost);
	values[3] = Float8GetDatum(ck->utility);
	values[4] = Float8GetDatum(ck->arm_utility[best_arm] - ck->judged);
	values[5] = Float8GetDatum(ck->oracle - ck->judged);
	values[6] = Float8GetDatum((double) ck->optimal / ck->round);
	values[7] = Float8GetDatum((double) ck->window_optimal / ck->window_rounds);
	values[8] = Float8GetDatum((ck->judged - ck->arm_utility[best_arm]) / ck->round);
	values[9] = PointerGetDatum(construct_array(picks, narms, INT8OID, sizeof(int64),
												FLOAT8PASSBYVAL, TYPALIGN_DOUBLE));
	tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
}

/*
 * The result rows: every checkpoint, with the best single arm in hindsight
 * over all rounds played (tot).
 */
static void
emit_checkpoints(FunctionCallInfo fcinfo, const ReplayTotals *checkpoints, int nck,
				 const ReplayTotals *tot, int narms)
{
	int			best_arm = 0;

	for (int a = 1; a < narms; a++)
		if (tot->arm_utility[a] > tot->arm_utility[best_arm])
			best_arm = a;
	InitMaterializedSRF(fcinfo, 0);
	for (int i = 0; i < nck; i++)
		emit_checkpoint((ReturnSetInfo *) fcinfo->resultinfo, &checkpoints[i], narms, best_arm);
}

static void replay_error(const char *message) pg_attribute_noreturn();

static void
replay_error(const char *message)
{
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("%s", message)));
}

/*
 * A clocked selector's models at the selector's clock `now` (the rounds
 * played): every arm ages, chosen or not (model/clock_state.c).
 */
static void
replay_age(ReplayLearner *learner, int narms, int now)
{
	Selector   *sel = learner->sel;

	for (int a = 0; a < narms; a++)
	{
		MemoryContext old;

		if (learner->states[a] == NULL)
			continue;
		if (learner->model_cxt[a] == NULL)
			learner->model_cxt[a] = AllocSetContextCreate(CurrentMemoryContext, "replay arm model",
														  ALLOCSET_DEFAULT_SIZES);
		else
			MemoryContextReset(learner->model_cxt[a]);
		old = MemoryContextSwitchTo(learner->model_cxt[a]);
		sel->arms[a].model = clock_decode(&sel->cfg, learner->states[a], now);
		MemoryContextSwitchTo(old);
	}
}

/* One round on one row: decide, account, learn the chosen arm's utility. */
static void
replay_round(ReplayLearner *learner, const ReplayData *data, int row, double lambda,
			 ReplayTotals *tot)
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
	replay_learn(learner, chosen, x, u);
	/* the totals a live arm reads from its log (the budget's pacer) */
	sel->arms[chosen].cost_sum += c[chosen];
	sel->arms[chosen].cost_n++;
	sel->arms[chosen].spend_sum += c[chosen];
	sel->arms[chosen].spend_n++;
}

/* Per-arm states, their memory contexts and scores, all empty. */
static void
learner_alloc(ReplayLearner *learner, int narms)
{
	learner->states = palloc0(sizeof(StateHeader *) * narms);
	learner->state_cxt = palloc0(sizeof(MemoryContext) * narms);
	learner->model_cxt = palloc0(sizeof(MemoryContext) * narms);
	learner->scores = palloc(sizeof(ArmScore) * narms);
	learner->ticks = 0;
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
	if (warm.narms != online->narms || warm.dim != online->dim)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_EXCEPTION),
				 errmsg("warm source has %d arms and contexts of dimension %d, the replay source %d and %d",
						warm.narms, warm.dim, online->narms, online->dim)));
	replay_validate(&sel->cfg, &warm, lambda);
	replay_fit_codebook(&sel->cfg, &warm);
	for (int i = 0; i < warm.nrows; i++)
	{
		const double *x = warm.contexts + (Size) i * warm.dim;

		CHECK_FOR_INTERRUPTS();
		for (int a = 0; a < warm.narms; a++)
		{
			Size		cell = (Size) i * warm.narms + a;

			if (!warm.available[cell])
				continue;
			replay_learn(learner, a, x, warm.rewards[cell] - lambda * warm.costs[cell]);
			if (warm.row_has_costs[i])
			{
				sel->arms[a].cost_sum += warm.costs[cell];
				sel->arms[a].cost_n++;
			}
		}
	}
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

	for (int i = 0; i < 10; i++)
		if (PG_ARGISNULL(i) && i != 2 && i != 3 && i != 6 && i != 8)
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("replay: only kernel, settings, rounds and checkpoint may be NULL")));
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
	learner_alloc(&learner, data.narms);
	tot.arm_utility = palloc0(sizeof(double) * data.narms);
	tot.picks = palloc0(sizeof(int64) * data.narms);
	/* cppcheck-suppress zerodivcond ; replay_error() does not return */
	checkpoints = checkpoints_alloc((int64) rounds / every + 1, data.narms);
	if (PG_NARGS() > 10 && !PG_ARGISNULL(10))
		replay_warm(&learner, text_to_cstring(PG_GETARG_TEXT_PP(10)), &data, lambda);

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
		replay_round(&learner, &data, order[t % data.nrows], lambda, &tot);
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
