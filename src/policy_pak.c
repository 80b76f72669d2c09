/*
 * policy_pak.c — pak_ucb: exact per-arm kernel ridge regression UCB
 * (PAK-UCB, spec/000.md §2.3–2.4).
 *
 *   mean  = k'ᵀ (K' + αI)⁻¹ v
 *   width = α^(-1/2) sqrt(k'(y,y) − k'ᵀ (K' + αI)⁻¹ k')
 *
 * The state keeps the Cholesky factor L of K' + αI; a reward appends one row
 * to it in O(n² + n·dim) and is never refactorised.  build() factorises the
 * whole matrix with LAPACK instead, so comparing the two checks the append.
 */
#include "postgres.h"

#include <math.h>

#include "kernel.h"
#include "linalg.h"
#include "state.h"

struct ArmModel
{
	int			n;
	const double *X;
	const double *L;
	double	   *weights;		/* (K' + αI)⁻¹ v */
	double	   *sqnorms;
	double	   *scratch;
};

#define PAK_BODY(n, dim) ((Size) (n) * (dim) + (n) + PACKED_SIZE(n))
#define PAK_X(st) STATE_BODY(st)
#define PAK_V(st) (PAK_X(st) + (Size) (st)->n * (st)->dim)
#define PAK_L(st) (PAK_V(st) + (st)->n)

static void
pak_check_cap(const SelectorConfig *cfg, int n)
{
	if (n > cfg->cap)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("arm would hold %d rewards, more than the selector's cap of %d", n, cfg->cap),
				 errdetail("pak_ucb keeps every reward of an arm; its state grows as n²."),
				 errhint("Raise the \"cap\" setting (up to 10000), or use lin_ucb for unbounded streams.")));
}

/*
 * The ridge term of row i of n: α, or with a discount α·γ^-(age) where the
 * newest row has age 0 (weighted GP-UCB: a row of weight w is noise α/w).
 */
static double
pak_ridge(const SelectorConfig *cfg, int i, int n)
{
	return cfg->discount < 1 ? cfg->alpha * pow(cfg->discount, -(double) (n - 1 - i)) : cfg->alpha;
}

static StateHeader *
pak_build(const SelectorConfig *cfg, int n, const double *X, const double *r)
{
	StateHeader *st;
	double	   *L;
	int			skip = n - Min(n, discount_horizon(cfg));

	/* with a discount, rows too old to matter are dropped */
	X += (Size) skip * cfg->dim;
	r += skip;
	n -= skip;
	pak_check_cap(cfg, n);
	st = state_alloc(cfg, n, PAK_BODY(n, cfg->dim));
	memcpy(PAK_X(st), X, sizeof(double) * n * cfg->dim);
	memcpy(PAK_V(st), r, sizeof(double) * n);
	L = PAK_L(st);
	for (int i = 0; i < n; i++)
	{
		double	   *row = L + PACKED_ROW(i);

		kernel_vector(cfg, i + 1, X, NULL, X + (Size) i * cfg->dim, row);
		row[i] += pak_ridge(cfg, i, n);
	}
	chol_factor_packed(n, L);
	return st;
}

/* The state without its oldest row: a rank-1 update of the trailing factor. */
static StateHeader *
pak_drop_oldest(const SelectorConfig *cfg, const StateHeader *old)
{
	int			n = old->n;
	StateHeader *st = state_alloc(cfg, n - 1, PAK_BODY(n - 1, cfg->dim));

	memcpy(PAK_X(st), PAK_X(old) + cfg->dim, sizeof(double) * (n - 1) * cfg->dim);
	memcpy(PAK_V(st), PAK_V(old) + 1, sizeof(double) * (n - 1));
	chol_drop_first(n, PAK_L(old), PAK_L(st));
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
	double	   *b;

	if (cfg->discount < 1)
		return pak_append_discounted(cfg, old, x, r);
	/* a full window first forgets its oldest row (SW-GP-UCB, spec/002 §2.4) */
	if (old != NULL && cfg->window > 0 && old->n >= cfg->window)
		old = pak_drop_oldest(cfg, old);
	n = old ? old->n : 0;
	pak_check_cap(cfg, n + 1);
	st = state_alloc(cfg, n + 1, PAK_BODY(n + 1, cfg->dim));
	if (n > 0)
	{
		memcpy(PAK_X(st), PAK_X(old), sizeof(double) * n * cfg->dim);
		memcpy(PAK_V(st), PAK_V(old), sizeof(double) * n);
		memcpy(PAK_L(st), PAK_L(old), sizeof(double) * PACKED_SIZE(n));
	}
	memcpy(PAK_X(st) + (Size) n * cfg->dim, x, sizeof(double) * cfg->dim);
	PAK_V(st)[n] = r;

	b = palloc(sizeof(double) * Max(n, 1));
	kernel_vector(cfg, n, PAK_X(st), NULL, x, b);
	chol_append_row(n, PAK_L(st), b, kernel_self(cfg, x) + cfg->alpha, cfg->alpha);
	pfree(b);
	return st;
}

static ArmModel *
pak_decode(const SelectorConfig *cfg, const StateHeader *st)
{
	ArmModel   *m = palloc(sizeof(ArmModel));
	int			n = st->n;

	if (state_body_doubles(st) != PAK_BODY(n, cfg->dim))
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("pak_ucb state has the wrong size for n = %d", n)));
	m->n = n;
	m->X = PAK_X(st);
	m->L = PAK_L(st);
	m->weights = palloc(sizeof(double) * Max(n, 1));
	memcpy(m->weights, PAK_V(st), sizeof(double) * n);
	chol_solve(n, m->L, m->weights);
	m->sqnorms = palloc(sizeof(double) * Max(n, 1));
	row_sqnorms(n, cfg->dim, m->X, m->sqnorms);
	m->scratch = palloc(sizeof(double) * Max(n, 1));
	return m;
}

static void
pak_score(const SelectorConfig *cfg, const ArmModel *m, const double *x,
		  double *mean, double *width)
{
	double	   *k = m->scratch;
	double		var;

	kernel_vector(cfg, m->n, m->X, m->sqnorms, x, k);
	*mean = dot(m->n, k, m->weights);
	chol_forward(m->n, m->L, k);
	var = (kernel_self(cfg, x) - dot(m->n, k, k)) / cfg->alpha;
	*width = sqrt(Max(var, 0.0));
}

const PolicyOps pak_ucb_ops = {
	.build = pak_build,
	.append = pak_append,
	.decode = pak_decode,
	.score = pak_score,
};
