/*
 * replay.c — offline evaluation: replay(source, policy, ...) runs the online
 * loop over the rows of a query in memory, with the same policy code and
 * decision rule as a live selector, without touching any table.
 *
 * The source query yields (context, rewards[, costs[, expected]]): the
 * context and, per arm, the reward (and cost) that arm would have earned on
 * it.  Each round the policy picks an arm and learns the utility
 * reward − λ·cost of that arm only.  The metrics of spec/000.md §4.1 are
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

#include "core/context.h"
#include "core/spi_util.h"
#include "learning/clock.h"
#include "routing/decide.h"
#include "math/prng.h"
#include "policy/registry.h"

PG_FUNCTION_INFO_V1(model_select_replay);

typedef struct ReplayData
{
	int			nrows;
	int			dim;
	int			narms;
	double	   *contexts;		/* nrows × dim, as given */
	double	   *rewards;		/* nrows × narms */
	double	   *costs;			/* nrows × narms, 0 where absent */
	double	   *expected;		/* nrows × narms, or NULL: judge by rewards */
	bool	   *available;		/* nrows × narms: reward not NULL */
} ReplayData;

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

static int
array_column(TupleDesc desc, int col, const char *what)
{
	Oid			type = SPI_gettypeid(desc, col);

	if (type != FLOAT4ARRAYOID && type != FLOAT8ARRAYOID)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("replay source column %d (%s) must be real[] or double precision[], not %s",
						col, what, format_type_be(type)),
				 errhint("The source query yields (context, rewards[, costs[, expected]]).")));
	return col;
}

static double *
row_array(HeapTuple row, TupleDesc desc, int col, int rowno, int *n, const char *what,
		  bool **nulls)
{
	bool		isnull;
	Datum		d = SPI_getbinval(row, desc, col, &isnull);
	double	   *volatile x = NULL;

	if (isnull)
	{
		*n = -1;
		return NULL;
	}
	PG_TRY();
	{
		x = float_array(DatumGetArrayTypeP(d), n, what, nulls);
	}
	PG_CATCH();
	{
		errcontext("replay source row %d", rowno);
		PG_RE_THROW();
	}
	PG_END_TRY();
	return x;
}

/* As row_array(), for a column that must not be NULL. */
static double *
row_array_required(HeapTuple row, TupleDesc desc, int col, int rowno, int *n, const char *what,
				   bool **nulls)
{
	double	   *x = row_array(row, desc, col, rowno, n, what, nulls);

	if (x == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("replay source row %d: %s is NULL", rowno, what)));
	return x;
}

static void
row_error(int rowno, const char *problem, int got, int expected)
{
	ereport(ERROR,
			(errcode(ERRCODE_DATA_EXCEPTION),
			 errmsg("replay source row %d: %s has %d elements, expected %d",
					rowno, problem, got, expected)));
}

/* Row i's context into data->contexts (the first row sets dim). */
static void
replay_context(ReplayData *data, HeapTuple row, TupleDesc desc, int i, MemoryContext caller)
{
	int			n;
	double	   *x = row_array_required(row, desc, 1, i + 1, &n, "context", NULL);

	if (i == 0)
	{
		data->dim = n;
		data->contexts = MemoryContextAlloc(caller, sizeof(double) * (Size) data->nrows * Max(n, 1));
	}
	else if (n != data->dim)
		row_error(i + 1, "context", n, data->dim);
	memcpy(data->contexts + (Size) i * data->dim, x, sizeof(double) * n);
}

/* Row i's rewards (the first row sets narms and allocates the per-arm arrays). */
static void
replay_rewards(ReplayData *data, HeapTuple row, TupleDesc desc, int i, MemoryContext caller,
			   bool has_expected)
{
	int			n;
	bool	   *missing;
	double	   *r = row_array_required(row, desc, 2, i + 1, &n, "rewards", &missing);

	if (i == 0)
	{
		if (n < 1)
			row_error(1, "rewards", n, 1);
		data->narms = n;
		data->rewards = MemoryContextAlloc(caller, sizeof(double) * (Size) data->nrows * n);
		data->costs = MemoryContextAllocZero(caller, sizeof(double) * (Size) data->nrows * n);
		data->available = MemoryContextAlloc(caller, sizeof(bool) * (Size) data->nrows * n);
		data->expected = has_expected
			? MemoryContextAlloc(caller, sizeof(double) * (Size) data->nrows * n) : NULL;
	}
	else if (n != data->narms)
		row_error(i + 1, "rewards", n, data->narms);
	memcpy(data->rewards + (Size) i * data->narms, r, sizeof(double) * n);
	for (int a = 0; a < n; a++)
		data->available[(Size) i * n + a] = !missing[a];
}

/* Row i's optional costs (column 3) and expected rewards (column 4). */
static void
replay_costs_expected(ReplayData *data, HeapTuple row, TupleDesc desc, int i, bool has_costs)
{
	int			n;
	double	   *c = has_costs ? row_array(row, desc, 3, i + 1, &n, "costs", NULL) : NULL;

	if (c != NULL && n > 0)
	{
		if (n != data->narms)
			row_error(i + 1, "costs", n, data->narms);
		memcpy(data->costs + (Size) i * data->narms, c, sizeof(double) * n);
	}
	if (data->expected != NULL)
	{
		bool	   *missing;
		double	   *e = row_array_required(row, desc, 4, i + 1, &n, "expected", &missing);

		if (n != data->narms)
			row_error(i + 1, "expected", n, data->narms);
		memcpy(data->expected + (Size) i * data->narms, e, sizeof(double) * n);
	}
}

/* Run the source query and copy its rows into memory. */
static void
replay_load(const char *source, ReplayData *data)
{
	int			spi_level;
	MemoryContext caller = CurrentMemoryContext;
	TupleDesc	desc;
	int			has_costs,
				has_expected;

	spi_level = spi_connect_read_only();
	if (SPI_execute(source, true, 0) != SPI_OK_SELECT)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("replay source must be a SELECT query")));
	desc = SPI_tuptable->tupdesc;
	if (desc->natts < 2 || desc->natts > 4)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("replay source yields %d columns, expected (context, rewards[, costs[, expected]])",
						desc->natts)));
	array_column(desc, 1, "context");
	array_column(desc, 2, "rewards");
	has_costs = desc->natts >= 3 ? array_column(desc, 3, "costs") : 0;
	has_expected = desc->natts == 4 ? array_column(desc, 4, "expected") : 0;
	if (SPI_processed == 0 || SPI_processed > INT_MAX / 2)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("replay source yields %lu rows", (unsigned long) SPI_processed)));

	data->nrows = (int) SPI_processed;
	for (int i = 0; i < data->nrows; i++)
	{
		HeapTuple	row = SPI_tuptable->vals[i];

		replay_context(data, row, desc, i, caller);
		replay_rewards(data, row, desc, i, caller, has_expected);
		replay_costs_expected(data, row, desc, i, has_costs);
	}
	spi_finish(spi_level);
}

/*
 * Check the loaded values as a live selector with these settings would
 * check its rewards (range, costs finite and not negative, utilities
 * within bounds under cost weight lambda), so that no NaN or infinity
 * reaches the metrics.
 */
static void
validate_context(void *arg)
{
	const int  *cell = arg;

	errcontext("replay source row %d, arm %d", cell[0] + 1, cell[1] + 1);
}

static void
replay_validate(const SelectorConfig *settings, const ReplayData *data, double lambda)
{
	SelectorConfig cfg = *settings;
	int			cell[2];
	ErrorContextCallback errcb = {error_context_stack, validate_context, cell};

	cfg.cost_weight = lambda;
	error_context_stack = &errcb;
	for (Size i = 0; i < (Size) data->nrows * data->narms; i++)
	{
		cell[0] = (int) (i / data->narms);
		cell[1] = (int) (i % data->narms);
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
	/* a source's rows have no time: rounds are the only clock replay() has */
	if (sel->cfg.clock == CLOCK_TIME)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("replay() does not support \"clock\": \"time\": its rows have no time"),
				 errhint("Replay with \"clock\": \"selector\", which counts one tick per round.")));
	sel->cfg.seed = (uint64) PG_GETARG_INT64(4);
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

/*
 * Feed utility u of context raw_x to arm a in round `tick`: new state (in
 * place, or in a fresh context that replaces the old state's), new decoded
 * model (clocked: decoded before each round instead, replay_age).
 */
static void
replay_learn(Selector *sel, StateHeader **states, MemoryContext *state_cxt,
			 MemoryContext *model_cxt, int a, const double *raw_x, double u, int tick)
{
	MemoryContext fresh = AllocSetContextCreate(CurrentMemoryContext, "replay arm state",
												ALLOCSET_DEFAULT_SIZES);
	MemoryContext old = MemoryContextSwitchTo(fresh);
	const PolicyOps *ops = policy_ops(sel->cfg.policy);
	double	   *x = palloc(sizeof(double) * sel->cfg.dim);
	StateHeader *appended;

	memcpy(x, raw_x, sizeof(double) * sel->cfg.dim);
	context_prepare(&sel->cfg, x);
	appended = sel->cfg.clock != CLOCK_ARM ? clock_append(&sel->cfg, states[a], x, u, tick)
		: state_append(&sel->cfg, states[a], x, u);
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
	if (sel->cfg.clock != CLOCK_ARM)
		return;
	if (model_cxt[a] == NULL)
		model_cxt[a] = AllocSetContextCreate(CurrentMemoryContext, "replay arm model",
											 ALLOCSET_DEFAULT_SIZES);
	else
		MemoryContextReset(model_cxt[a]);
	MemoryContextSwitchTo(model_cxt[a]);
	sel->arms[a].model = ops->decode(&sel->cfg, states[a]);
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

/* The learner of a replay: the in-memory selector and each arm's state. */
typedef struct ReplayLearner
{
	Selector   *sel;
	StateHeader **states;
	MemoryContext *state_cxt;
	MemoryContext *model_cxt;
	ArmScore   *scores;
} ReplayLearner;

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
 * played): every arm ages, chosen or not (learning/clock.c).
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
	if (sel->cfg.clock != CLOCK_ARM)
		replay_age(learner, data->narms, tot->round);
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
	replay_learn(sel, learner->states, learner->state_cxt, learner->model_cxt, chosen, x, u,
				 tot->round);
	/* the totals a live arm reads from its log (the budget's pacer) */
	sel->arms[chosen].cost_sum += c[chosen];
	sel->arms[chosen].cost_n++;
}

/* Per-arm states, their memory contexts and scores, all empty. */
static void
learner_alloc(ReplayLearner *learner, int narms)
{
	learner->states = palloc0(sizeof(StateHeader *) * narms);
	learner->state_cxt = palloc0(sizeof(MemoryContext) * narms);
	learner->model_cxt = palloc0(sizeof(MemoryContext) * narms);
	learner->scores = palloc(sizeof(ArmScore) * narms);
}

Datum
model_select_replay(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	ReplayData	data;
	ReplayLearner learner;
	double		lambda;
	int			passes,
				rounds,
				every,
				nck = 0,
				best_arm = 0;
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

	replay_load(text_to_cstring(PG_GETARG_TEXT_PP(0)), &data);
	learner.sel = replay_selector(fcinfo, &data);
	if (lambda > 0 && learner.sel->cfg.budget > 0)
		replay_error("pass cost_weight 0 with a budget: the budget's pacer sets the cost weight");
	/* the cost weight of the settings, unless the argument gives one */
	if (lambda == 0)
		lambda = learner.sel->cfg.cost_weight;
	replay_validate(&learner.sel->cfg, &data, lambda);
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
	checkpoints = palloc(sizeof(ReplayTotals) * (rounds / every + 1));

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
	}

	/* the best single arm in hindsight, over all rounds played */
	for (int a = 1; a < data.narms; a++)
		if (tot.arm_utility[a] > tot.arm_utility[best_arm])
			best_arm = a;
	InitMaterializedSRF(fcinfo, 0);
	for (int i = 0; i < nck; i++)
		emit_checkpoint(rsinfo, &checkpoints[i], data.narms, best_arm);
	return (Datum) 0;
}
