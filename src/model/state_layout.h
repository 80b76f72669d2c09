/*
 * state_layout.h — the binary layout of an arm's learned state and an arm's score
 * (the interface every policy implements is PolicyOps, model/registry.h).
 *
 * An arm's state is one bytea in model_select.arm_state.state:
 *
 *   StateHeader (24 bytes, including the varlena header)
 *   policy body: float8 values, 8-byte aligned after the header
 *
 *   pak_ucb: X[c][dim] contexts as used (normalised), v[c] rewards,
 *            L[c(c+1)/2] Cholesky factor of K' + alpha I, packed by rows,
 *            laid out for c >= n rows (pak_capacity(); rows [0, n) used) so
 *            that a row is appended in place; stored by rows: arm_state.state
 *            holds the header only, model_select.arm_state_rows the rows
 *            (model/state_store.c)
 *   lin_ucb: L[p(p+1)/2] Cholesky factor of alpha I + sum z zᵀ, b[p] = sum r z,
 *            with p = dim + codebook + 1 and z = [x ; c ; sqrt(intercept)],
 *            c the codebook's one-hot (model/codebook.c)
 *   greedy, random: sum of rewards (1 value)
 *   rff_ucb: as lin_ucb with p = 2·features + 1; bkb: see policy_bkb.c
 *
 * With a confidence bound (confidence.c): pak_ucb with dmm appends a factor
 * of K' + α_f I per other grid regulariser; lin_ucb/rff_ucb append yᵀy and,
 * with dmm, the factors of α_f I + Σ zzᵀ.  igp's base factor is at 1 + 2/T.
 * With noise_prior (confidence fixed) lin_ucb/rff_ucb append yᵀy and Σw,
 * weighted as the rows are, before a window's rows.
 *
 * With forgetting (header field `forgetting`): pak_ucb keeps only the rows
 * it still uses (window: the last W; discount: weights above 1e-6) and
 * factorises K' + α·diag(γ^-age); lin_ucb/rff_ucb with a window append the
 * held rows X[n][dim], r[n] after b (n = rows held), with a discount keep
 * the weighted sums Σγ^age zzᵀ (packed) and b instead of a factor; greedy
 * with a window keeps the held rewards, with a discount (Σγ^age r, Σγ^age).
 *
 * On the selector's or the time clock (setting clock "selector" or "time",
 * model/clock_ops.h) every policy's state is the rows that may still count
 * and their ticks, and the model is built from them when decoded.
 *
 * `format` is STATE_FORMAT_VERSION when written; readers reject other
 * versions, so a later release can convert old states or rebuild them from
 * the reward log (the log is the source of truth).
 */
#ifndef MODEL_SELECT_STATE_LAYOUT_H
#define MODEL_SELECT_STATE_LAYOUT_H

#include "model/config.h"

#define STATE_MAGIC 0x4d53454cU	/* "MSEL" */
#define STATE_FORMAT_VERSION 1

typedef struct StateHeader
{
	int32		vl_len_;
	uint32		magic;
	uint16		format;
	uint16		policy;
	int32		dim;
	int32		n;
	int32		forgetting;		/* FORGET_*: which body layout variant */
	double		body[FLEXIBLE_ARRAY_MEMBER];
} StateHeader;

#define STATE_HEADER_SIZE offsetof(StateHeader, body)
StaticAssertDecl(offsetof(StateHeader, body) == 24, "state body starts at byte 24");

#define STATE_BODY(st) ((st)->body)

/* Body variants for the forgetting settings (restart_every needs none). */
#define FORGET_NONE 0
#define FORGET_WINDOW 1			/* the state keeps the rows it may drop */
#define FORGET_DISCOUNT 2		/* weights γ^age */
#define FORGET_CLOCK 3			/* on the selector's or the time clock: the rows, ticked (clock_ops.h) */

/* A decoded model ready for scoring; policy-specific, opaque to callers. */
typedef struct ArmModel ArmModel;

/*
 * An arm's score for one context: ucb = mean + radius·width, where width is
 * ρ_α(x)/√α at the regulariser α used (for dmm and cmm the α that gives the
 * smallest bound at this context) and radius the confidence radius.
 */
typedef struct ArmScore
{
	double		mean;
	double		width;
	double		radius;
	double		alpha;
	double		ucb;
	double		cost;			/* with cfg->learns_cost: the cost predicted for the context */
} ArmScore;

#endif
