/*
 * mean.c — context-free baselines `greedy` and `random`: the score is
 * the arm's mean reward, width 0.  (`random` ignores scores and picks by a
 * seeded hash, see decide.c.)
 *
 * Body: the sum of rewards (1 value); with a window, the held rewards
 * (n of them); with a discount, Σγ^age r and Σγ^age (2 values).
 */
#include "postgres.h"

#include <math.h>

#include "utils/float.h"

#include "model/state.h"
#include "model/registry.h"

struct ArmModel
{
	double		mean;
};

static Size
mean_body(const SelectorConfig *cfg, int n)
{
	if (cfg->window > 0)
		return n;
	return cfg->discount < 1 ? 2 : 1;
}

/* With weights w (NULL: γ^age by position) under a discount: Σ w r and Σ w. */
static StateHeader *
mean_build_weighted(const SelectorConfig *cfg, int n, const double *X, const double *r,
					const double *w)
{
	StateHeader *st = state_alloc(cfg, n, mean_body(cfg, n));
	double	   *body = STATE_BODY(st);

	if (cfg->window > 0)
		memcpy(body, r, sizeof(double) * n);
	else if (cfg->discount < 1 && w != NULL)
		for (int i = 0; i < n; i++)
		{
			body[0] += w[i] * r[i];
			body[1] += w[i];
		}
	else if (cfg->discount < 1)
		for (int i = 0; i < n; i++)
		{
			body[0] = cfg->discount * body[0] + r[i];
			body[1] = cfg->discount * body[1] + 1.0;
		}
	else
		for (int i = 0; i < n; i++)
			body[0] += r[i];
	return st;
}

static StateHeader *
mean_build(const SelectorConfig *cfg, int n, const double *X, const double *r)
{
	return mean_build_weighted(cfg, n, X, r, NULL);
}

static StateHeader *
mean_append(const SelectorConfig *cfg, const StateHeader *old, const double *x, double r)
{
	int			n = old ? old->n : 0;
	StateHeader *st;
	double	   *body;

	if (cfg->window > 0)
	{
		/* the newest min(n + 1, window) rewards */
		int			keep = Min(n, cfg->window - 1);

		st = state_alloc(cfg, keep + 1, mean_body(cfg, keep + 1));
		if (keep > 0)
			memcpy(STATE_BODY(st), STATE_BODY(old) + (n - keep), sizeof(double) * keep);
		STATE_BODY(st)[keep] = r;
		return st;
	}
	st = state_alloc(cfg, n + 1, mean_body(cfg, n + 1));
	body = STATE_BODY(st);
	if (old != NULL)
		memcpy(body, STATE_BODY(old), sizeof(double) * mean_body(cfg, n));
	if (cfg->discount < 1)
	{
		body[0] = cfg->discount * body[0] + r;
		body[1] = cfg->discount * body[1] + 1.0;
	}
	else
		body[0] += r;
	return st;
}

static ArmModel *
mean_decode(const SelectorConfig *cfg, const StateHeader *st)
{
	ArmModel   *m = palloc(sizeof(ArmModel));
	const double *body = STATE_BODY(st);

	m->mean = 0.0;
	if (st->n == 0)
		return m;
	if (cfg->window > 0)
	{
		for (int i = 0; i < st->n; i++)
			m->mean += body[i];
		m->mean /= st->n;
	}
	else
		m->mean = cfg->discount < 1 ? body[0] / body[1] : body[0] / st->n;
	return m;
}

static void
mean_score(const SelectorConfig *cfg, const ArmModel *m, const double *x, ArmScore *out)
{
	out->mean = m->mean;
	out->width = 0.0;
	out->radius = 0.0;
	out->alpha = get_float8_nan();
}

const PolicyOps greedy_ops = {
	.name = "greedy", .kind = POLICY_GREEDY, .forgets = FORGETS_ALL,
	POLICY_FUNCTIONS(mean), .build_weighted = mean_build_weighted,
};

/* Learns the same means as greedy (reported by scores()) but ignores them. */
const PolicyOps random_ops = {
	.name = "random", .kind = POLICY_RANDOM, .picks_at_random = true,
	POLICY_FUNCTIONS(mean),
};
