/*
 * context.c — prompt embeddings.
 *
 * Contexts arrive as one-dimensional real[] or float8[] (pgvector's vector
 * casts to real[]).  They are checked strictly: dimension, NULL elements,
 * NaN and infinities each raise their own error.
 */
#include "postgres.h"

#include <math.h>

#include "catalog/pg_type.h"
#include "utils/array.h"
#include "utils/lsyscache.h"

#include "model/context.h"
#include "model/kernel.h"
#include "math/prng.h"
#include "model/registry.h"

/*
 * A palloc'd copy of a one-dimensional real[]/float8[] as doubles, with no
 * NaN or infinite element; *n gets its length.  NULL elements are an error,
 * unless `nulls` is given: then it gets a palloc'd mask and they read as 0.
 * `what` names the array in error messages.
 */
double *
float_array(ArrayType *arr, int *n, const char *what, bool **nulls)
{
	Oid			elemtype = ARR_ELEMTYPE(arr);
	const void *data = ARR_DATA_PTR(arr);	/* float8 or float4 elements */
	double	   *x;

	if (elemtype != FLOAT8OID && elemtype != FLOAT4OID)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("%s must be real[] or double precision[]", what)));
	if (ARR_NDIM(arr) > 1)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_EXCEPTION),
				 errmsg("%s must be a one-dimensional array, not %d-dimensional",
						what, ARR_NDIM(arr))));
	*n = ArrayGetNItems(ARR_NDIM(arr), ARR_DIMS(arr));
	if (nulls == NULL && array_contains_nulls(arr))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("%s must not contain NULL elements", what)));

	/* every element is written below (0 where NULL): no zeroing first */
	x = palloc(sizeof(double) * Max(*n, 1));
	if (nulls != NULL)
		*nulls = palloc0(sizeof(bool) * Max(*n, 1));
	for (int i = 0, k = 0; i < *n; i++)
	{
		bits8	   *bitmap = ARR_NULLBITMAP(arr);

		if (bitmap != NULL && !(bitmap[i / 8] & (1 << (i % 8))))
		{
			x[i] = 0.0;
			(*nulls)[i] = true;
			continue;
		}
		/* elements are stored densely, skipping NULLs */
		x[i] = elemtype == FLOAT8OID ? ((const float8 *) data)[k] : (double) ((const float4 *) data)[k];
		k++;
		if (isnan(x[i]))
			ereport(ERROR,
					(errcode(ERRCODE_DATA_EXCEPTION),
					 errmsg("%s element %d is NaN", what, i + 1)));
		if (isinf(x[i]))
			ereport(ERROR,
					(errcode(ERRCODE_DATA_EXCEPTION),
					 errmsg("%s element %d is infinite", what, i + 1)));
	}
	return x;
}

/* A palloc'd copy of a context as doubles, validated against dim. */
double *
context_from_array(ArrayType *arr, int32 dim)
{
	int			n;
	double	   *x = float_array(arr, &n, "context", NULL);

	if (n != dim)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_EXCEPTION),
				 errmsg("context has %d dimensions, selector expects %d", n, dim)));
	return x;
}

/*
 * The largest squared norm, and own kernel value k'(x, x), an unnormalised
 * context may have: beyond, sums and products over an arm's contexts
 * overflow to ±Inf and its scores become NaN.  (A normalised context has
 * norm 1, and its kernel value is at most (gamma + offset)^degree ≤ 1e63.)
 */
#define CONTEXT_MAGNITUDE_MAX 1e100

static void
check_magnitude(const SelectorConfig *cfg, const double *x)
{
	double		sq = 0.0;

	for (int i = 0; i < cfg->dim; i++)
		sq += x[i] * x[i];
	if (sq <= CONTEXT_MAGNITUDE_MAX &&
		(policy_ops(cfg->policy)->kernels == 0 || fabs(kernel_self(cfg, x)) <= CONTEXT_MAGNITUDE_MAX))
		return;
	ereport(ERROR,
			(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
			 errmsg("context is too large for this selector: its squared norm or kernel value exceeds %g",
					CONTEXT_MAGNITUDE_MAX),
			 errhint("Scale the embedding down, or set \"normalize\": true.")));
}

/*
 * Apply the selector's input transformation (L2 normalisation) in place, or
 * check that an unnormalised context is small enough to learn from.  The
 * norm is taken of x / max|x_i| so that neither huge nor tiny finite vectors
 * overflow or underflow.
 */
void
context_prepare(const SelectorConfig *cfg, double *x)
{
	double		scale = 0.0,
				norm = 0.0;

	if (!policy_ops(cfg->policy)->uses_context)
		return;
	if (!cfg->normalize)
	{
		check_magnitude(cfg, x);
		return;
	}
	for (int i = 0; i < cfg->dim; i++)
		scale = Max(scale, fabs(x[i]));
	if (scale == 0.0)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_EXCEPTION),
				 errmsg("cannot normalise a zero context"),
				 errhint("Pass a non-zero embedding, or set \"normalize\": false.")));
	for (int i = 0; i < cfg->dim; i++)
	{
		x[i] /= scale;
		norm += x[i] * x[i];
	}
	norm = sqrt(norm);
	for (int i = 0; i < cfg->dim; i++)
		x[i] /= norm;
}

/* Reproducible hash of a context's bits, for tie-breaking and `random`. */
uint64
context_hash(const double *x, int32 dim, uint64 seed)
{
	uint64		h = mix64(seed ^ UINT64_C(0x6d6f64656c5f7365));

	for (int i = 0; i < dim; i++)
	{
		uint64		bits;
		double		v = x[i] == 0.0 ? 0.0 : x[i];	/* -0 hashes as 0 */

		memcpy(&bits, &v, sizeof(bits));
		h = mix64(h ^ bits);
	}
	return h;
}

/* float8[] of x, with NULL where missing[i] (missing may be NULL). */
ArrayType *
float8_array(const double *x, const bool *missing, int n)
{
	Datum	   *elems;
	int			dims[1] = {n};
	int			lbs[1] = {1};

	if (missing == NULL && n > 0)
	{
		/* what construct_md_array() builds, without its per-element walk */
		Size		bytes = ARR_OVERHEAD_NONULLS(1) + sizeof(float8) * (Size) n;
		ArrayType  *a = palloc(bytes);

		memset(a, 0, ARR_OVERHEAD_NONULLS(1));	/* the header and its padding; the data is copied */

		SET_VARSIZE(a, bytes);
		a->ndim = 1;
		a->dataoffset = 0;
		a->elemtype = FLOAT8OID;
		ARR_DIMS(a)[0] = n;
		ARR_LBOUND(a)[0] = 1;
		memcpy(ARR_DATA_PTR(a), x, sizeof(float8) * (Size) n);
		return a;
	}
	elems = palloc(sizeof(Datum) * Max(n, 1));
	for (int i = 0; i < n; i++)
		elems[i] = Float8GetDatum(x[i]);
	return construct_md_array(elems, (bool *) missing, 1, dims, lbs, FLOAT8OID, sizeof(float8),
							  FLOAT8PASSBYVAL, TYPALIGN_DOUBLE);
}
