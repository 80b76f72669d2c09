/*
 * settings_internal.h — the settings table and the helpers shared by
 * settings.c (the table, resolution, jsonb output) and settings_read.c
 * (reading jsonb).  Not for other subsystems: they use settings.h.
 */
#ifndef MODEL_SELECT_SETTINGS_INTERNAL_H
#define MODEL_SELECT_SETTINGS_INTERNAL_H

#include "utils/jsonb.h"

#include "model/config.h"

typedef enum SettingType
{
	SETTING_NUMBER,
	SETTING_INTEGER,
	SETTING_BOOLEAN,
	SETTING_CHOICE,				/* a name from `choices`, stored as its index */
	SETTING_GRID,				/* an array of numbers: cfg->grid, cfg->ngrid */
	SETTING_INTERVAL,			/* an interval's text or whole seconds, on any clock */
	SETTING_RETAIN				/* a count (the field, int32) or an interval (retain_seconds) */
} SettingType;

/* Which selectors a setting applies to. */
typedef enum SettingScope
{
	FOR_ALL,
	FOR_CONTEXTUAL,				/* policies that use the context */
	FOR_HISTORY,				/* policies that keep every context they learned, and
								 * any on the time clock (its rows are kept) */
	FOR_BANDWIDTH,				/* rbf, laplacian and matern kernels */
	FOR_POLY,
	FOR_MATERN,
	FOR_OWN,					/* the policies that name it in PolicyOps.settings */
	FOR_OWN_FIXED,				/* those, with confidence fixed */
	FOR_WINDOW,					/* policies that honour each kind of forgetting */
	FOR_DISCOUNT,				/* (as a γ per reward: not on the time clock) */
	FOR_HALF_LIFE,				/* the time clock's discount */
	FOR_RESTART,
	FOR_CLOCK,					/* a selector that forgets (window, discount, restart_every) */
	FOR_DETECT,					/* a window or restarts on the selector's or the time clock, a policy
								 * with PolicyOps.innovations */
	FOR_CONFIDENCE,				/* policies whose bounds the confidence setting chooses */
	FOR_RIDGE,					/* contextual, unless confidence igp fixes the ridge */
	FOR_FIXED_WIDTH,			/* confidence fixed, or a policy's own radius */
	FOR_BOUNDS,					/* confidence other than fixed, or a policy's own radius */
	FOR_GRID,					/* confidence dmm or cmm */
	FOR_IGP,					/* confidence igp */
	FOR_FIXED_CHOICE,			/* a policy with a choice of bounds, confidence fixed */
	FOR_BUDGET,					/* a selector with a budget */
	FOR_PENDING,				/* a budget, or count_pending */
	FOR_COST_MODEL				/* a budget, a policy that learns costs */
} SettingScope;

typedef struct SettingDef
{
	const char *name;
	SettingType type;
	size_t		field;			/* offsetof in SelectorConfig */
	double		default_value;
	double		min;
	bool		min_exclusive;
	double		max;
	SettingScope applies;
	const char *const *choices; /* SETTING_CHOICE: the names, NULL-terminated */
	bool		duration;		/* on the time clock: seconds, or an interval's text */
	bool		shown_when_set;	/* listed in the resolved settings only when not
								 * its default */
} SettingDef;

/* Every setting, once (settings.c); N_SETTINGS entries. */
#define N_SETTINGS 42
extern const SettingDef setting_defs[];
extern const char *const clock_names[];

extern int	setting_index(const char *name);
extern void set_field(SelectorConfig *cfg, const SettingDef *def, double value);
extern char *valid_keys(const SelectorConfig *cfg);
extern void settings_error(const SelectorConfig *cfg, const char *key, const char *problem)
			pg_attribute_noreturn();
extern void settings_error_hint(const SelectorConfig *cfg, const char *key, const char *problem,
								const char *hint) pg_attribute_noreturn();
extern void read_settings(SelectorConfig *cfg, Jsonb *settings, bool *given);

#endif
