/*
 * pak_ucb.c — pak_ucb: exact per-arm kernel ridge regression UCB
 * (PAK-UCB, Hu et al. (PAK-UCB)–2.4).
 *
 *   mean  = k'ᵀ (K' + αI)⁻¹ v
 *   width = α^(-1/2) sqrt(k'(y,y) − k'ᵀ (K' + αI)⁻¹ k')
 *
 * The state keeps the Cholesky factor L of K' + αI; a reward appends one row
 * to it in O(n² + n·dim), in place (the body has room for a few more rows),
 * and is never refactorised; earlier rows never change, so the state is
 * stored by rows (row_spans, model/state_store.c).  build() factorises the
 * whole matrix with the same row steps, so that a state has the same bits
 * however its rows were batched into folds; the golden tests
 * (test/golden/) check both against an independent computation.
 * Past `cap` the arm compacts (pak_kept_rows): the reward that would make
 * cap + 1 rows refactorises the newest ⌈cap/2⌉, and rows are appended
 * again, so a checkpoint rewrites the factor once per ⌊cap/2⌋ + 1 rewards
 * and otherwise only appends.
 * With confidence dmm the state keeps one factor per grid regulariser
 * (confidence.c), each appended the same way; cmm decodes through an
 * eigendecomposition (spectral.c).
 *
 * With a budget and "cost_model" each row also keeps its reward's cost
 * columns (whether it logged a cost, and the cost), and the arm learns its
 * cost as lin_ucb does, by the same regression as its reward: the kernel
 * ridge regression of c − c̄ on the rows with the factor of K' + αI (or
 * K' + α·diag(1/w) for weighted rows), c̄ the rows' weighted mean cost, a row
 * without a cost counting at c̄:
 *
 *   cost(x) = max(0, c̄ + k'ᵀ (K' + αI)⁻¹ (c − c̄))
 *
 * A decode pays one solve for the weights, a decision one dot product with
 * the k' it already has.
 */
#include "postgres.h"

#include <math.h>

#include "policy/confidence.h"
#include "model/kernel.h"
#include "math/elementary.h"
#include "math/linalg.h"
#include "math/vecops.h"
#include "model/state.h"
#include "model/registry.h"

struct ArmModel
{
	int			n;
	const double *X;
	FactorSet	factors;
	const double *L[MAX_GRID + 1];	/* factor of K' + α_f I */
	double	   *t[MAX_GRID + 1];	/* L_f⁻¹ v: the mean is (L_f⁻¹k)·t_f = kᵀ(K' + α_f I)⁻¹v */
	ArmBounds	bounds;
	Spectrum   *spectrum;		/* cmm */
	double	   *sqnorms;
	double	   *cost_weights;	/* with a cost model: (K' + αI)⁻¹(c − c̄) */
	double		cost_level;		/* and c̄ */
};

/*
 * One context being scored: what pak_eval needs besides the factor, its
 * vectors in the caller's context (a decoded model holds no scratch: it
 * stays in each backend's cache).
 */
typedef struct PakQuery
{
	const ArmModel *model;
	double		kself;
	double	   *k;				/* k'(X, x) */
	double	   *scratch;
} PakQuery;

/*
 * The body is laid out for a capacity c >= n rows (pak_capacity): X[c][dim],
 * v[c], each factor packed for c rows, then with a cost model each row's
 * cost columns, C[c][COST_COLUMNS]; rows [0, n) are in use.
 */
#define PAK_BODY(c, dim, nf, cc) ((Size) (c) * ((dim) + 1 + (cc)) + (Size) (nf) * PACKED_SIZE(c))
#define PAK_X(st) STATE_BODY(st)
#define PAK_V(st, c) (PAK_X(st) + (Size) (c) * (st)->dim)
#define PAK_L(st, c, f) (PAK_V(st, c) + (c) + (Size) (f) * PACKED_SIZE(c))
#define PAK_C(st, c, nf) PAK_L(st, c, nf)

/* The cost columns a row keeps: COST_COLUMNS with a cost model, else none. */
static int
cost_columns(const SelectorConfig *cfg)
{
	return cfg->learns_cost ? COST_COLUMNS : 0;
}

static int
factor_count(const SelectorConfig *cfg)
{
	FactorSet	fs;

	confidence_factors(cfg, &fs);
	return fs.count;
}

/*
 * Rows a state of n rows has room for: a function of n (and of the most rows
 * cfg lets an arm hold, which the body never exceeds), so that every copy of
 * a state agrees on its layout.  Rounding n up by a sixteenth to an eighth
 * lets the fold append rows in place (pak_append) and move the body only
 * once every such step: O(n) copying per reward amortised, not O(n²).
 */
static int
pak_capacity(const SelectorConfig *cfg, int n)
{
	int			limit = Min(cfg->cap, discount_horizon(cfg));
	int			step = 16;

	if (cfg->window > 0)
		limit = Min(limit, cfg->window);
	if (cfg->restart_every > 0)
		limit = Min(limit, cfg->restart_every);
	if (n >= limit)
		return n;
	while (step <= n / 16)
		step *= 2;
	return Min(limit, (n + step - 1) / step * step);
}

static Size
pak_body(const SelectorConfig *cfg, int n)
{
	return PAK_BODY(pak_capacity(cfg, n), cfg->dim, factor_count(cfg), cost_columns(cfg));
}

/*
 * PolicyOps.row_spans: where rows [first, last) of st are: a run of X, of v,
 * of each factor (a packed factor's rows are consecutive) and of the cost
 * columns.
 */
static int
pak_row_spans(const SelectorConfig *cfg, const StateHeader *st, int first, int last,
			  RowSpan *spans)
{
	int			c = pak_capacity(cfg, st->n);
	int			nf = factor_count(cfg);
	int			cc = cost_columns(cfg);
	Size		v = (Size) c * st->dim;

	StaticAssertStmt(MAX_GRID + 4 <= MAX_ROW_SPANS, "pak_ucb states have up to MAX_GRID + 4 spans");
	spans[0].offset = (Size) first * st->dim;
	spans[0].count = (Size) (last - first) * st->dim;
	spans[1].offset = v + first;
	spans[1].count = last - first;
	for (int f = 0; f < nf; f++)
	{
		spans[2 + f].offset = v + c + f * PACKED_SIZE(c) + PACKED_ROW(first);
		spans[2 + f].count = PACKED_ROW(last) - PACKED_ROW(first);
	}
	if (cc == 0)
		return 2 + nf;
	spans[2 + nf].offset = v + c + nf * PACKED_SIZE(c) + (Size) first * cc;
	spans[2 + nf].count = (Size) (last - first) * cc;
	return 3 + nf;
}

/*
 * Rows [0, n) of X (n × row_dim: the context, then the cost columns) into
 * st's rows [at, at + n).
 */
static void
pak_put_rows(const SelectorConfig *cfg, StateHeader *st, int at, int n, const double *X)
{
	int			c = pak_capacity(cfg, st->n);
	int			cc = cost_columns(cfg);
	double	   *costs = PAK_C(st, c, factor_count(cfg));

	for (int i = 0; i < n; i++)
	{
		const double *row = X + (Size) i * cfg->row_dim;

		memcpy(PAK_X(st) + (Size) (at + i) * cfg->dim, row, sizeof(double) * cfg->dim);
		memcpy(costs + (Size) (at + i) * cc, row + cfg->dim, sizeof(double) * cc);
	}
}

/* Row i of st as the fold passed it (row_dim values) into out. */
static void
pak_get_row(const SelectorConfig *cfg, const StateHeader *st, int i, double *out)
{
	int			cc = cost_columns(cfg);
	const double *costs = PAK_C(st, pak_capacity(cfg, st->n), factor_count(cfg));

	memcpy(out, PAK_X(st) + (Size) i * cfg->dim, sizeof(double) * cfg->dim);
	memcpy(out + cfg->dim, costs + (Size) i * cc, sizeof(double) * cc);
}

/* Copy rows [0, nrows) of from into to (each laid out for its own n). */
static void
pak_copy_rows(const SelectorConfig *cfg, const StateHeader *from, StateHeader *to, int nrows)
{
	RowSpan		src[MAX_ROW_SPANS],
				dst[MAX_ROW_SPANS];
	int			count = pak_row_spans(cfg, from, 0, nrows, src);

	pak_row_spans(cfg, to, 0, nrows, dst);
	for (int i = 0; i < count; i++)
		memcpy(STATE_BODY(to) + dst[i].offset, STATE_BODY(from) + src[i].offset,
			   sizeof(double) * src[i].count);
}

/*
 * The ridge term of row i of n: α, or with a discount α·γ^-(age) where the
 * newest row has age 0 (weighted GP-UCB: a row of weight w is noise α/w).
 */
static double
pak_ridge(const SelectorConfig *cfg, int i, int n)
{
	double		alpha = confidence_base_alpha(cfg);

	return cfg->discount < 1 ? alpha * portable_pow(cfg->discount, -(double) (n - 1 - i)) : alpha;
}

/*
 * PolicyOps.kept_rows: how many of an arm's n newest rewards (since its last
 * restart) it keeps.  A window, or a discount's horizon, no longer than cap
 * slides: the newest W.  Otherwise the arm compacts at cap
 * (compacted_rows): a sliding cap would change every row of the factor at
 * every reward, and so rewrite all of it at every checkpoint.  restart_every
 * is at most cap (state_check_limits), so n never passes it then.
 */
static int
pak_kept_rows(const SelectorConfig *cfg, int n)
{
	int			slide = cfg->window > 0 ? cfg->window : discount_horizon(cfg);

	if (slide <= cfg->cap)
		return Min(n, slide);
	return compacted_rows(cfg->cap, n);
}

/*
 * PolicyOps.slides: do n appends onto an empty arm drop rows off a window
 * (pak_drop_oldest)?  Not under a discount, whose appends rebuild, nor past
 * the cap, where an arm compacts by a rebuild.
 */
static bool
pak_slides(const SelectorConfig *cfg, int n)
{
	int			slide = cfg->window > 0 ? cfg->window : discount_horizon(cfg);

	return cfg->discount >= 1 && slide <= cfg->cap && n > slide;
}

/*
 * The ridge on row i's diagonal (of n) in factor f: α_f, as pak_append adds
 * it; with weights w, or a discount's by position, α₀/w_i, and in a factor
 * f > 0 that shifted by α_f − α₀.
 */
static double
pak_row_ridge(const SelectorConfig *cfg, const FactorSet *fs, int f, int i, int n,
			  const double *w)
{
	double		base;

	if (w == NULL && cfg->discount >= 1)
		return fs->alpha[f];
	base = w ? fs->alpha[0] / w[i] : pak_ridge(cfg, i, n);
	return f == 0 ? base : base + (fs->alpha[f] - fs->alpha[0]);
}

/*
 * With weights w (NULL: γ^age by position under a discount): ridge α/w.
 * Each factor is factorised row by row (chol_factor_rows), each diagonal
 * the kernel's plus the ridge as pak_append adds them: without weights or
 * a discount, the bits of the rows appended one at a time, so that a fold
 * gives the same state however its rows were batched (fold_some()).
 */
static StateHeader *
pak_build_weighted(const SelectorConfig *cfg, int n, const double *X, const double *r,
				   const double *w)
{
	StateHeader *st;
	FactorSet	fs;
	int			skip = n - Min(n, Min(discount_horizon(cfg), cfg->cap));
	int			c;

	/*
	 * rows too old to matter under a discount, and past the cap, are dropped
	 * (none when called through state_build, which keeps pak_kept_rows; a
	 * clocked state keeps its newest cap, model/clock_state.c)
	 */
	X += (Size) skip * cfg->row_dim;
	r += skip;
	if (w != NULL)
		w += skip;
	n -= skip;
	confidence_factors(cfg, &fs);
	st = state_alloc(cfg, n, pak_body(cfg, n));
	c = pak_capacity(cfg, n);
	pak_put_rows(cfg, st, 0, n, X);
	memcpy(PAK_V(st, c), r, sizeof(double) * n);
	for (int i = 0; i < n; i++)
		kernel_vector(cfg, i + 1, PAK_X(st), NULL, PAK_X(st) + (Size) i * cfg->dim,
					  PAK_L(st, c, 0) + PACKED_ROW(i));
	/* the kernel matrix is copied into the other factors before the first is factorised */
	for (int f = fs.count - 1; f >= 0; f--)
	{
		double	   *L = PAK_L(st, c, f);

		if (f > 0)
			memcpy(L, PAK_L(st, c, 0), sizeof(double) * PACKED_SIZE(n));
		for (int i = 0; i < n; i++)
			L[PACKED_ROW(i) + i] += pak_row_ridge(cfg, &fs, f, i, n, w);
		chol_factor_rows(n, L, fs.alpha[f]);
	}
	return st;
}

static StateHeader *
pak_build(const SelectorConfig *cfg, int n, const double *X, const double *r)
{
	return pak_build_weighted(cfg, n, X, r, NULL);
}

/*
 * PolicyOps.innovations: L⁻¹v for the factor L of K' + αI built in row
 * order, whose entry i is (r_i − μ_{<i}(x_i)) / L_ii, L_ii² = α(1 + s²_{<i}(x_i)):
 * each row's residual under the kernel regression on the rows before it,
 * scaled by its predictive deviation (a forward solve, O(n²)).
 */
static int
pak_innovations(const SelectorConfig *cfg, const StateHeader *built, int n, const double *X,
				const double *r, double *e)
{
	int			c = pak_capacity(cfg, built->n);
	double	   *t = chol_forward_copy(built->n, PAK_L(built, c, 0), PAK_V(built, c));

	memcpy(e, t, sizeof(double) * built->n);
	pfree(t);
	return built->n;
}

/* The state without its oldest row: a rank-1 update of the trailing factor. */
static StateHeader *
pak_drop_oldest(const SelectorConfig *cfg, const StateHeader *old)
{
	int			n = old->n;
	int			nf = factor_count(cfg);
	int			c = pak_capacity(cfg, n);
	StateHeader *st = state_alloc(cfg, n - 1, pak_body(cfg, n - 1));
	int			c1 = pak_capacity(cfg, n - 1);
	int			cc = cost_columns(cfg);

	memcpy(PAK_X(st), PAK_X(old) + cfg->dim, sizeof(double) * (n - 1) * cfg->dim);
	memcpy(PAK_V(st, c1), PAK_V(old, c) + 1, sizeof(double) * (n - 1));
	memcpy(PAK_C(st, c1, nf), PAK_C(old, c, nf) + cc, sizeof(double) * (n - 1) * cc);
	for (int f = 0; f < nf; f++)
		chol_drop_first(n, PAK_L(old, c, f), PAK_L(st, c1, f));
	return st;
}

/*
 * A state of the newest keep - 1 rows of old (NULL: empty) and (x, r),
 * factorised from scratch: how a discounted arm appends (every weight
 * changes) and how an arm compacts.
 */
static StateHeader *
pak_rebuild_newest(const SelectorConfig *cfg, const StateHeader *old, int keep,
				   const double *x, double r)
{
	int			n = keep - 1;
	int			from = old ? old->n - n : 0;
	double	   *X = palloc(sizeof(double) * (Size) keep * cfg->row_dim);
	double	   *v = palloc(sizeof(double) * keep);
	StateHeader *st;

	for (int i = 0; i < n; i++)
		pak_get_row(cfg, old, from + i, X + (Size) i * cfg->row_dim);
	if (n > 0)
		memcpy(v, PAK_V(old, pak_capacity(cfg, old->n)) + from, sizeof(double) * n);
	memcpy(X + (Size) n * cfg->row_dim, x, sizeof(double) * cfg->row_dim);
	v[n] = r;
	st = pak_build(cfg, keep, X, v);
	pfree(X);
	pfree(v);
	return st;
}

/*
 * old (NULL: empty) with room for one more row, and that row counted in n:
 * old itself when its body has room (its capacity is also that of n + 1
 * rows), else a copy laid out for n + 1 rows.
 */
static StateHeader *
pak_grow(const SelectorConfig *cfg, StateHeader *old)
{
	int			n = old ? old->n : 0;
	StateHeader *st;

	if (old != NULL && pak_capacity(cfg, n) == pak_capacity(cfg, n + 1))
	{
		old->n = n + 1;
		return old;
	}
	st = state_alloc(cfg, n + 1, pak_body(cfg, n + 1));
	if (n > 0)
		pak_copy_rows(cfg, old, st, n);
	return st;
}

/*
 * Append (x, r): in place when the body has room (the fold owns old), so a
 * reward costs the O(n² + n·dim) of its factor row, not a copy of the state.
 */
static StateHeader *
pak_append(const SelectorConfig *cfg, const StateHeader *old, const double *x, double r)
{
	int			n,
				c;
	StateHeader *st;
	FactorSet	fs;
	double	   *b;
	double		kself;

	int			held = old ? old->n : 0;
	int			keep = pak_kept_rows(cfg, held + 1);

	/* with a discount every weight changes; an arm at its cap compacts */
	if (cfg->discount < 1 || keep < held)
		return pak_rebuild_newest(cfg, old, keep, x, r);
	/* a full window first forgets its oldest row (SW-GP-UCB, Iwazaki & Takeno (R-PERP)) */
	if (keep == held)
		old = pak_drop_oldest(cfg, old);
	st = pak_grow(cfg, unconstify(StateHeader *, old));
	n = st->n - 1;
	c = pak_capacity(cfg, n + 1);
	confidence_factors(cfg, &fs);
	pak_put_rows(cfg, st, n, 1, x);
	PAK_V(st, c)[n] = r;

	b = palloc(sizeof(double) * Max(n, 1));
	kernel_vector(cfg, n, PAK_X(st), NULL, x, b);
	kself = kernel_self(cfg, x);
	for (int f = 0; f < fs.count; f++)
		chol_append_row(n, PAK_L(st, c, f), b, kself + fs.alpha[f], fs.alpha[f]);
	pfree(b);
	return st;
}

/*
 * Can a state's rows have weights other than 1: under a discount, or the
 * detector's weights on the rows before a change (the weights of a clocked
 * state are not in it otherwise, model/clock_state.c)?
 */
static bool
pak_weighted(const SelectorConfig *cfg)
{
	return cfg->discount < 1 || cfg->detect;
}

/*
 * The weight wᵢ of row i of the state st with factor L of K' + α·diag(1/w):
 * α/(|Lᵢ|² − k'(xᵢ,xᵢ)), as row i of L·Lᵀ has k'(xᵢ,xᵢ) + α/wᵢ on its
 * diagonal.
 */
static double
pak_row_weight(const SelectorConfig *cfg, const StateHeader *st, const double *L, double alpha, int i)
{
	const double *row = L + PACKED_ROW(i);

	return alpha / (dot(i + 1, row, row) - kernel_self(cfg, PAK_X(st) + (Size) i * cfg->dim));
}

/* Σw over the rows of st (factor L of α): n where they cannot be weighted */
static double
pak_weight_sum(const SelectorConfig *cfg, const StateHeader *st, const double *L, double alpha)
{
	double		sum = 0.0;

	if (!pak_weighted(cfg))
		return st->n;
	for (int i = 0; i < st->n; i++)
		sum += pak_row_weight(cfg, st, L, alpha, i);
	return sum;
}

/*
 * The cost model of st into m (see the top): c̄ over the rows that logged a
 * cost, each by its weight, and (K' + αI)⁻¹ of their costs less c̄ by the
 * factor L of α; c̄ and the weights 0 while no row logged a cost.
 */
static void
pak_cost_model(const SelectorConfig *cfg, const StateHeader *st, const double *L, double alpha,
			   ArmModel *m)
{
	int			n = st->n;
	const double *costs = PAK_C(st, pak_capacity(cfg, n), factor_count(cfg));
	double	   *u = palloc(sizeof(double) * Max(n, 1));
	double		sum = 0.0;
	double		weights = 0.0;

	for (int i = 0; i < n; i++)
	{
		double		w;

		u[i] = 0.0;
		if (costs[(Size) i * COST_COLUMNS] == 0)
			continue;
		w = pak_weighted(cfg) ? pak_row_weight(cfg, st, L, alpha, i) : 1.0;
		sum += w * costs[(Size) i * COST_COLUMNS + 1];
		weights += w;
	}
	m->cost_level = weights > 0 ? sum / weights : 0.0;
	for (int i = 0; i < n && weights > 0; i++)
		if (costs[(Size) i * COST_COLUMNS] != 0)
			u[i] = costs[(Size) i * COST_COLUMNS + 1] - m->cost_level;
	if (weights > 0)
		chol_solve(n, L, u);
	m->cost_weights = u;
}

/* The cost the model predicts at the context whose k' is k (never below 0, as no logged cost is). */
static double
pak_cost_at(const ArmModel *m, const double *k)
{
	return Max(0.0, m->cost_level + dot(m->n, k, m->cost_weights));
}

static ArmModel *
pak_decode(const SelectorConfig *cfg, const StateHeader *st)
{
	ArmModel   *m = palloc0(sizeof(ArmModel));
	int			n = st->n;
	int			c = pak_capacity(cfg, n);

	confidence_factors(cfg, &m->factors);
	m->n = n;
	m->X = PAK_X(st);
	if (cfg->confidence == CONFIDENCE_CMM)
		m->spectrum = spectrum_kernel(cfg, n, m->X, PAK_V(st, c));
	else
	{
		double		quad[MAX_GRID + 1];

		for (int f = 0; f < m->factors.count; f++)
		{
			m->L[f] = PAK_L(st, c, f);
			m->t[f] = chol_forward_copy(n, m->L[f], PAK_V(st, c));
			quad[f] = m->factors.alpha[f] * dot(n, m->t[f], m->t[f]);
		}
		/* ln det(I + K'/α) = ln det((K' + αI)/α) */
		confidence_bounds(cfg, n, &m->factors,
						  chol_log_det_scaled(n, m->L[0], m->factors.alpha[0]), quad, &m->bounds);
		/* with noise_prior the radius is eta·σ̂, σ̂ learnt from the penalised residuals quad[0] */
		if (confidence_learns_noise(cfg))
			m->bounds.radius[0] *= confidence_noise_scale(cfg, quad[0],
														  pak_weight_sum(cfg, st, m->L[0], m->factors.alpha[0]));
	}
	if (cfg->learns_cost)
		pak_cost_model(cfg, st, PAK_L(st, c, 0), m->factors.alpha[0], m);
	m->sqnorms = palloc(sizeof(double) * Max(n, 1));
	row_sqnorms(n, cfg->dim, m->X, m->sqnorms);
	return m;
}

/* Mean and width of the context in q->k under factor f. */
static void
pak_eval(const void *query, int f, double alpha, double *mean, double *width)
{
	const PakQuery *q = query;
	const ArmModel *m = q->model;
	double		var;

	memcpy(q->scratch, q->k, sizeof(double) * m->n);
	chol_forward(m->n, m->L[f], q->scratch);
	*mean = dot(m->n, q->scratch, m->t[f]);
	var = (q->kself - dot(m->n, q->scratch, q->scratch)) / alpha;
	*width = sqrt(Max(var, 0.0));
}

static void
pak_score(const SelectorConfig *cfg, const ArmModel *m, const double *x, ArmScore *out)
{
	Size		bytes = sizeof(double) * Max(m->n, 1);
	PakQuery	q = {m, kernel_self(cfg, x), palloc(bytes), palloc(bytes)};

	kernel_vector(cfg, m->n, m->X, m->sqnorms, x, q.k);
	if (m->spectrum != NULL)
		spectrum_score(cfg, m->spectrum, q.k, q.kself, out);
	else
		confidence_pick(&m->bounds, pak_eval, &q, out);
	if (m->cost_weights != NULL)
		out->cost = pak_cost_at(m, q.k);
	pfree(q.k);
	pfree(q.scratch);
}

/*
 * pak_score for a block of m contexts: the kernel block k'(X_arm, x_t)
 * (kernel_block), then per candidate factor the means and widths of the
 * whole block (chol_forward_block), four contexts at a time with a single
 * score's bits.
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
	if (m->cost_weights != NULL)
		for (int t = 0; t < nrows; t++)
			out[t].cost = pak_cost_at(m, K + (Size) t * n);
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

		chol_forward_block(n, m->L[f], m->t[f], nrows, K, means, sqnorms);
		for (int t = 0; t < nrows; t++)
		{
			double		var = (kself[t] - sqnorms[t]) / alpha;

			confidence_consider(&m->bounds, i, means[t], sqrt(Max(var, 0.0)), &out[t]);
		}
	}
}

/* pak_ucb's own setting: the noise prior of its learnt noise scale (confidence.c). */
static const char *const pak_ucb_settings[] = {"noise_prior", NULL};

/*
 * pak_ucb's own defaults: lin_ucb's scale (UCB_SCALE_DEFAULTS), without its
 * learnt noise.  At the table's alpha 1 and intercept 1 an arm's level and
 * its kernel shape weigh the same: after a change an arm seen only on the
 * other cluster predicts near 0 here, and a radius of 0.5 does not lift it
 * over a constant arm (bench/quality_drift.sql, docs/changing-worlds.md).
 */
static const PolicyDefault pak_ucb_defaults[] = {UCB_SCALE_DEFAULTS, {NULL, 0}};

const PolicyOps pak_ucb_ops = {
	.name = "pak_ucb", .kind = POLICY_PAK_UCB,
	.uses_context = true, .kernels = KERNELS_ALL, .bounds = BOUNDS_CHOICE,
	.keeps_rows = true, .forgets = FORGETS_ALL, .learns_cost = true, .settings = pak_ucb_settings,
	.defaults = pak_ucb_defaults,
	POLICY_FUNCTIONS(pak), .score_block = pak_score_block, .row_spans = pak_row_spans,
	.build_weighted = pak_build_weighted, .innovations = pak_innovations, .kept_rows = pak_kept_rows,
	.slides = pak_slides,
};
