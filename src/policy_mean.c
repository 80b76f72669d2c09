/*
 * policy_mean.c — context-free baselines `greedy` and `random`: the state is
 * the sum of the arm's rewards; the score is the running mean, width 0.
 * (`random` ignores scores and picks by a seeded hash, see select.c.)
 */
#include "postgres.h"

#include "state.h"

struct ArmModel
{
	double		mean;
};

static StateHeader *
mean_build(const SelectorConfig *cfg, int n, const double *X, const double *r)
{
	StateHeader *st = state_alloc(cfg, n, 1);

	for (int i = 0; i < n; i++)
		STATE_BODY(st)[0] += r[i];
	return st;
}

static StateHeader *
mean_append(const SelectorConfig *cfg, const StateHeader *old, const double *x, double r)
{
	StateHeader *st = state_alloc(cfg, old ? old->n + 1 : 1, 1);

	STATE_BODY(st)[0] = (old ? STATE_BODY(old)[0] : 0.0) + r;
	return st;
}

static ArmModel *
mean_decode(const SelectorConfig *cfg, const StateHeader *st)
{
	ArmModel   *m = palloc(sizeof(ArmModel));

	if (state_body_doubles(st) != 1)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("%s state has the wrong size", policy_name(cfg->policy))));
	m->mean = st->n > 0 ? STATE_BODY(st)[0] / st->n : 0.0;
	return m;
}

static void
mean_score(const SelectorConfig *cfg, const ArmModel *m, const double *x,
		   double *mean, double *width)
{
	*mean = m->mean;
	*width = 0.0;
}

const PolicyOps mean_ops = {
	.build = mean_build,
	.append = mean_append,
	.decode = mean_decode,
	.score = mean_score,
};
