/*
 * registry.h — what every policy is: its name, its capabilities and the
 * functions that learn and score, one PolicyOps per policy, all registered
 * in one table (policy/registry.c), which the module entry hands down to
 * the lookups below (model/policy_lookup.c): the domain reads the table and
 * calls nothing of the policies' layer but through a PolicyOps.
 *
 * A new policy is one file (its state layout, the four functions and a
 * `const PolicyOps foo_ops` with designated initialisers), one line in
 * registry.c's table and a new state tag in settings.h's PolicyKind; a key
 * of its own is also a field of SelectorConfig and a FOR_OWN row of
 * settings.c's table, named in its `settings`.  Everything else that
 * depends on the policy — which settings apply, which kernels it takes, the
 * lists of valid names in error messages, whether the decision rule adds a
 * confidence width, SQL's policies() — reads these fields.
 */
#ifndef MODEL_SELECT_REGISTRY_H
#define MODEL_SELECT_REGISTRY_H

#include "model/state_layout.h"

/* PolicyOps.kernels: a set of KernelKind. */
#define KERNEL_BIT(k) (1u << (k))
#define KERNELS_SHIFT_INVARIANT \
	(KERNEL_BIT(KERNEL_RBF) | KERNEL_BIT(KERNEL_LAPLACIAN) | KERNEL_BIT(KERNEL_MATERN))
#define KERNELS_ALL \
	(KERNELS_SHIFT_INVARIANT | KERNEL_BIT(KERNEL_POLY) | KERNEL_BIT(KERNEL_LINEAR))

/* How a policy turns widths into confidence bounds. */
typedef enum PolicyBounds
{
	BOUNDS_NONE,				/* no width: the arm's mean */
	BOUNDS_CHOICE,				/* the confidence setting: fixed, ay, igp, amm, dmm or cmm */
	BOUNDS_BETA					/* its own radius from eta or the bound settings (bkb) */
} PolicyBounds;

/* Which forgetting settings a policy honours (Iwazaki & Takeno (R-PERP)). */
typedef struct PolicyForgetting
{
	bool		window;			/* keep an arm's last W rewards */
	bool		discount;		/* weigh a reward by γ^age */
	bool		restart;		/* reset an arm every H rewards */
} PolicyForgetting;

#define FORGETS_ALL {.window = true, .discount = true, .restart = true}

/* Values (from the body's start, in float8s) that hold some rows of a state. */
typedef struct RowSpan
{
	Size		offset;
	Size		count;
} RowSpan;

#define MAX_ROW_SPANS 24

/* A policy's own default for a key of the settings table (PolicyOps.defaults). */
typedef struct PolicyDefault
{
	const char *name;
	double		value;
} PolicyDefault;

/*
 * The scale of the kernel and linear UCB policies' defaults (lin_ucb, pak_ucb,
 * bkb): a ridge alpha 20 times the settings table's, an intercept 10, a
 * radius eta 2, so that an arm's level (the intercept over the ridge) weighs
 * more than its kernel shape, and an arm seen only elsewhere keeps a mean
 * near its level (docs/changing-worlds.md#clocks).
 */
#define UCB_SCALE_DEFAULTS {"alpha", 20}, {"intercept", 10}, {"eta", 2}

/* PolicyOps.append_rows */
typedef bool (*append_rows_fn) (const SelectorConfig *cfg, StateHeader *st, int m,
								const double *X, const double *r);

typedef struct PolicyOps
{
	const char *name;			/* as in selectors.policy */
	PolicyKind	kind;			/* the tag in selectors' configs and state headers */
	bool		uses_context;	/* scores depend on the context (else the arm's mean) */
	uint32		kernels;		/* KERNEL_BITs it takes (0: no kernel); default rbf */
	bool		random_features;	/* contexts mapped to random Fourier features */
	PolicyBounds bounds;
	bool		keeps_rows;		/* the state holds every context it learned (cap) */
	bool		dictionary;		/* a resampled Nyström dictionary: a body of varying size */
	bool		picks_at_random;	/* choose by the tie-break hash alone */
	/*
	 * With a budget, arms learn a cost model beside the rewards and score
	 * fills ArmScore.cost (the cost_model setting, docs/settings.md#budgets)
	 */
	bool		learns_cost;
	PolicyForgetting forgets;
	/*
	 * The setting keys that apply to this policy alone (NULL-terminated;
	 * NULL: none): the settings table's FOR_OWN keys apply to the policies
	 * that name them here.  Keys shared by a capability (cap, the bounds'
	 * keys, forgetting) follow the fields above.
	 */
	const char *const *settings;
	/*
	 * Defaults of this policy that differ from the settings table's (ended
	 * by a NULL name; NULL: none): what a key the caller leaves out takes.
	 */
	const PolicyDefault *defaults;

	/* State from scratch for n rewards (rows of X already prepared). */
	StateHeader *(*build) (const SelectorConfig *cfg, int n, const double *X, const double *r);
	/*
	 * State with one more reward: old (NULL: empty) plus (x, r).  May update
	 * old in place and return it (fixed-size states), or return a new state
	 * allocated in the current memory context (old is then garbage).
	 */
	StateHeader *(*append) (const SelectorConfig *cfg, const StateHeader *old,
							const double *x, double r);
	/*
	 * Optional: st with m more rewards (rows of X prepared), updated in
	 * place, with the bits of m appends; false, leaving st as it was, where
	 * cfg's states are not updated in place (the caller then appends).
	 */
	append_rows_fn append_rows;
	/*
	 * build with row t weighted by w[t] in (0, 1] instead of the position
	 * weights of cfg's discount (w NULL: build): how a clocked state
	 * (model/clock_state.c) becomes a model under a cfg without window or
	 * restart.  Every policy that forgets has it.
	 */
	StateHeader *(*build_weighted) (const SelectorConfig *cfg, int n, const double *X,
									const double *r, const double *w);
	/*
	 * Optional: the one-step-ahead residuals of n rows in order, row i's
	 * (r_i − μ_{<i}(x_i)) / sqrt(1 + s²_{<i}(x_i)) under the model of rows
	 * before it (up to a common scale), into e; built is
	 * build_weighted(cfg, n, X, r, NULL).  Returns how many: those of the
	 * last rows (a build may drop older ones).  The change detector of a
	 * clocked state (model/clock_state.c) tests them.
	 */
	int			(*innovations) (const SelectorConfig *cfg, const StateHeader *built, int n,
								const double *X, const double *r, double *e);
	/* Decode for scoring, in the current memory context; may precompute. */
	ArmModel   *(*decode) (const SelectorConfig *cfg, const StateHeader *st);
	/*
	 * Optional, together: what decode computes from a state alone, carried
	 * by a published version so that the process publishing it computes it
	 * once for every backend that scores it: its size in doubles (0: none
	 * under cfg), its computation, and decode taking it instead of computing
	 * it (with the same functions, so the same bits).
	 */
	Size		(*prepared_size) (const SelectorConfig *cfg, const StateHeader *st);
	void		(*prepare) (const SelectorConfig *cfg, const StateHeader *st, double *out);
	ArmModel   *(*decode_prepared) (const SelectorConfig *cfg, const StateHeader *st,
									const double *prepared);
	/* Fill mean, width, radius and alpha (not ucb) of out for context x. */
	void		(*score) (const SelectorConfig *cfg, const ArmModel *model,
						  const double *x, ArmScore *out);
	/*
	 * Optional: score the m prepared contexts X (m × dim) into out[0, m), as
	 * score would one by one (NULL: score does).  *shared starts NULL for a
	 * block and is kept across its arms: work that depends only on the
	 * contexts (features) is done for the first arm and reused.
	 */
	void		(*score_block) (const SelectorConfig *cfg, const ArmModel *model,
								int m, const double *X, void **shared, ArmScore *out);
	/*
	 * How many of an arm's n newest rewards since its last restart the state
	 * keeps, its window applied (NULL: all n, or the last `window`).  With
	 * kept_rows(kept_rows(n) + 1) = kept_rows(n + 1), so that append can
	 * take the next step from the rows it holds.
	 */
	int			(*kept_rows) (const SelectorConfig *cfg, int n);
	/*
	 * Optional, for a policy whose build has the bits of its rows appended
	 * one at a time onto an empty state, except where appending slides a
	 * window, dropping the oldest row by an update (pak_ucb): whether
	 * appending n rows would.  A fold of several rows onto an empty state
	 * appends them then, and builds them otherwise (fold_some()).
	 */
	bool		(*slides) (const SelectorConfig *cfg, int n);
	/*
	 * float8 values in the body of a state whose header holds n (the
	 * largest, with a full dictionary, for a dictionary policy, whose check
	 * then reads the dictionary): state_check() compares it with the stored
	 * size before any body is read, create and alter with the allocation
	 * limit.
	 */
	Size		(*body_size) (const SelectorConfig *cfg, int n);
	/* Further checks of a stored body of a fitting size (NULL: none): XX001. */
	void		(*check) (const SelectorConfig *cfg, const StateHeader *st);
	/*
	 * Optional, for a state made of rows that a reward only appends to
	 * (pak_ucb): the spans of st's body holding rows [first, last), at most
	 * MAX_ROW_SPANS; returns their count.  Such states are stored by rows,
	 * so that a checkpoint writes only the rows added (state_store.c).
	 */
	int			(*row_spans) (const SelectorConfig *cfg, const StateHeader *st, int first,
							  int last, RowSpan *spans);
	/*
	 * Optional, for the "share" setting (lin_ucb, rff_ucb): from the models
	 * of all narms arms (NULL: no rewards yet), each arm's prior term (NULL:
	 * the arm scores with score), in the current memory context; then
	 * score_shared scores an arm as score does, with its prior term.
	 */
	double	  **(*share_priors) (const SelectorConfig *cfg, int narms, const ArmModel *const *models);
	void		(*score_shared) (const SelectorConfig *cfg, const ArmModel *model, const double *prior,
								 const double *x, ArmScore *out);
} PolicyOps;

/* The functions of a PolicyOps named prefix_build, prefix_append, … */
#define POLICY_FUNCTIONS(prefix) \
	.build = prefix##_build, .append = prefix##_append, \
	.decode = prefix##_decode, .score = prefix##_score, .body_size = prefix##_body

/* Each registered policy's descriptor, name_ops (POLICY_LIST, config.h). */
#define POLICY_OPS_DECLARE(name, tag, value) extern const PolicyOps name##_ops;
POLICY_LIST(POLICY_OPS_DECLARE)
#undef POLICY_OPS_DECLARE

/*
 * The table of policies, POLICY_COUNT entries in POLICY_LIST's order:
 * policy/registry.c's policy_registry, which _PG_init() sets policy_table to
 * (model/ may not call or name policy/; the module entry may).
 */
extern const PolicyOps *const policy_registry[];
extern const PolicyOps *const *policy_table;

/* model/policy_lookup.c */
extern const PolicyOps *policy_ops(PolicyKind policy);
extern PolicyKind policy_from_name(const char *name);
extern const char *policy_name(PolicyKind policy);
extern KernelKind kernel_from_name(PolicyKind policy, const char *name);
extern int	kernel_set_names(uint32 kernels, const char **names);
extern int	policy_feature_count(const SelectorConfig *cfg);
extern int	policy_linear_feature_count(const SelectorConfig *cfg);

/* policy/registry.c */
extern void policy_features(const SelectorConfig *cfg, const double *x, double *z);
extern void policy_features_block(const SelectorConfig *cfg, int m, const double *X, double *Z,
								  int ldz);

#endif
