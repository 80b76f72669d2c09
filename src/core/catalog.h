/*
 * catalog.h — reading selectors, arms and arm state from the model_select
 * tables, and the backend-local cache of decoded arm models.
 */
#ifndef MODEL_SELECT_CATALOG_H
#define MODEL_SELECT_CATALOG_H

#include "core/settings.h"
#include "core/spi_util.h"
#include "core/state.h"

typedef struct ArmInfo
{
	int32		arm_id;
	char	   *name;
	int32		ordinal;
	bool		active;
	int64		n;
	double		cost_sum;		/* the costs of the arm's log (FoldTotals), */
	int64		cost_n;			/* for the budget's pacer (decide.c) */
	int64		version;
	int64		xmin;			/* of the arm_state row: versions of rolled
								 * back transactions are not reused */
	const ArmModel *model;		/* NULL while n = 0 */
} ArmInfo;

typedef struct Selector
{
	char	   *name;
	SelectorConfig cfg;
	int			narms;
	ArmInfo    *arms;
} Selector;

extern int32 selector_id_by_name(const char *name);
extern void arm_lookup(const char *selector, const char *arm, int32 *selector_id, int32 *arm_id,
					   bool *active);
extern void config_from_row(SelectorConfig *cfg, HeapTuple row, TupleDesc desc, int first_col);
extern void config_load(int32 selector_id, SelectorConfig *cfg);
extern void config_load_shared(int32 selector_id, SelectorConfig *cfg);
extern void config_load_by_name(const char *name, SelectorConfig *cfg);
extern Selector *selector_load(const char *name);
extern bool selector_models_current(Selector *sel);
extern void model_cache_forget_all(void);

#define CONFIG_COLUMNS "selector_id, dim, policy, kernel, settings, seed, settings_version"

#endif
