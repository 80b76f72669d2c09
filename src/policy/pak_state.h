/*
 * pak_state.h — the state of pak_ucb: its layout (here) and its folds
 * (policy/pak_fold.c); the policy's models and scores are
 * policy/pak_ucb.c's.
 */
#ifndef MODEL_SELECT_PAK_STATE_H
#define MODEL_SELECT_PAK_STATE_H

#include "math/linalg.h"
#include "model/registry.h"
#include "model/state.h"
#include "policy/confidence.h"

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
static inline int
pak_cost_columns(const SelectorConfig *cfg)
{
	return cfg->learns_cost ? COST_COLUMNS : 0;
}

/* The factors a state keeps: one per regulariser of its confidence bounds. */
static inline int
pak_factor_count(const SelectorConfig *cfg)
{
	FactorSet	fs;

	confidence_factors(cfg, &fs);
	return fs.count;
}

extern int	pak_capacity(const SelectorConfig *cfg, int n);
extern Size pak_body(const SelectorConfig *cfg, int n);
extern int	pak_row_spans(const SelectorConfig *cfg, const StateHeader *st, int first, int last,
						  RowSpan *spans);
extern StateHeader *pak_build_weighted(const SelectorConfig *cfg, int n, const double *X,
									   const double *r, const double *w);
extern StateHeader *pak_build(const SelectorConfig *cfg, int n, const double *X, const double *r);
extern int	pak_innovations(const SelectorConfig *cfg, const StateHeader *built, int n,
							const double *X, const double *r, double *e);
extern StateHeader *pak_append(const SelectorConfig *cfg, const StateHeader *old, const double *x,
							   double r);
extern int	pak_kept_rows(const SelectorConfig *cfg, int n);
extern bool pak_slides(const SelectorConfig *cfg, int n);

#endif
