/*
 * policy_lin.c — ridge regression UCB on a feature vector per arm:
 *
 *   lin_ucb  z = [x ; √intercept]     (disjoint LinUCB; equals pak_ucb with
 *                                      the linear kernel, spec/000.md §3.3)
 *   rff_ucb  z = [φ(x) ; √intercept]  (RFF-UCB, spec/000.md §2.5–2.7, with the
 *                                      random Fourier features of features.c)
 *
 *   A = αI + Σ z zᵀ,  b = Σ r z,  mean = zᵀ A⁻¹ b,  width = |L⁻¹ z|
 *
 * The state keeps the Cholesky factor L of A, updated by a rank-1 update in
 * O(p²) per reward: its size does not grow with the number of rewards.
 * build() forms A with one BLAS-3 product and factorises it with LAPACK.
 */
#include "postgres.h"

#include <math.h>

#include <cblas.h>

#include "features.h"
#include "linalg.h"
#include "state.h"

struct ArmModel
{
	int			p;
	const double *L;
	double	   *theta;			/* A⁻¹ b */
	double	   *scratch;
};

#define LIN_BODY(p) (PACKED_SIZE(p) + (p))

/* Length of the feature vector z. */
static int
feature_count(const SelectorConfig *cfg)
{
	return (cfg->policy == POLICY_RFF_UCB ? 2 * cfg->features : cfg->dim) + 1;
}

static void
features(const SelectorConfig *cfg, const double *x, double *z)
{
	int			p = feature_count(cfg);

	if (cfg->policy == POLICY_RFF_UCB)
		rff_features(cfg, x, z);
	else
		memcpy(z, x, sizeof(double) * cfg->dim);
	z[p - 1] = sqrt(cfg->intercept);
}

static double *
lin_factor(const StateHeader *st)
{
	return (double *) STATE_BODY(st);
}

static double *
lin_rhs(const StateHeader *st, int p)
{
	return (double *) STATE_BODY(st) + PACKED_SIZE(p);
}

static StateHeader *
lin_build(const SelectorConfig *cfg, int n, const double *X, const double *r)
{
	int			p = feature_count(cfg);
	StateHeader *st = state_alloc(cfg, n, LIN_BODY(p));
	double	   *Z = palloc(sizeof(double) * (Size) Max(n, 1) * p);

	for (int t = 0; t < n; t++)
		features(cfg, X + (Size) t * cfg->dim, Z + (Size) t * p);
	chol_gram_packed(n, p, Z, cfg->alpha, lin_factor(st));
	if (n > 0)
		cblas_dgemv(CblasRowMajor, CblasTrans, n, p, 1.0, Z, p, r, 1, 0.0, lin_rhs(st, p), 1);
	pfree(Z);
	return st;
}

static StateHeader *
lin_append(const SelectorConfig *cfg, const StateHeader *old, const double *x, double r)
{
	int			p = feature_count(cfg);
	StateHeader *st;
	double	   *z = palloc(sizeof(double) * p);
	double	   *b;

	/* the state's size does not depend on n: update in place */
	st = old != NULL ? (StateHeader *) old : lin_build(cfg, 0, NULL, NULL);
	st->n++;
	features(cfg, x, z);
	b = lin_rhs(st, p);
	for (int i = 0; i < p; i++)
		b[i] += r * z[i];
	chol_rank1_update(p, lin_factor(st), z);
	pfree(z);
	return st;
}

static ArmModel *
lin_decode(const SelectorConfig *cfg, const StateHeader *st)
{
	ArmModel   *m = palloc(sizeof(ArmModel));
	int			p = feature_count(cfg);

	if (state_body_doubles(st) != LIN_BODY(p))
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("%s state has the wrong size for %d features", policy_name(cfg->policy), p)));
	m->p = p;
	m->L = lin_factor(st);
	m->theta = palloc(sizeof(double) * p);
	memcpy(m->theta, lin_rhs(st, p), sizeof(double) * p);
	chol_solve(p, m->L, m->theta);
	m->scratch = palloc(sizeof(double) * p);
	return m;
}

static void
lin_score(const SelectorConfig *cfg, const ArmModel *m, const double *x,
		  double *mean, double *width)
{
	double	   *z = m->scratch;

	features(cfg, x, z);
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

const PolicyOps rff_ucb_ops = {
	.build = lin_build,
	.append = lin_append,
	.decode = lin_decode,
	.score = lin_score,
};
