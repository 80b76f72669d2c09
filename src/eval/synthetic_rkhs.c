/*
 * synthetic_rkhs.c — the synthetic environment of the confidence-bound
 * experiments (Flynn & Reeb 2024), one reward function per arm, so that
 * replay() can compare policies on functions of known RKHS norm.
 *
 * synthetic_rkhs(rounds, dim, arms, seed, kernel, bandwidth, nu, rkhs_norm,
 * noise, inducing): arm a's reward function is
 *   f_a(x) = Σ_{i=1..m} w_i k(x, z_i),   m = inducing,
 * with z_i ~ Uniform([0,1]^dim) and w ~ N(0, I_m) rescaled so that
 * wᵀ K_zz w = rkhs_norm², i.e. ‖f_a‖_H = rkhs_norm exactly (f_a lies in the
 * span of k(·, z_i), where the norm is that quadratic form: no solve).
 * Because k(x, x) = 1, Cauchy–Schwarz bounds |f_a(x)| by rkhs_norm.
 *
 * The kernel is 'rbf', exp(-r²/(2ℓ²)), or 'matern' with nu 0.5, 1.5 or 2.5
 * (kernel_matern() of kernel.c), both of unit variance, ℓ = bandwidth.
 * Distances are summed coordinate by coordinate rather than expanded through
 * inner products, so k(z, z) is exactly 1 and close points are not lost to
 * cancellation.
 *
 * Each round draws a fresh context x ~ Uniform([0,1]^dim); expected[a] =
 * f_a(x), reward[a] = f_a(x) + N(0, noise²) (not clipped), best_arm the
 * first arm of highest expected reward; arms are numbered from 1.  The
 * stream is a function of the seed alone (in-tree PRNG): every function is
 * drawn before the first round, so the functions do not depend on `rounds`
 * and a shorter stream is a prefix of a longer one; the noise is drawn also
 * when noise = 0, so streams that differ only in noise share their contexts
 * and expected rewards.
 */
#include "postgres.h"

#include <math.h>

#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/memutils.h"

#include "model/context.h"
#include "model/reward_value.h"
#include "eval/eval.h"
#include "model/kernel.h"
#include "math/elementary.h"
#include "math/prng.h"
#include "math/vecops.h"

PG_FUNCTION_INFO_V1(model_select_synthetic_rkhs);

#define RKHS_NARGS 10
#define MAX_ROUNDS 10000000
#define MAX_DIM 1000
#define MAX_ARMS 1000
#define MAX_INDUCING 10000
/*
 * |f| <= rkhs_norm, plus noise times a normal draw: rewards stay far inside
 * float8's range, within a selector's widest reward range
 */
#define MAX_SCALE UTILITY_MAX

/*
 * Beyond this scaled distance every kernel here is exactly 0 in double
 * precision (exp(-750) underflows); cutting off there keeps the Matérn
 * polynomial factor from making inf · 0 = NaN when bandwidth is tiny.
 */
#define FAR_DISTANCE 750.0

/* The environment: every arm's inducing points and weights. */
typedef struct RkhsEnv
{
	int			dim;
	int			arms;
	int			inducing;
	bool		matern;
	double		nu;
	double		bandwidth;
	double		rkhs_norm;
	double	   *points;			/* arms × inducing × dim */
	double	   *weights;		/* arms × inducing */
} RkhsEnv;

#define check_arg(ok, problem) eval_check_arg((ok), "synthetic_rkhs", (problem))

static double
rkhs_kernel(const RkhsEnv *env, const double *x, const double *y)
{
	double		r = sqrt(squared_distance(env->dim, x, y)) / env->bandwidth;

	if (r > FAR_DISTANCE)
		return 0.0;
	return env->matern ? kernel_matern(env->nu, r) : portable_exp(-0.5 * r * r);
}

/* f_a(x) */
static double
arm_value(const RkhsEnv *env, int arm, const double *x)
{
	const double *z = env->points + (Size) arm * env->inducing * env->dim;
	const double *w = env->weights + (Size) arm * env->inducing;
	double		f = 0.0;

	for (int i = 0; i < env->inducing; i++)
		f += w[i] * rkhs_kernel(env, x, z + (Size) i * env->dim);
	return f;
}

/*
 * Draw arm a's inducing points and weights, then scale the weights to
 * wᵀ K_zz w = rkhs_norm².  The form is positive with probability one (K_zz
 * is positive semi-definite with a unit diagonal and w is continuous); a
 * zero form would leave the zero function.
 */
static void
draw_arm(RkhsEnv *env, Prng *rng, int arm)
{
	int			m = env->inducing;
	double	   *z = env->points + (Size) arm * m * env->dim;
	double	   *w = env->weights + (Size) arm * m;
	double		form = 0.0;
	double		scale;

	for (Size i = 0; i < (Size) m * env->dim; i++)
		z[i] = prng_uniform(rng);
	for (int i = 0; i < m; i++)
		w[i] = prng_normal(rng);
	for (int i = 0; i < m; i++)
	{
		double		row = 0.0;

		CHECK_FOR_INTERRUPTS();
		for (int j = 0; j < i; j++)
			row += w[j] * rkhs_kernel(env, z + (Size) i * env->dim, z + (Size) j * env->dim);
		form += w[i] * w[i] + 2.0 * w[i] * row;
	}
	scale = form > 0.0 ? env->rkhs_norm / sqrt(form) : 0.0;
	for (int i = 0; i < m; i++)
		w[i] *= scale;
}

/* Read and validate the arguments (none may be NULL) into env. */
static void
read_args(FunctionCallInfo fcinfo, RkhsEnv *env, int *rounds, uint64 *seed, double *noise)
{
	static const char *const names[RKHS_NARGS] = {"rounds", "dim", "arms", "seed", "kernel",
	"bandwidth", "nu", "rkhs_norm", "noise", "inducing"};
	char	   *kernel;

	for (int i = 0; i < RKHS_NARGS; i++)
		if (PG_ARGISNULL(i))
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("synthetic_rkhs: %s must not be NULL", names[i])));
	*rounds = PG_GETARG_INT32(0);
	env->dim = PG_GETARG_INT32(1);
	env->arms = PG_GETARG_INT32(2);
	*seed = (uint64) PG_GETARG_INT64(3);
	kernel = text_to_cstring(PG_GETARG_TEXT_PP(4));
	env->bandwidth = PG_GETARG_FLOAT8(5);
	env->nu = PG_GETARG_FLOAT8(6);
	env->rkhs_norm = PG_GETARG_FLOAT8(7);
	*noise = PG_GETARG_FLOAT8(8);
	env->inducing = PG_GETARG_INT32(9);

	check_arg(*rounds >= 0 && *rounds <= MAX_ROUNDS, "rounds must be between 0 and 10000000");
	check_arg(env->dim >= 1 && env->dim <= MAX_DIM, "dim must be between 1 and 1000");
	check_arg(env->arms >= 1 && env->arms <= MAX_ARMS, "arms must be between 1 and 1000");
	check_arg(strcmp(kernel, "rbf") == 0 || strcmp(kernel, "matern") == 0,
			  "kernel must be rbf or matern");
	env->matern = strcmp(kernel, "matern") == 0;
	check_arg(env->bandwidth > 0 && isfinite(env->bandwidth),
			  "bandwidth must be positive and finite");
	check_arg(!env->matern || env->nu == 0.5 || env->nu == 1.5 || env->nu == 2.5,
			  "nu must be 0.5, 1.5 or 2.5 for the matern kernel");
	check_arg(env->rkhs_norm >= 0 && env->rkhs_norm <= MAX_SCALE, "rkhs_norm must be from 0 to 1e15");
	check_arg(*noise >= 0 && *noise <= MAX_SCALE, "noise must be from 0 to 1e15");
	check_arg(env->inducing >= 1 && env->inducing <= MAX_INDUCING,
			  "inducing must be between 1 and 10000");
	if ((uint64) env->arms * env->inducing * env->dim > MaxAllocSize / sizeof(double))
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("synthetic_rkhs: arms * inducing * dim must be at most %llu, not %llu",
						(unsigned long long) (MaxAllocSize / sizeof(double)),
						(unsigned long long) env->arms * env->inducing * env->dim)));
}

/* One round: a fresh context, every arm's expected and observed reward. */
static void
emit_round(ReturnSetInfo *rsinfo, const RkhsEnv *env, Prng *rng, double noise, int t,
		   double *x, double *expected, double *observed)
{
	Datum		values[5];
	bool		nulls[5] = {false};
	int			best = 0;

	for (int j = 0; j < env->dim; j++)
		x[j] = prng_uniform(rng);
	for (int a = 0; a < env->arms; a++)
	{
		expected[a] = arm_value(env, a, x);
		observed[a] = expected[a] + noise * prng_normal(rng);
		if (expected[a] > expected[best])
			best = a;
	}
	values[0] = Int32GetDatum(t);
	values[1] = PointerGetDatum(float8_array(x, NULL, env->dim));
	values[2] = PointerGetDatum(float8_array(expected, NULL, env->arms));
	values[3] = PointerGetDatum(float8_array(observed, NULL, env->arms));
	values[4] = Int32GetDatum(best + 1);
	tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
}

Datum
model_select_synthetic_rkhs(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	RkhsEnv		env;
	int			rounds;
	uint64		seed;
	double		noise;
	Prng		rng;
	double	   *x,
			   *expected,
			   *observed;
	MemoryContext row_context;

	read_args(fcinfo, &env, &rounds, &seed, &noise);
	InitMaterializedSRF(fcinfo, 0);
	prng_seed(&rng, seed);
	env.points = palloc(sizeof(double) * env.arms * env.inducing * env.dim);
	env.weights = palloc(sizeof(double) * env.arms * env.inducing);
	for (int a = 0; a < env.arms; a++)
		draw_arm(&env, &rng, a);

	x = palloc(sizeof(double) * env.dim);
	expected = palloc(sizeof(double) * env.arms);
	observed = palloc(sizeof(double) * env.arms);
	/* The rows' arrays are copied into the tuplestore: free them per round. */
	row_context = AllocSetContextCreate(CurrentMemoryContext, "synthetic_rkhs row",
										ALLOCSET_DEFAULT_SIZES);
	for (int t = 1; t <= rounds; t++)
	{
		MemoryContext old_context;

		CHECK_FOR_INTERRUPTS();
		old_context = MemoryContextSwitchTo(row_context);
		emit_round(rsinfo, &env, &rng, noise, t, x, expected, observed);
		MemoryContextSwitchTo(old_context);
		MemoryContextReset(row_context);
	}
	MemoryContextDelete(row_context);
	return (Datum) 0;
}
