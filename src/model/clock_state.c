/*
 * clock_state.c — the three clocks (clock_ops.h): what each does to an
 * arm's state.
 *
 * With the arm's clock (the default) window, discount and restart_every
 * count an arm's own rewards, so an arm that is not chosen never forgets:
 * its state is the policy's (state.h), and now plays no part.
 *
 * On the selector's clock ("clock": "selector") they count the rewards of
 * every arm: each reward row gets a tick, its position (1, 2, …) in the
 * selector's log in canonical order (tx, seq), and "now" is the number of
 * the selector's rewards a reader's snapshot sees (in replay(), the rounds
 * played).  At now an arm's model is built from its rows that still count:
 *
 *   window W         rows with tick > now − W
 *   discount γ       every row, weighted γ^(now − tick) (rows whose weight
 *                    fell below 1e-6 are dropped, as pak_ucb's are)
 *   restart_every R  rows with ⌊(tick − 1)/R⌋ = ⌊(now − 1)/R⌋
 *
 * Ticks grow along an arm's log, so the rows that count are always a suffix
 * of the rows it keeps, and a row that stops counting never counts again.
 *
 * The state (layout variant FORGET_CLOCK) therefore keeps rows, not a
 * factor: body = [Q, C, ticks[n], r[n], X[n][row_dim]], the rows that may still
 * count, with Q a position in the selector's log (tx and seq, their bits in
 * two float8 slots) up to which every row of the arm is in the state, and C
 * the number of the selector's rows up to Q (learning/clock.c reads and
 * moves them).  The policy's model is built from scratch at each now
 * (PolicyOps.build_weighted) and decoded: as the state is the rows
 * themselves, a fold from scratch (rebuild_state) and one row at a time
 * agree exactly, and every reader, checkpoint and replay builds the same
 * model from the same rows.
 *
 * On the time clock ("clock": "time") ticks are seconds since the Unix
 * epoch: a row's tick is the latest created_at among its arm's rows up to
 * it in canonical order (a row older than one before it counts as of that
 * one's time), so ticks depend on the arm's own rows only and never fall
 * along its log.  Now is the transaction's timestamp (now()); an arm is
 * evaluated at e = max(now, its newest tick), under half_life at now
 * rounded down to a multiple of half_life/256 first.  Window, half_life and
 * restart_every are seconds, and
 *
 *   window W         rows with tick > e − W
 *   half_life h      weight γ^(e − tick), γ = 2^(−1/h) (dropped below 1e-6)
 *   restart_every R  rows with ⌊tick/R⌋ = ⌊e/R⌋ (periods from the epoch)
 *
 * with at most cap rows per arm.  There is no Q or C (both 0).  The model
 * at e depends only on which rows count and, under half_life, on e: the
 * clock's key says which, so a cached model is reused while its key holds.
 */
#include "postgres.h"

#include <math.h>

#include "access/xact.h"
#include "utils/timestamp.h"

#include "math/elementary.h"
#include "math/change_point.h"
#include "model/clock_ops.h"
#include "model/registry.h"
#include "model/state.h"

/* Under half_life the time clock evaluates at multiples of half_life / this. */
#define HALF_LIFE_STEPS 256

/* Where restart periods start: the selector's first tick, the Unix epoch. */
#define SELECTOR_START 1
#define TIME_START 0

/* ---- the arm's clock: the policy's state ---- */

static int32
arm_forgetting(const SelectorConfig *cfg)
{
	if (cfg->window > 0)
		return FORGET_WINDOW;
	if (cfg->discount < 1)
		return FORGET_DISCOUNT;
	return FORGET_NONE;
}

static Size
arm_body_size(const SelectorConfig *cfg, int n)
{
	return policy_ops(cfg->policy)->body_size(cfg, n);
}

/* the cap for a policy that keeps its rows, else the window, else any count */
static int32
arm_max_rows(const SelectorConfig *cfg)
{
	if (policy_ops(cfg->policy)->keeps_rows)
		return cfg->cap;
	return cfg->window > 0 ? cfg->window : PG_INT32_MAX;
}

static void
arm_check(const SelectorConfig *cfg, const StateHeader *st)
{
	const PolicyOps *ops = policy_ops(cfg->policy);

	if (ops->check != NULL)
		ops->check(cfg, st);
}

static StateHeader *
arm_append(const SelectorConfig *cfg, const StateHeader *old, const double *x, double r,
		   double tick)
{
	return state_append(cfg, old, x, r);
}

static void
arm_key(const SelectorConfig *cfg, const StateHeader *st, double now, ClockKey *key)
{
	key->first = 0;
	key->at = 0;
}

static ArmModel *
arm_decode_at(const SelectorConfig *cfg, const StateHeader *st, const ClockKey *key)
{
	return policy_ops(cfg->policy)->decode(cfg, st);
}

/* a reader's snapshot gives the arm's and the selector's clock */
static double
snapshot_now(void)
{
	return 0;
}

/* ---- the selector's and the time clock: the rows that still count ---- */

static int32
clocked_forgetting(const SelectorConfig *cfg)
{
	return FORGET_CLOCK;
}

static Size
clocked_body_size(const SelectorConfig *cfg, int n)
{
	return CLOCK_HEAD + (Size) n * (cfg->row_dim + 2);
}

/*
 * On the selector's clock ticks are distinct integers, so at most W, R or
 * the discount's horizon of them still count, and a policy that keeps its
 * rows uses only the newest cap of them.
 */
static int32
selector_max_rows(const SelectorConfig *cfg)
{
	int32		rows = discount_horizon(cfg);

	if (cfg->window > 0)
		rows = cfg->window;
	else if (cfg->restart_every > 0)
		rows = cfg->restart_every;
	if (policy_ops(cfg->policy)->keeps_rows)
		rows = Min(rows, cfg->cap);
	return rows;
}

/* On the time clock any number of rows may share a second: cap. */
static int32
time_max_rows(const SelectorConfig *cfg)
{
	return cfg->cap;
}

/*
 * A stored clocked state's further checks: ticks that ordered() allows
 * and finite rewards; else a reader would fold onto rows out of order.
 */
static void
clocked_check(const SelectorConfig *cfg, const StateHeader *st,
			  bool (*ordered) (const double *ticks, int i, double count))
{
	const double *ticks = CLOCK_TICKS(st);
	double		count = STATE_BODY(st)[CLOCK_C];

	for (int i = 0; i < st->n; i++)
		if (!ordered(ticks, i, count) || !isfinite(CLOCK_REWARDS(st)[i]))
			ereport(ERROR,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg("clocked arm state has row %d at tick %g of %g", i, ticks[i], count),
					 errhint("Run model_select.rebuild_state() to recompute it from the reward log.")));
}

/* the selector's ticks run from 1 to C, increasing */
static bool
selector_tick_ordered(const double *ticks, int i, double count)
{
	return ticks[i] >= (i == 0 ? 1 : ticks[i - 1] + 1) && ticks[i] <= count;
}

/* the time clock's are finite and do not decrease */
static bool
time_tick_ordered(const double *ticks, int i, double count)
{
	return isfinite(ticks[i]) && (i == 0 || ticks[i] >= ticks[i - 1]);
}

static void
selector_check(const SelectorConfig *cfg, const StateHeader *st)
{
	clocked_check(cfg, st, selector_tick_ordered);
}

static void
time_check(const SelectorConfig *cfg, const StateHeader *st)
{
	clocked_check(cfg, st, time_tick_ordered);
}

/*
 * Does a row of this tick still count at now (>= tick)?  Once it does not,
 * it never will again: the rows that count are a suffix of an arm's.
 * Periods start at `start`: the selector's first tick (1), or the epoch (0).
 */
static bool
clock_counts(const SelectorConfig *cfg, double start, double tick, double now)
{
	if (cfg->window > 0)
		return tick > now - cfg->window;
	if (cfg->restart_every > 0)
		return floor((tick - start) / cfg->restart_every) == floor((now - start) / cfg->restart_every);
	return now - tick < discount_horizon(cfg);
}

/* The first of st's rows that still counts at now (a binary search). */
static int
clock_first_counting(const SelectorConfig *cfg, const StateHeader *st, double start, double now)
{
	int			lo = 0,
				hi = st->n;

	while (lo < hi)
	{
		int			mid = lo + (hi - lo) / 2;

		if (clock_counts(cfg, start, CLOCK_TICKS(st)[mid], now))
			hi = mid;
		else
			lo = mid + 1;
	}
	return lo;
}

/* The key at `at`: the first row that counts, and `at` under a discount. */
static void
clocked_key_at(const SelectorConfig *cfg, const StateHeader *st, double start, double at,
			   ClockKey *key)
{
	key->first = clock_first_counting(cfg, st, start, at);
	key->at = cfg->discount < 1 ? at : 0;
}

static void
selector_key(const SelectorConfig *cfg, const StateHeader *st, double now, ClockKey *key)
{
	clocked_key_at(cfg, st, SELECTOR_START, now, key);
}

/* at now rounded down to a step of half_life, and no earlier than the newest row */
static void
time_key(const SelectorConfig *cfg, const StateHeader *st, double now, ClockKey *key)
{
	double		at = now;

	if (cfg->half_life > 0)
	{
		double		step = cfg->half_life / HALF_LIFE_STEPS;

		at = floor(now / step) * step;
	}
	if (st->n > 0)
		at = Max(at, CLOCK_TICKS(st)[st->n - 1]);
	clocked_key_at(cfg, st, TIME_START, at, key);
}

bool
clock_key_equal(const ClockKey *a, const ClockKey *b)
{
	return a->first == b->first && a->at == b->at;
}

/*
 * old (NULL: empty) with the row (x, r) of this tick, without the rows that
 * no longer count at it (they never will again): a new state.  The tick
 * must follow old's newest (`equal_ok`: or equal it); periods start at
 * `start` (clock_counts).
 */
static StateHeader *
clocked_append(const SelectorConfig *cfg, const StateHeader *old, const double *x, double r,
			   double tick, double start, bool equal_ok)
{
	int			n = old ? old->n : 0;
	int			first;
	int			keep;
	StateHeader *st;

	if (n > 0 && !(tick > CLOCK_TICKS(old)[n - 1] || (equal_ok && tick == CLOCK_TICKS(old)[n - 1])))
		elog(ERROR, "clocked reward rows out of order: tick %.0f after %.0f",
			 tick, CLOCK_TICKS(old)[n - 1]);
	first = old ? clock_first_counting(cfg, old, start, tick) : 0;
	first = Max(first, n + 1 - clock_ops(cfg->clock)->max_rows(cfg));
	keep = n - first;
	st = state_alloc(cfg, keep + 1, clocked_body_size(cfg, keep + 1));
	if (old != NULL)
		memcpy(STATE_BODY(st), STATE_BODY(old), sizeof(double) * CLOCK_HEAD);
	if (keep > 0)
	{
		memcpy(CLOCK_TICKS(st), CLOCK_TICKS(old) + first, sizeof(double) * keep);
		memcpy(CLOCK_REWARDS(st), CLOCK_REWARDS(old) + first, sizeof(double) * keep);
		memcpy(CLOCK_X(st), CLOCK_X(old) + (Size) first * cfg->row_dim,
			   sizeof(double) * keep * cfg->row_dim);
	}
	CLOCK_TICKS(st)[keep] = tick;
	CLOCK_REWARDS(st)[keep] = r;
	memcpy(CLOCK_X(st) + (Size) keep * cfg->row_dim, x, sizeof(double) * cfg->row_dim);
	return st;
}

static StateHeader *
selector_append(const SelectorConfig *cfg, const StateHeader *old, const double *x, double r,
				double tick)
{
	return clocked_append(cfg, old, x, r, tick, SELECTOR_START, false);
}

/* a row older than the arm's newest counts as of that one's time */
static StateHeader *
time_append(const SelectorConfig *cfg, const StateHeader *old, const double *x, double r,
			double tick)
{
	if (old != NULL && old->n > 0)
		tick = Max(tick, CLOCK_TICKS(old)[old->n - 1]);
	return clocked_append(cfg, old, x, r, tick, TIME_START, true);
}

/*
 * The change detector ("detect": true, with a window or restart_every on
 * the selector's or the time clock).  At each now the arm's rows that count
 * are tested for one change: their one-step-ahead residuals under the
 * arm's own model of the rows before each (PolicyOps.innovations, in tick
 * order), then a GLR scan for a shift in their mean (math/change_point.c).
 * Where it finds one, the rows before the change are weighted DETECT_WEIGHT
 * instead of dropped: an arm rebuilt from a few rows in the region where it
 * turned bad predicts its new low level everywhere, a constant arm with a
 * full window then takes the rounds, and the arm is not tried where it now
 * pays (dropping them lost 0.02–0.10 optimal picks on the streams of
 * bench/quality_drift.sql; weighting them 0.3 gained 0.01–0.06).  A
 * function of the rows that count alone, like the model: nothing is
 * carried from one now to the next, so every reader, checkpoint,
 * rebuild_state() and replay() builds the same model.
 *
 * DETECT_THRESHOLD: the largest G over the splits (a t² against the
 * residuals' own spread); 16 kept rounds 401–1,000 of the drift streams
 * within 0.006 of no detector, and fires in about 1% of the stationary
 * stretches' builds.  DETECT_BURN: the first residuals, under a model of
 * almost no rows (its prior), are left out.  DETECT_MIN_ROWS: the shortest
 * stretch before or after a change.
 */
#define DETECT_THRESHOLD 16.0
#define DETECT_BURN 10
#define DETECT_MIN_ROWS 10
#define DETECT_WEIGHT 0.3

/* The number of the k rows X, r before a detected change (0: none). */
static int
clock_detect(const SelectorConfig *cfg, const PolicyOps *ops, const StateHeader *built, int k,
			 const double *X, const double *r)
{
	double	   *e = palloc(sizeof(double) * Max(k, 1));
	int			m = ops->innovations(cfg, built, k, X, r, e);
	double		g;
	int			before = change_point_scan(m, e, DETECT_BURN, DETECT_MIN_ROWS, DETECT_THRESHOLD, &g);

	pfree(e);
	/* the residuals are of the last m rows (a build may keep fewer) */
	return before > 0 ? before + (k - m) : 0;
}

/*
 * The rows that count built again, those before a change the detector finds
 * weighted DETECT_WEIGHT (built itself if it finds none).
 */
static StateHeader *
clock_detect_build(const SelectorConfig *cfg, const SelectorConfig *plain, StateHeader *built,
				   int k, const double *X, const double *r)
{
	const PolicyOps *ops = policy_ops(cfg->policy);
	int			before = clock_detect(cfg, ops, built, k, X, r);
	double	   *w;

	if (before == 0)
		return built;
	w = palloc(sizeof(double) * k);
	for (int i = 0; i < k; i++)
		w[i] = i < before ? DETECT_WEIGHT : 1.0;
	return ops->build_weighted(plain, k, X, r, w);
}

/*
 * The model of a clocked state at its key, in the current memory context:
 * the policy's state built from the rows that count, weighted γ^(at − tick)
 * under a discount, decoded under the same settings without window,
 * restart or clock (scoring reads none of those).  NULL: no row counts.
 */
static ArmModel *
clocked_decode_at(const SelectorConfig *cfg, const StateHeader *st, const ClockKey *key)
{
	const PolicyOps *ops = policy_ops(cfg->policy);
	SelectorConfig *plain;
	int			first = key->first;
	int			k = st->n - first;
	double	   *w = NULL;
	StateHeader *built;

	if (k == 0)
		return NULL;
	if (ops->build_weighted == NULL)
		elog(ERROR, "policy %s has no weighted build", ops->name);
	/* in the model's context, should a policy's model ever keep its cfg */
	plain = palloc(sizeof(SelectorConfig));
	*plain = *cfg;
	plain->window = 0;
	plain->restart_every = 0;
	plain->clock = CLOCK_ARM;
	if (cfg->discount < 1)
	{
		w = palloc(sizeof(double) * k);
		for (int i = 0; i < k; i++)
			w[i] = portable_pow(cfg->discount, key->at - CLOCK_TICKS(st)[first + i]);
	}
	built = ops->build_weighted(plain, k, CLOCK_X(st) + (Size) first * cfg->row_dim,
								CLOCK_REWARDS(st) + first, w);
	/* a window or restarts, never a discount: the rows that count weigh 1 */
	if (cfg->detect && ops->innovations != NULL)
		built = clock_detect_build(cfg, plain, built, k, CLOCK_X(st) + (Size) first * cfg->row_dim,
								   CLOCK_REWARDS(st) + first);
	return ops->decode(plain, built);
}

/* The model of a state at now (its clock's key, then decode_at). */
ArmModel *
clock_decode(const SelectorConfig *cfg, const StateHeader *st, double now)
{
	const ClockOps *clock = clock_ops(cfg->clock);
	ClockKey	key;

	clock->key(cfg, st, now, &key);
	/* the model does not point into key (cppcheck takes it that it might) */
	/* cppcheck-suppress returnDanglingLifetime */
	return clock->decode_at(cfg, st, &key);
}

/* The selector's ticks are counted by the query that reads the rows. */
static double
counted_tick(Datum value)
{
	return DatumGetFloat8(value);
}

/*
 * created_at in seconds since the Unix epoch: the time clock's ticks.
 * ±infinity has none (22008): a reward there would stop every row of its
 * arm from counting, or never count.
 */
static double
time_tick(Datum value)
{
	TimestampTz t = DatumGetTimestampTz(value);

	if (TIMESTAMP_NOT_FINITE(t))
		ereport(ERROR,
				(errcode(ERRCODE_DATETIME_FIELD_OVERFLOW),
				 errmsg("a reward's created_at must be finite on the time clock")));
	return (double) (t + (POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE) * USECS_PER_DAY) / USECS_PER_SEC;
}

/*
 * The time clock's now: the transaction's timestamp (now(), the default
 * created_at), so that a transaction sees one model throughout and its own
 * rewards are 0 seconds old.
 */
static double
time_now(void)
{
	return time_tick(TimestampTzGetDatum(GetCurrentTransactionStartTimestamp()));
}

static const ClockOps arm_clock = {
	.kind = CLOCK_ARM,
	.ages = false,
	.ticks_across_arms = false,
	.tick_column = NULL,
	.forgetting = arm_forgetting,
	.body_size = arm_body_size,
	.max_rows = arm_max_rows,
	.check = arm_check,
	.append = arm_append,
	.key = arm_key,
	.decode_at = arm_decode_at,
	.now = snapshot_now,
	.tick = NULL,
};

static const ClockOps selector_clock = {
	.kind = CLOCK_SELECTOR,
	.ages = true,
	.ticks_across_arms = true,
	.tick_column = NULL,
	.forgetting = clocked_forgetting,
	.body_size = clocked_body_size,
	.max_rows = selector_max_rows,
	.check = selector_check,
	.append = selector_append,
	.key = selector_key,
	.decode_at = clocked_decode_at,
	.now = snapshot_now,
	.tick = counted_tick,
};

static const ClockOps time_clock = {
	.kind = CLOCK_TIME,
	.ages = true,
	.ticks_across_arms = false,
	.tick_column = "created_at",
	.forgetting = clocked_forgetting,
	.body_size = clocked_body_size,
	.max_rows = time_max_rows,
	.check = time_check,
	.append = time_append,
	.key = time_key,
	.decode_at = clocked_decode_at,
	.now = time_now,
	.tick = time_tick,
};

static const ClockOps *const clocks[CLOCK_COUNT] = {
	[CLOCK_ARM] = &arm_clock,
	[CLOCK_SELECTOR] = &selector_clock,
	[CLOCK_TIME] = &time_clock,
};

const ClockOps *
clock_ops(ClockKind clock)
{
	Assert(clock >= 0 && clock < CLOCK_COUNT);
	return clocks[clock];
}
