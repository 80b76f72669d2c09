/*
 * policy_lin.c — lin_ucb: per-arm ridge regression on the embedding with a
 * bias feature, z = [x ; sqrt(intercept)] (disjoint LinUCB; equal to pak_ucb
 * with the linear kernel, spec/000.md §3.3).
 *
 *   A = αI + Σ z zᵀ,  b = Σ r z,  mean = zᵀ A⁻¹ b,  width = |L⁻¹ z|
 *
 * The state keeps the Cholesky factor L of A, updated by a rank-1 update in
 * O(dim²) per reward; build() factorises A from scratch with LAPACK.
 */
#include "postgres.h"

#include <math.h>

#include "linalg.h"
#include "state.h"

struct ArmModel
{
	int			p;
	const double *L;
	double	   *theta;			/* A⁻¹ b */
	double	   *scratch;
};

#define LIN_P(cfg) ((cfg)->dim + 1)
#define LIN_BODY(p) (PACKED_SIZE(p) + (p))
#define LIN_L(st) STATE_BODY(st)
#define LIN_B(st) (LIN_L(st) + PACKED_SIZE((st)->dim + 1))

static void
lin_features(const SelectorConfig *cfg, const double *x, double *z)
{
	memcpy(z, x, sizeof(double) * cfg->dim);
	z[cfg->dim] = sqrt(cfg->intercept);
}

static StateHeader *
lin_build(const SelectorConfig *cfg, int n, const double *X, const double *r)
{
	int			p = LIN_P(cfg);
	StateHeader *st = state_alloc(cfg, n, LIN_BODY(p));
	double	   *A = LIN_L(st);
	double	   *b = LIN_B(st);
	double	   *z = palloc(sizeof(double) * p);

	for (int i = 0; i < p; i++)
		A[PACKED_ROW(i) + i] = cfg->alpha;
	for (int t = 0; t < n; t++)
	{
		lin_features(cfg, X + (Size) t * cfg->dim, z);
		for (int i = 0; i < p; i++)
		{
			for (int j = 0; j <= i; j++)
				A[PACKED_ROW(i) + j] += z[i] * z[j];
			b[i] += r[t] * z[i];
		}
	}
	chol_factor_packed(p, A);
	pfree(z);
	return st;
}

static StateHeader *
lin_append(const SelectorConfig *cfg, const StateHeader *old, const double *x, double r)
{
	int			p = LIN_P(cfg);
	StateHeader *st;
	double	   *z = palloc(sizeof(double) * p);

	if (old == NULL)
		st = lin_build(cfg, 0, NULL, NULL);
	else
	{
		st = (StateHeader *) palloc(VARSIZE(old));
		memcpy(st, old, VARSIZE(old));
	}
	st->n++;
	lin_features(cfg, x, z);
	for (int i = 0; i < p; i++)
		LIN_B(st)[i] += r * z[i];
	chol_rank1_update(p, LIN_L(st), z);
	pfree(z);
	return st;
}

static ArmModel *
lin_decode(const SelectorConfig *cfg, const StateHeader *st)
{
	ArmModel   *m = palloc(sizeof(ArmModel));
	int			p = LIN_P(cfg);

	if (state_body_doubles(st) != LIN_BODY(p))
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("lin_ucb state has the wrong size for dimension %d", cfg->dim)));
	m->p = p;
	m->L = LIN_L(st);
	m->theta = palloc(sizeof(double) * p);
	memcpy(m->theta, LIN_B(st), sizeof(double) * p);
	chol_solve(p, m->L, m->theta);
	m->scratch = palloc(sizeof(double) * p);
	return m;
}

static void
lin_score(const SelectorConfig *cfg, const ArmModel *m, const double *x,
		  double *mean, double *width)
{
	double	   *z = m->scratch;

	lin_features(cfg, x, z);
	*mean = dot(m->p, z, m->theta);
	chol_forward(m->p, m->L, z);
	*width = sqrt(dot(m->p, z, z));
}

const PolicyOps lin_ucb_ops = {
	.build = lin_build,
	.append = lin_append,
	.decode = lin_decode,
	.score = lin_score,
};
