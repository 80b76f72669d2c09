/*
 * settings.c — strict validation of a selector's jsonb settings.
 *
 * Every key is described once in setting_defs: its type, range, default (a
 * policy may have its own: PolicyOps.defaults) and the policies/kernels it
 * applies to (by their capabilities, or FOR_OWN: the policies whose
 * PolicyOps.settings name it).  Unknown keys, keys that do
 * not apply to the selector's policy or kernel, wrong JSON types and
 * out-of-range values are all rejected with SQLSTATE 22023 and a message
 * naming the valid keys.
 * This file holds the table, which keys apply, the checks across keys once
 * all are read (settings_resolve_over) and the resolved settings as jsonb;
 * settings_read.c reads and checks each key's value.
 */
#include "postgres.h"

#include <math.h>

#include "lib/stringinfo.h"
#include "utils/builtins.h"
#include "utils/float.h"
#include "fmgr.h"
#include "utils/jsonb.h"

#include "math/elementary.h"
#include "model/settings.h"
#include "model/settings_internal.h"
#include "model/state.h"
#include "model/registry.h"
#include "pg/float_text.h"

static const char *const confidence_names[CONFIDENCE_COUNT + 1] = {"fixed", "ay", "igp", "amm", "dmm",
"cmm", NULL};

const char *const clock_names[CLOCK_COUNT + 1] = {"arm", "selector", "time", NULL};

static const char *const exploration_names[EXPLORE_COUNT + 1] = {"ucb", "thompson", NULL};

/* The DMM grid recommended by Flynn & Reeb 2024 §6, as multiples of α₀ = alpha. */
static const double default_grid[] = {0.1, 0.3, 1, 3, 10};

const SettingDef setting_defs[] = {
	{"alpha", SETTING_NUMBER, offsetof(SelectorConfig, alpha), 1.0, 1e-9, false, 1e12, FOR_RIDGE},
	{"eta", SETTING_NUMBER, offsetof(SelectorConfig, eta), 0.5, 0, false, 1e6, FOR_FIXED_WIDTH},
	{"intercept", SETTING_NUMBER, offsetof(SelectorConfig, intercept), 1.0, 0, false, 1e6, FOR_CONTEXTUAL},
	{"normalize", SETTING_BOOLEAN, offsetof(SelectorConfig, normalize), 1, 0, false, 1, FOR_CONTEXTUAL},
	{"cap", SETTING_INTEGER, offsetof(SelectorConfig, cap), 2000, 1, false, MAX_CAP, FOR_HISTORY},
	/* below 1e-6 the squared distance over bandwidth² can be 0/0 */
	{"bandwidth", SETTING_NUMBER, offsetof(SelectorConfig, bandwidth), 1.0, 1e-6, false, 1e6, FOR_BANDWIDTH},
	{"nu", SETTING_NUMBER, offsetof(SelectorConfig, nu), 1.5, 0.5, false, 2.5, FOR_MATERN},
	{"features", SETTING_INTEGER, offsetof(SelectorConfig, features), 200, 1, false, 8192, FOR_OWN},
	{"share", SETTING_NUMBER, offsetof(SelectorConfig, share), 0.0, 0, false, 1, FOR_OWN_FIXED},
	{"noise_prior", SETTING_NUMBER, offsetof(SelectorConfig, noise_prior), 0.0, 0, false, 1e6, FOR_OWN_FIXED},
	{"codebook", SETTING_INTEGER, offsetof(SelectorConfig, codebook), 0, 0, false, MAX_CODEBOOK, FOR_OWN},
	{"codebook_shrink", SETTING_NUMBER, offsetof(SelectorConfig, codebook_shrink), 5, 1, false, 1e6, FOR_OWN},
	{"qbar", SETTING_NUMBER, offsetof(SelectorConfig, qbar), 2.0, 0, true, 1e6, FOR_OWN},
	{"adaptive_beta", SETTING_BOOLEAN, offsetof(SelectorConfig, adaptive_beta), 0, 0, false, 1, FOR_OWN},
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
	/* shown only when on: settings stored before it existed read the same */
	{"detect", SETTING_BOOLEAN, offsetof(SelectorConfig, detect), 0, 0, false, 1, FOR_DETECT, NULL, false, true},
	{"cost_weight", SETTING_NUMBER, offsetof(SelectorConfig, cost_weight), 0.0, 0, false, COST_WEIGHT_MAX, FOR_ALL},
	{"budget", SETTING_NUMBER, offsetof(SelectorConfig, budget), 0.0, 0, false, 1e12, FOR_ALL},
	{"pace", SETTING_INTEGER, offsetof(SelectorConfig, pace), 1000, 1, false, 1e6, FOR_BUDGET},
	/* shown only when off: settings stored before it existed read the same */
	{"cost_model", SETTING_BOOLEAN, offsetof(SelectorConfig, cost_model), 1, 0, false, 1, FOR_COST_MODEL,
	NULL, false, true},
	{"pending_horizon", SETTING_INTEGER, offsetof(SelectorConfig, pending_horizon), 1000, 0, false, 1e6, FOR_PENDING},
	{"count_pending", SETTING_BOOLEAN, offsetof(SelectorConfig, count_pending), 0, 0, false, 1, FOR_CONTEXTUAL,
	NULL, false, true},
	{"reward_min", SETTING_NUMBER, offsetof(SelectorConfig, reward_min), 0.0, -UTILITY_MAX, false, UTILITY_MAX, FOR_ALL},
	{"reward_max", SETTING_NUMBER, offsetof(SelectorConfig, reward_max), 1.0, -UTILITY_MAX, false, UTILITY_MAX, FOR_ALL},
	{"retain", SETTING_RETAIN, offsetof(SelectorConfig, retain), 0, 0, false, 1e9, FOR_ALL, NULL, false, true},
	{"decision_ttl", SETTING_INTERVAL, offsetof(SelectorConfig, decision_ttl), 0, 0, false, MAX_DURATION, FOR_ALL,
	NULL, false, true},
	/* the space of tags (model/tags.c): lin_ucb's default 16, the others' none */
	{"tag_buckets", SETTING_INTEGER, offsetof(SelectorConfig, tag_buckets), 0, 0, false, MAX_TAG_BUCKETS,
	FOR_CONTEXTUAL},
	/* how loud a tag is beside the arm's intercept: 1 = a full intercept of its own */
	{"tag_scale", SETTING_NUMBER, offsetof(SelectorConfig, tag_scale), 1.0, 0, true, MAX_TAG_SCALE,
	FOR_CONTEXTUAL, NULL, false, true},
};

StaticAssertDecl(lengthof(setting_defs) == N_SETTINGS, "N_SETTINGS counts setting_defs");

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

static double get_field(const SelectorConfig *cfg, const SettingDef *def);

/* Does cfg forget (a window, a discount or restarts), so that its clock counts? */
static bool
forgets_any(const SelectorConfig *cfg)
{
	return cfg->window > 0 || cfg->discount < 1 || cfg->half_life > 0 || cfg->restart_every > 0;
}

/* Can cfg's arms learn a cost model (cost_model): with a budget, under a policy that learns one. */
static bool
cost_model_applies(const SelectorConfig *cfg)
{
	return cfg->budget > 0 && policy_ops(cfg->policy)->learns_cost;
}

/* The default of a setting under cfg's policy: the policy's own, else the table's. */
static double
setting_default(const SelectorConfig *cfg, const SettingDef *def)
{
	for (const PolicyDefault *d = policy_ops(cfg->policy)->defaults; d != NULL && d->name != NULL; d++)
		if (strcmp(d->name, def->name) == 0)
			return d->value;
	return def->default_value;
}

/*
 * Set the dimensions of cfg (its policy and settings resolved): the
 * embedding's, and the policies' (the embedding, then the tag buckets of a
 * contextual policy, model/tags.c; the others ignore tags).
 */
void
config_set_dim(SelectorConfig *cfg, int32 embed_dim)
{
	if (!policy_ops(cfg->policy)->uses_context)
		cfg->tag_buckets = 0;
	cfg->embed_dim = embed_dim;
	cfg->dim = embed_dim + cfg->tag_buckets;
	cfg->learns_cost = cost_model_applies(cfg) && cfg->cost_model;
	cfg->row_dim = cfg->dim + (cfg->learns_cost ? COST_COLUMNS : 0);
}

/* Does the policy name key among its own settings (PolicyOps.settings)? */
static bool
policy_declares(const PolicyOps *ops, const char *key)
{
	for (const char *const *own = ops->settings; own != NULL && *own != NULL; own++)
		if (strcmp(*own, key) == 0)
			return true;
	return false;
}

/*
 * Does a setting apply to this policy (its own keys, its capabilities) and
 * kernel, under the rest of cfg?
 */
static bool
setting_applies(const SettingDef *def, const SelectorConfig *cfg)
{
	const PolicyOps *ops = policy_ops(cfg->policy);
	bool		choice = ops->bounds == BOUNDS_CHOICE;

	switch (def->applies)
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
		case FOR_OWN:
			return policy_declares(ops, def->name);
		case FOR_OWN_FIXED:
			return policy_declares(ops, def->name) && cfg->confidence == CONFIDENCE_FIXED;
		case FOR_WINDOW:
			return ops->forgets.window;
		case FOR_DISCOUNT:
			return ops->forgets.discount && cfg->clock != CLOCK_TIME;
		case FOR_HALF_LIFE:
			return ops->forgets.discount && cfg->clock == CLOCK_TIME;
		case FOR_RESTART:
			return ops->forgets.restart;
		case FOR_CLOCK:
			return forgets_any(cfg);
		case FOR_DETECT:
			return ops->innovations != NULL && cfg->clock != CLOCK_ARM
				&& (cfg->window > 0 || cfg->restart_every > 0);
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
		case FOR_PENDING:
			return cfg->budget > 0 || cfg->count_pending;
		case FOR_COST_MODEL:
			return cost_model_applies(cfg);
	}
	return false;
}

/*
 * Does a setting show in the resolved settings: it applies, and is set if it
 * shows only then (settings stored before it existed read the same)?
 */
static bool
setting_shown(const SettingDef *def, const SelectorConfig *cfg)
{
	return setting_applies(def, cfg)
		&& (!def->shown_when_set || get_field(cfg, def) != setting_default(cfg, def));
}

/* The names of the keys cfg's resolved settings list, in the table's order (a List of char *). */
List *
settings_keys(const SelectorConfig *cfg)
{
	List	   *keys = NIL;

	for (int i = 0; i < (int) N_SETTINGS; i++)
		if (setting_shown(&setting_defs[i], cfg))
			keys = lappend(keys, unconstify(char *, setting_defs[i].name));
	return keys;
}

char *
valid_keys(const SelectorConfig *cfg)
{
	StringInfoData buf;

	initStringInfo(&buf);
	for (int i = 0; i < (int) N_SETTINGS; i++)
		if (setting_applies(&setting_defs[i], cfg))
			appendStringInfo(&buf, "%s%s", buf.len ? ", " : "", setting_defs[i].name);
	return buf.data;
}

/* 22023 for a key of cfg, with the valid keys (and a hint, if any). */
void
settings_error_hint(const SelectorConfig *cfg, const char *key, const char *problem,
					const char *hint)
{
	const char *kernel = kernel_name(cfg->kernel);

	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("invalid setting \"%s\": %s", key, problem),
			 errdetail("Valid keys for policy %s%s%s are: %s.",
					   policy_name(cfg->policy),
					   kernel ? " with kernel " : "", kernel ? kernel : "",
					   valid_keys(cfg)),
			 hint ? errhint("%s", hint) : 0));
}

void
settings_error(const SelectorConfig *cfg, const char *key, const char *problem)
{
	settings_error_hint(cfg, key, problem, NULL);
}

void
set_field(SelectorConfig *cfg, const SettingDef *def, double value)
{
	void	   *field = (char *) cfg + def->field;

	/* the grid is set whole by setting_grid(), an interval to retain by read_settings() */
	if (def->type == SETTING_RETAIN)
		cfg->retain_seconds = 0;
	if (def->type == SETTING_NUMBER || def->type == SETTING_INTERVAL)
		*(double *) field = value;
	else if (def->type == SETTING_BOOLEAN)
		*(bool *) field = value != 0;
	else if (def->type == SETTING_INTEGER || def->type == SETTING_CHOICE || def->type == SETTING_RETAIN)
		*(int32 *) field = (int32) value;
}

static double
get_field(const SelectorConfig *cfg, const SettingDef *def)
{
	const void *field = (const char *) cfg + def->field;

	switch (def->type)
	{
		case SETTING_NUMBER:
		case SETTING_INTERVAL:
			return *(const double *) field;
		case SETTING_INTEGER:
		case SETTING_CHOICE:
			return *(const int32 *) field;
		case SETTING_RETAIN:
			return *(const int32 *) field + cfg->retain_seconds;
		case SETTING_BOOLEAN:
			return *(const bool *) field;
		case SETTING_GRID:
			break;
	}
	return 0;
}

/* The index of a setting by name (N_SETTINGS: none). */
int
setting_index(const char *name)
{
	int			i;

	for (i = 0; i < (int) N_SETTINGS; i++)
		if (strcmp(name, setting_defs[i].name) == 0)
			break;
	return i;
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
 * A new clock changes what the forgetting settings count (an arm's rewards,
 * the selector's decisions, seconds): one that is on in the current settings
 * (cur, the keys in carried) must be given again with it, else 22023.
 */
static void
check_clock_change(const SelectorConfig *cfg, const SelectorConfig *cur, const bool *carried,
				   const bool *given)
{
	static const char *const counted[] = {"window", "discount", "half_life", "restart_every"};

	if (!given[setting_index("clock")] || cfg->clock == cur->clock)
		return;
	for (int k = 0; k < lengthof(counted); k++)
	{
		const SettingDef *def = &setting_defs[setting_index(counted[k])];
		int			i = def - setting_defs;

		if (carried[i] && !given[i] && get_field(cur, def) != setting_default(cur, def))
			settings_error_hint(cfg, "clock",
								psprintf("changing it from \"%s\" to \"%s\" changes what \"%s\" counts",
										 clock_names[cur->clock], clock_names[cfg->clock], def->name),
								psprintf("Give \"%s\" again in the same call (0 to turn it off).", def->name));
	}
}

/* The log's horizon (retention.c): off values are no conflict. */
static void
check_horizon(const SelectorConfig *cfg, bool *given)
{
	if (!RETAINS(cfg))
		given[setting_index("retain")] = false;
	if (cfg->decision_ttl == 0)
		given[setting_index("decision_ttl")] = false;
}

/*
 * The largest ratio of a kernel value to the ridge α that a factorisation
 * keeps digits of: the ridge (and every width) is lost in the rounding of
 * K + αI when K's entries are more than ~1/ε larger, and the means and
 * widths become noise, up to ±Infinity (a polynomial kernel of degree 10
 * and gamma 1e6 gives 1e60).  1e12 leaves four digits.
 */
#define KERNEL_RIDGE_RATIO_MAX 1e12

/*
 * Refuse a polynomial kernel whose values on unit contexts (normalised, as
 * by default) dwarf the ridge -- the one kernel that can in the settings'
 * ranges: the others stay within 1 plus the intercept.
 */
static void
check_kernel_scale(const SelectorConfig *cfg)
{
	double		kmax,
				ridge;

	if (cfg->kernel != KERNEL_POLY)
		return;
	kmax = portable_pow(cfg->gamma + cfg->offset, cfg->degree) + cfg->intercept;
	ridge = cfg->confidence == CONFIDENCE_IGP ? 1.0 : cfg->alpha;
	if (!(kmax <= KERNEL_RIDGE_RATIO_MAX * ridge))
		settings_error_hint(cfg, "gamma",
							psprintf("gives kernel values up to (gamma + offset)^degree = %s on unit contexts, more than %g times the ridge alpha %s",
									 exact_text(kmax), KERNEL_RIDGE_RATIO_MAX, exact_text(ridge)),
							"Lower gamma, offset or degree, or raise alpha.");
}

/*
 * settings_resolve() of settings given over current ones (may be NULL): a
 * selector's stored settings, which alter_selector() changes.  A current key
 * the given ones make inapplicable (a grid once confidence is fixed, pace
 * once the budget is off) is dropped; a given one must apply; a new clock
 * needs its forgetting settings given again (check_clock_change).
 */
void
settings_resolve_over(SelectorConfig *cfg, Jsonb *current, Jsonb *settings)
{
	bool		given[N_SETTINGS] = {false};
	bool		carried[N_SETTINGS] = {false};
	SelectorConfig cur;			/* the current settings alone */
	const char *discount_key;

	for (int i = 0; i < (int) N_SETTINGS; i++)
		set_field(cfg, &setting_defs[i], setting_default(cfg, &setting_defs[i]));
	memcpy(cfg->grid, default_grid, sizeof(default_grid));
	cfg->ngrid = lengthof(default_grid);

	if (current != NULL)
		read_settings(cfg, current, carried);
	cur = *cfg;
	if (settings != NULL)
		read_settings(cfg, settings, given);
	check_clock_change(cfg, &cur, carried, given);
	/*
	 * Off values are no conflict: the arm's own clock, the other clock's
	 * forgetting key (alter_selector() from one clock to another)
	 */
	if (cfg->clock == CLOCK_ARM)
		given[setting_index("clock")] = false;
	/* a current clock is dropped with the forgetting it counted */
	if (!given[setting_index("clock")] && !forgets_any(cfg))
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
		cfg->discount = portable_pow(2.0, -1.0 / cfg->half_life);
	discount_key = cfg->clock == CLOCK_TIME ? "half_life" : "discount";
	if (cfg->clock != CLOCK_ARM && !forgets_any(cfg))
		settings_error(cfg, "clock", cfg->clock == CLOCK_TIME
					   ? "applies only with window, half_life or restart_every"
					   : "applies only with window, discount or restart_every");
	check_horizon(cfg, given);
	if (given[setting_index("detect")] && !setting_applies(&setting_defs[setting_index("detect")], cfg))
		settings_error(cfg, "detect", policy_ops(cfg->policy)->innovations == NULL
					   ? "applies only to lin_ucb and pak_ucb"
					   : "applies only with window or restart_every on the selector's or the time clock");
	for (int i = 0; i < (int) N_SETTINGS; i++)
	{
		if (given[i] && !setting_applies(&setting_defs[i], cfg))
			settings_error(cfg, setting_defs[i].name, "does not apply to this policy, kernel and confidence");
		/* a policy's own default holds only where its key applies (noise_prior is off with a confidence bound) */
		if (!setting_applies(&setting_defs[i], cfg) &&
			setting_default(cfg, &setting_defs[i]) != setting_defs[i].default_value)
			set_field(cfg, &setting_defs[i], setting_defs[i].default_value);
	}
	if (!(cfg->reward_min < cfg->reward_max))
		settings_error(cfg, "reward_max", "must be greater than reward_min");
	/* with a budget the pacer sets λ, and arms learn rewards (pacer.c) */
	if (cfg->budget > 0 && cfg->cost_weight > 0)
		settings_error(cfg, "budget", "use one of cost_weight and budget");
	if ((cfg->window > 0) + (cfg->discount < 1) + (cfg->restart_every > 0) > 1)
		settings_error(cfg, cfg->window > 0 ? "window" : discount_key,
					   psprintf("use one of window, %s and restart_every", discount_key));
	/* the bounds of Flynn & Reeb 2024 hold for an arm that keeps every reward */
	if (cfg->confidence != CONFIDENCE_FIXED && (cfg->window > 0 || cfg->discount < 1))
		settings_error(cfg, cfg->window > 0 ? "window" : discount_key,
					   psprintf("confidence %s needs every reward kept: use restart_every or confidence fixed",
								confidence_names[cfg->confidence]));
	if (cfg->kernel == KERNEL_MATERN && cfg->nu != 0.5 && cfg->nu != 1.5 && cfg->nu != 2.5)
		settings_error(cfg, "nu", "must be 0.5, 1.5 or 2.5");
	check_kernel_scale(cfg);
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

		if (!setting_shown(def, cfg))
			continue;
		value = get_field(cfg, def);
		if (buf.len > 1)
			appendStringInfoString(&buf, ", ");
		if (def->type == SETTING_RETAIN && cfg->retain_seconds > 0)
			appendStringInfo(&buf, "\"%s\": \"%s seconds\"", def->name, float8out_internal(cfg->retain_seconds));
		else if (def->type == SETTING_BOOLEAN)
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
	if (forgets_any(&cfg) && cfg.clock == CLOCK_ARM)
		ereport(NOTICE,
				(errmsg("on the arm's clock (the default) an arm that is not chosen never forgets"),
				 errdetail("window, discount and restart_every count each arm's own rewards: an arm that "
						   "stopped being chosen keeps its old rewards, and after the best arm changes "
						   "it may never be tried again."),
				 errhint("Add \"clock\": \"selector\" to count every reward of the selector, "
						 "or \"clock\": \"time\" to count seconds.")));
	if (PG_NARGS() > 3 && !PG_ARGISNULL(3))
	{
		config_set_dim(&cfg, PG_GETARG_INT32(3));
		state_check_limits(&cfg);
	}
	PG_RETURN_JSONB_P(settings_to_jsonb(&cfg));
}
