/*
 * lin_ucb.c — ridge regression UCB on a feature vector per arm:
 *
 *   lin_ucb  z = [x ; c ; √intercept] (disjoint LinUCB; equals pak_ucb with
 *                                      the linear kernel, Hu et al. (PAK-UCB))
 *   rff_ucb  z = [φ(x) ; √intercept]  (RFF-UCB, Hu et al. (PAK-UCB)–2.7, with the
 *                                      random Fourier features of features.c)
 *
 *   A = αI + Σ z zᵀ,  b = Σ r z,  mean = zᵀ A⁻¹ b,  width = |L⁻¹ z|
 *
 * The state keeps the Cholesky factor L of A, updated by a rank-1 update in
 * O(p²) per reward: its size does not grow with the number of rewards.
 * build() forms A as a Gram matrix and factorises it (linalg.c).
 * With a window the state also holds its last W rows, and a full window
 * forgets the oldest by a rank-1 downdate; with a discount it keeps
 * Σγ^age zzᵀ and b (O(p²) per reward) and factorises αI + Σγ^age zzᵀ when
 * decoded (weighted ridge regression, Iwazaki & Takeno (R-PERP)).
 *
 * With a confidence other than fixed the state also keeps yᵀy (after b) and,
 * for dmm, the factor of α_f I + Σ zzᵀ for every other grid regulariser
 * α_f, each updated by its own rank-1 update: the radii of confidence.c in
 * their primal form, where ln det(I + K/α) = ln det(A_α) − p ln α and
 * α yᵀ(K + αI)⁻¹y = yᵀy − bᵀA_α⁻¹b.
 *
 * With "noise_prior" n₀ > 0 (confidence fixed) the state keeps yᵀy and
 * the rows' weight Σw too, and the fixed radius eta is scaled by the arm's
 * learnt noise scale σ̂ = √((n₀ + yᵀy − bᵀA⁻¹b) / (n₀ + Σw)): n₀ pseudo-
 * rewards of unit variance and the arm's penalised residuals, so that the
 * width is in the rewards' units and narrows where the arm's rewards are
 * predictable (the unknown noise of Bayesian ridge regression).  Under a
 * window or discount the sums forget as A and b do.
 *
 * With "codebook" k > 0, z also holds, before the intercept, the one-hot of
 * the context's nearest of k fitted centroids, scaled as the intercept
 * (model/codebook.c): all zeros while none is fitted, which leaves every
 * score as without.  Once fitted, x is scaled by 1/√codebook_shrink.
 *
 * With "tag_buckets" > 0, x (and for rff_ucb φ(x)) is followed by the
 * context's tag buckets, scaled as the intercept (model/tags.c): offsets per
 * tag, which the codebook's shrink leaves alone.
 *
 * With "share" s > 0 (confidence fixed) the arms share a prior mean: arm a's
 * weights are the ridge regression towards s·w₀, where w₀ = (αI + Σ_a G_a)⁻¹
 * Σ_a b_a is the ridge regression on every arm's rewards (G_a = Σ zzᵀ of
 * arm a): mean_a = zᵀA_a⁻¹(b_a + α s w₀), width unchanged.  Every reward
 * teaches w₀, so an arm with few rewards starts from what all arms learnt.
 * The states stay per arm (a fold of each arm's log); w₀ is computed from
 * the decoded models of all arms at each decision (lin_share_priors).
 *
 * With a budget and "cost_model" each arm also learns its cost
 * from the context: the ridge regression of c − c̄ on z with the same A, from
 * sums kept beside b (lin_state.h), so that the pacer prices the arm at
 * cost(x) = c̄ + zᵀA⁻¹(Σ c z − c̄ Σ z) (ArmScore.cost, routing/pacer.c).  A
 * version carries its weights; a decision pays one dot product per arm.
 *
 * The state's layout is policy/lin_state.h's, its folds policy/lin_fold.c's.
 */
#include "postgres.h"

#include <math.h>

#include "math/vecops.h"
#include "policy/lin_state.h"

struct ArmModel
{
	int			p;
	FactorSet	factors;
	const double *L[MAX_GRID + 1];	/* factor of A_f = α_f I + Σ zzᵀ */
	const double *t[MAX_GRID + 1];	/* L_f⁻¹ b: the mean is (L_f⁻¹z)·t_f = zᵀA_f⁻¹b */
	ArmBounds	bounds;
	Spectrum   *spectrum;		/* cmm */
	double	   *z;				/* per context: its features */
	double	   *scratch;
	double	   *gram;			/* with share: Σ zzᵀ (packed) and b = Σ r z */
	double	   *rhs;
	const double *cost_weights; /* with a cost model: A⁻¹(Σ c z − c̄ Σ z) (p), then c̄ */
};

/* αI + Σγ^age zzᵀ factorised (discounted states keep the sum, not a factor). */
static double *
discounted_factor(const SelectorConfig *cfg, const StateHeader *st, int p)
{
	double	   *L = palloc(sizeof(double) * PACKED_SIZE(p));

	chol_factor_shifted(p, lin_factor(st), cfg->alpha, cfg->alpha, L);
	return L;
}

/*
 * The bounds of confidence.c in primal form, from the factors and L_f⁻¹b:
 * ld(α₀) = ln det(A_α₀/α₀), quad(α) = yᵀy − bᵀA_α⁻¹b = yᵀy − |L_α⁻¹b|².
 * (fixed needs neither; with noise_prior its radius is scaled by σ̂.)
 */
static void
lin_bounds(const SelectorConfig *cfg, const StateHeader *st, ArmModel *m)
{
	int			p = m->p;
	double		quad[MAX_GRID + 1] = {0};
	double		ld = 0.0;

	if (lin_keeps_yy(cfg))
		for (int f = 0; f < m->factors.count; f++)
			quad[f] = Max(*lin_yy(st, p) - dot(p, m->t[f], m->t[f]), 0.0);
	if (cfg->confidence != CONFIDENCE_FIXED)
		ld = chol_log_det_scaled(p, m->L[0], m->factors.alpha[0]);
	confidence_bounds(cfg, st->n, &m->factors, ld, quad, &m->bounds);
	if (lin_learns_noise(cfg))
		m->bounds.radius[0] *= confidence_noise_scale(cfg, quad[0], *lin_weight_sum(st, p));
}

/*
 * The cost model's weights and level (lin_state.h) into out (p + 1): its
 * ridge regression with the factor L of A; a level 0 and no weights while
 * no reward logged a cost (the arm counts as free, as without a model).
 */
static void
lin_cost_model(const SelectorConfig *cfg, const StateHeader *st, const double *L, double *out)
{
	int			p = lin_feature_count(cfg);
	const double *sums = lin_cost_sums(cfg, st, p);
	double		level = sums[2 * p + 1] > 0 ? sums[2 * p] / sums[2 * p + 1] : 0.0;

	for (int i = 0; i < p; i++)
		out[i] = sums[i] - level * sums[p + i];
	if (sums[2 * p + 1] > 0)
		chol_solve(p, L, out);
	out[p] = level;
}

/* The cost a model predicts at features z (never below 0, as no logged cost is). */
static double
lin_cost_at(const ArmModel *m, const double *z)
{
	return Max(0.0, m->cost_weights[m->p] + dot(m->p, z, m->cost_weights));
}

/*
 * A version carries, where the factors are the state's own (no discount),
 * t_f = L_f⁻¹ b for every factor (the solves a decode costs), then the cost
 * model's weights and level, then under cmm the eigendecomposition of ZᵀZ
 * (spectral.c: O(p³), once per version instead of once per backend).
 */
static Size
lin_prepared_spectrum_at(const SelectorConfig *cfg, const FactorSet *fs, int p)
{
	return (Size) (fs->count + (cfg->learns_cost ? 1 : 0)) * p + (cfg->learns_cost ? 1 : 0);
}

static Size
lin_prepared_size(const SelectorConfig *cfg, const StateHeader *st)
{
	int			p = lin_feature_count(cfg);
	FactorSet	fs;

	if (cfg->discount < 1)
		return 0;
	confidence_factors(cfg, &fs);
	return lin_prepared_spectrum_at(cfg, &fs, p) +
		(cfg->confidence == CONFIDENCE_CMM ? spectrum_doubles(p) : 0);
}

static void
lin_prepare(const SelectorConfig *cfg, const StateHeader *st, double *out)
{
	int			p = lin_feature_count(cfg);
	FactorSet	fs;

	confidence_factors(cfg, &fs);
	for (int f = 0; f < fs.count; f++)
	{
		memcpy(out + (Size) f * p, lin_rhs(st, p), sizeof(double) * p);
		chol_forward(p, lin_factor_at(st, p, f), out + (Size) f * p);
	}
	if (cfg->learns_cost)
		lin_cost_model(cfg, st, lin_factor(st), out + (Size) fs.count * p);
	if (cfg->confidence == CONFIDENCE_CMM)
		spectrum_primal_prepare(cfg, p, lin_factor_at(st, p, 0), lin_rhs(st, p),
								out + lin_prepared_spectrum_at(cfg, &fs, p));
}

/* Decoded, with the t_f lin_prepare() computed (NULL: computed here). */
static ArmModel *
lin_decode_prepared(const SelectorConfig *cfg, const StateHeader *st, const double *prepared)
{
	ArmModel   *m = palloc0(sizeof(ArmModel));
	int			p = lin_feature_count(cfg);

	m->p = p;
	confidence_factors(cfg, &m->factors);
	for (int f = 0; f < m->factors.count; f++)
		m->L[f] = cfg->discount < 1 ? discounted_factor(cfg, st, p) : lin_factor_at(st, p, f);
	if (cfg->confidence == CONFIDENCE_CMM && prepared != NULL)
		m->spectrum = spectrum_from(cfg, st->n, p, true, *lin_yy(st, p),
									prepared + lin_prepared_spectrum_at(cfg, &m->factors, p));
	else if (cfg->confidence == CONFIDENCE_CMM)
		m->spectrum = spectrum_primal(cfg, st->n, p, m->L[0], lin_rhs(st, p), *lin_yy(st, p));
	else
	{
		for (int f = 0; f < m->factors.count; f++)
			m->t[f] = prepared != NULL ? prepared + (Size) f * p
				: chol_forward_copy(p, m->L[f], lin_rhs(st, p));
		lin_bounds(cfg, st, m);
	}
	if (cfg->learns_cost && prepared != NULL)
		m->cost_weights = prepared + (Size) m->factors.count * p;
	else if (cfg->learns_cost)
	{
		double	   *weights = palloc(sizeof(double) * (p + 1));

		lin_cost_model(cfg, st, m->L[0], weights);
		m->cost_weights = weights;
	}
	m->z = palloc(sizeof(double) * p);
	m->scratch = palloc(sizeof(double) * p);
	if (cfg->share > 0)
	{
		m->gram = palloc(sizeof(double) * PACKED_SIZE(p));
		chol_product(p, m->L[0], m->factors.alpha[0], m->gram);
		m->rhs = palloc(sizeof(double) * p);
		memcpy(m->rhs, lin_rhs(st, p), sizeof(double) * p);
	}
	return m;
}

static ArmModel *
lin_decode(const SelectorConfig *cfg, const StateHeader *st)
{
	return lin_decode_prepared(cfg, st, NULL);
}

/* Mean and width of the context in model->z under factor f. */
static void
lin_eval(const void *query, int f, double alpha, double *mean, double *width)
{
	const ArmModel *m = query;

	memcpy(m->scratch, m->z, sizeof(double) * m->p);
	chol_forward(m->p, m->L[f], m->scratch);
	*mean = dot(m->p, m->scratch, m->t[f]);
	*width = sqrt(dot(m->p, m->scratch, m->scratch));
}

static void
lin_score(const SelectorConfig *cfg, const ArmModel *m, const double *x, ArmScore *out)
{
	lin_features(cfg, x, m->z);
	if (m->spectrum != NULL)
		spectrum_score(cfg, m->spectrum, m->z, 0.0, out);
	else
		confidence_pick(&m->bounds, lin_eval, m, out);
	if (m->cost_weights != NULL)
		out->cost = lin_cost_at(m, m->z);
}

/*
 * share: each arm's prior term v_a = A_a⁻¹(α s w₀), so that its mean is
 * zᵀA_a⁻¹b_a + z·v_a.  O(G p²) for the sums and solves, O(p³) for w₀.  A
 * model decoded without share (no Σ zzᵀ kept) takes no part and gets no
 * prior term.
 */
static double **
lin_share_priors(const SelectorConfig *cfg, int narms, const ArmModel *const *models)
{
	int			p = lin_feature_count(cfg);
	double		alpha = cfg->alpha;
	double	   *S = palloc0(sizeof(double) * PACKED_SIZE(p));
	double	   *w0 = palloc0(sizeof(double) * p);
	double	  **priors = palloc0(sizeof(double *) * Max(narms, 1));

	for (int i = 0; i < p; i++)
		S[PACKED_ROW(i) + i] = alpha;
	for (int a = 0; a < narms; a++)
		if (models[a] != NULL && models[a]->gram != NULL)
		{
			axpy((int) PACKED_SIZE(p), 1.0, models[a]->gram, S);
			axpy(p, 1.0, models[a]->rhs, w0);
		}
	chol_factor_rows(p, S, alpha);
	chol_solve(p, S, w0);
	for (int a = 0; a < narms; a++)
		if (models[a] != NULL && models[a]->gram != NULL)
		{
			priors[a] = palloc(sizeof(double) * p);
			for (int i = 0; i < p; i++)
				priors[a][i] = alpha * cfg->share * w0[i];
			chol_solve(p, models[a]->L[0], priors[a]);
		}
	pfree(S);
	pfree(w0);
	return priors;
}

static void
lin_score_shared(const SelectorConfig *cfg, const ArmModel *m, const double *prior,
				 const double *x, ArmScore *out)
{
	lin_score(cfg, m, x, out);
	out->mean += dot(m->p, m->z, prior);
}

/*
 * lin_score for a block of m contexts: features four rows at a time (rff),
 * and per candidate factor the means and widths of the whole block
 * (chol_forward_block), with a single score's bits.
 */
static void
lin_score_block(const SelectorConfig *cfg, const ArmModel *m, int nrows, const double *X,
				void **shared, ArmScore *out)
{
	int			p = m->p;
	double	   *Z = *shared;
	double	   *means = palloc(sizeof(double) * nrows);
	double	   *sqnorms = palloc(sizeof(double) * nrows);

	if (Z == NULL)
	{
		*shared = Z = palloc(sizeof(double) * (Size) nrows * p);
		policy_features_block(cfg, nrows, X, Z, p);
		for (int t = 0; t < nrows; t++)
			lin_features_after(cfg, X + (Size) t * cfg->dim, Z + (Size) t * p);
	}
	if (m->cost_weights != NULL)
		for (int t = 0; t < nrows; t++)
			out[t].cost = lin_cost_at(m, Z + (Size) t * p);
	if (m->spectrum != NULL)
	{
		for (int t = 0; t < nrows; t++)
			spectrum_score(cfg, m->spectrum, Z + (Size) t * p, 0.0, &out[t]);
		return;
	}
	for (int i = 0; i < m->bounds.count; i++)
	{
		int			f = m->bounds.factor[i];

		chol_forward_block(p, m->L[f], m->t[f], nrows, Z, means, sqnorms);
		for (int t = 0; t < nrows; t++)
			confidence_consider(&m->bounds, i, means[t], sqrt(sqnorms[t]), &out[t]);
	}
}

/* lin_ucb's own settings: the weight of the prior mean shared across arms, the noise prior, the codebook. */
static const char *const lin_ucb_settings[] = {"share", "noise_prior", "codebook", "codebook_shrink", NULL};

/*
 * lin_ucb's own defaults, the library's default router: a ridge 20 times the
 * table's, a bias feature √10, a radius 2 times the noise scale each arm
 * learns from its residuals (5 pseudo-rewards of unit variance as prior),
 * a codebook of 8 centroids, which warm_start() fits, and 16 buckets for
 * tags (model/tags.c).
 * On RouterDC's seven models (bench/quality_routerdc7.sql) they beat the
 * best single model cold and warm-started, where the table's (alpha 1,
 * intercept 1, eta 0.5) lock in on early rewards cold
 * (docs/offline-evaluation.md#the-default).
 */
static const PolicyDefault lin_ucb_defaults[] = {
	UCB_SCALE_DEFAULTS, {"noise_prior", 5}, {"codebook", 8}, {"tag_buckets", 16},
	{NULL, 0}
};

const PolicyOps lin_ucb_ops = {
	.name = "lin_ucb", .kind = POLICY_LIN_UCB,
	.uses_context = true, .bounds = BOUNDS_CHOICE, .forgets = FORGETS_ALL, .learns_cost = true,
	.settings = lin_ucb_settings,
	.defaults = lin_ucb_defaults,
	POLICY_FUNCTIONS(lin), .append_rows = lin_append_rows, .score_block = lin_score_block,
	.prepared_size = lin_prepared_size, .prepare = lin_prepare, .decode_prepared = lin_decode_prepared,
	.build_weighted = lin_build_weighted, .innovations = lin_innovations, .share_priors = lin_share_priors,
	.score_shared = lin_score_shared,
};

/* rff_ucb's own settings: how many random features (2 × features values each), share, noise_prior. */
static const char *const rff_ucb_settings[] = {"features", "share", "noise_prior", NULL};

/* lin_ucb on random Fourier features of a shift-invariant kernel. */
const PolicyOps rff_ucb_ops = {
	.name = "rff_ucb", .kind = POLICY_RFF_UCB,
	.uses_context = true, .kernels = KERNELS_SHIFT_INVARIANT, .random_features = true,
	.bounds = BOUNDS_CHOICE, .forgets = FORGETS_ALL, .learns_cost = true, .settings = rff_ucb_settings,
	POLICY_FUNCTIONS(lin), .append_rows = lin_append_rows, .score_block = lin_score_block,
	.prepared_size = lin_prepared_size, .prepare = lin_prepare, .decode_prepared = lin_decode_prepared,
	.build_weighted = lin_build_weighted, .share_priors = lin_share_priors,
	.score_shared = lin_score_shared,
};
