/*
 * cascade.h — learned cost-aware cascades (COSMOS, Belloni, Chen & Wei 2026 §3), the
 * known-reward variant: the application's evaluator gives each queried
 * arm's value V directly.
 *
 * Per arm a, the Weitzman reservation index is modelled as
 *
 *     sigma_a(x) = lo + R · tanh(rho_aᵀ psi(x)),      R = hi − lo
 *
 * where [lo, hi] = [reward_min, reward_max] of the selector (values and costs
 * are scaled by 1/R into the paper's [0, 1] world, in which the index lies in
 * (−1, 1)).  Features psi(x): [1] for selectors whose policy ignores the
 * context (greedy, random); the random Fourier features of the selector plus
 * a bias 1 for rff_ucb; the (normalised) embedding plus a bias 1 otherwise.
 *
 * rho_a minimises the convex primitive loss of eq. (8)-(10) over the arm's
 * observations plus (lambda/2)|rho|² (cascade_fit.c), refit on the schedule
 * of cascade_refit_due() by the observation trigger (cascade_obs.c).  The
 * optimistic index, the stop threshold, is
 *
 *     lo + R · tanh(rho_aᵀpsi + beta·|psi|_{V_a⁻¹}),   V_a = eta1·I + Σ psi psiᵀ
 *
 * (eq. 15: the bonus inside the link, with beta a tunable multiplier in
 * place of the paper's B*; the index stays below reward_max).
 */
#ifndef MODEL_SELECT_CASCADE_H
#define MODEL_SELECT_CASCADE_H

#include "utils/array.h"

#include "model/settings.h"

/* eta1: ridge of the design matrix V = eta1·I + Σ psi psiᵀ (the bonus) */
#define CASCADE_DESIGN_RIDGE 1.0
/* lambda: ridge of the primitive loss (makes the fit unique) */
#define CASCADE_FIT_RIDGE 1e-3
/* beyond |z| > Z_SAT the per-sample loss continues as a parabola (tanh(6) ≈ 1 − 1.2e-5) */
#define CASCADE_Z_SAT 6.0
/* refit schedule: after every statement while n <= 32, then whenever n has grown by 1/8 */
#define CASCADE_REFIT_ALWAYS 32
#define CASCADE_REFIT_GROWTH 8

/* An arm's stored cascade state (one row of model_select.cascade_state). */
typedef struct CascadeState
{
	int32		arm_id;
	int64		n;				/* observations folded into the design */
	int64		fit_n;			/* n at the last fit of rho */
	int			m;				/* feature dimension */
	double	   *rho;			/* m; NULL while n = 0 */
	double	   *L;				/* PACKED_SIZE(m) Cholesky factor of V; NULL while n = 0 */
} CascadeState;

/* An arm's observations as the fit uses them. */
typedef struct CascadeSamples
{
	int			n;
	int			m;
	double	   *psi;			/* n × m, by rows */
	double	   *mu;				/* scaled values, in [0, 1] */
	double	   *c;				/* scaled costs, >= 0 */
} CascadeSamples;

/* cascade.c */
extern int	cascade_psi_dim(const SelectorConfig *cfg);
extern void cascade_psi(const SelectorConfig *cfg, const double *raw_x, double *psi);
extern double cascade_range(const SelectorConfig *cfg);
extern double *cascade_rho_decode(Datum rho, int *k);
extern void cascade_state_decode(CascadeState *st, int m, bool rho_null, Datum rho,
								 bool design_null, Datum design);
extern bool cascade_refit_due(int64 n, int64 fit_n);

/* cascade_fit.c */
extern int	cascade_fit(const CascadeSamples *s, double *rho);

#endif
