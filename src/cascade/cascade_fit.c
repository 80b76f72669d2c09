/*
 * cascade_fit.c — the convex primitive-loss fit of a cascade arm's
 * reservation index parameters rho (Belloni, Chen & Wei 2026, known reward), and the
 * refit schedule.
 *
 * Loss.  For a sample with scaled value mu in [0, 1] and scaled cost c >= 0,
 * at z = rhoᵀpsi (eq. 8, closed form of spec §3.3 with Lambda = tanh,
 * u* = atanh(mu) >= 0, +inf for mu = 1):
 *
 *     l(z)  = c·z − [mu·min(z, u*) − log cosh(min(z, u*))]
 *     l'(z) = c − (mu − tanh z)⁺                       (the Weitzman moment, eq. 9)
 *     l''(z) = (1 − tanh² z)·[mu > tanh z]
 *
 * l is convex and C¹.  Beyond |z| > Z_SAT (where tanh is within 1.2e-5 of
 * ±1) it continues as l(Z) + l'(Z)(z − Z) + (z − Z)²/2: that leaves every
 * index the data can express unchanged but bounds the minimiser when an
 * arm's costs leave no interior root (cost 0 with value 1, or costs above the
 * whole value range).  The fit minimises Σ l(ρᵀψ_s) + (λ/2)|ρ|², strictly
 * convex, by damped Newton: Hessian Σ l''·ψψᵀ + λI (factorised), each step
 * capped at |Δz| <= 2 and backtracked (Armijo), until the Newton decrement
 * gᵀH⁻¹g is below 1e-20·(n + 1).  Warm starts (the stored rho) and cold
 * starts (rho = 0) reach the same minimiser.
 *
 * Schedule (cascade_refit_due): rho is refit from all the arm's observations
 * after every INSERT statement while the arm has at most 32, then whenever n
 * has grown by an eighth since the last fit — O(log n) refits of O(n) rows
 * each; the design factor is updated per observation (cascade_obs.c).
 */
#include "postgres.h"

#include <math.h>

#include "utils/float.h"

#include "cascade/cascade.h"
#include "math/elementary.h"
#include "math/linalg.h"
#include "math/vecops.h"

#define FIT_MAX_ITER 100
#define FIT_MAX_DZ 2.0

static double
logcosh(double z)
{
	double		a = fabs(z);

	return a + portable_log1p(portable_exp(-2.0 * a)) - M_LN2;
}

/* Loss of one sample at z; *d gets l'(z), *w gets l''(z). */
static double
sample_loss(double z, double mu, double c, double *d, double *w)
{
	double		zc = Max(-CASCADE_Z_SAT, Min(CASCADE_Z_SAT, z));
	double		ustar = mu >= 1.0 ? get_float8_infinity() : portable_atanh(Max(mu, 0.0));
	double		zz = Min(zc, ustar);
	double		t = portable_tanh(zc);
	double		gap = mu - t;
	double		l = c * zc - (mu * zz - logcosh(zz));
	double		e = z - zc;

	*d = c - (gap > 0 ? gap : 0.0);
	*w = gap > 0 ? 1.0 - t * t : 0.0;
	if (e != 0.0)
	{
		l += *d * e + 0.5 * e * e;
		*d += e;
		*w = 1.0;
	}
	return l;
}

/* Objective at (z = Ψρ, ρ); d and w get every sample's l' and l''. */
static double
objective(const CascadeSamples *s, const double *z, const double *rho, double *d, double *w)
{
	double		f = 0.5 * CASCADE_FIT_RIDGE * dot(s->m, rho, rho);

	for (int i = 0; i < s->n; i++)
		f += sample_loss(z[i], s->mu[i], s->c[i], &d[i], &w[i]);
	return f;
}

/* step = −H⁻¹g at the current point; returns the Newton decrement gᵀH⁻¹g. */
static double
newton_step(const CascadeSamples *s, const double *rho, const double *d, const double *w,
			double *work, double *H, double *step)
{
	int			m = s->m,
				k = 0;

	/* g = Ψᵀd + λρ */
	memcpy(step, rho, sizeof(double) * m);
	gemv_cols(s->n, m, s->psi, d, CASCADE_FIT_RIDGE, step);
	/* H = Σ w ψψᵀ + λI over the rows with w > 0 */
	for (int i = 0; i < s->n; i++)
		if (w[i] > 0.0)
		{
			double		r = sqrt(w[i]);

			for (int j = 0; j < m; j++)
				work[(Size) k * m + j] = r * s->psi[(Size) i * m + j];
			k++;
		}
	gram_packed(k, m, work, CASCADE_FIT_RIDGE, true, H);
	{
		double	   *g = work;		/* the rows are no longer needed */
		double		dec;

		memcpy(g, step, sizeof(double) * m);
		chol_solve(m, H, step);
		dec = dot(m, g, step);
		for (int j = 0; j < m; j++)
			step[j] = -step[j];
		return dec;
	}
}

/*
 * Minimise the loss of s from rho (in: start, out: minimiser).  Returns the
 * number of Newton steps taken.
 */
int
cascade_fit(const CascadeSamples *s, double *rho)
{
	int			n = s->n,
				m = s->m,
				iter;
	double	   *z = palloc(sizeof(double) * Max(n, 1));
	double	   *zt = palloc(sizeof(double) * Max(n, 1));
	double	   *dz = palloc(sizeof(double) * Max(n, 1));
	double	   *d = palloc(sizeof(double) * Max(n, 1));
	double	   *w = palloc(sizeof(double) * Max(n, 1));
	double	   *dt = palloc(sizeof(double) * Max(n, 1));
	double	   *wt = palloc(sizeof(double) * Max(n, 1));
	double	   *work = palloc(sizeof(double) * (Size) Max(n, 1) * m + sizeof(double) * m);
	double	   *H = palloc(sizeof(double) * PACKED_SIZE(m));
	double	   *step = palloc(sizeof(double) * m);
	double	   *rt = palloc(sizeof(double) * m);
	double		f;

	if (n > 0)
		gemv_rows(n, m, s->psi, rho, z);
	f = objective(s, z, rho, d, w);
	for (iter = 0; iter < FIT_MAX_ITER; iter++)
	{
		double		dec = newton_step(s, rho, d, w, work, H, step);
		double		t = 1.0,
					cap = 0.0,
					ft = f;
		bool		accepted = false;

		if (!(dec > 1e-20 * (n + 1)))
			break;
		if (n > 0)
			gemv_rows(n, m, s->psi, step, dz);
		for (int i = 0; i < n; i++)
			cap = Max(cap, fabs(dz[i]));
		if (cap > FIT_MAX_DZ)
			t = FIT_MAX_DZ / cap;
		for (int k = 0; k < 60 && !accepted; k++, t *= 0.5)
		{
			for (int i = 0; i < n; i++)
				zt[i] = z[i] + t * dz[i];
			for (int j = 0; j < m; j++)
				rt[j] = rho[j] + t * step[j];
			ft = objective(s, zt, rt, dt, wt);
			accepted = ft <= f - 1e-4 * t * dec;
		}
		if (!accepted)
			break;				/* no more progress in floating point */
		memcpy(rho, rt, sizeof(double) * m);
		memcpy(z, zt, sizeof(double) * Max(n, 1));
		memcpy(d, dt, sizeof(double) * Max(n, 1));
		memcpy(w, wt, sizeof(double) * Max(n, 1));
		f = ft;
	}
	return iter;
}

bool
cascade_refit_due(int64 n, int64 fit_n)
{
	return n <= CASCADE_REFIT_ALWAYS || n - fit_n >= Max(1, fit_n / CASCADE_REFIT_GROWTH);
}
