/*
 * state.c — allocation and checking of the versioned state layout
 * (see state.h); the policies themselves are in policy/registry.c.
 */
#include "postgres.h"

#include <limits.h>
#include <math.h>

#include "utils/memutils.h"

#include "math/elementary.h"
#include "model/state.h"
#include "model/clock_ops.h"
#include "model/registry.h"

/* Which layout variant a selector's states use (see state_layout.h): its clock's. */
int32
state_forgetting(const SelectorConfig *cfg)
{
	return clock_ops(cfg->clock)->forgetting(cfg);
}

/*
 * Weights below this are dropped by policies that keep their rows
 * (pak_ucb): a row of weight w acts as noise of variance α/w.
 */
#define DISCOUNT_FLOOR 1e-6

/* How many of the newest rows a discounted arm that keeps rows holds. */
int
discount_horizon(const SelectorConfig *cfg)
{
	if (cfg->discount >= 1)
		return INT_MAX;
	return (int) Min(ceil(portable_log(DISCOUNT_FLOOR) / portable_log(cfg->discount)), (double) INT_MAX);
}

/*
 * Fold one reward into a state, restarting the arm first when it has
 * reached restart_every rewards (R-GP-UCB, Iwazaki & Takeno (R-PERP), per arm).
 */
StateHeader *
state_append(const SelectorConfig *cfg, const StateHeader *old, const double *x, double r)
{
	if (old != NULL && cfg->restart_every > 0 && old->n >= cfg->restart_every)
		old = NULL;
	return policy_ops(cfg->policy)->append(cfg, old, x, r);
}

/*
 * How many of its n newest rows an arm that compacts at `cap` keeps (bkb,
 * and pak_ucb past its cap): all n up to cap; the reward that would make
 * cap + 1 rebuilds the arm from its newest h = ⌈cap/2⌉ (itself included),
 * and it grows again, so past the cap it keeps h + ((n − cap − 1) mod
 * (cap − h + 1)).  A pure function of n, so a state folded one reward at a
 * time and one built from scratch (rebuild_state) keep the same rows; and
 * compacted_rows(cap, compacted_rows(cap, n) + 1) = compacted_rows(cap, n + 1),
 * so a fold needs only the rows its state holds to take the next step.
 */
int
compacted_rows(int cap, int n)
{
	int			h = (cap + 1) / 2;

	if (n <= cap)
		return n;
	return h + (n - cap - 1) % (cap - h + 1);
}

/*
 * An arm's state from scratch for its n rewards in log order (X n × row_dim,
 * prepared), built from the newest ones it keeps: those since the last
 * restart, of those the last `window`, or what the policy keeps (its
 * kept_rows applies its window itself: bkb and pak_ucb compact).
 * (Discounts are applied by the policies.)
 */
StateHeader *
state_build(const SelectorConfig *cfg, int n, const double *X, const double *r)
{
	const PolicyOps *ops = policy_ops(cfg->policy);
	int			keep = n;

	if (n > 0 && cfg->restart_every > 0)
		keep = (n - 1) % cfg->restart_every + 1;
	if (ops->kept_rows != NULL)
		keep = ops->kept_rows(cfg, keep);
	else if (cfg->window > 0)
		keep = Min(keep, cfg->window);
	return ops->build(cfg, keep, X + (Size) (n - keep) * cfg->row_dim, r + (n - keep));
}

StateHeader *
state_alloc(const SelectorConfig *cfg, int32 n, Size body_doubles)
{
	Size		size = STATE_HEADER_SIZE + body_doubles * sizeof(double);
	StateHeader *st;

	if (!AllocSizeIsValid(size))
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("arm state of %zu bytes exceeds the maximum allocation size", size)));
	st = palloc0(size);
	SET_VARSIZE(st, size);
	st->magic = STATE_MAGIC;
	st->format = STATE_FORMAT_VERSION;
	st->policy = (uint16) cfg->policy;
	st->dim = cfg->dim;
	st->n = n;
	st->forgetting = state_forgetting(cfg);
	return st;
}

Size
state_body_doubles(const StateHeader *st)
{
	return (VARSIZE(st) - STATE_HEADER_SIZE) / sizeof(double);
}


/* Refuse (XX001) a state of `bytes` bytes that does not hold n rows of its policy. */
static void
state_size_error(const SelectorConfig *cfg, Size bytes, int32 n)
{
	ereport(ERROR,
			(errcode(ERRCODE_DATA_CORRUPTED),
			 errmsg("arm state of %zu bytes does not hold %d rows of %s", bytes, n,
					policy_ops(cfg->policy)->name),
			 errhint("Run model_select.rebuild_state() to recompute it from the reward log.")));
}

/*
 * The header checks of a stored state: a model_select state of cfg's
 * policy, dimension and layout variant, with a row count cfg allows (so
 * that body_size() of it cannot overflow).
 */
static bool
header_matches(const SelectorConfig *cfg, const StateHeader *st)
{
	return st->format == STATE_FORMAT_VERSION && st->policy == (uint16) cfg->policy &&
		st->dim == cfg->dim && st->n >= 0 && st->forgetting == state_forgetting(cfg);
}

/*
 * Is st (a whole state, as published in the shared cache) one of cfg's
 * selector: its header, row count and body size, as state_check() asks?
 */
bool
state_fits(const SelectorConfig *cfg, const StateHeader *st)
{
	return VARSIZE(st) >= STATE_HEADER_SIZE && st->magic == STATE_MAGIC && header_matches(cfg, st) &&
		st->n <= clock_ops(cfg->clock)->max_rows(cfg) &&
		(VARSIZE(st) - STATE_HEADER_SIZE) % sizeof(double) == 0 &&
		(policy_ops(cfg->policy)->dictionary
		 ? state_body_doubles(st) <= clock_ops(cfg->clock)->body_size(cfg, st->n)
		 : state_body_doubles(st) == clock_ops(cfg->clock)->body_size(cfg, st->n));
}

static StateHeader *
state_check_header(const SelectorConfig *cfg, bytea *raw)
{
	StateHeader *st = (StateHeader *) raw;

	if (VARSIZE(raw) < STATE_HEADER_SIZE || st->magic != STATE_MAGIC)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("arm state is not a model_select state"),
				 errhint("Run model_select.rebuild_state() to recompute it from the reward log.")));
	if (!header_matches(cfg, st))
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("arm state has format %d, policy %d, dimension %d; expected format %d, policy %d, dimension %d",
						st->format, st->policy, st->dim,
						STATE_FORMAT_VERSION, (int) cfg->policy, cfg->dim),
				 errhint("Run model_select.rebuild_state() to recompute it from the reward log.")));
	if (st->n > clock_ops(cfg->clock)->max_rows(cfg))
		state_size_error(cfg, VARSIZE(raw), st->n);
	return st;
}

/*
 * The stored header of a state kept by rows (state_store.c): a valid header
 * and nothing after it.
 */
StateHeader *
state_check_head(const SelectorConfig *cfg, bytea *raw)
{
	StateHeader *st = state_check_header(cfg, raw);

	if (VARSIZE(raw) != STATE_HEADER_SIZE)
		state_size_error(cfg, VARSIZE(raw), st->n);
	return st;
}

/*
 * Validate a stored state against the selector before it is used: header,
 * row count and body size, so that no byte of arm_state can make a reader
 * touch memory past the state (a dictionary policy also checks its
 * dictionary).  raw must be a detoasted, MAXALIGNed copy.
 */
StateHeader *
state_check(const SelectorConfig *cfg, bytea *raw)
{
	StateHeader *st = state_check_header(cfg, raw);
	const PolicyOps *ops = policy_ops(cfg->policy);
	const ClockOps *clock = clock_ops(cfg->clock);
	Size		want = clock->body_size(cfg, st->n);

	if ((VARSIZE(raw) - STATE_HEADER_SIZE) % sizeof(double) != 0 ||
		(ops->dictionary ? state_body_doubles(st) > want : state_body_doubles(st) != want))
		state_size_error(cfg, VARSIZE(raw), st->n);
	clock->check(cfg, st);
	return st;
}

/* GUC model_select.max_model_size, in kB */
int			max_model_size_kb = 256 * 1024;

/*
 * An arm's model at its largest (its state and, with random features, the
 * frequencies), against model_select.max_model_size: a model that no cache
 * can hold would be decoded anew, at its full cost, for every decision.
 */
static void
state_check_model_size(const SelectorConfig *cfg, const PolicyOps *ops, int32 rows)
{
	double		values = (double) clock_ops(cfg->clock)->body_size(cfg, rows);
	double		bytes;

	if (ops->random_features)
		values += (double) cfg->features * cfg->dim;
	bytes = values * sizeof(double) + STATE_HEADER_SIZE;
	if (bytes > (double) max_model_size_kb * 1024)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("an arm of a %s selector of dimension %d with these settings needs %.0f MB, more than model_select.max_model_size (%d MB)",
						ops->name, cfg->dim, bytes / 1048576.0, max_model_size_kb / 1024),
				 errhint("Lower dim, cap, window or features, or have a superuser raise model_select.max_model_size.")));
}

/*
 * Refuse (22023) a selector whose largest state, or the largest square
 * matrix its policy forms while learning (the p × p Gram matrix of a linear
 * model, the n × n kernel matrix of a cmm spectrum or a bkb dictionary),
 * would not fit in one allocation: at create and alter, not at the first
 * reward.
 */
void
state_check_limits(const SelectorConfig *cfg)
{
	const PolicyOps *ops = policy_ops(cfg->policy);
	const ClockOps *clock = clock_ops(cfg->clock);
	int32		rows = clock->max_rows(cfg);
	double		side = 0;
	double		need;

	/*
	 * an arm that keeps its rows holds at most cap of them, so its state
	 * could not tell when a longer restart period ends
	 */
	if (ops->keeps_rows && !clock->ages && cfg->restart_every > cfg->cap)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("restart_every %d exceeds cap %d of a %s selector",
						cfg->restart_every, cfg->cap, ops->name),
				 errhint("Set restart_every to at most cap, or raise cap.")));
	if (rows == PG_INT32_MAX)
		rows = 0;
	if (ops->dictionary || (ops->keeps_rows && cfg->confidence == CONFIDENCE_CMM))
		side = rows;
	else if (ops->uses_context && !ops->keeps_rows)
		side = policy_linear_feature_count(cfg);
	/* each is one allocation */
	need = Max((double) clock->body_size(cfg, rows) + STATE_HEADER_SIZE / sizeof(double),
			   side * side);
	if (need * sizeof(double) > MaxAllocSize)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("a %s selector of dimension %d with these settings needs blocks of %.0f MB",
						ops->name, cfg->dim, need * sizeof(double) / 1048576.0),
				 errhint("Lower dim, cap, window, features or the number of grid values: at most %zu MB fit.",
						 MaxAllocSize / 1048576)));
	state_check_model_size(cfg, ops, rows);
}
