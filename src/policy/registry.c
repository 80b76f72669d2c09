/*
 * registry.c — the table of policies, and every lookup by policy name or
 * capability (see registry.h).
 */
#include "postgres.h"

#include "policy/rff_features.h"
#include "model/registry.h"

/* Every policy, in the order error messages list them. */
static const PolicyOps *const policies[] = {
	&pak_ucb_ops,
	&rff_ucb_ops,
	&bkb_ops,
	&lin_ucb_ops,
	&greedy_ops,
	&random_ops,
};

StaticAssertDecl(lengthof(policies) == POLICY_COUNT, "one registry entry per PolicyKind");

const PolicyOps *
policy_ops(PolicyKind policy)
{
	for (int i = 0; i < (int) lengthof(policies); i++)
		if (policies[i]->kind == policy)
			return policies[i];
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
	const char *names[lengthof(policies)];
	int			n = 0;

	for (int i = 0; i < (int) lengthof(policies); i++)
		if (!kernelised_only || policies[i]->kernels != 0)
			names[n++] = policies[i]->name;
	return name_list(names, n);
}

PolicyKind
policy_from_name(const char *name)
{
	for (int i = 0; i < (int) lengthof(policies); i++)
		if (strcmp(name, policies[i]->name) == 0)
			return policies[i]->kind;
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("unknown policy \"%s\"", name),
			 errhint("Valid policies are %s.", policy_names(false))));
	pg_unreachable();
}

/* The names of the kernels in a KERNEL_BIT set, "a, b and c". */
static char *
kernel_names_of(uint32 kernels)
{
	const char *names[KERNEL_COUNT];
	int			n = 0;

	for (int k = 0; k < KERNEL_COUNT; k++)
		if (kernels & KERNEL_BIT(k))
			names[n++] = kernel_name((KernelKind) k);
	return name_list(names, n);
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
 * its random Fourier features.
 */
int
policy_feature_count(const SelectorConfig *cfg)
{
	return policy_ops(cfg->policy)->random_features ? 2 * cfg->features : cfg->dim;
}

void
policy_features(const SelectorConfig *cfg, const double *x, double *z)
{
	if (policy_ops(cfg->policy)->random_features)
		rff_features(cfg, x, z);
	else
		memcpy(z, x, sizeof(double) * cfg->dim);
}

/* policy_features() of the m rows of X into the rows of Z (stride ldz). */
void
policy_features_block(const SelectorConfig *cfg, int m, const double *X, double *Z, int ldz)
{
	if (policy_ops(cfg->policy)->random_features)
		rff_features_block(cfg, m, X, Z, ldz);
	else
		for (int t = 0; t < m; t++)
			memcpy(Z + (Size) t * ldz, X + (Size) t * cfg->dim, sizeof(double) * cfg->dim);
}
