/*
 * confidence.c — the confidence radii of Flynn & Reeb 2024 for one arm.
 *
 * Notation: an arm has n rewards y, Gram matrix K (of k' = k + intercept),
 * σ = noise, B = rkhs_bound, δ = delta, α₀ = alpha (the paper's covariance
 * scale is c = σ²/α₀), ld(α) = ln det(I + K/α), quad(α) = α·yᵀ(K + αI)⁻¹y.
 * For every α the bound is
 *
 *   ucb = μ_α(x) + radius·width_α(x),   width_α = ρ_α(x)/√α
 *
 * with radius, by setting:
 *   fixed  eta
 *   ay     σ·√(ld(α₀) + 2 ln(1/δ)) + √α₀·B                    (App. C.2)
 *   igp    (σ·√(ld(λ) + n·η + 2 ln(1/δ)) + B)·√λ, λ = 1 + η, η = 2/horizon
 *   amm    R̃_α₀ = √(σ²·ld(α₀) + α₀B² + 2σ² ln(1/δ))          (Lemma C.2)
 *   dmm    the smallest bound over α ∈ α₀·grid of R̃_α, where
 *          R̃_α² = R_t² + αB² − quad(α),
 *          R_t² = quad(α₀) + σ²·ld(α₀) + 2σ² ln(1/δ)         (Eq. 8, Cor. 4.3)
 *   cmm    the smallest over all α > 0 (spectral.c).
 *
 * Any α gives a valid bound on the same 1 − δ event, so dmm and cmm may pick
 * α per context.  R̃_α² > 0 for α ≤ α₀; for larger α it can be negative,
 * which means the rewards contradict B and σ: that α is skipped with a
 * WARNING (never a NaN).  If every grid α is skipped, dmm uses α₀ (AMM).
 */
#include "postgres.h"

#include <math.h>

#include "policy/confidence.h"
#include "math/elementary.h"

/* The regulariser of the arm's base factor: igp fixes it at 1 + 2/horizon. */
double
confidence_base_alpha(const SelectorConfig *cfg)
{
	return cfg->confidence == CONFIDENCE_IGP ? 1.0 + 2.0 / cfg->horizon : cfg->alpha;
}

/* dmm keeps a factor per grid α besides α₀; the others keep the base only. */
void
confidence_factors(const SelectorConfig *cfg, FactorSet *out)
{
	out->count = 1;
	out->alpha[0] = confidence_base_alpha(cfg);
	if (cfg->confidence != CONFIDENCE_DMM)
		return;
	for (int i = 0; i < cfg->ngrid; i++)
		if (cfg->grid[i] != 1.0)
			out->alpha[out->count++] = cfg->alpha * cfg->grid[i];
}

/* Does the radius scale by the arm's learnt noise (noise_prior, confidence fixed)? */
bool
confidence_learns_noise(const SelectorConfig *cfg)
{
	return cfg->confidence == CONFIDENCE_FIXED && cfg->noise_prior > 0;
}

/*
 * The learnt noise scale σ̂ = √((n₀ + quad) / (n₀ + Σw)) of an arm whose
 * penalised residuals are quad = α·vᵀ(K' + α·diag(1/w))⁻¹v = min_f Σ wᵢ(rᵢ −
 * f(xᵢ))² + α‖f‖² and whose rows weigh Σw: n₀ pseudo-rewards of unit
 * variance and the arm's own (the unknown noise of Bayesian ridge
 * regression).  The fixed radius eta becomes eta·σ̂.
 */
double
confidence_noise_scale(const SelectorConfig *cfg, double quad, double weight_sum)
{
	return sqrt((cfg->noise_prior + quad) / (cfg->noise_prior + weight_sum));
}

/* R_t² of Eq. 8 in its computable form (Flynn & Reeb 2024). */
double
confidence_rt2(const SelectorConfig *cfg, double ld0, double quad0)
{
	double		sigma2 = cfg->noise * cfg->noise;

	return quad0 + sigma2 * ld0 - 2.0 * sigma2 * portable_log(cfg->delta);
}

void
confidence_warn_negative(const SelectorConfig *cfg, int n, int skipped, int tried)
{
	ereport(WARNING,
			(errmsg("confidence radius² is negative for %d of %d regularisers: an arm's %d rewards contradict rkhs_bound %g and noise %g",
					skipped, tried, n, cfg->rkhs_bound, cfg->noise),
			 errdetail("Those regularisers are skipped; the bound uses the others."),
			 errhint("Raise rkhs_bound (or noise) if such rewards are expected.")));
}

/* One candidate: the base factor with a fixed radius. */
static void
single_bound(ArmBounds *out, double alpha, double radius)
{
	out->count = 1;
	out->factor[0] = 0;
	out->alpha[0] = alpha;
	out->radius[0] = radius;
}

/* dmm: a candidate per grid α whose R̃_α² is not negative. */
static void
grid_bounds(const SelectorConfig *cfg, int n, const FactorSet *fs, double ld0,
			const double *quad, ArmBounds *out)
{
	double		rt2 = confidence_rt2(cfg, ld0, quad[0]);
	double		B2 = cfg->rkhs_bound * cfg->rkhs_bound;
	int			f = 1;
	int			skipped = 0;

	out->count = 0;
	for (int i = 0; i < cfg->ngrid; i++)
	{
		int			factor = cfg->grid[i] == 1.0 ? 0 : f++;
		double		alpha = fs->alpha[factor];
		double		r2 = rt2 + alpha * B2 - quad[factor];

		if (r2 < 0)
		{
			skipped++;
			continue;
		}
		out->factor[out->count] = factor;
		out->alpha[out->count] = alpha;
		out->radius[out->count] = sqrt(r2);
		out->count++;
	}
	if (skipped > 0)
		confidence_warn_negative(cfg, n, skipped, cfg->ngrid);
	if (out->count == 0)
		single_bound(out, fs->alpha[0], sqrt(rt2 + fs->alpha[0] * B2 - quad[0]));
}

/*
 * The candidate bounds of an arm with n rewards, from ld_base = ln det(I +
 * K/α) at the base factor and quad[f] = α_f·yᵀ(K + α_f I)⁻¹y per factor.
 */
void
confidence_bounds(const SelectorConfig *cfg, int n, const FactorSet *fs,
				  double ld_base, const double *quad, ArmBounds *out)
{
	double		sigma = cfg->noise;
	double		B = cfg->rkhs_bound;
	double		log_delta = -2.0 * portable_log(cfg->delta);	/* 2 ln(1/δ), finite for any δ > 0 */
	double		alpha = fs->alpha[0];

	switch (cfg->confidence)
	{
		case CONFIDENCE_FIXED:
			single_bound(out, alpha, cfg->eta);
			break;
		case CONFIDENCE_AY:
			single_bound(out, alpha, sigma * sqrt(ld_base + log_delta) + sqrt(alpha) * B);
			break;
		case CONFIDENCE_IGP:
			single_bound(out, alpha,
						 (sigma * sqrt(ld_base + n * (alpha - 1.0) + log_delta) + B) * sqrt(alpha));
			break;
		case CONFIDENCE_AMM:
			single_bound(out, alpha, sqrt(sigma * sigma * (ld_base + log_delta) + alpha * B * B));
			break;
		case CONFIDENCE_DMM:
			grid_bounds(cfg, n, fs, ld_base, quad, out);
			break;
		default:
			elog(ERROR, "confidence %d has no factor bounds", (int) cfg->confidence);
	}
}

/* The smallest candidate bound at one context. */
void
confidence_pick(const ArmBounds *bounds, FactorEval eval, const void *query, ArmScore *out)
{
	for (int i = 0; i < bounds->count; i++)
	{
		double		mean;
		double		width;

		eval(query, bounds->factor[i], bounds->alpha[i], &mean, &width);
		confidence_consider(bounds, i, mean, width, out);
	}
}

/*
 * Candidate i of confidence_pick() with its mean and width: kept when it is
 * the first or gives a smaller bound (batch scoring computes the candidates
 * of a whole block of contexts, then considers them in the same order).
 */
void
confidence_consider(const ArmBounds *bounds, int i, double mean, double width, ArmScore *out)
{
	if (i == 0 || mean + bounds->radius[i] * width < out->mean + out->radius * out->width)
	{
		out->mean = mean;
		out->width = width;
		out->radius = bounds->radius[i];
		out->alpha = bounds->alpha[i];
	}
}
