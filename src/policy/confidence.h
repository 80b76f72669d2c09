/*
 * confidence.h — confidence radii for the kernel ridge UCB policies
 * (pak_ucb, lin_ucb, rff_ucb): the `confidence` setting, Flynn & Reeb 2024.
 */
#ifndef MODEL_SELECT_CONFIDENCE_H
#define MODEL_SELECT_CONFIDENCE_H

#include "model/state.h"

/* The regularisers an arm keeps a Cholesky factor for; [0] is the base. */
typedef struct FactorSet
{
	int			count;
	double		alpha[MAX_GRID + 1];
} FactorSet;

/* An arm's candidate bounds, computed when its state is decoded. */
typedef struct ArmBounds
{
	int			count;
	int			factor[MAX_GRID + 1];	/* which factor of the FactorSet */
	double		alpha[MAX_GRID + 1];
	double		radius[MAX_GRID + 1];	/* ucb = mean_α + radius·width_α */
} ArmBounds;

/* Mean and width ρ_α(x)/√α of one context under factor f (regulariser alpha). */
typedef void (*FactorEval) (const void *query, int factor, double alpha,
							double *mean, double *width);

extern double confidence_base_alpha(const SelectorConfig *cfg);
extern void confidence_factors(const SelectorConfig *cfg, FactorSet *out);
extern bool confidence_learns_noise(const SelectorConfig *cfg);
extern double confidence_noise_scale(const SelectorConfig *cfg, double quad, double weight_sum);
extern double confidence_rt2(const SelectorConfig *cfg, double ld0, double quad0);
extern void confidence_warn_negative(const SelectorConfig *cfg, int n, int skipped, int tried);
extern void confidence_bounds(const SelectorConfig *cfg, int n, const FactorSet *fs,
							  double ld_base, const double *quad, ArmBounds *out);
extern void confidence_consider(const ArmBounds *bounds, int i, double mean, double width,
								ArmScore *out);
extern void confidence_pick(const ArmBounds *bounds, FactorEval eval, const void *query,
							ArmScore *out);

/* cmm: the eigendecomposition route of Flynn & Reeb 2024 (spectral.c). */
typedef struct Spectrum Spectrum;

extern Size spectrum_doubles(int m);
extern void spectrum_kernel_prepare(const SelectorConfig *cfg, int n, const double *X,
									const double *v, double *out);
extern void spectrum_primal_prepare(const SelectorConfig *cfg, int p, const double *L0,
									const double *b, double *out);
extern Spectrum *spectrum_from(const SelectorConfig *cfg, int n, int m, bool primal, double yy,
							   const double *at);
extern Spectrum *spectrum_primal(const SelectorConfig *cfg, int n, int p, const double *L0,
								 const double *b, double yy);
extern void spectrum_score(const SelectorConfig *cfg, const Spectrum *s, const double *vec,
						   double kself, ArmScore *out);

#endif
