/*
 * synthetic.c — seeded synthetic routing streams for tests, demos and
 * benchmarks (spec/000.md §7.3, Setup 1 shape).
 *
 * synthetic_clusters(rounds, dim, arms, clusters, seed, noise): prompts come
 * from `clusters` clusters, context = normalise(0.8·shared + 0.8·centre_c +
 * 0.2·N(0, I/dim)).  Arm a's expected reward on cluster c is
 *   0.5 + 0.25·[a = c mod arms] − 0.02·a
 * so the best arm depends on the cluster and arm 1 is best on average; the
 * observed reward adds N(0, noise²) and is clipped to [0, 1].  Arms are
 * numbered from 1 in the output, as SQL arrays are.
 *
 * Changing worlds (spec/000.md Setup 3, spec/002.md §4), each off by NULL:
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

#include "core/context.h"
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

static void
check_arg(bool ok, const char *what)
{
	if (!ok)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("synthetic_clusters: %s", what)));
}

Datum
model_select_synthetic_clusters(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	int			rounds,
				dim,
				arms,
				clusters;
	uint64		seed;
	double		noise;
	Prng		rng;
	double	   *shared,
			   *centres,
			   *x,
			   *expected,
			   *observed;
	bool	   *missing;
	int			new_arm_at,
				switch_every,
				new_cluster_every;

	for (int i = 0; i < 6; i++)
		if (i != 3 && PG_ARGISNULL(i))
			check_arg(false, "only clusters and the changing-world arguments may be NULL");
	rounds = PG_GETARG_INT32(0);
	dim = PG_GETARG_INT32(1);
	arms = PG_GETARG_INT32(2);
	clusters = PG_ARGISNULL(3) ? arms : PG_GETARG_INT32(3);
	seed = (uint64) PG_GETARG_INT64(4);
	noise = PG_GETARG_FLOAT8(5);
	check_arg(rounds >= 0 && rounds <= 10000000, "rounds must be between 0 and 10000000");
	check_arg(dim >= 2 && dim <= 16000, "dim must be between 2 and 16000");
	check_arg(arms >= 1 && arms <= 1000, "arms must be between 1 and 1000");
	check_arg(clusters >= 1 && clusters <= 1000, "clusters must be between 1 and 1000");
	check_arg(noise >= 0 && isfinite(noise), "noise must be finite and not negative");
	new_arm_at = optional_positive(fcinfo, 6, "new_arm_at");
	switch_every = optional_positive(fcinfo, 7, "switch_every");
	new_cluster_every = optional_positive(fcinfo, 8, "new_cluster_every");

	InitMaterializedSRF(fcinfo, 0);
	prng_seed(&rng, seed);
	shared = palloc(sizeof(double) * dim);
	centres = palloc(sizeof(double) * dim * clusters);
	x = palloc(sizeof(double) * dim);
	expected = palloc(sizeof(double) * arms);
	observed = palloc(sizeof(double) * arms);
	missing = palloc0(sizeof(bool) * arms);
	random_unit(&rng, shared, dim);
	for (int c = 0; c < clusters; c++)
		random_unit(&rng, centres + (Size) c * dim, dim);

	for (int t = 1; t <= rounds; t++)
	{
		int			shown = new_cluster_every ? Min(clusters, 1 + (t - 1) / new_cluster_every) : clusters;
		int			c = (int) (prng_uniform(&rng) * shown);
		int			rotation = switch_every ? (t - 1) / switch_every : 0;
		int			best = -1;
		Datum		values[6];
		bool		nulls[6] = {false};

		for (int i = 0; i < dim; i++)
			x[i] = 0.8 * shared[i] + 0.8 * centres[(Size) c * dim + i] +
				0.2 * prng_normal(&rng) / sqrt((double) dim);
		normalise(x, dim);
		for (int a = 0; a < arms; a++)
		{
			double		y;

			expected[a] = 0.5 + (a == (c + rotation) % arms ? EXPERT_BONUS : 0.0) - ARM_STEP * a;
			y = expected[a] + noise * prng_normal(&rng);

			observed[a] = y < 0.0 ? 0.0 : (y > 1.0 ? 1.0 : y);
			missing[a] = new_arm_at && a == arms - 1 && t < new_arm_at;
			if (!missing[a] && (best < 0 || expected[a] > expected[best]))
				best = a;
		}
		values[0] = Int32GetDatum(t);
		values[1] = Int32GetDatum(c + 1);
		values[2] = PointerGetDatum(float8_array(x, NULL, dim));
		values[3] = PointerGetDatum(float8_array(expected, missing, arms));
		values[4] = PointerGetDatum(float8_array(observed, missing, arms));
		values[5] = Int32GetDatum(best + 1);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}
