/*
 * settings.c — strict validation of a selector's jsonb settings.
 *
 * Every key is described once in setting_defs: its type, range, default and
 * the policies/kernels it applies to.  Unknown keys, keys that do not apply to
 * the selector's policy or kernel, wrong JSON types and out-of-range values
 * are all rejected with SQLSTATE 22023 and a message naming the valid keys.
 */
#include "postgres.h"

#include <math.h>

#include "lib/stringinfo.h"
#include "utils/builtins.h"
#include "utils/float.h"
#include "utils/fmgrprotos.h"
#include "fmgr.h"
#include "utils/jsonb.h"
#include "utils/numeric.h"

#include "core/duration.h"
#include "core/settings.h"
#include "core/state.h"
#include "policy/registry.h"

typedef enum SettingType
{
	SETTING_NUMBER,
	SETTING_INTEGER,
	SETTING_BOOLEAN,
	SETTING_CHOICE,				/* a name from `choices`, stored as its index */
	SETTING_GRID				/* an array of numbers: cfg->grid, cfg->ngrid */
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
	FOR_RFF,					/* policies with random Fourier features */
	FOR_DICTIONARY,				/* policies with a resampled dictionary */
	FOR_WINDOW,					/* policies that honour each kind of forgetting */
	FOR_DISCOUNT,				/* (as a γ per reward: not on the time clock) */
	FOR_HALF_LIFE,				/* the time clock's discount */
	FOR_RESTART,
	FOR_CLOCK,					/* a selector that forgets (window, discount, restart_every) */
	FOR_CONFIDENCE,				/* policies whose bounds the confidence setting chooses */
	FOR_RIDGE,					/* contextual, unless confidence igp fixes the ridge */
	FOR_FIXED_WIDTH,			/* confidence fixed, or a policy's own radius */
	FOR_BOUNDS,					/* confidence other than fixed, or a policy's own radius */
	FOR_GRID,					/* confidence dmm or cmm */
	FOR_IGP,					/* confidence igp */
	FOR_FIXED_CHOICE,			/* a policy with a choice of bounds, confidence fixed */
	FOR_BUDGET					/* a selector with a budget */
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
} SettingDef;

static const char *const confidence_names[CONFIDENCE_COUNT + 1] = {"fixed", "ay", "igp", "amm", "dmm",
"cmm", NULL};

static const char *const clock_names[CLOCK_COUNT + 1] = {"arm", "selector", "time", NULL};

static const char *const exploration_names[EXPLORE_COUNT + 1] = {"ucb", "thompson", NULL};

/* The DMM grid recommended by spec/001.md §6, as multiples of α₀ = alpha. */
static const double default_grid[] = {0.1, 0.3, 1, 3, 10};

static const SettingDef setting_defs[] = {
	{"alpha", SETTING_NUMBER, offsetof(SelectorConfig, alpha), 1.0, 1e-9, false, 1e12, FOR_RIDGE},
	{"eta", SETTING_NUMBER, offsetof(SelectorConfig, eta), 0.5, 0, false, 1e6, FOR_FIXED_WIDTH},
	{"intercept", SETTING_NUMBER, offsetof(SelectorConfig, intercept), 1.0, 0, false, 1e6, FOR_CONTEXTUAL},
	{"normalize", SETTING_BOOLEAN, offsetof(SelectorConfig, normalize), 1, 0, false, 1, FOR_CONTEXTUAL},
	{"cap", SETTING_INTEGER, offsetof(SelectorConfig, cap), 2000, 1, false, MAX_CAP, FOR_HISTORY},
	/* below 1e-6 the squared distance over bandwidth² can be 0/0 */
	{"bandwidth", SETTING_NUMBER, offsetof(SelectorConfig, bandwidth), 1.0, 1e-6, false, 1e6, FOR_BANDWIDTH},
	{"nu", SETTING_NUMBER, offsetof(SelectorConfig, nu), 1.5, 0.5, false, 2.5, FOR_MATERN},
	{"features", SETTING_INTEGER, offsetof(SelectorConfig, features), 200, 1, false, 8192, FOR_RFF},
	{"qbar", SETTING_NUMBER, offsetof(SelectorConfig, qbar), 2.0, 0, true, 1e6, FOR_DICTIONARY},
	{"adaptive_beta", SETTING_BOOLEAN, offsetof(SelectorConfig, adaptive_beta), 0, 0, false, 1, FOR_DICTIONARY},
	{"confidence", SETTING_CHOICE, offsetof(SelectorConfig, confidence), CONFIDENCE_FIXED, 0, false, 0,
	FOR_CONFIDENCE, confidence_names},
	{"noise", SETTING_NUMBER, offsetof(SelectorConfig, noise), 0.5, 0, true, 1e6, FOR_BOUNDS},
	{"delta", SETTING_NUMBER, offsetof(SelectorConfig, delta), 0.05, 0, true, 1, FOR_BOUNDS},
	{"rkhs_bound", SETTING_NUMBER, offsetof(SelectorConfig, rkhs_bound), 1.0, 0, false, 1e6, FOR_BOUNDS},
	{"grid", SETTING_GRID, offsetof(SelectorConfig, grid), 0, 1e-6, false, 1e6, FOR_GRID},
	{"horizon", SETTING_INTEGER, offsetof(SelectorConfig, horizon), 1000, 1, false, 1e9, FOR_IGP},
	{"exploration", SETTING_CHOICE, offsetof(SelectorConfig, exploration), EXPLORE_UCB, 0, false, 0,
	FOR_FIXED_CHOICE, exploration_names},
	{"gamma", SETTING_NUMBER, offsetof(SelectorConfig, gamma), 1.0, 0, true, 1e6, FOR_POLY},
	{"degree", SETTING_INTEGER, offsetof(SelectorConfig, degree), 3, 1, false, 10, FOR_POLY},
	{"offset", SETTING_NUMBER, offsetof(SelectorConfig, offset), 1.0, 0, false, 1e6, FOR_POLY},
	{"window", SETTING_INTEGER, offsetof(SelectorConfig, window), 0, 0, false, 100000, FOR_WINDOW, NULL, true},
	{"discount", SETTING_NUMBER, offsetof(SelectorConfig, discount), 1.0, 0, true, 1, FOR_DISCOUNT},
	{"half_life", SETTING_NUMBER, offsetof(SelectorConfig, half_life), 0, 0, false, MAX_DURATION, FOR_HALF_LIFE,
	NULL, true},
	{"restart_every", SETTING_INTEGER, offsetof(SelectorConfig, restart_every), 0, 0, false, 100000000, FOR_RESTART,
	NULL, true},
	{"clock", SETTING_CHOICE, offsetof(SelectorConfig, clock), CLOCK_ARM, 0, false, 0, FOR_CLOCK, clock_names},
	{"cost_weight", SETTING_NUMBER, offsetof(SelectorConfig, cost_weight), 0.0, 0, false, 1e12, FOR_ALL},
	{"budget", SETTING_NUMBER, offsetof(SelectorConfig, budget), 0.0, 0, false, 1e12, FOR_ALL},
	{"pace", SETTING_INTEGER, offsetof(SelectorConfig, pace), 100, 1, false, 1e6, FOR_BUDGET},
	{"reward_min", SETTING_NUMBER, offsetof(SelectorConfig, reward_min), 0.0, -1e15, false, 1e15, FOR_ALL},
	{"reward_max", SETTING_NUMBER, offsetof(SelectorConfig, reward_max), 1.0, -1e15, false, 1e15, FOR_ALL},
};

#define N_SETTINGS lengthof(setting_defs)

static const char *const kernel_names[KERNEL_COUNT] = {"none", "rbf", "poly", "linear", "laplacian",
"matern"};

/* names[0..n-1] as "a, b and c" (palloc'd), the form of every list of valid names. */
char *
name_list(const char *const *names, int n)
{
	StringInfoData buf;

	initStringInfo(&buf);
	for (int i = 0; i < n; i++)
		appendStringInfo(&buf, "%s%s", i == 0 ? "" : (i == n - 1 ? " and " : ", "), names[i]);
	return buf.data;
}

const char *
confidence_name(ConfidenceKind confidence)
{
	return confidence_names[confidence];
}

const char *
kernel_name(KernelKind kernel)
{
	return kernel == KERNEL_NONE ? NULL : kernel_names[kernel];
}

/* Does a setting's scope cover this policy (by its capabilities) and kernel? */
static bool
scope_covers(SettingScope scope, const SelectorConfig *cfg, const PolicyOps *ops)
{
	bool		choice = ops->bounds == BOUNDS_CHOICE;

	switch (scope)
	{
		case FOR_ALL:
			return true;
		case FOR_CONTEXTUAL:
			return ops->uses_context;
		case FOR_HISTORY:
			return ops->keeps_rows || cfg->clock == CLOCK_TIME;
		case FOR_BANDWIDTH:
			return (KERNELS_SHIFT_INVARIANT & KERNEL_BIT(cfg->kernel)) != 0;
		case FOR_POLY:
			return cfg->kernel == KERNEL_POLY;
		case FOR_MATERN:
			return cfg->kernel == KERNEL_MATERN;
		case FOR_RFF:
			return ops->random_features;
		case FOR_DICTIONARY:
			return ops->dictionary;
		case FOR_WINDOW:
			return ops->forgets.window;
		case FOR_DISCOUNT:
			return ops->forgets.discount && cfg->clock != CLOCK_TIME;
		case FOR_HALF_LIFE:
			return ops->forgets.discount && cfg->clock == CLOCK_TIME;
		case FOR_RESTART:
			return ops->forgets.restart;
		case FOR_CLOCK:
			return cfg->window > 0 || cfg->discount < 1 || cfg->restart_every > 0;
		case FOR_CONFIDENCE:
			return choice;
		case FOR_RIDGE:
			return ops->uses_context && cfg->confidence != CONFIDENCE_IGP;
		case FOR_FIXED_WIDTH:
			return ops->bounds == BOUNDS_BETA || (choice && cfg->confidence == CONFIDENCE_FIXED);
		case FOR_BOUNDS:
			return ops->bounds == BOUNDS_BETA || (choice && cfg->confidence != CONFIDENCE_FIXED);
		case FOR_GRID:
			return choice && (cfg->confidence == CONFIDENCE_DMM || cfg->confidence == CONFIDENCE_CMM);
		case FOR_IGP:
			return choice && cfg->confidence == CONFIDENCE_IGP;
		case FOR_FIXED_CHOICE:
			return choice && cfg->confidence == CONFIDENCE_FIXED;
		case FOR_BUDGET:
			return cfg->budget > 0;
	}
	return false;
}

static bool
setting_applies(const SettingDef *def, const SelectorConfig *cfg)
{
	return scope_covers(def->applies, cfg, policy_ops(cfg->policy));
}

static char *
valid_keys(const SelectorConfig *cfg)
{
	StringInfoData buf;

	initStringInfo(&buf);
	for (int i = 0; i < (int) N_SETTINGS; i++)
		if (setting_applies(&setting_defs[i], cfg))
			appendStringInfo(&buf, "%s%s", buf.len ? ", " : "", setting_defs[i].name);
	return buf.data;
}

static void settings_error(const SelectorConfig *cfg, const char *key, const char *problem)
			pg_attribute_noreturn();

static void
settings_error(const SelectorConfig *cfg, const char *key, const char *problem)
{
	const char *kernel = kernel_name(cfg->kernel);

	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("invalid setting \"%s\": %s", key, problem),
			 errdetail("Valid keys for policy %s%s%s are: %s.",
					   policy_name(cfg->policy),
					   kernel ? " with kernel " : "", kernel ? kernel : "",
					   valid_keys(cfg))));
}

static void
set_field(SelectorConfig *cfg, const SettingDef *def, double value)
{
	void	   *field = (char *) cfg + def->field;

	/* the grid is set whole by setting_grid() */
	if (def->type == SETTING_NUMBER)
		*(double *) field = value;
	else if (def->type == SETTING_BOOLEAN)
		*(bool *) field = value != 0;
	else if (def->type == SETTING_INTEGER || def->type == SETTING_CHOICE)
		*(int32 *) field = (int32) value;
}

static double
get_field(const SelectorConfig *cfg, const SettingDef *def)
{
	const void *field = (const char *) cfg + def->field;

	switch (def->type)
	{
		case SETTING_NUMBER:
			return *(const double *) field;
		case SETTING_INTEGER:
		case SETTING_CHOICE:
			return *(const int32 *) field;
		case SETTING_BOOLEAN:
			return *(const bool *) field;
		case SETTING_GRID:
			break;
	}
	return 0;
}

static int
compare_doubles(const void *a, const void *b)
{
	double		x = *(const double *) a;
	double		y = *(const double *) b;

	return (x > y) - (x < y);
}

/* A JSON array of numbers within def's range: sorted, distinct, into cfg->grid. */
static void
setting_grid(SelectorConfig *cfg, const SettingDef *def, JsonbValue *v)
{
	JsonbIterator *it;
	JsonbValue	elem;
	JsonbIteratorToken tok;
	int			n = 0;
	char	   *problem = psprintf("expected an array of 1 to %d numbers from %g to %g",
								   MAX_GRID, def->min, def->max);

	if (v->type != jbvBinary || !JsonContainerIsArray(v->val.binary.data))
		settings_error(cfg, def->name, problem);
	it = JsonbIteratorInit(v->val.binary.data);
	while ((tok = JsonbIteratorNext(&it, &elem, true)) != WJB_DONE)
	{
		double		value;

		if (tok != WJB_ELEM)
			continue;
		if (elem.type != jbvNumeric || n == MAX_GRID)
			settings_error(cfg, def->name, problem);
		value = DatumGetFloat8(DirectFunctionCall1(numeric_float8_no_overflow,
												   NumericGetDatum(elem.val.numeric)));
		if (!isfinite(value) || value < def->min || value > def->max)
			settings_error(cfg, def->name, problem);
		cfg->grid[n++] = value;
	}
	if (n == 0)
		settings_error(cfg, def->name, problem);
	qsort(cfg->grid, n, sizeof(double), compare_doubles);
	for (int i = 1; i < n; i++)
		if (cfg->grid[i] == cfg->grid[i - 1])
			settings_error(cfg, def->name, "values must be distinct");
	cfg->ngrid = n;
}

/* A NULL-terminated list of names as "a, b and c". */
static char *
choice_list(const char *const *choices)
{
	int			n = 0;

	while (choices[n] != NULL)
		n++;
	return name_list(choices, n);
}

/* Validate one JSON value against its definition; returns it as a double. */
static double
setting_value(const SelectorConfig *cfg, const SettingDef *def, JsonbValue *v)
{
	double		value;

	if (def->duration && cfg->clock == CLOCK_TIME)
	{
		if (!duration_from_json(v, &value))
			settings_error(cfg, def->name,
						   psprintf("on the time clock expected an interval such as \"7 days\" or a number"
									" of seconds, whole, from 1 to %d (a number may be 0: off)", MAX_DURATION));
		return value;
	}
	if (def->duration && v->type == jbvString)
		settings_error(cfg, def->name, "an interval needs \"clock\": \"time\"");

	if (def->type == SETTING_CHOICE)
	{
		if (v->type == jbvString)
			for (int i = 0; def->choices[i] != NULL; i++)
				if (strlen(def->choices[i]) == v->val.string.len &&
					strncmp(def->choices[i], v->val.string.val, v->val.string.len) == 0)
					return i;
		settings_error(cfg, def->name, psprintf("expected one of %s", choice_list(def->choices)));
	}
	if (def->type == SETTING_BOOLEAN)
	{
		if (v->type != jbvBool)
			settings_error(cfg, def->name, "expected true or false");
		return v->val.boolean ? 1 : 0;
	}
	if (v->type != jbvNumeric)
		settings_error(cfg, def->name, "expected a number");
	/* beyond float8's range reads as ±Infinity or 0: then a range error */
	value = DatumGetFloat8(DirectFunctionCall1(numeric_float8_no_overflow,
											   NumericGetDatum(v->val.numeric)));
	if (def->type == SETTING_INTEGER && value != floor(value))
		settings_error(cfg, def->name, "expected an integer");
	if (!isfinite(value) || value < def->min || (def->min_exclusive && value == def->min) ||
		value > def->max)
		settings_error(cfg, def->name,
					   psprintf("%g is out of range (%s %g .. %g)", value,
								def->min_exclusive ? "above" : "from", def->min, def->max));
	return value;
}

/* The index of a setting by name (N_SETTINGS: none). */
static int
setting_index(const char *name)
{
	int			i;

	for (i = 0; i < (int) N_SETTINGS; i++)
		if (strcmp(name, setting_defs[i].name) == 0)
			break;
	return i;
}

/*
 * Read the keys of a jsonb object into cfg, checking names, types and ranges;
 * given[i] tells which settings were present.  The clock is read first: it
 * says what the durations mean.
 */
static void
read_settings(SelectorConfig *cfg, Jsonb *settings, bool *given)
{
	JsonbIterator *it;
	JsonbValue	v;
	JsonbIteratorToken tok;
	int			clock = setting_index("clock");

	if (!JB_ROOT_IS_OBJECT(settings) || JB_ROOT_IS_SCALAR(settings))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("settings must be a JSON object"),
				 errdetail("Valid keys are: %s.", valid_keys(cfg))));
	if (getKeyJsonValueFromContainer(&settings->root, "clock", strlen("clock"), &v) != NULL)
		set_field(cfg, &setting_defs[clock], setting_value(cfg, &setting_defs[clock], &v));
	it = JsonbIteratorInit(&settings->root);
	while ((tok = JsonbIteratorNext(&it, &v, true)) != WJB_DONE)
	{
		char	   *key;
		int			i;

		if (tok != WJB_KEY)
			continue;
		key = pnstrdup(v.val.string.val, v.val.string.len);
		i = setting_index(key);
		if (i == (int) N_SETTINGS)
			settings_error(cfg, key, "unknown key");
		tok = JsonbIteratorNext(&it, &v, true);
		Assert(tok == WJB_VALUE);
		if (setting_defs[i].type == SETTING_GRID)
			setting_grid(cfg, &setting_defs[i], &v);
		else
			set_field(cfg, &setting_defs[i], setting_value(cfg, &setting_defs[i], &v));
		given[i] = true;
	}
}

/*
 * Fill cfg's settings from jsonb (may be NULL), with defaults for absent
 * keys.  cfg->policy and cfg->kernel must already be set.  Whether a key
 * applies can depend on another (confidence), so that is checked once all
 * are read.
 */
void
settings_resolve(SelectorConfig *cfg, Jsonb *settings)
{
	settings_resolve_over(cfg, NULL, settings);
}

/*
 * settings_resolve() of settings given over current ones (may be NULL): a
 * selector's stored settings, which alter_selector() changes.  A current key
 * the given ones make inapplicable (a grid once confidence is fixed, pace
 * once the budget is off) is dropped; a given one must apply.
 */
void
settings_resolve_over(SelectorConfig *cfg, Jsonb *current, Jsonb *settings)
{
	bool		given[N_SETTINGS] = {false};
	bool		carried[N_SETTINGS] = {false};
	const char *discount_key;

	for (int i = 0; i < (int) N_SETTINGS; i++)
		set_field(cfg, &setting_defs[i], setting_defs[i].default_value);
	memcpy(cfg->grid, default_grid, sizeof(default_grid));
	cfg->ngrid = lengthof(default_grid);

	if (current != NULL)
		read_settings(cfg, current, carried);
	if (settings != NULL)
		read_settings(cfg, settings, given);
	/*
	 * Off values are no conflict: the arm's own clock, the other clock's
	 * forgetting key (alter_selector() from one clock to another)
	 */
	if (cfg->clock == CLOCK_ARM)
		given[setting_index("clock")] = false;
	/* a current clock is dropped with the forgetting it counted */
	if (!given[setting_index("clock")] && !scope_covers(FOR_CLOCK, cfg, policy_ops(cfg->policy)))
		cfg->clock = CLOCK_ARM;
	if (cfg->clock == CLOCK_TIME && cfg->discount == 1)
		given[setting_index("discount")] = false;
	if (cfg->clock != CLOCK_TIME && cfg->half_life == 0)
		given[setting_index("half_life")] = false;
	if (cfg->clock == CLOCK_TIME && given[setting_index("discount")])
		settings_error(cfg, "discount", "on the time clock use half_life, an interval such as \"1 day\"");
	if (cfg->clock != CLOCK_TIME && given[setting_index("half_life")])
		settings_error(cfg, "half_life", "applies only with \"clock\": \"time\"");
	/* the weight of a reward one second old */
	if (cfg->clock == CLOCK_TIME && cfg->half_life > 0)
		cfg->discount = exp2(-1.0 / cfg->half_life);
	discount_key = cfg->clock == CLOCK_TIME ? "half_life" : "discount";
	if (cfg->clock != CLOCK_ARM && !scope_covers(FOR_CLOCK, cfg, policy_ops(cfg->policy)))
		settings_error(cfg, "clock", cfg->clock == CLOCK_TIME
					   ? "applies only with window, half_life or restart_every"
					   : "applies only with window, discount or restart_every");
	for (int i = 0; i < (int) N_SETTINGS; i++)
		if (given[i] && !setting_applies(&setting_defs[i], cfg))
			settings_error(cfg, setting_defs[i].name, "does not apply to this policy, kernel and confidence");
	if (!(cfg->reward_min < cfg->reward_max))
		settings_error(cfg, "reward_max", "must be greater than reward_min");
	/* with a budget the pacer sets λ, and arms learn rewards (pacer.c) */
	if (cfg->budget > 0 && cfg->cost_weight > 0)
		settings_error(cfg, "budget", "use one of cost_weight and budget");
	if ((cfg->window > 0) + (cfg->discount < 1) + (cfg->restart_every > 0) > 1)
		settings_error(cfg, cfg->window > 0 ? "window" : discount_key,
					   psprintf("use one of window, %s and restart_every", discount_key));
	/* the bounds of spec/001 hold for an arm that keeps every reward */
	if (cfg->confidence != CONFIDENCE_FIXED && (cfg->window > 0 || cfg->discount < 1))
		settings_error(cfg, cfg->window > 0 ? "window" : discount_key,
					   psprintf("confidence %s needs every reward kept: use restart_every or confidence fixed",
								confidence_names[cfg->confidence]));
	if (cfg->kernel == KERNEL_MATERN && cfg->nu != 0.5 && cfg->nu != 1.5 && cfg->nu != 2.5)
		settings_error(cfg, "nu", "must be 0.5, 1.5 or 2.5");
}

/* The resolved settings (every applicable key) as jsonb, for the catalog. */
Jsonb *
settings_to_jsonb(const SelectorConfig *cfg)
{
	StringInfoData buf;

	initStringInfo(&buf);
	appendStringInfoChar(&buf, '{');
	for (int i = 0; i < (int) N_SETTINGS; i++)
	{
		const SettingDef *def = &setting_defs[i];
		double		value;

		if (!setting_applies(def, cfg))
			continue;
		value = get_field(cfg, def);
		if (buf.len > 1)
			appendStringInfoString(&buf, ", ");
		if (def->type == SETTING_BOOLEAN)
			appendStringInfo(&buf, "\"%s\": %s", def->name, value != 0 ? "true" : "false");
		else if (def->type == SETTING_CHOICE)
			appendStringInfo(&buf, "\"%s\": \"%s\"", def->name, def->choices[(int) value]);
		else if (def->type == SETTING_GRID)
		{
			appendStringInfo(&buf, "\"%s\": [", def->name);
			for (int j = 0; j < cfg->ngrid; j++)
				appendStringInfo(&buf, "%s%s", j ? ", " : "", float8out_internal(cfg->grid[j]));
			appendStringInfoChar(&buf, ']');
		}
		else
			appendStringInfo(&buf, "\"%s\": %s", def->name, float8out_internal(value));
	}
	appendStringInfoChar(&buf, '}');
	return DatumGetJsonbP(DirectFunctionCall1(jsonb_in, CStringGetDatum(buf.data)));
}

/*
 * The checks of a reward (or a cascade value, a replay reward) and its cost,
 * shared by every path that takes one: 22003 when out of range.
 */
void
check_reward(const SelectorConfig *cfg, const char *what, double value)
{
	if (!(value >= cfg->reward_min && value <= cfg->reward_max))
		ereport(ERROR,
				(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
				 errmsg("%s %g is outside the selector's range [%g, %g]", what, value,
						cfg->reward_min, cfg->reward_max),
				 errhint("The range is set by the reward_min and reward_max settings.")));
}

void
check_cost(double cost)
{
	if (!(isfinite(cost) && cost >= 0))
		ereport(ERROR,
				(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
				 errmsg("cost %g must be finite and not negative", cost)));
}

/*
 * What an arm learns from a reward: its utility reward − λ·cost (no cost:
 * 0), refused (22003) beyond ±UTILITY_MAX, where an arm's means would
 * overflow to ±Inf or NaN.
 */
double
learned_value(const SelectorConfig *cfg, double reward, bool cost_null, double cost)
{
	double		u = cost_null ? reward : reward - cfg->cost_weight * cost;

	if (!(fabs(u) <= UTILITY_MAX))
		ereport(ERROR,
				(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
				 errmsg("utility %g - %g * %g is out of range", reward, cfg->cost_weight, cost),
				 errdetail("An arm learns reward - cost_weight * cost, which must lie within ±%g.",
						   UTILITY_MAX),
				 errhint("Lower cost_weight or the cost.")));
	return u;
}

PG_FUNCTION_INFO_V1(model_select_resolve_settings);

/*
 * SQL: resolve_settings(policy, kernel, settings[, dim]) → validated settings
 * with defaults; with dim, also the size of the states they make.  Also
 * _resolve_settings_over(policy, kernel, settings, dim, current): the same
 * over a selector's current settings (alter_selector()).
 */
Datum
model_select_resolve_settings(PG_FUNCTION_ARGS)
{
	SelectorConfig cfg;

	if (PG_ARGISNULL(0))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("policy must not be NULL")));
	memset(&cfg, 0, sizeof(cfg));
	cfg.policy = policy_from_name(text_to_cstring(PG_GETARG_TEXT_PP(0)));
	cfg.kernel = kernel_from_name(cfg.policy, PG_ARGISNULL(1) ? NULL : text_to_cstring(PG_GETARG_TEXT_PP(1)));
	settings_resolve_over(&cfg, PG_NARGS() > 4 && !PG_ARGISNULL(4) ? PG_GETARG_JSONB_P(4) : NULL,
						  PG_ARGISNULL(2) ? NULL : PG_GETARG_JSONB_P(2));
	if (PG_NARGS() > 3 && !PG_ARGISNULL(3))
	{
		cfg.dim = PG_GETARG_INT32(3);
		state_check_limits(&cfg);
	}
	PG_RETURN_JSONB_P(settings_to_jsonb(&cfg));
}
