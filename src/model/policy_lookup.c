/*
 * policy_lookup.c — every lookup in the table of policies by policy name or
 * capability (registry.h).  The table is policy/registry.c's, which the
 * module entry hands down at load (policy_table): the domain asks a policy
 * through its descriptor and calls nothing of the layer above.
 */
#include "postgres.h"

#include "model/registry.h"
#include "model/settings.h"

const PolicyOps *const *policy_table = NULL;

const PolicyOps *
policy_ops(PolicyKind policy)
{
	Assert(policy_table != NULL);
	for (int i = 0; i < POLICY_COUNT; i++)
		if (policy_table[i]->kind == policy)
			return policy_table[i];
	elog(ERROR, "unknown policy %d", (int) policy);
	pg_unreachable();
}

const char *
policy_name(PolicyKind policy)
{
	return policy_ops(policy)->name;
}

/* The names of the registered policies that have kernels (or all), "a, b and c". */
static char *
policy_names(bool kernelised_only)
{
	const char *names[POLICY_COUNT];
	int			n = 0;

	for (int i = 0; i < POLICY_COUNT; i++)
		if (!kernelised_only || policy_table[i]->kernels != 0)
			names[n++] = policy_table[i]->name;
	return name_list(names, n);
}

PolicyKind
policy_from_name(const char *name)
{
	Assert(policy_table != NULL);
	for (int i = 0; i < POLICY_COUNT; i++)
		if (strcmp(name, policy_table[i]->name) == 0)
			return policy_table[i]->kind;
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("unknown policy \"%s\"", name),
			 errhint("Valid policies are %s.", policy_names(false))));
	pg_unreachable();
}

/* The names of the kernels in a KERNEL_BIT set into names[KERNEL_COUNT]; returns their count. */
int
kernel_set_names(uint32 kernels, const char **names)
{
	int			n = 0;

	for (int k = 0; k < KERNEL_COUNT; k++)
		if (kernels & KERNEL_BIT(k))
			names[n++] = kernel_name((KernelKind) k);
	return n;
}

/* The names of the kernels in a KERNEL_BIT set, "a, b and c". */
static char *
kernel_names_of(uint32 kernels)
{
	const char *names[KERNEL_COUNT];

	return name_list(names, kernel_set_names(kernels, names));
}

/*
 * A kernel by name for a policy; NULL name means the default kernel (rbf) of
 * a kernelised policy.
 */
KernelKind
kernel_from_name(PolicyKind policy, const char *name)
{
	const PolicyOps *ops = policy_ops(policy);

	if (ops->kernels == 0)
	{
		if (name != NULL)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("policy %s does not take a kernel", ops->name),
					 errhint("Pass kernel => NULL; only %s are kernelised.", policy_names(true))));
		return KERNEL_NONE;
	}
	if (name == NULL)
		return KERNEL_RBF;
	for (int k = 0; k < KERNEL_COUNT; k++)
		if ((ops->kernels & KERNEL_BIT(k)) && strcmp(name, kernel_name((KernelKind) k)) == 0)
			return (KernelKind) k;
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("unknown kernel \"%s\" for policy %s", name, ops->name),
			 errhint("Valid kernels are %s.", kernel_names_of(ops->kernels))));
	pg_unreachable();
}

/*
 * The features a linear model of a selector reads from a prepared context
 * (lin_ucb, rff_ucb and the cascade's link model): the context itself, or
 * its random Fourier features and its tag buckets (policy_features(),
 * policy/registry.c).
 */
int
policy_feature_count(const SelectorConfig *cfg)
{
	return policy_ops(cfg->policy)->random_features ? 2 * cfg->features + cfg->tag_buckets : cfg->dim;
}

/*
 * The length of a linear model's feature vector (lin_ucb, rff_ucb): the
 * context's features, the codebook's one-hot, the intercept.
 */
int
policy_linear_feature_count(const SelectorConfig *cfg)
{
	return policy_feature_count(cfg) + cfg->codebook + 1;
}
