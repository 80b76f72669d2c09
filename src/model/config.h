/*
 * config.h — a selector's resolved configuration (SelectorConfig) and the
 * kinds it is made of: the types every layer above shares.  How settings
 * are read and resolved is settings.h's; this header has no functions, so
 * that the state layout (state_layout.h) and the descriptors of policies
 * and clocks (registry.h, clock_ops.h) can name a configuration without
 * depending on the settings code.
 */
#ifndef MODEL_SELECT_CONFIG_H
#define MODEL_SELECT_CONFIG_H

/*
 * The registry: one line per policy, X(name, tag, value), in the order
 * error messages and policies() list them.  name_ops is the policy's
 * PolicyOps (model/registry.h), which says what it is and can do; value is
 * its tag's, stored in every arm state's header: never reuse or change one.
 * The tags (PolicyKind), the descriptors' declarations and the table of
 * policies (policy/registry.c) are made from this list.
 */
#define POLICY_LIST(X) \
	X(pak_ucb, POLICY_PAK_UCB, 0) \
	X(rff_ucb, POLICY_RFF_UCB, 4) \
	X(bkb, POLICY_BKB, 5) \
	X(lin_ucb, POLICY_LIN_UCB, 1) \
	X(greedy, POLICY_GREEDY, 2) \
	X(random, POLICY_RANDOM, 3)

#define POLICY_TAG(name, tag, value) tag = value,
#define POLICY_ONE(name, tag, value) + 1
typedef enum PolicyKind
{
	POLICY_LIST(POLICY_TAG)
	POLICY_COUNT = 0 POLICY_LIST(POLICY_ONE)
} PolicyKind;
#undef POLICY_TAG
#undef POLICY_ONE

typedef enum KernelKind
{
	KERNEL_NONE,
	KERNEL_RBF,
	KERNEL_POLY,
	KERNEL_LINEAR,
	KERNEL_LAPLACIAN,
	KERNEL_MATERN,
	KERNEL_COUNT
} KernelKind;

/* How wide an arm's confidence interval is (Flynn & Reeb 2024; see confidence.c). */
typedef enum ConfidenceKind
{
	CONFIDENCE_FIXED,			/* ucb = mean + eta·width */
	CONFIDENCE_AY,				/* Abbasi-Yadkori's radius at λ = alpha */
	CONFIDENCE_IGP,				/* IGP-UCB (Chowdhury & Gopalan) at λ = 1 + 2/horizon */
	CONFIDENCE_AMM,				/* analytic martingale-mixture radius at α₀ = alpha */
	CONFIDENCE_DMM,				/* the smallest AMM-type bound over a grid of α */
	CONFIDENCE_CMM,				/* the smallest over all α > 0 (1-D search) */
	CONFIDENCE_COUNT
} ConfidenceKind;

/* How a contextual policy explores (confidence fixed). */
typedef enum ExplorationKind
{
	EXPLORE_UCB,				/* mean + eta·width */
	EXPLORE_THOMPSON,			/* mean + eta·width·ξ, ξ ~ N(0, 1) per arm and decision */
	EXPLORE_COUNT
} ExplorationKind;

/*
 * What the forgetting settings count (model/clock_ops.h): an arm's own
 * rewards, the rewards of the whole selector or wall-clock seconds, so that
 * with the last two an arm that is not chosen still ages.
 */
typedef enum ClockKind
{
	CLOCK_ARM,					/* age = later rewards of the same arm */
	CLOCK_SELECTOR,				/* age = later rewards of any arm of the selector */
	CLOCK_TIME,					/* age = seconds between the reward's time and now */
	CLOCK_COUNT
} ClockKind;

/* The longest duration (window, restart_every, half_life) on the time clock, in seconds. */
#define MAX_DURATION PG_INT32_MAX

/* The largest "cap": most rewards a policy that keeps its rows holds per arm. */
#define MAX_CAP 10000

/* The most centroids a codebook may have. */
#define MAX_CODEBOOK 64

/* Most buckets tags may hash into (tags.c). */
#define MAX_TAG_BUCKETS 1024

/* The loudest a tag may be, as a multiple of the intercept feature's scale. */
#define MAX_TAG_SCALE 100

/*
 * The columns after a row's context when its arm learns a cost model: 1 if
 * the reward logged a cost (else 0), then that cost (else 0).
 */
#define COST_COLUMNS 2

/* Most regularisers a dmm/cmm grid may list. */
#define MAX_GRID 16

typedef struct SelectorConfig
{
	int32		selector_id;
	/*
	 * dim: the length of a context as the policies see it, the embedding's
	 * embed_dim values then tag_buckets (tags.c); 0 buckets for the
	 * policies that do not use the context
	 */
	int32		dim;
	int32		embed_dim;
	/*
	 * row_dim: the length of a row an arm learns from (a fold's, a replay's):
	 * the context's dim values, then with learns_cost the reward's cost
	 * columns (COST_COLUMNS, row_set_cost()); learns_cost: the policy
	 * learns a cost model beside the rewards (cost_model, settings.c)
	 */
	int32		row_dim;
	bool		learns_cost;
	int32		tag_buckets;
	double		tag_scale;		/* the buckets' scale, times √intercept */
	PolicyKind	policy;
	KernelKind	kernel;
	uint64		seed;
	int32		settings_version;	/* bumped by every settings change */
	/* settings; see settings.c for meaning, ranges and defaults */
	double		alpha;
	double		eta;
	double		intercept;
	double		bandwidth;
	double		gamma;
	double		offset;
	int32		degree;
	int32		cap;
	bool		normalize;
	double		reward_min;
	double		reward_max;
	double		cost_weight;	/* λ: arms learn utility = reward − λ·cost */
	double		budget;			/* target mean cost per decision (0: off), pacer.c */
	int32		pace;			/* the pacer's λ reaches its scale after pace decisions' overspend */
	int32		pending_horizon;	/* the pacer counts the unrewarded among the last H decisions */
	bool		cost_model;		/* with a budget: price each arm at its cost predicted from the context */
	bool		count_pending;	/* awaited rewards narrow the widths (routing/awaited.c) */
	/* window, restart_every: rewards, or seconds on the time clock */
	int32		window;			/* forget all but an arm's last W rewards (0: off) */
	double		discount;		/* weight γ^age of a reward (1: off) */
	int32		restart_every;	/* reset an arm every H rewards (0: off) */
	ClockKind	clock;			/* what window, discount and restart_every count */
	bool		detect;			/* a change test on an arm's rows that count (model/clock_state.c) */
	double		half_life;		/* time clock: seconds for a weight of 1/2 (0: off);
								 * sets discount = 2^(−1/half_life) per second */
	double		nu;				/* matern smoothness: 0.5, 1.5 or 2.5 */
	int32		features;		/* rff_ucb: frequencies D (2D features) */
	double		share;			/* lin_ucb, rff_ucb: weight of the shared prior mean (0: off) */
	double		noise_prior;	/* lin_ucb, rff_ucb: pseudo-rewards of unit noise in the
								 * learnt noise scale of the width (0: off) */
	int32		codebook;		/* lin_ucb: centroids k of the codebook (0: off) */
	double		codebook_shrink;	/* lin_ucb with a fitted codebook: the ridge on the
									 * context's features, in multiples of alpha */
	double		qbar;			/* bkb: oversampling of the dictionary */
	bool		adaptive_beta;	/* bkb: width multiplier from Calandriello et al. 2019 (BKB) */
	double		noise;			/* σ: noise scale of the bounds and of bkb's beta */
	double		delta;			/* δ: the bounds hold with probability 1 − δ */
	double		rkhs_bound;		/* B >= |f|_H */
	ConfidenceKind confidence;	/* pak_ucb, lin_ucb, rff_ucb */
	int32		horizon;		/* igp: T, with η = 2/T */
	int32		ngrid;			/* dmm, cmm: regularisers alpha·grid[i] */
	double		grid[MAX_GRID];
	ExplorationKind exploration;	/* pak_ucb, lin_ucb, rff_ucb with confidence fixed */
	/* the log's horizon (learning/retention.c); 0: off */
	int32		retain;			/* keep each arm's newest `retain` rewards in the log */
	double		retain_seconds; /* or its rewards of the last retain_seconds */
	double		decision_ttl;	/* seconds after which a decision without a reward goes */
	/*
	 * Not a setting: the codebook's fitted centroids (codebook × dim), or
	 * NULL while none is fitted (model/codebook.c, which owns the memory).
	 */
	const double *centroids;
} SelectorConfig;

/* Does cfg absorb old rewards into a base (retain)? */
#define RETAINS(cfg) ((cfg)->retain > 0 || (cfg)->retain_seconds > 0)

/*
 * The largest |reward − λ·cost| an arm learns, and the bound of the reward
 * range (reward_min, reward_max): far below where squares and sums over an
 * arm's rewards overflow.
 */
#define UTILITY_MAX 1e15

/*
 * The largest cost of one call: with λ ≤ COST_WEIGHT_MAX, λ·cost and the
 * sums of many costs stay far from overflow.
 */
#define COST_MAX 1e15

/* The largest cost weight λ: the bound of the setting cost_weight and of the pacer's λ. */
#define COST_WEIGHT_MAX 1e12

#endif
