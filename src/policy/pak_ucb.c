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
 * A decode pays one solve for the weights (once per version where a learner
 * publishes them: pak_prepare), a decision one dot product with the k' it
 * already has.
 *
 * The state's layout is policy/pak_state.h's, its folds policy/pak_fold.c's.
 */
#include "postgres.h"

#include <math.h>

#include "model/kernel.h"
#include "math/vecops.h"
#include "policy/pak_state.h"

struct ArmModel
{
	int			n;
	const double *X;
	FactorSet	factors;
	const double *L[MAX_GRID + 1];	/* factor of K' + α_f I */
	const double *t[MAX_GRID + 1];	/* L_f⁻¹ v: the mean is (L_f⁻¹k)·t_f = kᵀ(K' + α_f I)⁻¹v */
	ArmBounds	bounds;
	Spectrum   *spectrum;		/* cmm */
	const double *sqnorms;
	const double *cost_weights; /* with a cost model: (K' + αI)⁻¹(c − c̄) */
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
 * The weights wᵢ of the rows of the state st with factor L of
 * K' + α·diag(1/w): α/(|Lᵢ|² − k'(xᵢ,xᵢ)), as row i of L·Lᵀ has
 * k'(xᵢ,xᵢ) + α/wᵢ on its diagonal.  NULL where they cannot be weighted
 * (every weight 1).  O(n²): computed once per decode, for the learnt noise
 * and the cost model both.
 */
static double *
pak_row_weights(const SelectorConfig *cfg, const StateHeader *st, const double *L, double alpha)
{
	double	   *w;

	if (!pak_weighted(cfg))
		return NULL;
	w = palloc(sizeof(double) * Max(st->n, 1));
	for (int i = 0; i < st->n; i++)
	{
		const double *row = L + PACKED_ROW(i);

		w[i] = alpha / (dot(i + 1, row, row) - kernel_self(cfg, PAK_X(st) + (Size) i * cfg->dim));
	}
	return w;
}

/* Σw over the n rows of weights w (NULL: n) */
static double
pak_weight_sum(int n, const double *w)
{
	double		sum = 0.0;

	if (w == NULL)
		return n;
	for (int i = 0; i < n; i++)
		sum += w[i];
	return sum;
}

/*
 * The cost model of st (see the top): c̄ (*level) over the rows that logged
 * a cost, each by its weight (row_weights; NULL: 1), and u (n doubles),
 * (K' + αI)⁻¹ of their costs less c̄ by the factor L of α; c̄ and u 0 while
 * no row logged a cost.
 */
static void
pak_cost_model(const SelectorConfig *cfg, const StateHeader *st, const double *L,
			   const double *row_weights, double *level, double *u)
{
	int			n = st->n;
	const double *costs = PAK_C(st, pak_capacity(cfg, n), pak_factor_count(cfg));
	double		sum = 0.0;
	double		weights = 0.0;

	for (int i = 0; i < n; i++)
	{
		double		w;

		u[i] = 0.0;
		if (costs[(Size) i * COST_COLUMNS] == 0)
			continue;
		w = row_weights != NULL ? row_weights[i] : 1.0;
		sum += w * costs[(Size) i * COST_COLUMNS + 1];
		weights += w;
	}
	*level = weights > 0 ? sum / weights : 0.0;
	for (int i = 0; i < n && weights > 0; i++)
		if (costs[(Size) i * COST_COLUMNS] != 0)
			u[i] = costs[(Size) i * COST_COLUMNS + 1] - *level;
	if (weights > 0)
		chol_solve(n, L, u);
}

/* The cost the model predicts at the context whose k' is k (never below 0, as no logged cost is). */
static double
pak_cost_at(const ArmModel *m, const double *k)
{
	return Max(0.0, m->cost_level + dot(m->n, k, m->cost_weights));
}

/*
 * What a decode computes from the state alone (PolicyOps.prepare), in this
 * order: the rows' squared norms (n), Σw of their weights (for the learnt
 * noise), the cost model's c̄, its weights (n, with a cost model), and
 * t_f = L_f⁻¹v (n per factor), or under cmm the eigendecomposition of K'
 * (n² + 2n, spectral.c).  O(n²) where a score is O(n²) too (cmm's O(n³)):
 * a published version carries it, computed once by its publisher for every
 * backend that decodes it; decode computes it into a buffer of its own
 * with the same code (the same bits).
 */
typedef struct PakPrepared
{
	double	   *sqnorms;
	double	   *weight_sum;
	double	   *cost_level;
	double	   *cost_weights;	/* NULL: no cost model */
	double	   *t[MAX_GRID + 1];
	double	   *spectrum;		/* NULL: not cmm */
} PakPrepared;

/* The factors whose t_f a decode needs (none under cmm). */
static int
pak_prepared_factors(const SelectorConfig *cfg)
{
	FactorSet	fs;

	if (cfg->confidence == CONFIDENCE_CMM)
		return 0;
	confidence_factors(cfg, &fs);
	return fs.count;
}

static Size
pak_prepared_doubles(const SelectorConfig *cfg, int n)
{
	return (Size) n * (1 + (cfg->learns_cost ? 1 : 0) + pak_prepared_factors(cfg)) + 2 +
		(cfg->confidence == CONFIDENCE_CMM ? spectrum_doubles(n) : 0);
}

/* A version's prepared part, shared where it is computed once. */
static Size
pak_prepared_size(const SelectorConfig *cfg, const StateHeader *st)
{
	return st->n > 0 ? pak_prepared_doubles(cfg, st->n) : 0;
}

/*
 * Where each part lies in the prepared doubles at `at`, in the layout above
 * (the one place that knows it: pak_prepare() writes through it, decode
 * reads).
 */
static void
pak_prepared_parts(const SelectorConfig *cfg, int n, double *at, PakPrepared *out)
{
	int			nf = pak_prepared_factors(cfg);

	out->sqnorms = at;
	out->weight_sum = at + n;
	out->cost_level = at + n + 1;
	at += n + 2;
	out->cost_weights = cfg->learns_cost ? at : NULL;
	if (cfg->learns_cost)
		at += n;
	for (int f = 0; f < nf; f++)
		out->t[f] = at + (Size) f * n;
	out->spectrum = cfg->confidence == CONFIDENCE_CMM ? at + (Size) nf * n : NULL;
}

static void
pak_prepare(const SelectorConfig *cfg, const StateHeader *st, double *out)
{
	int			n = st->n;
	int			c = pak_capacity(cfg, n);
	int			nf = pak_prepared_factors(cfg);
	FactorSet	fs;
	double	   *row_weights;
	PakPrepared pp;

	pak_prepared_parts(cfg, n, out, &pp);
	confidence_factors(cfg, &fs);
	row_weights = confidence_learns_noise(cfg) || cfg->learns_cost ?
		pak_row_weights(cfg, st, PAK_L(st, c, 0), fs.alpha[0]) : NULL;
	row_sqnorms(n, cfg->dim, PAK_X(st), pp.sqnorms);
	*pp.weight_sum = pak_weight_sum(n, row_weights);
	*pp.cost_level = 0.0;
	if (cfg->learns_cost)
		pak_cost_model(cfg, st, PAK_L(st, c, 0), row_weights, pp.cost_level, pp.cost_weights);
	for (int f = 0; f < nf; f++)
	{
		memcpy(pp.t[f], PAK_V(st, c), sizeof(double) * n);
		chol_forward(n, PAK_L(st, c, f), pp.t[f]);
	}
	if (pp.spectrum != NULL)
		spectrum_kernel_prepare(cfg, n, PAK_X(st), PAK_V(st, c), pp.spectrum);
	if (row_weights != NULL)
		pfree(row_weights);
}

/* Decoded, with what pak_prepare() computed (NULL: computed here). */
static ArmModel *
pak_decode_prepared(const SelectorConfig *cfg, const StateHeader *st, const double *prepared)
{
	ArmModel   *m = palloc0(sizeof(ArmModel));
	int			n = st->n;
	int			c = pak_capacity(cfg, n);
	PakPrepared pp;

	if (prepared == NULL)
	{
		double	   *own = palloc(sizeof(double) * pak_prepared_doubles(cfg, n));

		pak_prepare(cfg, st, own);
		prepared = own;
	}
	pak_prepared_parts(cfg, n, unconstify(double *, prepared), &pp);
	confidence_factors(cfg, &m->factors);
	m->n = n;
	m->X = PAK_X(st);
	m->sqnorms = pp.sqnorms;
	m->cost_level = *pp.cost_level;
	m->cost_weights = pp.cost_weights;
	if (pp.spectrum != NULL)
		m->spectrum = spectrum_from(cfg, n, n, false, 0.0, pp.spectrum);
	else
	{
		double		quad[MAX_GRID + 1];

		for (int f = 0; f < m->factors.count; f++)
		{
			m->L[f] = PAK_L(st, c, f);
			m->t[f] = pp.t[f];
			quad[f] = m->factors.alpha[f] * dot(n, m->t[f], m->t[f]);
		}
		/* ln det(I + K'/α) = ln det((K' + αI)/α) */
		confidence_bounds(cfg, n, &m->factors,
						  chol_log_det_scaled(n, m->L[0], m->factors.alpha[0]), quad, &m->bounds);
		/* with noise_prior the radius is eta·σ̂, σ̂ learnt from the penalised residuals quad[0] */
		if (confidence_learns_noise(cfg))
			m->bounds.radius[0] *= confidence_noise_scale(cfg, quad[0], *pp.weight_sum);
	}
	return m;
}

static ArmModel *
pak_decode(const SelectorConfig *cfg, const StateHeader *st)
{
	return pak_decode_prepared(cfg, st, NULL);
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
	.prepared_size = pak_prepared_size, .prepare = pak_prepare, .decode_prepared = pak_decode_prepared,
	.build_weighted = pak_build_weighted, .innovations = pak_innovations, .kept_rows = pak_kept_rows,
	.slides = pak_slides,
};
