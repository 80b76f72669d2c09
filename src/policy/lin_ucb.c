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
 * build() forms A with one BLAS-3 product and factorises it with LAPACK.
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
 */
#include "postgres.h"

#include <math.h>

#include "policy/confidence.h"
#include "math/linalg.h"
#include "math/vecops.h"
#include "model/codebook.h"
#include "model/state.h"
#include "model/registry.h"

struct ArmModel
{
	int			p;
	FactorSet	factors;
	const double *L[MAX_GRID + 1];	/* factor of A_f = α_f I + Σ zzᵀ */
	double	   *t[MAX_GRID + 1];	/* L_f⁻¹ b: the mean is (L_f⁻¹z)·t_f = zᵀA_f⁻¹b */
	ArmBounds	bounds;
	Spectrum   *spectrum;		/* cmm */
	double	   *z;				/* per context: its features */
	double	   *scratch;
	double	   *gram;			/* with share: Σ zzᵀ (packed) and b = Σ r z */
	double	   *rhs;
};

#define LIN_BODY(p) (PACKED_SIZE(p) + (p))

/* Length of the feature vector z: the policy's features, the codebook's one-hot, the intercept. */
static int
feature_count(const SelectorConfig *cfg)
{
	return policy_linear_feature_count(cfg);
}

/*
 * The features after the policy's of a prepared context x: its codebook
 * one-hot, the intercept.  With a fitted codebook the regions' offsets carry
 * each arm's level, and the policy's features are scaled by
 * 1/√codebook_shrink: a ridge codebook_shrink·alpha on the slope within the
 * regions, where alpha alone lets the slope chase the warm rows (on RouterDC
 * warm 1,000 goes from +0.0203 to +0.0240 over 70 orders with 5).
 */
static void
features_after(const SelectorConfig *cfg, const double *x, double *z)
{
	int			p = feature_count(cfg);
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

static void
features(const SelectorConfig *cfg, const double *x, double *z)
{
	policy_features(cfg, x, z);
	features_after(cfg, x, z);
}

/* The factor of A; with a discount, the weighted Gram sum Σγ^age zzᵀ instead. */
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

/* Does the state keep the learnt noise scale's sums (noise_prior, confidence fixed)? */
static bool
learns_noise(const SelectorConfig *cfg)
{
	return confidence_learns_noise(cfg);
}

/* Does the state keep yᵀy (a confidence bound, or the learnt noise scale)? */
static bool
keeps_yy(const SelectorConfig *cfg)
{
	return cfg->confidence != CONFIDENCE_FIXED || learns_noise(cfg);
}

/*
 * With yᵀy kept, after b: yᵀy, then for a confidence bound the factors of
 * the other regularisers (settings_resolve() rules out forgetting then),
 * for the learnt noise scale Σw, the rows' weights (n without forgetting).
 * Both are weighted as the rows are: Σw r² and Σw under a discount.
 */
static double *
lin_yy(const StateHeader *st, int p)
{
	return lin_rhs(st, p) + p;
}

static double *
lin_weight_sum(const StateHeader *st, int p)
{
	return lin_yy(st, p) + 1;
}

/* The state's doubles before a window's rows: the factor, b and the noise sums. */
static Size
lin_head(const SelectorConfig *cfg, int p)
{
	return LIN_BODY(p) + (learns_noise(cfg) ? 2 : 0);
}

/* With a window: the held rows' contexts (n × dim) and rewards (n), after the head. */
static double *
lin_rows(const SelectorConfig *cfg, const StateHeader *st, int p)
{
	return (double *) STATE_BODY(st) + lin_head(cfg, p);
}

static double *
lin_row_rewards(const SelectorConfig *cfg, const StateHeader *st, int p)
{
	return lin_rows(cfg, st, p) + (Size) st->n * st->dim;
}

static double *
lin_factor_at(const StateHeader *st, int p, int f)
{
	return f == 0 ? lin_factor(st) : lin_yy(st, p) + 1 + (Size) (f - 1) * PACKED_SIZE(p);
}

static Size
lin_body(const SelectorConfig *cfg, int n)
{
	FactorSet	fs;
	Size		extra = 0;

	if (cfg->confidence != CONFIDENCE_FIXED)
	{
		confidence_factors(cfg, &fs);
		extra = 1 + (Size) (fs.count - 1) * PACKED_SIZE(feature_count(cfg));
	}
	return lin_head(cfg, feature_count(cfg)) + (cfg->window > 0 ? (Size) n * (cfg->dim + 1) : 0) + extra;
}

/* The factors of the regularisers other than the base, from G = Σ zzᵀ (packed). */
static void
lin_other_factors(const SelectorConfig *cfg, StateHeader *st, const double *G)
{
	int			p = feature_count(cfg);
	FactorSet	fs;

	confidence_factors(cfg, &fs);
	for (int f = 1; f < fs.count; f++)
		chol_factor_shifted(p, G, fs.alpha[f], fs.alpha[f], lin_factor_at(st, p, f));
}

/* With weights w (NULL: γ^age by position under a discount, else 1). */
static StateHeader *
lin_build_weighted(const SelectorConfig *cfg, int n, const double *X, const double *r,
				   const double *w_given)
{
	int			p = feature_count(cfg);
	StateHeader *st = state_alloc(cfg, n, lin_body(cfg, n));
	double	   *Z = palloc(sizeof(double) * (Size) Max(n, 1) * p);
	double	   *w = palloc(sizeof(double) * Max(n, 1));
	bool		discounted = cfg->discount < 1;
	double		weight_sum = 0.0;

	for (int t = 0; t < n; t++)
	{
		/* a row of weight w enters as √w·z: Σ w zzᵀ and Σ w r z */
		double		sw = w_given ? sqrt(w_given[t])
			: discounted ? pow(cfg->discount, 0.5 * (n - 1 - t)) : 1.0;

		features(cfg, X + (Size) t * cfg->dim, Z + (Size) t * p);
		for (int i = 0; i < p; i++)
			Z[(Size) t * p + i] *= sw;
		w[t] = r[t] * sw;
		weight_sum += sw * sw;
	}
	gram_packed(n, p, Z, discounted ? 0.0 : confidence_base_alpha(cfg), !discounted, lin_factor(st));
	if (n > 0)
		gemv_cols(n, p, Z, w, 0.0, lin_rhs(st, p));
	/* yᵀy weighted as the rows are, Σ w r² = |√w·r|² (a confidence bound's rows all weigh 1) */
	if (keeps_yy(cfg))
		*lin_yy(st, p) = n > 0 ? dot(n, w, w) : 0.0;
	if (learns_noise(cfg))
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
		memcpy(lin_rows(cfg, st, p), X, sizeof(double) * (Size) n * cfg->dim);
		memcpy(lin_row_rewards(cfg, st, p), r, sizeof(double) * n);
	}
	pfree(Z);
	pfree(w);
	return st;
}

static StateHeader *
lin_build(const SelectorConfig *cfg, int n, const double *X, const double *r)
{
	return lin_build_weighted(cfg, n, X, r, NULL);
}

/* Windowed: the state with one more held row (a new allocation). */
static StateHeader *
lin_grow(const SelectorConfig *cfg, const StateHeader *old, const double *x, double r)
{
	int			p = feature_count(cfg);
	int			n = old ? old->n : 0;
	StateHeader *st = state_alloc(cfg, n + 1, lin_body(cfg, n + 1));

	if (old == NULL)
		old = lin_build(cfg, 0, NULL, NULL);
	memcpy(STATE_BODY(st), STATE_BODY(old), sizeof(double) * lin_head(cfg, p));
	memcpy(lin_rows(cfg, st, p), lin_rows(cfg, old, p), sizeof(double) * (Size) n * cfg->dim);
	memcpy(lin_rows(cfg, st, p) + (Size) n * cfg->dim, x, sizeof(double) * cfg->dim);
	memcpy(lin_row_rewards(cfg, st, p), lin_row_rewards(cfg, old, p), sizeof(double) * n);
	lin_row_rewards(cfg, st, p)[n] = r;
	return st;
}

/*
 * Windowed and full: forget the oldest held row in place (rank-1 downdate;
 * if rounding makes it fail, refactorise the remaining rows) and make room
 * for the new row at the end.
 */
static void
lin_forget_oldest(const SelectorConfig *cfg, StateHeader *st, const double *x, double r)
{
	int			p = feature_count(cfg);
	int			n = st->n;
	double	   *rows = lin_rows(cfg, st, p);
	double	   *rewards = lin_row_rewards(cfg, st, p);
	double	   *z = palloc(sizeof(double) * p);
	double	   *b = lin_rhs(st, p);

	features(cfg, rows, z);
	for (int i = 0; i < p; i++)
		b[i] -= rewards[0] * z[i];
	if (learns_noise(cfg))
	{
		*lin_yy(st, p) -= rewards[0] * rewards[0];
		*lin_weight_sum(st, p) -= 1.0;
	}
	memmove(rows, rows + cfg->dim, sizeof(double) * (Size) (n - 1) * cfg->dim);
	memmove(rewards, rewards + 1, sizeof(double) * (n - 1));
	memcpy(rows + (Size) (n - 1) * cfg->dim, x, sizeof(double) * cfg->dim);
	rewards[n - 1] = r;
	if (!chol_rank1_downdate(p, lin_factor(st), z))
	{
		StateHeader *kept = lin_build(cfg, n - 1, rows, rewards);

		memcpy(STATE_BODY(st), STATE_BODY(kept), sizeof(double) * LIN_BODY(p));
	}
	pfree(z);
}

static StateHeader *
lin_append(const SelectorConfig *cfg, const StateHeader *old, const double *x, double r)
{
	int			p = feature_count(cfg);
	StateHeader *st;
	double	   *z = palloc(sizeof(double) * p);
	double	   *scratch = palloc(sizeof(double) * p);
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
	features(cfg, x, z);
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
		if (learns_noise(cfg))
		{
			*lin_yy(st, p) = cfg->discount * *lin_yy(st, p) + r * r;
			*lin_weight_sum(st, p) = cfg->discount * *lin_weight_sum(st, p) + 1.0;
		}
	}
	else
	{
		FactorSet	fs;

		for (int i = 0; i < p; i++)
			b[i] += r * z[i];
		confidence_factors(cfg, &fs);
		if (keeps_yy(cfg))
			*lin_yy(st, p) += r * r;
		if (learns_noise(cfg))
			*lin_weight_sum(st, p) += 1.0;
		/* the update destroys its vector: the other factors get a copy */
		for (int f = 1; f < fs.count; f++)
		{
			memcpy(scratch, z, sizeof(double) * p);
			chol_rank1_update(p, lin_factor_at(st, p, f), scratch);
		}
		chol_rank1_update(p, lin_factor(st), z);
	}
	pfree(z);
	pfree(scratch);
	return st;
}

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

	if (keeps_yy(cfg))
		for (int f = 0; f < m->factors.count; f++)
			quad[f] = Max(*lin_yy(st, p) - dot(p, m->t[f], m->t[f]), 0.0);
	if (cfg->confidence != CONFIDENCE_FIXED)
		ld = chol_log_det_scaled(p, m->L[0], m->factors.alpha[0]);
	confidence_bounds(cfg, st->n, &m->factors, ld, quad, &m->bounds);
	if (learns_noise(cfg))
		m->bounds.radius[0] *= confidence_noise_scale(cfg, quad[0], *lin_weight_sum(st, p));
}

static ArmModel *
lin_decode(const SelectorConfig *cfg, const StateHeader *st)
{
	ArmModel   *m = palloc0(sizeof(ArmModel));
	int			p = feature_count(cfg);

	m->p = p;
	confidence_factors(cfg, &m->factors);
	for (int f = 0; f < m->factors.count; f++)
		m->L[f] = cfg->discount < 1 ? discounted_factor(cfg, st, p) : lin_factor_at(st, p, f);
	if (cfg->confidence == CONFIDENCE_CMM)
		m->spectrum = spectrum_primal(cfg, st->n, p, m->L[0], lin_rhs(st, p), *lin_yy(st, p));
	else
	{
		for (int f = 0; f < m->factors.count; f++)
			m->t[f] = chol_forward_copy(p, m->L[f], lin_rhs(st, p));
		lin_bounds(cfg, st, m);
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
	features(cfg, x, m->z);
	if (m->spectrum != NULL)
		spectrum_score(cfg, m->spectrum, m->z, 0.0, out);
	else
		confidence_pick(&m->bounds, lin_eval, m, out);
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
	int			p = feature_count(cfg);
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
	chol_factor_packed(p, S, alpha);
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
 * lin_score for a block of m contexts: features by one GEMM (rff), and per
 * candidate factor the means and widths of the whole block by one TRSM.
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
			features_after(cfg, X + (Size) t * cfg->dim, Z + (Size) t * p);
	}
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
	.uses_context = true, .bounds = BOUNDS_CHOICE, .forgets = FORGETS_ALL, .settings = lin_ucb_settings,
	.defaults = lin_ucb_defaults,
	POLICY_FUNCTIONS(lin), .score_block = lin_score_block, .build_weighted = lin_build_weighted,
	.share_priors = lin_share_priors, .score_shared = lin_score_shared,
};

/* rff_ucb's own settings: how many random features (2 × features values each), share, noise_prior. */
static const char *const rff_ucb_settings[] = {"features", "share", "noise_prior", NULL};

/* lin_ucb on random Fourier features of a shift-invariant kernel. */
const PolicyOps rff_ucb_ops = {
	.name = "rff_ucb", .kind = POLICY_RFF_UCB,
	.uses_context = true, .kernels = KERNELS_SHIFT_INVARIANT, .random_features = true,
	.bounds = BOUNDS_CHOICE, .forgets = FORGETS_ALL, .settings = rff_ucb_settings,
	POLICY_FUNCTIONS(lin), .score_block = lin_score_block, .build_weighted = lin_build_weighted,
	.share_priors = lin_share_priors, .score_shared = lin_score_shared,
};
