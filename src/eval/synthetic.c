/*
 * synthetic.c — seeded synthetic routing streams for tests, demos and
 * benchmarks (Hu et al. (PAK-UCB), Setup 1 shape).
 *
 * synthetic_clusters(rounds, dim, arms, clusters, seed, noise): prompts come
 * from `clusters` clusters, context = normalise(0.8·shared + 0.8·centre_c +
 * 0.2·N(0, I/dim)).  Arm a's expected reward on cluster c is
 *   0.5 + 0.25·[a = c mod arms] − 0.02·a
 * so the best arm depends on the cluster and arm 1 is best on average; the
 * observed reward adds N(0, noise²) and is clipped to [0, 1].  Arms are
 * numbered from 1 in the output, as SQL arrays are.
 *
 * Changing worlds (Hu et al. (PAK-UCB) Setup 3, Iwazaki & Takeno (R-PERP) §4), each off by NULL:
 *   new_arm_at        the last arm arrives at that round: before it, its
 *                     reward and expected reward are NULL (not available);
 *   switch_every      every that many rounds the experts rotate by one
 *                     (an abrupt change of which arm is best per cluster);
 *   new_cluster_every prompts come from the first cluster only, and one more
 *                     cluster joins every that many rounds.
 */
#include "postgres.h"

#include <math.h>

#include "catalog/pg_type.h"
#include "fmgr.h"
#include "funcapi.h"
#include "utils/array.h"

#include "model/context.h"
#include "eval/eval.h"
#include "math/prng.h"

PG_FUNCTION_INFO_V1(model_select_synthetic_clusters);

#define EXPERT_BONUS 0.25
#define ARM_STEP 0.02

static void
normalise(double *x, int dim)
{
	double		norm = 0.0;

	for (int i = 0; i < dim; i++)
		norm += x[i] * x[i];
	norm = sqrt(norm);
	for (int i = 0; i < dim; i++)
		x[i] /= norm;
}

static void
random_unit(Prng *rng, double *x, int dim)
{
	for (int i = 0; i < dim; i++)
		x[i] = prng_normal(rng);
	normalise(x, dim);
}

static int
optional_positive(FunctionCallInfo fcinfo, int argno, const char *what)
{
	int			value;

	if (PG_ARGISNULL(argno))
		return 0;
	value = PG_GETARG_INT32(argno);
	if (value < 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("synthetic_clusters: %s must be at least 1 or NULL", what)));
	return value;
}

/* 22023 "<function>: <problem>" unless ok; shared by the synthetic environments. */
void
eval_check_arg(bool ok, const char *function, const char *problem)
{
	if (!ok)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s: %s", function, problem)));
}

#define check_arg(ok, problem) eval_check_arg((ok), "synthetic_clusters", (problem))

typedef struct ClustersArgs
{
	int			rounds;
	int			dim;
	int			arms;
	int			clusters;
	uint64		seed;
	double		noise;
	int			new_arm_at;		/* 0: off */
	int			switch_every;
	int			new_cluster_every;
} ClustersArgs;

static void
clusters_args(FunctionCallInfo fcinfo, ClustersArgs *a)
{
	for (int i = 0; i < 6; i++)
		if (i != 3 && PG_ARGISNULL(i))
			check_arg(false, "only clusters and the changing-world arguments may be NULL");
	a->rounds = PG_GETARG_INT32(0);
	a->dim = PG_GETARG_INT32(1);
	a->arms = PG_GETARG_INT32(2);
	a->clusters = PG_ARGISNULL(3) ? a->arms : PG_GETARG_INT32(3);
	a->seed = (uint64) PG_GETARG_INT64(4);
	a->noise = PG_GETARG_FLOAT8(5);
	check_arg(a->rounds >= 0 && a->rounds <= 10000000, "rounds must be between 0 and 10000000");
	check_arg(a->dim >= 2 && a->dim <= 16000, "dim must be between 2 and 16000");
	check_arg(a->arms >= 1 && a->arms <= 1000, "arms must be between 1 and 1000");
	check_arg(a->clusters >= 1 && a->clusters <= 1000, "clusters must be between 1 and 1000");
	check_arg(a->noise >= 0 && isfinite(a->noise), "noise must be finite and not negative");
	a->new_arm_at = optional_positive(fcinfo, 6, "new_arm_at");
	a->switch_every = optional_positive(fcinfo, 7, "switch_every");
	a->new_cluster_every = optional_positive(fcinfo, 8, "new_cluster_every");
}

/* Round t's expected and observed rewards on cluster c; returns the best available arm. */
static int
clusters_rewards(const ClustersArgs *a, Prng *rng, int t, int c, double *expected,
				 double *observed, bool *missing)
{
	int			rotation = a->switch_every ? (t - 1) / a->switch_every : 0;
	int			best = -1;

	for (int i = 0; i < a->arms; i++)
	{
		double		y;

		expected[i] = 0.5 + (i == (c + rotation) % a->arms ? EXPERT_BONUS : 0.0) - ARM_STEP * i;
		y = expected[i] + a->noise * prng_normal(rng);

		observed[i] = y < 0.0 ? 0.0 : (y > 1.0 ? 1.0 : y);
		missing[i] = a->new_arm_at && i == a->arms - 1 && t < a->new_arm_at;
		if (!missing[i] && (best < 0 || expected[i] > expected[best]))
			best = i;
	}
	return best;
}

Datum
model_select_synthetic_clusters(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	ClustersArgs a;
	Prng		rng;
	double	   *shared,
			   *centres,
			   *x,
			   *expected,
			   *observed;
	bool	   *missing;

	clusters_args(fcinfo, &a);
	InitMaterializedSRF(fcinfo, 0);
	prng_seed(&rng, a.seed);
	shared = palloc(sizeof(double) * a.dim);
	centres = palloc(sizeof(double) * a.dim * a.clusters);
	x = palloc(sizeof(double) * a.dim);
	expected = palloc(sizeof(double) * a.arms);
	observed = palloc(sizeof(double) * a.arms);
	missing = palloc0(sizeof(bool) * a.arms);
	random_unit(&rng, shared, a.dim);
	for (int c = 0; c < a.clusters; c++)
		random_unit(&rng, centres + (Size) c * a.dim, a.dim);

	for (int t = 1; t <= a.rounds; t++)
	{
		int			shown = a.new_cluster_every ? Min(a.clusters, 1 + (t - 1) / a.new_cluster_every) : a.clusters;
		int			c = (int) (prng_uniform(&rng) * shown);
		int			best;
		Datum		values[6];
		bool		nulls[6] = {false};

		for (int i = 0; i < a.dim; i++)
			x[i] = 0.8 * shared[i] + 0.8 * centres[(Size) c * a.dim + i] +
				0.2 * prng_normal(&rng) / sqrt((double) a.dim);
		normalise(x, a.dim);
		best = clusters_rewards(&a, &rng, t, c, expected, observed, missing);
		values[0] = Int32GetDatum(t);
		values[1] = Int32GetDatum(c + 1);
		values[2] = PointerGetDatum(float8_array(x, NULL, a.dim));
		values[3] = PointerGetDatum(float8_array(expected, missing, a.arms));
		values[4] = PointerGetDatum(float8_array(observed, missing, a.arms));
		values[5] = Int32GetDatum(best + 1);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}
