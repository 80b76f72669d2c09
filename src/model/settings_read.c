/*
 * settings_read.c — reading a jsonb object of settings into a SelectorConfig:
 * each key's name, JSON type and range checked against its definition in
 * setting_defs (settings.c), durations read on the time clock's terms.
 */
#include "postgres.h"

#include <math.h>

#include "utils/builtins.h"
#include "utils/fmgrprotos.h"
#include "utils/jsonb.h"
#include "utils/numeric.h"

#include "model/duration.h"
#include "model/settings.h"
#include "model/settings_internal.h"

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
	if (def->type == SETTING_INTERVAL)
	{
		if (!duration_from_json(v, &value))
			settings_error(cfg, def->name,
						   psprintf("expected an interval such as \"7 days\" or a number of seconds, whole,"
									" from 1 to %d (0: off)", MAX_DURATION));
		return value;
	}
	if (def->type == SETTING_RETAIN && v->type == jbvString)
	{
		if (!duration_from_json(v, &value))
			settings_error(cfg, def->name,
						   "expected a number of each arm's newest rewards, or an interval of their created_at such as \"30 days\"");
		return value;
	}

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
	if ((def->type == SETTING_INTEGER || def->type == SETTING_RETAIN) && !json_number_is_whole(v->val.numeric))
		settings_error(cfg, def->name, "expected an integer");
	if (!isfinite(value) || value < def->min || (def->min_exclusive && value == def->min) ||
		value > def->max)
		settings_error(cfg, def->name,
					   psprintf("%.15g is out of range (%s %.15g .. %.15g)", value,
								def->min_exclusive ? "above" : "from", def->min, def->max));
	return value;
}

/*
 * Read the keys of a jsonb object into cfg, checking names, types and ranges;
 * given[i] tells which settings were present.  The clock is read first: it
 * says what the durations mean.
 */
void
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
		else if (setting_defs[i].type == SETTING_RETAIN && v.type == jbvString)
		{
			/* an interval: retain_seconds (set_field() clears it) */
			double		seconds = setting_value(cfg, &setting_defs[i], &v);

			set_field(cfg, &setting_defs[i], 0);
			cfg->retain_seconds = seconds;
		}
		else
			set_field(cfg, &setting_defs[i], setting_value(cfg, &setting_defs[i], &v));
		given[i] = true;
	}
}
