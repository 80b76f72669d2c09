/*
 * catalog.h — reading selectors, arms and arm state from the model_select
 * tables.
 */
#ifndef MODEL_SELECT_CATALOG_H
#define MODEL_SELECT_CATALOG_H

#include "access/transam.h"
#include "datatype/timestamp.h"
#include "utils/hsearch.h"

#include "model/settings.h"
#include "pg/spi_util.h"
#include "model/state.h"

typedef struct ArmInfo
{
	int32		arm_id;
	char	   *name;
	int32		ordinal;
	bool		active;
	int64		n;
	double		cost_sum;		/* the costs of the arm's log (FoldTotals): */
	int64		cost_n;			/* its mean cost, for the budget's pacer */
	double		spend_sum;		/* the costs of its decisions' rewards: */
	int64		spend_n;		/* the pacer's spend (pacer.c) */
	int64		pending_n;		/* its decisions among the selector's last
								 * pending_horizon without a reward yet */
	int64		pending_priced;	/* of those, the ones that logged an expected
								 * cost (the cost model's), */
	double		pending_cost;	/* and the sum of those costs (pacer.c) */
	double		unfolded_spend; /* the costs of the rewards of its decisions in
								 * the pacer's window that its model does not
								 * hold yet (versioned), */
	int64		unfolded_spend_n;	/* and their number */
	double		awaited;		/* rewards expected still to come from its
								 * pending decisions (routing/awaited.c) */
	int64		version;
	int64		xmin;			/* of the arm_state row: versions of rolled
								 * back transactions are not reused */
	int64		prefix_n;		/* versioned: the rows of the log's prefix scored */
	FullTransactionId prefix_tx;	/* and the position that prefix ends at */
	int64		prefix_seq;
	const ArmModel *model;		/* NULL while n = 0 */
	uint64		model_serial;	/* the backend's name of model for the share
								 * cache (routing/share_cache.c); 0: none */
} ArmInfo;

typedef struct Selector
{
	char	   *name;
	SelectorConfig cfg;
	int			narms;
	ArmInfo    *arms;
	/*
	 * Versioned: each arm scores a prefix of its log (prefix_n rows, a
	 * version) plus this transaction's rows up to seq own_seq (0: none), the
	 * learner's rule (routing/arm_cache.h); else the exact fold of the
	 * snapshot.
	 */
	bool		versioned;
	int64		own_seq;
	/* decision_scores(): the cost weight its decision logged, in force */
	bool		lambda_logged;
	double		lambda;
	/* with a budget: the mean cost weight of the pacer's window (pacer.c) */
	double		window_lambda;
} Selector;

extern void selector_unknown(const char *name);
extern int32 selector_id_by_name(const char *name);
extern int32 selector_id_if_exists(const char *name);
extern HeapTuple selector_row(SPIPlanPtr plan, Datum *args, const char *name);
extern HTAB *id_hash_create(const char *name, Size entrysize, MemoryContext cxt);
extern void config_from_row(SelectorConfig *cfg, HeapTuple row, TupleDesc desc, int first_col);
extern void config_from_values(SelectorConfig *cfg, const Datum *values, const bool *nulls);
extern void config_load(int32 selector_id, SelectorConfig *cfg);
extern void config_load_for_reward(int32 selector_id, const char *name, SelectorConfig *cfg);
extern bool config_try_load_for_reward(int32 selector_id, const char *name, SelectorConfig *cfg);
extern void config_load_by_name(const char *name, SelectorConfig *cfg);

/*
 * A selectors row's configuration columns, of the table referred to as t,
 * and their places in that list (ConfigColumn), in the same order.
 */
#define CONFIG_COLUMNS_OF(t) \
	t ".selector_id, " t ".dim, " t ".policy, " t ".kernel, " t ".settings, " t ".seed, " \
	t ".settings_version"
#define CONFIG_COLUMNS CONFIG_COLUMNS_OF("selectors")
/* Their places from 0; a query that selects them first has them from SPI's column 1 on. */
#define CONFIG_FIRST_COLUMN 1
typedef enum ConfigColumn
{
	CONFIG_SELECTOR_ID,
	CONFIG_DIM,
	CONFIG_POLICY,
	CONFIG_KERNEL,
	CONFIG_SETTINGS,
	CONFIG_SEED,
	CONFIG_SETTINGS_VERSION,
	CONFIG_NCOLUMNS
} ConfigColumn;

#endif
