/*
 * registry.c — the table of policies (see model/registry.h), the features
 * a linear model reads, and the table as SQL sees it: policies() and
 * kernels().  The lookups by policy name or capability are the domain's
 * (model/policy_lookup.c), on this table handed down by the module entry.
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "fmgr.h"
#include "funcapi.h"
#include "utils/array.h"
#include "utils/builtins.h"

#include "policy/rff_features.h"
#include "model/registry.h"

/*
 * Every policy, in the order error messages list them (POLICY_LIST,
 * config.h): the module entry hands it down as policy_table, where the
 * lookups of model/policy_lookup.c read it.
 */
#define POLICY_OPS_ENTRY(name, tag, value) &name##_ops,
const PolicyOps *const policy_registry[] = {
	POLICY_LIST(POLICY_OPS_ENTRY)
};
#undef POLICY_OPS_ENTRY

StaticAssertDecl(lengthof(policy_registry) == POLICY_COUNT, "one registry entry per PolicyKind");

/*
 * A prepared context's features for a linear model of a selector (lin_ucb,
 * rff_ucb and the cascade's link model), policy_feature_count() of them:
 * the context itself, or its random Fourier features and its tag buckets.
 */
void
policy_features(const SelectorConfig *cfg, const double *x, double *z)
{
	if (policy_ops(cfg->policy)->random_features)
	{
		rff_features(cfg, x, z);
		memcpy(z + 2 * cfg->features, x + cfg->embed_dim, sizeof(double) * cfg->tag_buckets);
	}
	else
		memcpy(z, x, sizeof(double) * cfg->dim);
}

/* policy_features() of the m rows of X into the rows of Z (stride ldz). */
void
policy_features_block(const SelectorConfig *cfg, int m, const double *X, double *Z, int ldz)
{
	if (policy_ops(cfg->policy)->random_features)
	{
		rff_features_block(cfg, m, X, Z, ldz);
		for (int t = 0; t < m; t++)
			memcpy(Z + (Size) t * ldz + 2 * cfg->features, X + (Size) t * cfg->dim + cfg->embed_dim,
				   sizeof(double) * cfg->tag_buckets);
	}
	else
		for (int t = 0; t < m; t++)
			memcpy(Z + (Size) t * ldz, X + (Size) t * cfg->dim, sizeof(double) * cfg->dim);
}

/* Strings as a text[] (empty for none). */
static Datum
text_array(const char *const *strings, int n)
{
	Datum	   *elems = palloc(sizeof(Datum) * Max(n, 1));

	for (int i = 0; i < n; i++)
		elems[i] = CStringGetTextDatum(strings[i]);
	return PointerGetDatum(construct_array(elems, n, TEXTOID, -1, false, TYPALIGN_INT));
}

/* The names of a KERNEL_BIT set as a text[] (empty for none). */
static Datum
kernel_name_array(uint32 kernels)
{
	const char *names[KERNEL_COUNT];

	return text_array(names, kernel_set_names(kernels, names));
}

/* The forgetting settings a policy honours, by the key that turns each on. */
static Datum
forgetting_array(const PolicyForgetting *forgets)
{
	const char *names[3];
	int			n = 0;

	if (forgets->window)
		names[n++] = "window";
	if (forgets->discount)
		names[n++] = "discount";
	if (forgets->restart)
		names[n++] = "restart_every";
	return text_array(names, n);
}

/*
 * The keys that apply to a policy under its defaults (its default kernel,
 * the settings' defaults): what resolve_settings(name, NULL, '{}') returns.
 */
static Datum
default_keys_array(const PolicyOps *ops)
{
	SelectorConfig cfg;
	List	   *keys;
	const char **names;
	int			n = 0;
	ListCell   *lc;

	memset(&cfg, 0, sizeof(cfg));
	cfg.policy = ops->kind;
	cfg.kernel = kernel_from_name(ops->kind, NULL);
	settings_resolve(&cfg, NULL);
	keys = settings_keys(&cfg);
	names = palloc(sizeof(char *) * Max(list_length(keys), 1));
	foreach(lc, keys)
		names[n++] = lfirst(lc);
	return text_array(names, n);
}

/* The length of a policy's NULL-terminated list of its own keys. */
static int
own_settings_count(const PolicyOps *ops)
{
	int			n = 0;

	while (ops->settings != NULL && ops->settings[n] != NULL)
		n++;
	return n;
}

static const char *const bounds_names[] = {
	[BOUNDS_NONE] = "none", [BOUNDS_CHOICE] = "confidence", [BOUNDS_BETA] = "own"
};

PG_FUNCTION_INFO_V1(model_select_policies);

/*
 * SQL: policies() → one row per registered policy, in the registry's order:
 * its name and capabilities, read from its PolicyOps, so that SQL (the
 * install script's default kernel, the tests, the docs check) needs no list
 * of its own.
 */
Datum
model_select_policies(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;

	InitMaterializedSRF(fcinfo, 0);
	for (int i = 0; i < (int) lengthof(policy_registry); i++)
	{
		const PolicyOps *ops = policy_registry[i];
		KernelKind	kernel = kernel_from_name(ops->kind, NULL);
		Datum		values[12];
		bool		nulls[12] = {false};

		values[0] = CStringGetTextDatum(ops->name);
		values[1] = BoolGetDatum(ops->uses_context);
		values[2] = kernel_name_array(ops->kernels);
		nulls[3] = kernel == KERNEL_NONE;
		values[3] = nulls[3] ? (Datum) 0 : CStringGetTextDatum(kernel_name(kernel));
		values[4] = BoolGetDatum(ops->random_features);
		values[5] = CStringGetTextDatum(bounds_names[ops->bounds]);
		values[6] = BoolGetDatum(ops->keeps_rows);
		values[7] = BoolGetDatum(ops->dictionary);
		values[8] = BoolGetDatum(ops->picks_at_random);
		values[9] = forgetting_array(&ops->forgets);
		values[10] = default_keys_array(ops);
		values[11] = text_array(ops->settings, own_settings_count(ops));
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}

PG_FUNCTION_INFO_V1(model_select_kernels);

/* SQL: kernels() → one row per kernel: its name, capability and policies. */
Datum
model_select_kernels(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;

	InitMaterializedSRF(fcinfo, 0);
	for (int k = 0; k < KERNEL_COUNT; k++)
	{
		const char *takers[lengthof(policy_registry)];
		int			n = 0;
		Datum		values[3];
		bool		nulls[3] = {false};

		if (k == KERNEL_NONE)
			continue;
		for (int i = 0; i < (int) lengthof(policy_registry); i++)
			if (policy_registry[i]->kernels & KERNEL_BIT(k))
				takers[n++] = policy_registry[i]->name;
		values[0] = CStringGetTextDatum(kernel_name((KernelKind) k));
		values[1] = BoolGetDatum((KERNELS_SHIFT_INVARIANT & KERNEL_BIT(k)) != 0);
		values[2] = text_array(takers, n);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}
