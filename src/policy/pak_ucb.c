/*
 * pak_ucb.c — pak_ucb: exact per-arm kernel ridge regression UCB
 * (PAK-UCB, spec/000.md §2.3–2.4).
 *
 *   mean  = k'ᵀ (K' + αI)⁻¹ v
 *   width = α^(-1/2) sqrt(k'(y,y) − k'ᵀ (K' + αI)⁻¹ k')
 *
 * The state keeps the Cholesky factor L of K' + αI; a reward appends one row
 * to it in O(n² + n·dim) and is never refactorised.  build() factorises the
 * whole matrix with LAPACK instead, so comparing the two checks the append.
 * With confidence dmm the state keeps one factor per grid regulariser
 * (confidence.c), each appended the same way; cmm decodes through an
 * eigendecomposition (spectral.c).
 */
#include "postgres.h"

#include <math.h>

#include "math/confidence.h"
#include "math/kernel.h"
#include "math/linalg.h"
#include "core/state.h"
#include "policy/registry.h"

struct ArmModel
{
	int			n;
	const double *X;
	FactorSet	factors;
	const double *L[MAX_GRID + 1];	/* factor of K' + α_f I */
	double	   *weights[MAX_GRID + 1];	/* (K' + α_f I)⁻¹ v */
	ArmBounds	bounds;
	Spectrum   *spectrum;		/* cmm */
	double	   *sqnorms;
	double	   *k;				/* per context: k'(X, x) */
	double	   *scratch;
};

/* One context being scored: what pak_eval needs besides the factor. */
typedef struct PakQuery
{
	const ArmModel *model;
	double		kself;
} PakQuery;

#define PAK_BODY(n, dim, nf) ((Size) (n) * (dim) + (n) + (Size) (nf) * PACKED_SIZE(n))
#define PAK_X(st) STATE_BODY(st)
#define PAK_V(st) (PAK_X(st) + (Size) (st)->n * (st)->dim)
#define PAK_L(st, f) (PAK_V(st) + (st)->n + (Size) (f) * PACKED_SIZE((st)->n))

static int
factor_count(const SelectorConfig *cfg)
{
	FactorSet	fs;

	confidence_factors(cfg, &fs);
	return fs.count;
}

static Size
pak_body(const SelectorConfig *cfg, int n)
{
	return PAK_BODY(n, cfg->dim, factor_count(cfg));
}

/*
 * The ridge term of row i of n: α, or with a discount α·γ^-(age) where the
 * newest row has age 0 (weighted GP-UCB: a row of weight w is noise α/w).
 */
static double
pak_ridge(const SelectorConfig *cfg, int i, int n)
{
	double		alpha = confidence_base_alpha(cfg);

	return cfg->discount < 1 ? alpha * pow(cfg->discount, -(double) (n - 1 - i)) : alpha;
}

static StateHeader *
pak_build(const SelectorConfig *cfg, int n, const double *X, const double *r)
{
	StateHeader *st;
	FactorSet	fs;
	int			skip = n - Min(n, Min(discount_horizon(cfg), cfg->cap));

	/* rows too old to matter under a discount, and past the cap, are dropped */
	X += (Size) skip * cfg->dim;
	r += skip;
	n -= skip;
	confidence_factors(cfg, &fs);
	st = state_alloc(cfg, n, PAK_BODY(n, cfg->dim, fs.count));
	memcpy(PAK_X(st), X, sizeof(double) * n * cfg->dim);
	memcpy(PAK_V(st), r, sizeof(double) * n);
	for (int i = 0; i < n; i++)
	{
		double	   *row = PAK_L(st, 0) + PACKED_ROW(i);

		kernel_vector(cfg, i + 1, X, NULL, X + (Size) i * cfg->dim, row);
		row[i] += pak_ridge(cfg, i, n);
	}
	/* the other factors differ by their ridge only */
	for (int f = 1; f < fs.count; f++)
		chol_factor_shifted(n, PAK_L(st, 0), fs.alpha[f] - fs.alpha[0], fs.alpha[f], PAK_L(st, f));
	chol_factor_packed(n, PAK_L(st, 0), fs.alpha[0]);
	return st;
}

/* The state without its oldest row: a rank-1 update of the trailing factor. */
static StateHeader *
pak_drop_oldest(const SelectorConfig *cfg, const StateHeader *old)
{
	int			n = old->n;
	int			nf = factor_count(cfg);
	StateHeader *st = state_alloc(cfg, n - 1, PAK_BODY(n - 1, cfg->dim, nf));

	memcpy(PAK_X(st), PAK_X(old) + cfg->dim, sizeof(double) * (n - 1) * cfg->dim);
	memcpy(PAK_V(st), PAK_V(old) + 1, sizeof(double) * (n - 1));
	for (int f = 0; f < nf; f++)
		chol_drop_first(n, PAK_L(old, f), PAK_L(st, f));
	return st;
}

/* With a discount every weight changes: refactorise the kept rows and the new one. */
static StateHeader *
pak_append_discounted(const SelectorConfig *cfg, const StateHeader *old, const double *x, double r)
{
	int			n = old ? old->n : 0;
	double	   *X = palloc(sizeof(double) * (Size) (n + 1) * cfg->dim);
	double	   *v = palloc(sizeof(double) * (n + 1));
	StateHeader *st;

	if (n > 0)
	{
		memcpy(X, PAK_X(old), sizeof(double) * (Size) n * cfg->dim);
		memcpy(v, PAK_V(old), sizeof(double) * n);
	}
	memcpy(X + (Size) n * cfg->dim, x, sizeof(double) * cfg->dim);
	v[n] = r;
	st = pak_build(cfg, n + 1, X, v);
	pfree(X);
	pfree(v);
	return st;
}

static StateHeader *
pak_append(const SelectorConfig *cfg, const StateHeader *old, const double *x, double r)
{
	int			n;
	StateHeader *st;
	FactorSet	fs;
	double	   *b;
	double		kself;

	if (cfg->discount < 1)
		return pak_append_discounted(cfg, old, x, r);
	/*
	 * A full window first forgets its oldest row (SW-GP-UCB, spec/002 §2.4);
	 * so does an arm holding `cap` rewards: it keeps the newest cap.
	 */
	if (old != NULL && ((cfg->window > 0 && old->n >= cfg->window) || old->n >= cfg->cap))
		old = pak_drop_oldest(cfg, old);
	n = old ? old->n : 0;
	confidence_factors(cfg, &fs);
	st = state_alloc(cfg, n + 1, PAK_BODY(n + 1, cfg->dim, fs.count));
	if (n > 0)
	{
		memcpy(PAK_X(st), PAK_X(old), sizeof(double) * n * cfg->dim);
		memcpy(PAK_V(st), PAK_V(old), sizeof(double) * n);
	}
	memcpy(PAK_X(st) + (Size) n * cfg->dim, x, sizeof(double) * cfg->dim);
	PAK_V(st)[n] = r;

	b = palloc(sizeof(double) * Max(n, 1));
	kernel_vector(cfg, n, PAK_X(st), NULL, x, b);
	kself = kernel_self(cfg, x);
	for (int f = 0; f < fs.count; f++)
	{
		if (n > 0)
			memcpy(PAK_L(st, f), PAK_L(old, f), sizeof(double) * PACKED_SIZE(n));
		chol_append_row(n, PAK_L(st, f), b, kself + fs.alpha[f], fs.alpha[f]);
	}
	pfree(b);
	return st;
}

static ArmModel *
pak_decode(const SelectorConfig *cfg, const StateHeader *st)
{
	ArmModel   *m = palloc0(sizeof(ArmModel));
	int			n = st->n;

	confidence_factors(cfg, &m->factors);
	m->n = n;
	m->X = PAK_X(st);
	if (cfg->confidence == CONFIDENCE_CMM)
		m->spectrum = spectrum_kernel(cfg, n, m->X, PAK_V(st));
	else
	{
		double		quad[MAX_GRID + 1];

		for (int f = 0; f < m->factors.count; f++)
		{
			m->L[f] = PAK_L(st, f);
			m->weights[f] = palloc(sizeof(double) * Max(n, 1));
			memcpy(m->weights[f], PAK_V(st), sizeof(double) * n);
			chol_solve(n, m->L[f], m->weights[f]);
			quad[f] = m->factors.alpha[f] * dot(n, PAK_V(st), m->weights[f]);
		}
		/* ln det(I + K'/α) = ln det((K' + αI)/α) */
		confidence_bounds(cfg, n, &m->factors,
						  chol_log_det_scaled(n, m->L[0], m->factors.alpha[0]), quad, &m->bounds);
	}
	m->sqnorms = palloc(sizeof(double) * Max(n, 1));
	row_sqnorms(n, cfg->dim, m->X, m->sqnorms);
	m->k = palloc(sizeof(double) * Max(n, 1));
	m->scratch = palloc(sizeof(double) * Max(n, 1));
	return m;
}

/* Mean and width of the context in q->model->k under factor f. */
static void
pak_eval(const void *query, int f, double alpha, double *mean, double *width)
{
	const PakQuery *q = query;
	const ArmModel *m = q->model;
	double		var;

	*mean = dot(m->n, m->k, m->weights[f]);
	memcpy(m->scratch, m->k, sizeof(double) * m->n);
	chol_forward(m->n, m->L[f], m->scratch);
	var = (q->kself - dot(m->n, m->scratch, m->scratch)) / alpha;
	*width = sqrt(Max(var, 0.0));
}

static void
pak_score(const SelectorConfig *cfg, const ArmModel *m, const double *x, ArmScore *out)
{
	PakQuery	q = {m, kernel_self(cfg, x)};

	kernel_vector(cfg, m->n, m->X, m->sqnorms, x, m->k);
	if (m->spectrum != NULL)
		spectrum_score(cfg, m->spectrum, m->k, q.kself, out);
	else
		confidence_pick(&m->bounds, pak_eval, &q, out);
}

/*
 * pak_score for a block of m contexts: the kernel block k'(X_arm, x_t) by one
 * GEMM, then per candidate factor the means and widths of the whole block by
 * one TRSM.
 */
static void
pak_score_block(const SelectorConfig *cfg, const ArmModel *m, int nrows, const double *X,
				void **shared, ArmScore *out)
{
	int			n = m->n;
	double	   *K = palloc(sizeof(double) * (Size) nrows * Max(n, 1));
	double	   *kself = palloc(sizeof(double) * nrows);
	double	   *means = palloc(sizeof(double) * nrows);
	double	   *sqnorms = palloc(sizeof(double) * nrows);

	for (int t = 0; t < nrows; t++)
		kself[t] = kernel_self(cfg, X + (Size) t * cfg->dim);
	kernel_block(cfg, n, m->X, m->sqnorms, nrows, X, K);
	if (m->spectrum != NULL)
	{
		for (int t = 0; t < nrows; t++)
			spectrum_score(cfg, m->spectrum, K + (Size) t * n, kself[t], &out[t]);
		return;
	}
	for (int i = 0; i < m->bounds.count; i++)
	{
		int			f = m->bounds.factor[i];
		double		alpha = m->bounds.alpha[i];

		chol_forward_block(n, m->L[f], m->weights[f], nrows, K, means, sqnorms);
		for (int t = 0; t < nrows; t++)
		{
			double		var = (kself[t] - sqnorms[t]) / alpha;

			confidence_consider(&m->bounds, i, means[t], sqrt(Max(var, 0.0)), &out[t]);
		}
	}
}

const PolicyOps pak_ucb_ops = {
	.name = "pak_ucb", .kind = POLICY_PAK_UCB,
	.uses_context = true, .kernels = KERNELS_ALL, .bounds = BOUNDS_CHOICE,
	.keeps_rows = true, .forgets = FORGETS_ALL,
	POLICY_FUNCTIONS(pak), .score_block = pak_score_block,
};
