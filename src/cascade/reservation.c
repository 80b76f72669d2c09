/*
 * reservation.c — Weitzman reservation indices for Pandora's box
 * (Belloni, Chen & Wei 2026 §1, §2.1, §6.1).
 *
 * reservation_index(distribution, params, cost) returns the σ that solves
 *
 *     g(σ) := E[(V − σ)⁺] = cost
 *
 * for a box whose value V has a known law.  g is convex, non-increasing,
 * strictly decreasing where P(V > σ) > 0, and g(σ) = E[V] − σ for σ at or
 * below the support, so the root is unique for cost > 0, lies below the
 * support (σ = E[V] − cost) when cost >= E[V] − ess inf V, and is
 * ess sup V for cost = 0 (+Infinity for the gaussian).
 *
 * Laws and params:
 *   'bernoulli' {p} or {p, high}  V = high w.p. p, else 0 (high defaults to 1)
 *   'uniform'   {a, b}            V ~ U[a, b], a < b
 *   'gaussian'  {mean, sd}        V ~ N(mean, sd²), sd > 0
 *   'empirical' {v1, ..., vn}     each sample value equally likely (n >= 1;
 *                                 repeated values count repeatedly)
 *   'discrete'  {v1, p1, ..., vn, pn}  V = vi w.p. pi; pi >= 0, Σ pi = 1
 *                                 within 1e-9 (then normalised by the sum)
 *
 * Solvers: bernoulli, empirical and discrete invert the piecewise-linear g
 * exactly between sorted support points; uniform has a closed form; the
 * gaussian uses safeguarded Newton (bisection fallback) on log g to machine
 * precision.  Bad input raises 22023 (invalid_parameter_value); a NULL
 * argument or a NULL element of params raises 22004 (null_value_not_allowed).
 */
#include "postgres.h"

#include <float.h>
#include <math.h>

#include "catalog/pg_type.h"
#include "lib/stringinfo.h"
#include "fmgr.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/float.h"

#include "cascade/reservation.h"
#include "math/elementary.h"
#include "pg/float_text.h"

PG_FUNCTION_INFO_V1(model_select_reservation_index);

/* ---------------------------------------------------------------- */
/* Discrete laws: exact piecewise-linear inversion                   */
/* ---------------------------------------------------------------- */

typedef struct Atom
{
	double		v;
	double		w;
} Atom;

static int
atom_cmp(const void *a, const void *b)
{
	double		x = ((const Atom *) a)->v;
	double		y = ((const Atom *) b)->v;

	return x < y ? -1 : (x > y ? 1 : 0);
}

double
reservation_discrete(double *v, double *w, int n, double cost)
{
	Atom	   *atoms = palloc(sizeof(Atom) * Max(n, 1));
	int			m = 0;
	long double total = 0.0L,
				target,
				gap,			/* g at the current breakpoint, times total */
				mass;			/* weight strictly above the segment */
	double		result;

	for (int i = 0; i < n; i++)
		if (w[i] > 0.0)
		{
			atoms[m].v = v[i];
			atoms[m].w = w[i];
			total += w[i];
			m++;
		}
	Assert(m > 0);
	qsort(atoms, m, sizeof(Atom), atom_cmp);
	for (int i = 0; i < m; i++)
	{
		v[i] = atoms[i].v;
		w[i] = atoms[i].w;
	}
	pfree(atoms);

	if (cost == 0.0)
		return v[m - 1];		/* ess sup V */

	/*
	 * Walk down from the top atom.  At breakpoint v[k], gap = Σ_{i>=k} w_i
	 * (v_i − v_k) = total·g(v_k) and mass = Σ_{i>=k} w_i is minus the slope
	 * of total·g on [v_{k-1}, v_k].
	 */
	target = total * (long double) cost;
	gap = 0.0L;
	mass = 0.0L;
	for (int k = m - 1; k >= 0; k--)
	{
		long double next;

		mass += w[k];
		if (k == 0)
			break;
		next = gap + mass * ((long double) v[k] - (long double) v[k - 1]);
		if (next >= target)
		{
			result = (double) ((long double) v[k] - (target - gap) / mass);
			return result;
		}
		gap = next;
	}
	/* below the support: g(σ) = E[V] − σ */
	result = (double) ((long double) v[0] - (target - gap) / mass);
	return result;
}

/* ---------------------------------------------------------------- */
/* Uniform: closed form                                              */
/* ---------------------------------------------------------------- */

double
reservation_uniform(double a, double b, double cost)
{
	double		width = b - a;

	/* g(σ) = (b − σ)²/(2(b − a)) on [a, b]; g(a) = (b − a)/2 */
	if (cost <= width / 2.0)
		return b - sqrt(2.0 * cost) * sqrt(width);
	return a + width / 2.0 - cost;
}

/* ---------------------------------------------------------------- */
/* Gaussian: safeguarded Newton on log h(z)                          */
/* ---------------------------------------------------------------- */

/* Continued fractions are used for the upper tail from here on. */
#define GAUSS_CF_FROM 2.0
#define GAUSS_CF_TERMS 400

/*
 * h(z) = E[(Z − z)⁺] for Z ~ N(0, 1), returned as log h(z), with the slope
 * d log h / dz = −Q(z)/h(z) (Q the upper tail, since h' = −Q).
 *
 * Below GAUSS_CF_FROM, h = φ(z) − z·Q(z) directly (no cancellation for
 * z <= 0, a mild one up to 2).  Above, with Laplace's continued fraction
 * for the Mills ratio Q/φ = 1/(z + K), K = 1/(z + 2/(z + 3/(z + ...))),
 * h = φ·K/(z + K) and Q/h = 1/K: no cancellation and no underflow.
 */
static void
gauss_log_h(double z, double *logh, double *slope)
{
	if (z < GAUSS_CF_FROM)
	{
		double		q = 0.5 * portable_erfc(z / M_SQRT2);
		double		phi = portable_exp(-0.5 * z * z) / sqrt(2.0 * M_PI);
		double		h = phi - z * q;

		*logh = portable_log(h);
		*slope = -q / h;
	}
	else
	{
		double		t = 0.0,
					k;

		for (int j = GAUSS_CF_TERMS; j >= 2; j--)
			t = j / (z + t);
		k = 1.0 / (z + t);
		*logh = -0.5 * z * z - 0.5 * portable_log(2.0 * M_PI) + portable_log(k) - portable_log(z + k);
		*slope = -1.0 / k;
	}
}

double
reservation_gaussian(double mean, double sd, double cost)
{
	double		t,
				logt,
				lo,
				hi,
				z;

	if (cost == 0.0)
		return get_float8_infinity();

	/*
	 * Standardise: σ = mean + sd·z with h(z) = t := cost/sd.  Since h(z) =
	 * −z + h(−z) and h <= h(0) = φ(0) on [0, ∞), a root z <= 0 lies in
	 * [−t, −t + 0.4]; for t > 40, h(−z) < 1e-300 and σ = mean − cost.
	 */
	t = cost / sd;
	if (t > 40.0)
		return mean - cost;
	logt = portable_log(cost) - portable_log(sd);

	/*
	 * Bracket: h(z) >= −z, so f(−t − 1) > 0; h(z) <= φ(z)/z² for z > 0, so
	 * f(max(1, sqrt(−2 log t))) < 0 (checked, and widened if rounding
	 * disagrees).
	 */
	lo = -t - 1.0;
	hi = logt < 0.0 ? Max(1.0, sqrt(-2.0 * logt)) : 1.0;
	for (int i = 0; i < 64; i++)
	{
		double		f,
					s;

		gauss_log_h(hi, &f, &s);
		if (f - logt < 0.0)
			break;
		lo = hi;
		hi = 2.0 * hi + 1.0;
	}

	/*
	 * f(z) = log h(z) − log t is concave and decreasing, so a Newton step
	 * from anywhere lands at or right of the root and then decreases
	 * monotonically to it; the bracket catches rounding trouble.
	 */
	z = t >= 0.4 ? -t + 0.4 : hi;
	for (int iter = 0; iter < 200; iter++)
	{
		double		logh,
					slope,
					f,
					next;

		gauss_log_h(z, &logh, &slope);
		f = logh - logt;
		if (f == 0.0)
			break;
		if (f > 0.0)
			lo = z;
		else
			hi = z;
		next = z - f / slope;
		if (!(next > lo && next < hi))
			next = 0.5 * (lo + hi);
		if (fabs(next - z) <= 1e-15 * Max(1.0, fabs(z)) || hi - lo <= 4.0 * DBL_EPSILON * Max(1.0, fabs(z)))
		{
			z = next;
			break;
		}
		z = next;
	}
	return mean + sd * z;
}

/* ---------------------------------------------------------------- */
/* SQL wrapper                                                       */
/* ---------------------------------------------------------------- */

static void
check_param(bool ok, const char *distribution, const char *what)
{
	if (!ok)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("reservation_index: %s: %s", distribution, what)));
}

static void
check_count(int n, int want_lo, int want_hi, const char *distribution, const char *hint)
{
	if (n < want_lo || n > want_hi)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("reservation_index: %s takes params %s, got %d value%s",
						distribution, hint, n, n == 1 ? "" : "s")));
}

/* The elements of a one-dimensional float8[]: no NULLs, all finite. */
static double *
param_values(ArrayType *arr, int *n)
{
	Datum	   *elems;
	bool	   *nulls;
	double	   *x;

	if (ARR_NDIM(arr) > 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("reservation_index: params must be a one-dimensional array")));
	deconstruct_array(arr, FLOAT8OID, sizeof(float8), FLOAT8PASSBYVAL, TYPALIGN_DOUBLE,
					  &elems, &nulls, n);
	x = palloc(sizeof(double) * Max(*n, 1));
	for (int i = 0; i < *n; i++)
	{
		if (nulls[i])
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("reservation_index: params must not contain NULL (element %d)", i + 1)));
		x[i] = DatumGetFloat8(elems[i]);
		if (!isfinite(x[i]))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("reservation_index: params must be finite (element %d is %s)",
							i + 1, isnan(x[i]) ? "NaN" : (x[i] > 0 ? "Infinity" : "-Infinity"))));
	}
	return x;
}

static double
index_bernoulli(const double *p, int n, double cost)
{
	double		v[2],
				w[2];

	check_count(n, 1, 2, "bernoulli", "{p} or {p, high}");
	check_param(p[0] >= 0.0 && p[0] <= 1.0, "bernoulli", "p must be in [0, 1]");
	v[0] = 0.0;
	w[0] = 1.0 - p[0];
	v[1] = n == 2 ? p[1] : 1.0;
	w[1] = p[0];
	return reservation_discrete(v, w, 2, cost);
}

static double
index_uniform(const double *p, int n, double cost)
{
	check_count(n, 2, 2, "uniform", "{a, b}");
	check_param(p[0] < p[1], "uniform", "a must be less than b");
	check_param(isfinite(p[1] - p[0]), "uniform", "b - a must be finite");
	return reservation_uniform(p[0], p[1], cost);
}

static double
index_gaussian(const double *p, int n, double cost)
{
	check_count(n, 2, 2, "gaussian", "{mean, sd}");
	check_param(p[1] > 0.0, "gaussian", "sd must be positive");
	return reservation_gaussian(p[0], p[1], cost);
}

static double
index_empirical(const double *p, int n, double cost)
{
	double	   *v,
			   *w;

	check_count(n, 1, PG_INT32_MAX, "empirical", "{v1, ..., vn} (at least one sample value)");
	v = palloc(sizeof(double) * n);
	w = palloc(sizeof(double) * n);
	memcpy(v, p, sizeof(double) * n);	/* reservation_discrete() sorts them */
	for (int i = 0; i < n; i++)
		w[i] = 1.0;
	return reservation_discrete(v, w, n, cost);
}

static double
index_discrete(const double *p, int n, double cost)
{
	int			k = n / 2;
	double	   *v,
			   *w;
	double		sum = 0.0;

	if (n < 2 || n % 2 != 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("reservation_index: discrete takes params {v1, p1, ..., vn, pn} (an even, positive number of values), got %d value%s",
						n, n == 1 ? "" : "s")));
	v = palloc(sizeof(double) * k);
	w = palloc(sizeof(double) * k);
	for (int i = 0; i < k; i++)
	{
		v[i] = p[2 * i];
		w[i] = p[2 * i + 1];
		check_param(w[i] >= 0.0 && w[i] <= 1.0, "discrete", "probabilities must be in [0, 1]");
		sum += w[i];
	}
	if (fabs(sum - 1.0) > 1e-9)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("reservation_index: discrete: probabilities must sum to 1, got %.17g", sum)));
	return reservation_discrete(v, w, k, cost);
}

/* The laws reservation_index() takes, by name (matched without case). */
static const struct
{
	const char *name;
	double		(*index) (const double *params, int n, double cost);
}			laws[] = {
	{"bernoulli", index_bernoulli},
	{"uniform", index_uniform},
	{"gaussian", index_gaussian},
	{"empirical", index_empirical},
	{"discrete", index_discrete},
};

/* The law named `distribution` (case-insensitive), or 22023 listing the laws. */
static double (*law_index(const char *distribution)) (const double *, int, double)
{
	StringInfoData names;

	for (int i = 0; i < (int) lengthof(laws); i++)
		if (pg_strcasecmp(distribution, laws[i].name) == 0)
			return laws[i].index;
	initStringInfo(&names);
	for (int i = 0; i < (int) lengthof(laws); i++)
		appendStringInfo(&names, "%s%s", i == 0 ? "" : (i == lengthof(laws) - 1 ? " or " : ", "),
						 laws[i].name);
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("reservation_index: unknown distribution \"%s\"", distribution),
			 errhint("Use %s.", names.data)));
	pg_unreachable();
}

Datum
model_select_reservation_index(PG_FUNCTION_ARGS)
{
	char	   *distribution;
	double	   *p;
	int			n;
	double		cost,
				result;

	for (int i = 0; i < 3; i++)
		if (PG_ARGISNULL(i))
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("reservation_index: %s must not be NULL",
							i == 0 ? "distribution" : (i == 1 ? "params" : "cost"))));
	distribution = text_to_cstring(PG_GETARG_TEXT_PP(0));
	p = param_values(PG_GETARG_ARRAYTYPE_P(1), &n);
	cost = PG_GETARG_FLOAT8(2);
	if (isnan(cost) || isinf(cost) || cost < 0.0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("reservation_index: cost must be finite and not negative, got %s", exact_text(cost))));

	result = law_index(distribution) (p, n, cost);

	/* σ = E[V] − cost below the support can overflow for huge inputs */
	if (isnan(result) || (isinf(result) && cost > 0.0))
		ereport(ERROR,
				(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
				 errmsg("reservation_index: the index is out of the range of double precision")));
	PG_RETURN_FLOAT8(result);
}
