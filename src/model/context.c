/*
 * context.c — prompt embeddings.
 *
 * Contexts arrive as one-dimensional arrays of numbers: real[] or float8[]
 * (pgvector's vector casts to real[]), or what a driver sends for a list of
 * numbers.  The SQL functions take anycompatiblearray, so that every such
 * type, and an untyped literal, reaches one function.  They are checked
 * strictly: dimension, NULL elements, NaN and infinities each raise their
 * own error.
 */
#include "postgres.h"

#include <float.h>
#include <math.h>

#include "catalog/pg_type.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/fmgrprotos.h"
#include "utils/lsyscache.h"

#include "model/context.h"
#include "model/kernel.h"
#include "math/prng.h"
#include "model/registry.h"

/*
 * Element types a context may have.  real[] and float8[] are read in place;
 * the others are what drivers send for a list of numbers (psycopg2: numeric[]
 * for floats, integer[] for ints; psycopg 3: int2/int4/int8[] or numeric[]
 * for ints) and text[], which is what anycompatiblearray makes of an untyped
 * '{...}' literal.
 */
bool
context_elemtype_ok(Oid elemtype)
{
	switch (elemtype)
	{
		case FLOAT8OID:
		case FLOAT4OID:
		case NUMERICOID:
		case INT2OID:
		case INT4OID:
		case INT8OID:
		case TEXTOID:
			return true;
		default:
			return false;
	}
}

/* Whether a column of this type can be read as a context (or any float_array). */
bool
context_array_type_ok(Oid arraytype)
{
	Oid			elemtype = get_element_type(arraytype);

	return OidIsValid(elemtype) && context_elemtype_ok(elemtype);
}

/* One non-NULL element of the other accepted types as a double. */
static double
element_to_double(Datum d, Oid elemtype)
{
	switch (elemtype)
	{
		case INT2OID:
			return (double) DatumGetInt16(d);
		case INT4OID:
			return (double) DatumGetInt32(d);
		case INT8OID:
			return (double) DatumGetInt64(d);
		case NUMERICOID:
			return DatumGetFloat8(DirectFunctionCall1(numeric_float8, d));
		default:				/* TEXTOID: float8in's errors (22P02, 22003) */
			return DatumGetFloat8(DirectFunctionCall1(float8in,
													  CStringGetDatum(TextDatumGetCString(d))));
	}
}

/* v, unless it is NaN or infinite: element i + 1 of `what`. */
static inline double
finite_element(double v, const char *what, int i)
{
	if (isnan(v))
		ereport(ERROR,
				(errcode(ERRCODE_DATA_EXCEPTION),
				 errmsg("%s element %d is NaN", what, i + 1)));
	if (isinf(v))
		ereport(ERROR,
				(errcode(ERRCODE_DATA_EXCEPTION),
				 errmsg("%s element %d is infinite", what, i + 1)));
	return v;
}

/*
 * float8 or float4 elements, read in place in one pass (the common case: no
 * per-element call).  Where an element is NULL, x[i] = 0 and nulls[i] is set
 * (nulls may be NULL when the array has none).
 */
static void
read_float_elements(ArrayType *arr, int n, double *x, bool *nulls, const char *what)
{
	bool		is_float8 = ARR_ELEMTYPE(arr) == FLOAT8OID;
	const void *data = ARR_DATA_PTR(arr);
	bits8	   *bitmap = ARR_NULLBITMAP(arr);

	for (int i = 0, k = 0; i < n; i++)
	{
		if (bitmap != NULL && !(bitmap[i / 8] & (1 << (i % 8))))
		{
			x[i] = 0.0;
			nulls[i] = true;
			continue;
		}
		/* elements are stored densely, skipping NULLs */
		x[i] = finite_element(is_float8 ? ((const float8 *) data)[k] : (double) ((const float4 *) data)[k],
							  what, i);
		k++;
	}
}

/* The other accepted element types, deconstructed and converted one by one. */
static void
read_other_elements(ArrayType *arr, int n, double *x, bool *nulls, const char *what)
{
	Oid			elemtype = ARR_ELEMTYPE(arr);
	int16		typlen;
	bool		typbyval;
	char		typalign;
	Datum	   *elems;
	bool	   *isnull;
	int			count;

	get_typlenbyvalalign(elemtype, &typlen, &typbyval, &typalign);
	deconstruct_array(arr, elemtype, typlen, typbyval, typalign, &elems, &isnull, &count);
	for (int i = 0; i < n; i++)
	{
		if (isnull[i])
		{
			x[i] = 0.0;
			nulls[i] = true;
			continue;
		}
		x[i] = finite_element(element_to_double(elems[i], elemtype), what, i);
	}
	pfree(elems);
	pfree(isnull);
}

/*
 * A palloc'd copy of a one-dimensional array of numbers (see
 * context_elemtype_ok) as doubles, with no NaN or infinite element; *n gets
 * its length.  NULL elements are an error, unless `nulls` is given: then it
 * gets a palloc'd mask and they read as 0.  `what` names the array in error
 * messages.
 */
double *
float_array(ArrayType *arr, int *n, const char *what, bool **nulls)
{
	Oid			elemtype = ARR_ELEMTYPE(arr);
	double	   *x;
	bool	   *mask = NULL;

	if (!context_elemtype_ok(elemtype))
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("%s must be an array of numbers (real[], double precision[], numeric[] or integer[]), not %s",
						what, format_type_be(get_array_type(elemtype)))));
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
		*nulls = mask = palloc0(sizeof(bool) * Max(*n, 1));
	if (elemtype == FLOAT8OID || elemtype == FLOAT4OID)
		read_float_elements(arr, *n, x, mask, what);
	else
		read_other_elements(arr, *n, x, mask, what);
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
 * Apply the selector's input transformation in place: L2 normalisation of
 * the embedding, or a check that an unnormalised context is small enough
 * to learn from; then the tags' buckets (tags.c) scaled as the intercept
 * feature, times tag_scale.  The norm is taken of x / max|x_i| so that
 * neither huge nor tiny finite vectors overflow or underflow.
 */
void
context_prepare(const SelectorConfig *cfg, double *x)
{
	double		scale = 0.0,
				norm = 0.0;
	int			e = cfg->embed_dim;

	if (!policy_ops(cfg->policy)->uses_context)
		return;
	for (int j = e; j < cfg->dim; j++)
		x[j] *= sqrt(cfg->intercept) * cfg->tag_scale;
	if (!cfg->normalize)
	{
		check_magnitude(cfg, x);
		return;
	}
	for (int i = 0; i < e; i++)
		scale = Max(scale, fabs(x[i]));
	if (scale == 0.0)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_EXCEPTION),
				 errmsg("cannot normalise a zero context"),
				 errhint("Pass a non-zero embedding, or set \"normalize\": false.")));
	for (int i = 0; i < e; i++)
	{
		x[i] /= scale;
		norm += x[i] * x[i];
	}
	norm = sqrt(norm);
	for (int i = 0; i < e; i++)
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

/*
 * A one-dimensional array of n elements of elemtype (elemsize bytes each,
 * no NULLs), its data left for the caller: what construct_md_array()
 * builds, without its per-element walk.
 */
static ArrayType *
flat_array(Oid elemtype, Size elemsize, int n)
{
	Size		bytes = ARR_OVERHEAD_NONULLS(1) + elemsize * (Size) n;
	ArrayType  *a = palloc(bytes);

	memset(a, 0, ARR_OVERHEAD_NONULLS(1));	/* the header and its padding */
	SET_VARSIZE(a, bytes);
	a->ndim = 1;
	a->dataoffset = 0;
	a->elemtype = elemtype;
	ARR_DIMS(a)[0] = n;
	ARR_LBOUND(a)[0] = 1;
	return a;
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
		ArrayType  *a = flat_array(FLOAT8OID, sizeof(float8), n);

		memcpy(ARR_DATA_PTR(a), x, sizeof(float8) * (Size) n);
		return a;
	}
	elems = palloc(sizeof(Datum) * Max(n, 1));
	for (int i = 0; i < n; i++)
		elems[i] = Float8GetDatum(x[i]);
	return construct_md_array(elems, (bool *) missing, 1, dims, lbs, FLOAT8OID, sizeof(float8),
							  FLOAT8PASSBYVAL, TYPALIGN_DOUBLE);
}

/*
 * Whether every value of x is exactly a real (float4): a real[] embedding,
 * or numbers such as 0.5.  Such a context is logged as real[], 4 bytes a
 * value, and reads back as the same doubles (float4 to float8 is exact).
 */
bool
context_is_real(const double *x, int n)
{
	for (int i = 0; i < n; i++)
		if (!(fabs(x[i]) <= FLT_MAX) || (double) (float4) x[i] != x[i])
			return false;
	return true;
}

/* real[] of x, whose values context_is_real() (others are rounded). */
ArrayType *
float4_array(const double *x, int n)
{
	ArrayType  *a = flat_array(FLOAT4OID, sizeof(float4), n);
	float4	   *data = (float4 *) ARR_DATA_PTR(a);

	for (int i = 0; i < n; i++)
		data[i] = fabs(x[i]) <= FLT_MAX ? (float4) x[i] : 0;
	return a;
}
