/*
 * lin_fold.c — the folds of lin_ucb's and rff_ucb's state (policy/lin_state.h):
 * from scratch (build: a Gram matrix and its factor, linalg.c), one
 * reward at a time (append: rank-1 updates, a window's downdates, a
 * discount's sums) and several at once (append_rows: the learner's, with
 * the bits of one at a time).
 */
#include "postgres.h"

#include <math.h>

#include "math/elementary.h"
#include "math/vecops.h"
#include "model/codebook.h"
#include "policy/lin_state.h"

/*
 * The features after the policy's of a prepared context x: its codebook
 * one-hot, the intercept.  With a fitted codebook the regions' offsets carry
 * each arm's level, and the policy's features are scaled by
 * 1/√codebook_shrink: a ridge codebook_shrink·alpha on the slope within the
 * regions, where alpha alone lets the slope chase the warm rows (on RouterDC
 * warm 1,000 goes from +0.0203 to +0.0240 over 70 orders with 5).
 */
void
lin_features_after(const SelectorConfig *cfg, const double *x, double *z)
{
	int			p = lin_feature_count(cfg);
	int			own = p - 1 - cfg->codebook;

	codebook_features(cfg, x, z + own);
	z[p - 1] = sqrt(cfg->intercept);
	if (cfg->centroids != NULL && cfg->codebook_shrink != 1)
	{
		double		scale = 1.0 / sqrt(cfg->codebook_shrink);

		/* the embedding's features; the tags' (the last of own) are offsets like the regions' */
		for (int j = 0; j < own - cfg->tag_buckets; j++)
			z[j] *= scale;
	}
}

void
lin_features(const SelectorConfig *cfg, const double *x, double *z)
{
	policy_features(cfg, x, z);
	lin_features_after(cfg, x, z);
}

Size
lin_body(const SelectorConfig *cfg, int n)
{
	FactorSet	fs;
	Size		extra = 0;

	if (cfg->confidence != CONFIDENCE_FIXED)
	{
		confidence_factors(cfg, &fs);
		extra = 1 + (Size) (fs.count - 1) * PACKED_SIZE(lin_feature_count(cfg));
	}
	if (cfg->learns_cost)
		extra += LIN_COST_SUMS(lin_feature_count(cfg));
	return lin_head(cfg, lin_feature_count(cfg)) + (cfg->window > 0 ? (Size) n * (cfg->row_dim + 1) : 0) + extra;
}

double *
lin_cost_sums(const SelectorConfig *cfg, const StateHeader *st, int p)
{
	Assert(cfg->learns_cost);
	return (double *) STATE_BODY(st) + lin_body(cfg, st->n) - LIN_COST_SUMS(p);
}

/*
 * Add (sign 1) or take away (−1) m rows (row_dim values each, with their
 * cost columns) of features Z (m × p, scaled by √w) to or from the cost
 * model's sums: those whose reward logged a cost, in row order.
 */
static void
lin_add_costs(const SelectorConfig *cfg, StateHeader *st, int m, const double *Z,
			  const double *sw, const double *X, double sign)
{
	int			p = lin_feature_count(cfg);
	double	   *sums = lin_cost_sums(cfg, st, p);

	for (int t = 0; t < m; t++)
	{
		const double *row = X + (Size) t * cfg->row_dim;
		double		w = sw ? sw[t] : 1.0;

		if (row[cfg->dim] == 0)
			continue;
		axpy(p, sign * w * row[cfg->dim + 1], Z + (Size) t * p, sums);
		axpy(p, sign * w, Z + (Size) t * p, sums + p);
		sums[2 * p] += sign * w * w * row[cfg->dim + 1];
		sums[2 * p + 1] += sign * w * w;
	}
}

/* The factors of the regularisers other than the base, from G = Σ zzᵀ (packed). */
static void
lin_other_factors(const SelectorConfig *cfg, StateHeader *st, const double *G)
{
	int			p = lin_feature_count(cfg);
	FactorSet	fs;

	confidence_factors(cfg, &fs);
	for (int f = 1; f < fs.count; f++)
		chol_factor_shifted(p, G, fs.alpha[f], fs.alpha[f], lin_factor_at(st, p, f));
}

/* With weights w (NULL: γ^age by position under a discount, else 1). */
StateHeader *
lin_build_weighted(const SelectorConfig *cfg, int n, const double *X, const double *r,
				   const double *w_given)
{
	int			p = lin_feature_count(cfg);
	StateHeader *st = state_alloc(cfg, n, lin_body(cfg, n));
	double	   *Z = palloc(sizeof(double) * (Size) Max(n, 1) * p);
	double	   *w = palloc(sizeof(double) * Max(n, 1));
	double	   *sw = palloc(sizeof(double) * Max(n, 1));
	bool		discounted = cfg->discount < 1;
	double		weight_sum = 0.0;

	for (int t = 0; t < n; t++)
	{
		/* a row of weight w enters as √w·z: Σ w zzᵀ and Σ w r z */
		sw[t] = w_given ? sqrt(w_given[t])
			: discounted ? portable_pow(cfg->discount, 0.5 * (n - 1 - t)) : 1.0;

		lin_features(cfg, X + (Size) t * cfg->row_dim, Z + (Size) t * p);
		for (int i = 0; i < p; i++)
			Z[(Size) t * p + i] *= sw[t];
		w[t] = r[t] * sw[t];
		weight_sum += sw[t] * sw[t];
	}
	if (cfg->learns_cost)
		lin_add_costs(cfg, st, n, Z, sw, X, 1.0);
	gram_packed(n, p, Z, discounted ? 0.0 : confidence_base_alpha(cfg), !discounted, lin_factor(st));
	if (n > 0)
		gemv_cols(n, p, Z, w, 0.0, lin_rhs(st, p));
	/* yᵀy weighted as the rows are, Σ w r² = |√w·r|² (a confidence bound's rows all weigh 1) */
	if (lin_keeps_yy(cfg))
		*lin_yy(st, p) = n > 0 ? dot(n, w, w) : 0.0;
	if (lin_learns_noise(cfg))
		*lin_weight_sum(st, p) = weight_sum;
	if (cfg->confidence != CONFIDENCE_FIXED)
	{
		double	   *G = palloc(sizeof(double) * PACKED_SIZE(p));

		gram_packed(n, p, Z, 0.0, false, G);
		lin_other_factors(cfg, st, G);
		pfree(G);
	}
	if (cfg->window > 0)
	{
		memcpy(lin_rows(cfg, st, p), X, sizeof(double) * (Size) n * cfg->row_dim);
		memcpy(lin_row_rewards(cfg, st, p), r, sizeof(double) * n);
	}
	pfree(Z);
	pfree(w);
	pfree(sw);
	return st;
}

/*
 * The innovations by a fold: A's factor grown by a rank-1 update per row, the
 * mean and width by two triangular solves, O(p²) per row as a fold's.
 */
static void
lin_innovations_fold(const SelectorConfig *cfg, int n, const double *X, const double *r, double *e)
{
	int			p = lin_feature_count(cfg);
	double	   *L = palloc0(sizeof(double) * PACKED_SIZE(p));
	double	   *b = palloc0(sizeof(double) * p);
	double	   *z = palloc(sizeof(double) * p);
	double	   *u = palloc(sizeof(double) * p);
	double	   *t = palloc(sizeof(double) * p);
	double		root = sqrt(confidence_base_alpha(cfg));

	for (int i = 0; i < p; i++)
		L[PACKED_ROW(i) + i] = root;
	for (int row = 0; row < n; row++)
	{
		lin_features(cfg, X + (Size) row * cfg->row_dim, z);
		memcpy(u, z, sizeof(double) * p);
		chol_forward(p, L, u);
		memcpy(t, b, sizeof(double) * p);
		chol_forward(p, L, t);
		e[row] = (r[row] - dot(p, u, t)) / sqrt(1.0 + dot(p, u, u));
		axpy(p, r[row], z, b);
		chol_rank1_update(p, L, z);
	}
	pfree(L);
	pfree(b);
	pfree(z);
	pfree(u);
	pfree(t);
}

/*
 * The innovations in the kernel form: for the factor C of ZZᵀ + αI (the
 * linear kernel's matrix of the n rows), entry i of C⁻¹r is row i's residual
 * over C_ii, C_ii² = α(1 + zᵢᵀA⁻¹zᵢ) with A of the rows before it, so
 * √α·C⁻¹r are the same residuals: one Gram matrix, a factorisation and
 * a forward solve, O(n²p + n³), against the fold's O(np²) row by row.
 */
static void
lin_innovations_kernel(const SelectorConfig *cfg, int n, const double *X, const double *r, double *e)
{
	int			p = lin_feature_count(cfg);
	double		alpha = confidence_base_alpha(cfg);
	double	   *Z = palloc(sizeof(double) * (Size) n * p);
	double	   *C = palloc(sizeof(double) * PACKED_SIZE(n));
	double	   *t;

	for (int row = 0; row < n; row++)
		lin_features(cfg, X + (Size) row * cfg->row_dim, Z + (Size) row * p);
	row_gram_packed(n, p, Z, alpha, true, C);
	t = chol_forward_copy(n, C, r);
	for (int row = 0; row < n; row++)
		e[row] = sqrt(alpha) * t[row];
	pfree(Z);
	pfree(C);
	pfree(t);
}

/*
 * PolicyOps.innovations: row t's residual under the ridge regression on
 * rows before it, (r_t − zᵀA⁻¹b) / sqrt(1 + zᵀA⁻¹z) with A = αI + Σ zzᵀ
 * and b = Σ r z over rows < t (its predictive deviation, in units of the
 * noise).  Both forms give them; the kernel form's work grows with n²p + n³
 * and the fold's with np², but the fold's row-by-row updates run about ten
 * times slower per operation than BLAS-3 (measured when the Gram matrix and
 * its factor were OpenBLAS's; linalg.c's fixed-order ones take 0.6-0.7×
 * their time on a Xeon), so the kernel form is taken while
 * n is at most LIN_INNOVATIONS_KERNEL_ROWS times p (measured: a replay of the
 * drift stream at p = 41, n up to ~3p, 3.5 s → 1.5 s; RouterDC at p = 153
 * with a window of 2,000, n up to ~7p, 44 s → 25 s), and at most
 * LIN_INNOVATIONS_KERNEL_MAX rows, whose matrix takes 8 MB in full storage
 * (a time clock's cap allows 10,000).  The choice depends on n and p alone,
 * so every reader takes the same.
 */
#define LIN_INNOVATIONS_KERNEL_ROWS 8
#define LIN_INNOVATIONS_KERNEL_MAX 1024
int
lin_innovations(const SelectorConfig *cfg, const StateHeader *built, int n, const double *X,
				const double *r, double *e)
{
	if (n <= LIN_INNOVATIONS_KERNEL_MAX && n <= LIN_INNOVATIONS_KERNEL_ROWS * lin_feature_count(cfg))
		lin_innovations_kernel(cfg, n, X, r, e);
	else
		lin_innovations_fold(cfg, n, X, r, e);
	return n;
}

StateHeader *
lin_build(const SelectorConfig *cfg, int n, const double *X, const double *r)
{
	return lin_build_weighted(cfg, n, X, r, NULL);
}

/* Windowed: the state with one more held row (a new allocation). */
static StateHeader *
lin_grow(const SelectorConfig *cfg, const StateHeader *old, const double *x, double r)
{
	int			p = lin_feature_count(cfg);
	int			n = old ? old->n : 0;
	StateHeader *st = state_alloc(cfg, n + 1, lin_body(cfg, n + 1));

	if (old == NULL)
		old = lin_build(cfg, 0, NULL, NULL);
	memcpy(STATE_BODY(st), STATE_BODY(old), sizeof(double) * lin_head(cfg, p));
	memcpy(lin_rows(cfg, st, p), lin_rows(cfg, old, p), sizeof(double) * (Size) n * cfg->row_dim);
	memcpy(lin_rows(cfg, st, p) + (Size) n * cfg->row_dim, x, sizeof(double) * cfg->row_dim);
	memcpy(lin_row_rewards(cfg, st, p), lin_row_rewards(cfg, old, p), sizeof(double) * n);
	lin_row_rewards(cfg, st, p)[n] = r;
	/* the cost model's sums follow the rows, at the body's end */
	if (cfg->learns_cost)
		memcpy(lin_cost_sums(cfg, st, p), lin_cost_sums(cfg, old, p), sizeof(double) * LIN_COST_SUMS(p));
	return st;
}

/*
 * The m rewards r of rows X with features Z (m × p, destroyed) added to a
 * state without a discount, in place: b, yᵀy, Σw and the cost model's sums
 * in row order, then every factor's rank-1 updates (one after the other, or
 * together with the same bits).  n is the caller's.
 */
static void
lin_add_rows(const SelectorConfig *cfg, StateHeader *st, int m, double *Z, const double *X,
			 const double *r)
{
	int			p = lin_feature_count(cfg);
	double	   *b = lin_rhs(st, p);
	FactorSet	fs;

	for (int t = 0; t < m; t++)
	{
		for (int i = 0; i < p; i++)
			b[i] += r[t] * Z[(Size) t * p + i];
		if (lin_keeps_yy(cfg))
			*lin_yy(st, p) += r[t] * r[t];
		if (lin_learns_noise(cfg))
			*lin_weight_sum(st, p) += 1.0;
	}
	if (cfg->learns_cost)
		lin_add_costs(cfg, st, m, Z, NULL, X, 1.0);
	confidence_factors(cfg, &fs);
	/* the updates destroy their vectors: the other factors get a copy */
	for (int f = 1; f < fs.count; f++)
	{
		double	   *scratch = palloc(sizeof(double) * p * m);

		memcpy(scratch, Z, sizeof(double) * p * m);
		chol_rank_updates(p, lin_factor_at(st, p, f), scratch, m);
		pfree(scratch);
	}
	chol_rank_updates(p, lin_factor(st), Z, m);
}

/*
 * Windowed and full: forget the oldest held row in place (rank-1 downdate;
 * if rounding makes it fail, refactorise the remaining rows) and make room
 * for the new row at the end.
 */
static void
lin_forget_oldest(const SelectorConfig *cfg, StateHeader *st, const double *x, double r)
{
	int			p = lin_feature_count(cfg);
	int			n = st->n;
	double	   *rows = lin_rows(cfg, st, p);
	double	   *rewards = lin_row_rewards(cfg, st, p);
	double	   *z = palloc(sizeof(double) * p);
	double	   *b = lin_rhs(st, p);

	lin_features(cfg, rows, z);
	for (int i = 0; i < p; i++)
		b[i] -= rewards[0] * z[i];
	if (lin_learns_noise(cfg))
	{
		*lin_yy(st, p) -= rewards[0] * rewards[0];
		*lin_weight_sum(st, p) -= 1.0;
	}
	if (cfg->learns_cost)
		lin_add_costs(cfg, st, 1, z, NULL, rows, -1.0);
	memmove(rows, rows + cfg->row_dim, sizeof(double) * (Size) (n - 1) * cfg->row_dim);
	memmove(rewards, rewards + 1, sizeof(double) * (n - 1));
	memcpy(rows + (Size) (n - 1) * cfg->row_dim, x, sizeof(double) * cfg->row_dim);
	rewards[n - 1] = r;
	if (!chol_rank1_downdate(p, lin_factor(st), z))
	{
		StateHeader *kept = lin_build(cfg, n - 1, rows, rewards);

		memcpy(STATE_BODY(st), STATE_BODY(kept), sizeof(double) * LIN_BODY(p));
	}
	pfree(z);
}

StateHeader *
lin_append(const SelectorConfig *cfg, const StateHeader *old, const double *x, double r)
{
	int			p = lin_feature_count(cfg);
	StateHeader *st;
	double	   *z = palloc(sizeof(double) * p);
	double	   *b;

	if (cfg->window > 0 && old != NULL && old->n >= cfg->window)
	{
		/* a full window keeps its size: update in place */
		st = (StateHeader *) old;
		lin_forget_oldest(cfg, st, x, r);
	}
	else if (cfg->window > 0)
		st = lin_grow(cfg, old, x, r);
	else
	{
		/* the state's size does not depend on n: update in place */
		st = old != NULL ? (StateHeader *) old : lin_build(cfg, 0, NULL, NULL);
		st->n++;
	}
	lin_features(cfg, x, z);
	b = lin_rhs(st, p);
	if (cfg->discount < 1)
	{
		/* Σγ^age zzᵀ and Σγ^age r z age by one step */
		double	   *S = lin_factor(st);

		for (int i = 0; i < p; i++)
		{
			for (int j = 0; j <= i; j++)
				S[PACKED_ROW(i) + j] = cfg->discount * S[PACKED_ROW(i) + j] + z[i] * z[j];
			b[i] = cfg->discount * b[i] + r * z[i];
		}
		if (lin_learns_noise(cfg))
		{
			*lin_yy(st, p) = cfg->discount * *lin_yy(st, p) + r * r;
			*lin_weight_sum(st, p) = cfg->discount * *lin_weight_sum(st, p) + 1.0;
		}
		if (cfg->learns_cost)
		{
			double	   *sums = lin_cost_sums(cfg, st, p);

			for (Size i = 0; i < LIN_COST_SUMS(p); i++)
				sums[i] *= cfg->discount;
			lin_add_costs(cfg, st, 1, z, NULL, x, 1.0);
		}
	}
	else
		lin_add_rows(cfg, st, 1, z, x, &r);
	pfree(z);
	return st;
}

/*
 * m rewards at once with the bits of m lin_append()s (chol_rank_updates()):
 * how the learner folds the rewards an arm gathered since its last
 * version.  Only a state updated in place by rank-1 updates alone (no
 * window, no discount).
 */
bool
lin_append_rows(const SelectorConfig *cfg, StateHeader *st, int m, const double *X, const double *r)
{
	int			p = lin_feature_count(cfg);
	double	   *Z;

	if (cfg->window > 0 || cfg->discount < 1)
		return false;
	Z = palloc(sizeof(double) * p * m);
	st->n += m;
	for (int t = 0; t < m; t++)
		lin_features(cfg, X + (Size) t * cfg->row_dim, Z + (Size) t * p);
	lin_add_rows(cfg, st, m, Z, X, r);
	pfree(Z);
	return true;
}
