/*
 * spectral.c — confidence cmm: the exact bound of Flynn & Reeb 2024 (Eq. 12),
 *
 *   ucb(x) = min over α > 0 of  μ_α(x) + R̃_α·ρ_α(x)/√α,
 *
 * found by a one-dimensional search over u = ln α.  After one symmetric
 * eigendecomposition per decoded state every α costs O(m):
 *
 *   kernel (pak_ucb), K = U diag(l) Uᵀ, q = Uᵀy, p = Uᵀk(x):
 *     μ_α = Σ p_i q_i/(l_i + α),  ρ_α²/α = (k'(x,x) − Σ p_i²/(l_i + α))/α,
 *     quad(α) = Σ α q_i²/(l_i + α)
 *   primal (lin_ucb, rff_ucb), ZᵀZ = V diag(l) Vᵀ, q = Vᵀb, p = Vᵀz:
 *     μ_α = Σ p_i q_i/(l_i + α),  ρ_α²/α = Σ p_i²/(l_i + α),
 *     quad(α) = yᵀy − Σ q_i²/(l_i + α)
 *
 * The search scans a lattice of step 0.5 over ln α plus the dmm grid,
 * then refines the best point by golden section; the limit α → ∞,
 * B·√k'(x,x), is a candidate too (reported as alpha = Infinity).  Any α gives a valid bound,
 * so an imperfect search is only looser, and the grid points make cmm never
 * looser than dmm.  The decode costs O(m³): cmm suits arms of up to a few
 * thousand rewards (README, limits).
 */
#include "postgres.h"

#include <math.h>

#include "utils/float.h"

#include "policy/confidence.h"
#include "model/kernel.h"
#include "math/elementary.h"
#include "math/eigen.h"
#include "math/linalg.h"
#include "math/vecops.h"

/*
 * ln α is searched from ln α₀ − 12 (below, the kernel form's width loses
 * digits to cancellation; the bound there only tends to a finite limit
 * when the arm's Gram matrix is singular) to ln α₀ + 16 (where the bound
 * is within a hair of its limit B·√k'(x,x)).
 */
#define LATTICE_LOW 12.0
#define LATTICE_HIGH 16.0
#define LATTICE_STEP 0.5
#define LATTICE_POINTS ((int) ((LATTICE_LOW + LATTICE_HIGH) / LATTICE_STEP) + 1)
#define GOLDEN_STEPS 60

struct Spectrum
{
	int			m;
	bool		primal;
	double		alpha0;
	const double *U;			/* m × m by rows, row j = eigenvector j */
	const double *l;			/* eigenvalues, clamped at 0 */
	const double *q;
	double		yy;
	double		rt2;			/* R_t² (Eq. 8) */
	double	   *p;				/* per context: Uᵀk or Vᵀz */
};

/* One point of the search at one context. */
typedef struct Candidate
{
	double		ucb;			/* +Infinity where R̃_α² < 0 */
	double		mean;
	double		width;
	double		radius;
	double		alpha;
} Candidate;

static double
spectrum_quad(const Spectrum *s, double alpha)
{
	double		sum = 0.0;

	for (int i = 0; i < s->m; i++)
		sum += s->q[i] * s->q[i] / (s->l[i] + alpha);
	return s->primal ? Max(s->yy - sum, 0.0) : alpha * sum;
}

/* R̃_α², negative where the rewards contradict B and σ. */
static double
radius2(const SelectorConfig *cfg, const Spectrum *s, double alpha)
{
	return s->rt2 + alpha * cfg->rkhs_bound * cfg->rkhs_bound - spectrum_quad(s, alpha);
}

/* The doubles of a decomposition of order m as spectrum_*_prepare() write it: U, l, q. */
Size
spectrum_doubles(int m)
{
	return (Size) m * m + 2 * (Size) m;
}

/*
 * Eigendecomposition of the m × m symmetric A (by rows, its lower triangle
 * read; freed) into at: U, l, and q = Uᵀy; in eigen.c's fixed order, the
 * same bits on every CPU.
 */
static void
decompose(int m, double *A, const double *y, double *at)
{
	double	   *U = at;
	double	   *l = at + (Size) m * m;
	double	   *q = l + m;

	sym_eigen(m, A, l, U);
	pfree(A);
	for (int i = 0; i < m; i++)
		l[i] = Max(l[i], 0.0);
	if (m > 0)
		gemv_rows(m, m, U, y, q);
}

/* R_t², and a WARNING if the rewards contradict B and σ on the lattice. */
static void
finish(const SelectorConfig *cfg, Spectrum *s, int n)
{
	double		ld0 = 0.0;
	int			skipped = 0;

	s->alpha0 = cfg->alpha;
	for (int i = 0; i < s->m; i++)
		ld0 += portable_log1p(s->l[i] / s->alpha0);
	s->rt2 = confidence_rt2(cfg, ld0, spectrum_quad(s, s->alpha0));
	for (int k = 0; k < LATTICE_POINTS; k++)
		if (radius2(cfg, s, s->alpha0 * portable_exp(-LATTICE_LOW + k * LATTICE_STEP)) < 0)
			skipped++;
	if (skipped > 0)
		confidence_warn_negative(cfg, n, skipped, LATTICE_POINTS);
}

/*
 * pak_ucb: the decomposition of K' of the n prepared contexts X, with
 * rewards v, into out (spectrum_doubles(n)): what a decode computes from
 * the state alone, which a published version carries (PolicyOps.prepare).
 */
void
spectrum_kernel_prepare(const SelectorConfig *cfg, int n, const double *X, const double *v,
						double *out)
{
	double	   *K = palloc(sizeof(double) * Max((Size) n * n, 1));
	double	   *sqnorms = palloc(sizeof(double) * Max(n, 1));

	row_sqnorms(n, cfg->dim, X, sqnorms);
	for (int j = 0; j < n; j++)
		kernel_vector(cfg, n, X, sqnorms, X + (Size) j * cfg->dim, K + (Size) j * n);
	decompose(n, K, v, out);
	pfree(sqnorms);
}

/*
 * lin_ucb, rff_ucb: the decomposition of ZᵀZ = L0 L0ᵀ − α₀I (L0 of order p,
 * packed by rows) with b = Zᵀy into out (spectrum_doubles(p)).
 */
void
spectrum_primal_prepare(const SelectorConfig *cfg, int p, const double *L0, const double *b,
						double *out)
{
	double	   *packed = palloc(sizeof(double) * PACKED_SIZE(p));
	double	   *G = palloc(sizeof(double) * Max((Size) p * p, 1));

	/* ZᵀZ by linalg.c's fixed-order dot products, then its lower triangle by rows */
	chol_product(p, L0, cfg->alpha, packed);
	for (int i = 0; i < p; i++)
		memcpy(G + (Size) i * p, packed + PACKED_ROW(i), sizeof(double) * (i + 1));
	pfree(packed);
	decompose(p, G, b, out);
}

/*
 * The spectrum of the decomposition of order m at `at` (kept, not copied),
 * for an arm of n rewards (yy = yᵀy in primal form): R_t² and the warning
 * are computed here, by the backend that scores it.
 */
Spectrum *
spectrum_from(const SelectorConfig *cfg, int n, int m, bool primal, double yy, const double *at)
{
	Spectrum   *s = palloc0(sizeof(Spectrum));

	s->m = m;
	s->primal = primal;
	s->yy = yy;
	s->U = at;
	s->l = at + (Size) m * m;
	s->q = s->l + m;
	s->p = palloc(sizeof(double) * Max(m, 1));
	finish(cfg, s, n);
	return s;
}

/* lin_ucb, rff_ucb: for n rewards, from the factor L0 of α₀I + ZᵀZ, b = Zᵀy and yᵀy. */
Spectrum *
spectrum_primal(const SelectorConfig *cfg, int n, int p, const double *L0, const double *b, double yy)
{
	double	   *at = palloc(sizeof(double) * Max(spectrum_doubles(p), 1));

	spectrum_primal_prepare(cfg, p, L0, b, at);
	return spectrum_from(cfg, n, p, true, yy, at);
}

/* The bound at regulariser exp(u) for the projected context s->p. */
static Candidate
evaluate(const SelectorConfig *cfg, const Spectrum *s, double kself, double u)
{
	Candidate	c;
	double		mean = 0.0;
	double		var = 0.0;
	double		r2;

	c.alpha = portable_exp(u);
	for (int i = 0; i < s->m; i++)
	{
		double		inv = 1.0 / (s->l[i] + c.alpha);

		mean += s->p[i] * s->q[i] * inv;
		var += s->p[i] * s->p[i] * inv;
	}
	if (!s->primal)
		var = (kself - var) / c.alpha;
	r2 = radius2(cfg, s, c.alpha);
	c.mean = mean;
	c.width = sqrt(Max(var, 0.0));
	c.radius = sqrt(Max(r2, 0.0));
	c.ucb = r2 < 0 ? get_float8_infinity() : c.mean + c.radius * c.width;
	/* an α so small that 1/(l + α) overflows is no candidate */
	if (isnan(c.ucb))
		c.ucb = get_float8_infinity();
	return c;
}

/* Golden-section search for the smallest bound in [lo, hi]. */
static Candidate
refine(const SelectorConfig *cfg, const Spectrum *s, double kself, double lo, double hi)
{
	const double ratio = (sqrt(5.0) - 1.0) / 2.0;
	double		a = hi - ratio * (hi - lo);
	double		b = lo + ratio * (hi - lo);
	Candidate	ca = evaluate(cfg, s, kself, a);
	Candidate	cb = evaluate(cfg, s, kself, b);

	for (int k = 0; k < GOLDEN_STEPS; k++)
	{
		if (ca.ucb <= cb.ucb)
		{
			hi = b;
			b = a;
			cb = ca;
			a = hi - ratio * (hi - lo);
			ca = evaluate(cfg, s, kself, a);
		}
		else
		{
			lo = a;
			a = b;
			ca = cb;
			b = lo + ratio * (hi - lo);
			cb = evaluate(cfg, s, kself, b);
		}
	}
	return ca.ucb <= cb.ucb ? ca : cb;
}

/*
 * cmm's bound for one context: vec is the kernel vector k'(X, x) (kernel)
 * or the feature vector z (primal); kself = k'(x, x) (kernel only: in
 * primal form it is |z|², the squared norm of the projection).
 */
void
spectrum_score(const SelectorConfig *cfg, const Spectrum *s, const double *vec, double kself,
			   ArmScore *out)
{
	double		u0 = portable_log(s->alpha0);
	Candidate	best;
	Candidate	c;
	double		u_best;

	if (s->m > 0)
		gemv_rows(s->m, s->m, s->U, vec, s->p);
	/* α₀ itself: R̃_α₀² > 0 always, so best is finite */
	best = evaluate(cfg, s, kself, u0);
	u_best = u0;
	for (int k = 0; k < LATTICE_POINTS + cfg->ngrid; k++)
	{
		double		u = k < LATTICE_POINTS ? u0 - LATTICE_LOW + k * LATTICE_STEP
			: u0 + portable_log(cfg->grid[k - LATTICE_POINTS]);

		c = evaluate(cfg, s, kself, u);
		if (c.ucb < best.ucb)
		{
			best = c;
			u_best = u;
		}
	}
	c = refine(cfg, s, kself, u_best - LATTICE_STEP, u_best + LATTICE_STEP);
	if (c.ucb < best.ucb)
		best = c;
	/*
	 * As α → ∞ the bound tends to B·√k'(x,x) (|f(x)| ≤ ‖f‖·√k'(x,x)); far
	 * from the data it is approached from above, so the limit itself is a
	 * candidate: mean 0, width the prior sd, radius B.
	 */
	if (s->primal)
		kself = dot(s->m, s->p, s->p);
	if (cfg->rkhs_bound * sqrt(Max(kself, 0.0)) < best.ucb)
	{
		best.mean = 0.0;
		best.width = sqrt(Max(kself, 0.0));
		best.radius = cfg->rkhs_bound;
		best.alpha = get_float8_infinity();
	}
	out->mean = best.mean;
	out->width = best.width;
	out->radius = best.radius;
	out->alpha = best.alpha;
}
