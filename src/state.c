/*
 * state.c — allocation and checking of the versioned state layout
 * (see state.h), and the policy dispatch table.
 */
#include "postgres.h"

#include "utils/memutils.h"

#include "state.h"

const PolicyOps *
policy_ops(PolicyKind policy)
{
	switch (policy)
	{
		case POLICY_PAK_UCB:
			return &pak_ucb_ops;
		case POLICY_LIN_UCB:
			return &lin_ucb_ops;
		case POLICY_GREEDY:
		case POLICY_RANDOM:
			return &mean_ops;
		case POLICY_RFF_UCB:
			return &rff_ucb_ops;
		case POLICY_BKB:
			return &bkb_ops;
		default:
			elog(ERROR, "unknown policy %d", (int) policy);
	}
	pg_unreachable();
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
	return st;
}

Size
state_body_doubles(const StateHeader *st)
{
	return (VARSIZE(st) - STATE_HEADER_SIZE) / sizeof(double);
}

/*
 * Validate a stored state against the selector before it is used; raw must
 * be a detoasted, MAXALIGNed copy (the body is read as doubles).
 */
StateHeader *
state_check(const SelectorConfig *cfg, bytea *raw)
{
	StateHeader *st = (StateHeader *) raw;

	if (VARSIZE(raw) < STATE_HEADER_SIZE || st->magic != STATE_MAGIC)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("arm state is not a model_select state"),
				 errhint("Run model_select.rebuild_state() to recompute it from the reward log.")));
	if (st->format != STATE_FORMAT_VERSION || st->policy != (uint16) cfg->policy ||
		st->dim != cfg->dim || st->n < 0)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("arm state has format %d, policy %d, dimension %d; expected format %d, policy %d, dimension %d",
						st->format, st->policy, st->dim,
						STATE_FORMAT_VERSION, (int) cfg->policy, cfg->dim),
				 errhint("Run model_select.rebuild_state() to recompute it from the reward log.")));
	return st;
}
