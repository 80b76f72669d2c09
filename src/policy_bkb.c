/*
 * policy_bkb.c — placeholder until the bkb policy lands: every entry point
 * refuses with a clear error.
 */
#include "postgres.h"

#include "state.h"

static StateHeader *
bkb_unavailable(void)
{
	ereport(ERROR,
			(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
			 errmsg("policy bkb is not available in this build")));
	pg_unreachable();
}

static StateHeader *
bkb_build(const SelectorConfig *cfg, int n, const double *X, const double *r)
{
	return bkb_unavailable();
}

static StateHeader *
bkb_append(const SelectorConfig *cfg, const StateHeader *old, const double *x, double r)
{
	return bkb_unavailable();
}

static ArmModel *
bkb_decode(const SelectorConfig *cfg, const StateHeader *st)
{
	bkb_unavailable();
	return NULL;
}

static void
bkb_score(const SelectorConfig *cfg, const ArmModel *model, const double *x,
		  double *mean, double *width)
{
	bkb_unavailable();
}

const PolicyOps bkb_ops = {
	.build = bkb_build,
	.append = bkb_append,
	.decode = bkb_decode,
	.score = bkb_score,
};
