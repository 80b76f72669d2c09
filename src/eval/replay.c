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
 * metrics judge every round's pick, rewarded or not.
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

/* The learner of a replay: the in-memory selector and each arm's state. */
typedef struct ReplayLearner
{
	Selector   *sel;
	StateHeader **states;
	MemoryContext *state_cxt;
	MemoryContext *model_cxt;
	ClockKey   *model_at;		/* clocked: the key each arm's model was built at */
	int64	   *model_n;		/* and the arm's rewards then (its state's version) */
	ArmScore   *scores;
	int			ticks;			/* rewards learned: the selector clock */
	int			delay;			/* rounds before a reward is visible */
	double		feedback;		/* the share of rounds rewarded */
	uint64		feedback_seed;
	struct Pending *pending;	/* rewards not visible yet: a ring of delay + 1 */
	int			pending_size;
	int			pending_head;	/* the oldest */
	int			pending_count;
	ReplayPending decided;		/* decisions not rewarded yet, for the pacer */
} ReplayLearner;

/* A reward decided but not visible yet: its round, row, arm, utility and cost. */
typedef struct Pending
{
	int			round;
	int			row;
	int			arm;
	double		utility;
	double		cost;
} Pending;

/*
 * Feed utility u of context raw_x, with its cost (cost_null: none), to arm
 * a, one tick of the selector clock (warm rows and rounds alike, as their
 * rewards in a live log): new state (in place, or in a fresh context that
 * replaces the old state's), new decoded model (clocked: decoded before each
 * round instead, replay_age).
 */
static void
replay_learn(ReplayLearner *learner, int a, const double *raw_x, double u, bool cost_null,
			 double cost)
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
	double	   *x = palloc(sizeof(double) * sel->cfg.row_dim);
	StateHeader *appended;

	memcpy(x, raw_x, sizeof(double) * sel->cfg.dim);
	context_prepare(&sel->cfg, x);
	row_set_cost(&sel->cfg, x, cost_null, cost);
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
 * played): every arm ages, chosen or not (model/clock_state.c).  An arm
 * whose state and key are those its model was built at keeps it, as the
 * arm cache does (a window's model changes only when a row stops counting):
 * the same model, built once.
 */
static void
replay_age(ReplayLearner *learner, int narms, int now)
{
	Selector   *sel = learner->sel;
	const ClockOps *clock = clock_ops(sel->cfg.clock);

	for (int a = 0; a < narms; a++)
	{
		MemoryContext old;
		ClockKey	key;

		if (learner->states[a] == NULL)
			continue;
		clock->key(&sel->cfg, learner->states[a], now, &key);
		if (sel->arms[a].model != NULL && learner->model_n[a] == sel->arms[a].n &&
			clock_key_equal(&key, &learner->model_at[a]))
			continue;
		if (learner->model_cxt[a] == NULL)
			learner->model_cxt[a] = AllocSetContextCreate(CurrentMemoryContext, "replay arm model",
														  ALLOCSET_DEFAULT_SIZES);
		else
			MemoryContextReset(learner->model_cxt[a]);
		old = MemoryContextSwitchTo(learner->model_cxt[a]);
		sel->arms[a].model = clock->decode_at(&sel->cfg, learner->states[a], &key);
		MemoryContextSwitchTo(old);
		learner->model_at[a] = key;
		learner->model_n[a] = sel->arms[a].n;
	}
}

/*
 * Is round t (from 0) rewarded?  Every round with feedback 1, else a draw
 * from a hash of the seed and t: the same rounds for every policy.
 */
static bool
round_rewarded(const ReplayLearner *learner, int t)
{
	uint64		h;

	if (learner->feedback >= 1)
		return true;
	h = mix64(learner->feedback_seed + (uint64) t * UINT64_C(0x9E3779B97F4A7C15));
	return (double) (h >> 11) * 0x1.0p-53 < learner->feedback;
}

/* A reward becomes visible: the arm learns it, and its cost counts as a live log's would. */
static void
replay_feedback(ReplayLearner *learner, const ReplayData *data, const Pending *p, ReplayTotals *tot)
{
	ArmInfo    *arm = &learner->sel->arms[p->arm];

	replay_learn(learner, p->arm, data->contexts + (Size) p->row * data->dim, p->utility, false, p->cost);
	/* the totals a live arm reads from its log (the budget's pacer) */
	arm->cost_sum += p->cost;
	arm->cost_n++;
	arm->spend_sum += p->cost;
	arm->spend_n++;
	tot->learned++;
}

/* Before the decision of round t: learn the rewards of rounds up to t - delay - 1. */
static void
replay_deliver(ReplayLearner *learner, const ReplayData *data, int t, ReplayTotals *tot)
{
	while (learner->pending_count > 0)
	{
		const Pending *p = &learner->pending[learner->pending_head];

		if ((int64) p->round + learner->delay >= t)
			break;
		replay_feedback(learner, data, p, tot);
		pending_rewarded(&learner->decided, learner->sel, p->round, t);
		learner->pending_head = (learner->pending_head + 1) % learner->pending_size;
		learner->pending_count--;
	}
}

/*
 * After the decision of round t: its reward, if the round is rewarded and
 * it becomes visible within the rounds played, waits for its delay.
 */
static void
replay_defer(ReplayLearner *learner, int t, int rounds, int row, int arm, double u, double cost)
{
	Pending    *p;

	if (!round_rewarded(learner, t) || (int64) t + learner->delay + 1 >= rounds)
		return;
	Assert(learner->pending_count < learner->pending_size);
	p = &learner->pending[(learner->pending_head + learner->pending_count) % learner->pending_size];
	p->round = t;
	p->row = row;
	p->arm = arm;
	p->utility = u;
	p->cost = cost;
	learner->pending_count++;
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
 * Per-arm states, their memory contexts and scores, all empty; room for the
 * rewards not yet visible (at most delay + 1 at a time, and fewer than the
 * rounds played): refused (54000) beyond 1 GB.
 */
static void
learner_alloc(ReplayLearner *learner, int narms, int delay, int rounds)
{
	int64		size = Min((int64) delay, (int64) rounds) + 1;

	learner->states = palloc0(sizeof(StateHeader *) * narms);
	learner->state_cxt = palloc0(sizeof(MemoryContext) * narms);
	learner->model_cxt = palloc0(sizeof(MemoryContext) * narms);
	learner->model_at = palloc0(sizeof(ClockKey) * narms);
	learner->model_n = palloc0(sizeof(int64) * narms);
	learner->scores = palloc(sizeof(ArmScore) * narms);
	learner->ticks = 0;
	if ((double) size * sizeof(Pending) > MaxAllocSize)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("replay: a delay of %d rounds would hold " INT64_FORMAT " rewards in memory", delay, size),
				 errhint("Lower delay or rounds.")));
	learner->pending = palloc(sizeof(Pending) * (Size) size);
	learner->pending_size = (int) size;
	learner->pending_head = 0;
	learner->pending_count = 0;
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
	learner_alloc(&learner, data.narms, learner.delay, rounds);
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
