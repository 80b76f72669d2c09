/*
 * lin_state.h — the state of lin_ucb and rff_ucb: its layout (here) and its
 * folds (policy/lin_fold.c); the policy's models and scores are
 * policy/lin_ucb.c's.
 *
 * body = [L, the packed factor of A (p × p) | b (p) | with yᵀy kept: yᵀy,
 * and Σw with the learnt noise scale, or the other regularisers' factors |
 * with a window: the held rows (n × row_dim: contexts, with a cost model
 * their costs) and rewards (n) | with a cost model: its sums (lin_cost_sums)]
 */
#ifndef MODEL_SELECT_LIN_STATE_H
#define MODEL_SELECT_LIN_STATE_H

#include "math/linalg.h"
#include "model/registry.h"
#include "model/state.h"
#include "policy/confidence.h"

#define LIN_BODY(p) (PACKED_SIZE(p) + (p))

/* Length of the feature vector z: the policy's features, the codebook's one-hot, the intercept. */
static inline int
lin_feature_count(const SelectorConfig *cfg)
{
	return policy_linear_feature_count(cfg);
}

/* The factor of A; with a discount, the weighted Gram sum Σγ^age zzᵀ instead. */
static inline double *
lin_factor(const StateHeader *st)
{
	return (double *) STATE_BODY(st);
}

static inline double *
lin_rhs(const StateHeader *st, int p)
{
	return (double *) STATE_BODY(st) + PACKED_SIZE(p);
}

/* Does the state keep the learnt noise scale's sums (noise_prior, confidence fixed)? */
static inline bool
lin_learns_noise(const SelectorConfig *cfg)
{
	return confidence_learns_noise(cfg);
}

/* Does the state keep yᵀy (a confidence bound, or the learnt noise scale)? */
static inline bool
lin_keeps_yy(const SelectorConfig *cfg)
{
	return cfg->confidence != CONFIDENCE_FIXED || lin_learns_noise(cfg);
}

/*
 * With yᵀy kept, after b: yᵀy, then for a confidence bound the factors of
 * the other regularisers (settings_resolve() rules out forgetting then),
 * for the learnt noise scale Σw, the rows' weights (n without forgetting).
 * Both are weighted as the rows are: Σw r² and Σw under a discount.
 */
static inline double *
lin_yy(const StateHeader *st, int p)
{
	return lin_rhs(st, p) + p;
}

static inline double *
lin_weight_sum(const StateHeader *st, int p)
{
	return lin_yy(st, p) + 1;
}

/* The state's doubles before a window's rows: the factor, b and the noise sums. */
static inline Size
lin_head(const SelectorConfig *cfg, int p)
{
	return LIN_BODY(p) + (lin_learns_noise(cfg) ? 2 : 0);
}

/* With a window: the held rows (n × row_dim) and rewards (n), after the head. */
static inline double *
lin_rows(const SelectorConfig *cfg, const StateHeader *st, int p)
{
	return (double *) STATE_BODY(st) + lin_head(cfg, p);
}

static inline double *
lin_row_rewards(const SelectorConfig *cfg, const StateHeader *st, int p)
{
	return lin_rows(cfg, st, p) + (Size) st->n * cfg->row_dim;
}

static inline double *
lin_factor_at(const StateHeader *st, int p, int f)
{
	return f == 0 ? lin_factor(st) : lin_yy(st, p) + 1 + (Size) (f - 1) * PACKED_SIZE(p);
}

/*
 * A cost model (cfg->learns_cost): over the rows whose reward logged a cost
 * c, Σ c z (p), Σ z (p), Σ c and their count (weighted, and forgetting, as
 * A and b are), at the body's end.  Its mean at z is
 * c̄ + zᵀA⁻¹(Σ c z − c̄ Σ z) with c̄ = Σ c / count: ridge regression of c − c̄
 * with A, the reward model's matrix, so that a row without a cost counts as
 * one at c̄.
 */
#define LIN_COST_SUMS(p) (2 * (Size) (p) + 2)

extern double *lin_cost_sums(const SelectorConfig *cfg, const StateHeader *st, int p);
extern void lin_features(const SelectorConfig *cfg, const double *x, double *z);
extern void lin_features_after(const SelectorConfig *cfg, const double *x, double *z);
extern Size lin_body(const SelectorConfig *cfg, int n);
extern int	lin_innovations(const SelectorConfig *cfg, const StateHeader *built, int n,
							const double *X, const double *r, double *e);
extern StateHeader *lin_build_weighted(const SelectorConfig *cfg, int n, const double *X,
									   const double *r, const double *w);
extern StateHeader *lin_build(const SelectorConfig *cfg, int n, const double *X, const double *r);
extern StateHeader *lin_append(const SelectorConfig *cfg, const StateHeader *old, const double *x,
							   double r);
extern bool lin_append_rows(const SelectorConfig *cfg, StateHeader *st, int m, const double *X,
							const double *r);

#endif
