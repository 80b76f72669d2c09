/*
 * bkb_view.h — a bkb state's body (its layout: the top of policy/bkb.c) and
 * the dictionary's embedding and sampling (policy/bkb_dictionary.c), shared
 * by the two files of the policy.
 */
#ifndef MODEL_SELECT_POLICY_BKB_VIEW_H
#define MODEL_SELECT_POLICY_BKB_VIEW_H

#include "model/settings.h"
#include "model/state.h"

#define BKB_COST_SUMS(m) (2 * (Size) (m) + 2)
#define BKB_BODY(n, m, dim, cc) (1 + (Size) (n) * ((dim) + 1 + (cc)) + 2 * PACKED_SIZE(m) + 2 * (Size) (m) + \
								 ((cc) > 0 ? BKB_COST_SUMS(m) : 0))

/* Pointers into a state body (policy/bkb.c's layout). */
typedef struct BkbView
{
	int			n;
	int			m;
	int			cc;				/* cost columns per row (0: no cost model) */
	double	   *X;
	double	   *y;
	double	   *C;
	double	   *S;
	double	   *Ls;
	double	   *R;
	double	   *b;
	double	   *cost_sums;
} BkbView;

extern void bkb_gather_into(const SelectorConfig *cfg, const BkbView *v, double *XS, double *sq);
extern double *bkb_gather(const SelectorConfig *cfg, const BkbView *v, double **sq);
extern double *bkb_embed_rows(const SelectorConfig *cfg, const BkbView *v, int n, const double *X);
extern int	bkb_sample_dictionary(const SelectorConfig *cfg, const BkbView *model, int n, const double *X,
								  uint64 salt, double *S, double **Ls);

#endif
