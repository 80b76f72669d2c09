/*
 * cascade.c — learned cost-aware cascades (COSMOS, Belloni, Chen & Wei 2026 §3; see
 * cascade.h for the model): the features psi, the stored state, and the SQL
 * entry points that order arms by their optimistic reservation index:
 *
 *   cascade(selector, context, beta)          the order with every index
 *   cascade_scores(selector, context, beta)   per arm: n, estimate, width, index
 *   cascade_next(selector, context, best_value, queried, beta)
 *                                             Weitzman's rule: the next arm to
 *                                             query, or NULL to stop
 *   cascade_select(selector, values, arms)    the queried arm to deploy
 *   cascade_route(selector, context, beta)    the order, logged in cascade_decisions
 *
 * An arm without observations has index +Infinity (it is queried first,
 * like the paper's initial round); ties are broken by the same hash of
 * (seed, context, ordinal) as route().  Fitting is in cascade_fit.c, the
 * observation triggers and cascade_refit() in cascade_obs.c.
 */
#include "postgres.h"

#include <math.h>

#include "access/htup_details.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "funcapi.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/float.h"

#include "cascade/cascade.h"
#include "math/elementary.h"
#include "model/catalog.h"
#include "model/context.h"
#include "pg/owner.h"
#include "model/privilege.h"
#include "model/registry.h"
#include "model/tags.h"
#include "math/linalg.h"
#include "math/prng.h"
#include "math/vecops.h"
#include "pg/float_text.h"

PG_FUNCTION_INFO_V1(model_select_cascade);
PG_FUNCTION_INFO_V1(model_select_cascade_scores);
PG_FUNCTION_INFO_V1(model_select_cascade_next);
PG_FUNCTION_INFO_V1(model_select_cascade_select);
PG_FUNCTION_INFO_V1(model_select_cascade_route);

/* ---------------------------------------------------------------- */
/* Features and stored state                                         */
/* ---------------------------------------------------------------- */

int
cascade_psi_dim(const SelectorConfig *cfg)
{
	if (!policy_ops(cfg->policy)->uses_context)
		return 1;
	return policy_feature_count(cfg) + 1;
}

/* psi (cascade_psi_dim values) of a validated context as given. */
void
cascade_psi(const SelectorConfig *cfg, const double *raw_x, double *psi)
{
	int			m = cascade_psi_dim(cfg);
	double	   *x;

	if (m == 1)
	{
		psi[0] = 1.0;
		return;
	}
	x = palloc(sizeof(double) * cfg->dim);
	memcpy(x, raw_x, sizeof(double) * cfg->dim);
	context_prepare(cfg, x);
	policy_features(cfg, x, psi);
	psi[m - 1] = 1.0;
	pfree(x);
}

double
cascade_range(const SelectorConfig *cfg)
{
	return cfg->reward_max - cfg->reward_min;
}

/*
 * A stored rho as doubles (palloc'd), *k its length; NULL unless it is a
 * one-dimensional float8[] without NULL, NaN or infinite elements.
 */
double *
cascade_rho_decode(Datum rho, int *k)
{
	ArrayType  *arr = DatumGetArrayTypeP(rho);
	double	   *r;

	if (ARR_ELEMTYPE(arr) != FLOAT8OID || ARR_NDIM(arr) > 1 || array_contains_nulls(arr))
		return NULL;
	*k = ArrayGetNItems(ARR_NDIM(arr), ARR_DIMS(arr));
	r = palloc(sizeof(double) * Max(*k, 1));
	memcpy(r, ARR_DATA_PTR(arr), sizeof(double) * *k);
	for (int j = 0; j < *k; j++)
		if (!isfinite(r[j]))
			return NULL;
	return r;
}

static void
state_damaged(int32 arm_id, const char *what)
{
	ereport(ERROR,
			(errcode(ERRCODE_DATA_CORRUPTED),
			 errmsg("cascade state of arm %d is damaged: %s", arm_id, what),
			 errhint("Run model_select.cascade_refit(), which ignores the stored state.")));
}

/*
 * Decode a cascade_state row's rho and design into st (palloc'd copies).
 * An empty state leaves rho and L NULL with st->m = m; a state with another
 * number of features leaves them NULL with st->m = the stored number.  A
 * damaged one (not finite, a factor without a positive diagonal, the wrong
 * size) is XX001: NaN must not reach an index.
 */
void
cascade_state_decode(CascadeState *st, int m, bool rho_null, Datum rho,
					 bool design_null, Datum design)
{
	int			k;
	double	   *r;
	bytea	   *b;

	st->m = m;
	st->rho = st->L = NULL;
	if (rho_null || design_null)
		return;
	r = cascade_rho_decode(rho, &k);
	if (r == NULL)
		state_damaged(st->arm_id, "rho is not a vector of finite numbers");
	if (k != m)
	{
		st->m = k;
		return;
	}
	b = DatumGetByteaPP(design);
	if (VARSIZE_ANY_EXHDR(b) != sizeof(double) * PACKED_SIZE(m))
		state_damaged(st->arm_id, psprintf("design of %zu bytes for %d features",
										   (size_t) VARSIZE_ANY_EXHDR(b), m));
	st->rho = r;
	st->L = palloc(sizeof(double) * PACKED_SIZE(m));
	memcpy(st->L, VARDATA_ANY(b), sizeof(double) * PACKED_SIZE(m));
	for (Size j = 0; j < PACKED_SIZE(m); j++)
		if (!isfinite(st->L[j]))
			state_damaged(st->arm_id, "the design holds a number that is not finite");
	for (int j = 0; j < m; j++)
		if (!(st->L[PACKED_ROW(j) + j] > 0))
			state_damaged(st->arm_id, "the design's factor has a diagonal element that is not positive");
}

/* ---------------------------------------------------------------- */
/* Scoring and ordering                                              */
/* ---------------------------------------------------------------- */

typedef struct CascadeArm
{
	char	   *name;
	int32		ordinal;
	bool		active;
	int64		n;
	CascadeState st;
	double		estimate;		/* lo + R·tanh(rhoᵀpsi) */
	double		width;			/* |psi|_{V⁻¹} */
	double		index;			/* lo + R·tanh(rhoᵀpsi + beta·width) */
	uint64		key;			/* tie-break */
} CascadeArm;

typedef struct CascadeSelector
{
	SelectorConfig cfg;
	char	   *name;
	int			m;
	int			narms;
	CascadeArm *arms;
} CascadeSelector;

/* The columns of cascade_load()'s query of the arms (cascade_load_as_owner()). */
enum
{
	CASCADE_ARM_ID = 1,
	CASCADE_ARM_NAME,
	CASCADE_ARM_ORDINAL,
	CASCADE_ARM_ACTIVE,
	CASCADE_ARM_N,
	CASCADE_ARM_RHO,
	CASCADE_ARM_DESIGN
};

/* An arm from a row of cascade_load()'s query (state decoded for m features). */
static void
cascade_arm_from_row(CascadeArm *a, HeapTuple row, TupleDesc desc, int m)
{
	bool		rho_null,
				design_null;
	Datum		rho = SPI_getbinval(row, desc, CASCADE_ARM_RHO, &rho_null);
	Datum		design = SPI_getbinval(row, desc, CASCADE_ARM_DESIGN, &design_null);

	a->st.arm_id = spi_int32(row, desc, CASCADE_ARM_ID);
	a->name = spi_text(row, desc, CASCADE_ARM_NAME);
	a->ordinal = spi_int32(row, desc, CASCADE_ARM_ORDINAL);
	a->active = spi_bool(row, desc, CASCADE_ARM_ACTIVE);
	a->n = spi_int64(row, desc, CASCADE_ARM_N);
	cascade_state_decode(&a->st, m, rho_null, rho, design_null, design);
}

typedef struct CascadeLoad
{
	const char *name;
	bool		with_state;
	CascadeSelector *sel;
} CascadeLoad;

/*
 * cascade_load() as the extension owner (clients read no table), for a
 * caller with the route right.
 */
static void
cascade_load_as_owner(void *arg)
{
	int			spi_level;
	static SPIPlanPtr arms_plan = NULL;
	CascadeLoad *call = arg;
	const char *name = call->name;
	Oid			types[2] = {INT4OID, BOOLOID};
	Datum		args[2];
	MemoryContext caller = CurrentMemoryContext;
	CascadeSelector *sel = call->sel = palloc0(sizeof(CascadeSelector));

	spi_level = spi_connect();
	config_load_by_name(name, &sel->cfg);
	/* cascades read the embedding alone */
	sel->cfg = config_untagged(&sel->cfg);
	selector_check_privilege(sel->cfg.selector_id, name, SELECTOR_ROUTE);
	sel->name = MemoryContextStrdup(caller, name);
	sel->m = cascade_psi_dim(&sel->cfg);
	args[0] = Int32GetDatum(sel->cfg.selector_id);
	args[1] = BoolGetDatum(call->with_state);
	sel->narms = (int) spi_execute(spi_plan(&arms_plan,
											"SELECT a.arm_id, a.name, a.ordinal, a.active, coalesce(s.n, 0),"
											" CASE WHEN $2 THEN s.rho END, CASE WHEN $2 THEN s.design END"
											" FROM model_select.arms a LEFT JOIN model_select.cascade_state s USING (arm_id)"
											" WHERE a.selector_id = $1 ORDER BY a.ordinal",
											2, types), args, NULL, true, 0, SPI_OK_SELECT,
								   "read the arms of selector \"%s\"", name);
	sel->arms = MemoryContextAllocZero(caller, sizeof(CascadeArm) * Max(sel->narms, 1));
	for (int i = 0; i < sel->narms; i++)
	{
		MemoryContext old = MemoryContextSwitchTo(caller);

		cascade_arm_from_row(&sel->arms[i], SPI_tuptable->vals[i], SPI_tuptable->tupdesc, sel->m);
		MemoryContextSwitchTo(old);
		if (sel->arms[i].st.m != sel->m)
			ereport(ERROR,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg("cascade state of arm \"%s\" has %d features, selector \"%s\" now has %d",
							sel->arms[i].name, sel->arms[i].st.m, name, sel->m),
					 errhint("Run model_select.cascade_refit() after changing the selector's settings.")));
	}
	spi_finish(spi_level);
}

/* Load a selector with every arm (and, with_state, its decoded cascade state). */
static CascadeSelector *
cascade_load(const char *name, bool with_state)
{
	CascadeLoad call = {name, with_state, NULL};

	run_as_extension_owner(cascade_load_as_owner, &call);
	return call.sel;
}

static double
beta_arg(FunctionCallInfo fcinfo, int argno)
{
	double		beta;

	if (PG_ARGISNULL(argno))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("beta must not be NULL")));
	beta = PG_GETARG_FLOAT8(argno);
	if (!(beta >= 0 && beta < get_float8_infinity()))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("beta must be finite and not negative, not %s", exact_text(beta))));
	return beta;
}

/* Score every arm for a validated context as given. */
static void
cascade_score(CascadeSelector *sel, const double *raw_x, double beta)
{
	int			m = sel->m;
	double	   *psi = palloc(sizeof(double) * m);
	double	   *v = palloc(sizeof(double) * m);
	uint64		h = context_hash(raw_x, sel->cfg.dim, sel->cfg.seed);
	double		lo = sel->cfg.reward_min,
				R = cascade_range(&sel->cfg);

	cascade_psi(&sel->cfg, raw_x, psi);
	for (int i = 0; i < sel->narms; i++)
	{
		CascadeArm *a = &sel->arms[i];
		double		z;

		a->key = mix64(h ^ ((uint64) a->ordinal * UINT64_C(0x9E3779B97F4A7C15)));
		if (a->st.rho == NULL)
		{
			a->estimate = a->width = a->index = get_float8_infinity();
			continue;
		}
		z = dot(m, a->st.rho, psi);
		memcpy(v, psi, sizeof(double) * m);
		chol_forward(m, a->st.L, v);
		a->width = sqrt(dot(m, v, v));
		a->estimate = lo + R * portable_tanh(z);
		a->index = lo + R * portable_tanh(z + beta * a->width);
	}
}

static int
arm_order_cmp(const void *pa, const void *pb)
{
	const CascadeArm *a = *(const CascadeArm *const *) pa;
	const CascadeArm *b = *(const CascadeArm *const *) pb;

	if (a->index != b->index)
		return a->index > b->index ? -1 : 1;
	return a->key > b->key ? -1 : (a->key < b->key ? 1 : 0);
}

/* Load, validate the context, score, and order the active arms. */
static CascadeArm **
cascade_ordered(FunctionCallInfo fcinfo, double beta, CascadeSelector **sel_out,
				double **raw_out, int *k)
{
	CascadeSelector *sel = cascade_load(text_to_cstring(PG_GETARG_TEXT_PP(0)), true);
	double	   *raw = context_from_array(PG_GETARG_ARRAYTYPE_P(1), sel->cfg.dim);
	CascadeArm **order = palloc(sizeof(CascadeArm *) * Max(sel->narms, 1));

	cascade_score(sel, raw, beta);
	*k = 0;
	for (int i = 0; i < sel->narms; i++)
		if (sel->arms[i].active)
			order[(*k)++] = &sel->arms[i];
	if (*k == 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("selector \"%s\" has no active arm", sel->name),
				 errhint("Add one with model_select.add_arm().")));
	qsort(order, *k, sizeof(CascadeArm *), arm_order_cmp);
	*sel_out = sel;
	if (raw_out)
		*raw_out = raw;
	return order;
}

/* SQL: cascade(selector, context, beta) → (position, arm, index), best first. */
Datum
model_select_cascade(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	CascadeSelector *sel;
	int			k;
	CascadeArm **order = cascade_ordered(fcinfo, beta_arg(fcinfo, 2), &sel, NULL, &k);

	InitMaterializedSRF(fcinfo, 0);
	for (int i = 0; i < k; i++)
	{
		Datum		values[3];
		bool		nulls[3] = {false};

		values[0] = Int32GetDatum(i + 1);
		values[1] = CStringGetTextDatum(order[i]->name);
		values[2] = Float8GetDatum(order[i]->index);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}

/* SQL: cascade_scores(selector, context, beta) → every arm in ordinal order. */
Datum
model_select_cascade_scores(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	double		beta = beta_arg(fcinfo, 2);
	CascadeSelector *sel = cascade_load(text_to_cstring(PG_GETARG_TEXT_PP(0)), true);

	cascade_score(sel, context_from_array(PG_GETARG_ARRAYTYPE_P(1), sel->cfg.dim), beta);
	InitMaterializedSRF(fcinfo, 0);
	for (int i = 0; i < sel->narms; i++)
	{
		CascadeArm *a = &sel->arms[i];
		Datum		values[6];
		bool		nulls[6] = {false};

		values[0] = CStringGetTextDatum(a->name);
		values[1] = BoolGetDatum(a->active);
		values[2] = Int64GetDatum(a->n);
		values[3] = Float8GetDatum(a->estimate);
		values[4] = Float8GetDatum(a->width);
		values[5] = Float8GetDatum(a->index);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}

/* The arm of sel named `name`, or 42704. */
static CascadeArm *
arm_by_name(CascadeSelector *sel, const char *name)
{
	for (int i = 0; i < sel->narms; i++)
		if (strcmp(sel->arms[i].name, name) == 0)
			return &sel->arms[i];
	ereport(ERROR,
			(errcode(ERRCODE_UNDEFINED_OBJECT),
			 errmsg("selector \"%s\" has no arm \"%s\"", sel->name, name)));
	return NULL;				/* not reached */
}

/* The elements of a text[] (NULL elements: 22004). */
static char **
text_elements(ArrayType *arr, const char *what, int *n)
{
	Datum	   *elems;
	bool	   *nulls;
	char	  **out;

	if (ARR_NDIM(arr) > 1)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_EXCEPTION),
				 errmsg("%s must be a one-dimensional array", what)));
	deconstruct_array(arr, TEXTOID, -1, false, TYPALIGN_INT, &elems, &nulls, n);
	out = palloc(sizeof(char *) * Max(*n, 1));
	for (int i = 0; i < *n; i++)
	{
		if (nulls[i])
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("%s must not contain NULL elements", what)));
		out[i] = TextDatumGetCString(elems[i]);
	}
	return out;
}

/*
 * SQL: cascade_next(selector, context, best_value, queried, beta) → the
 * highest-index active arm not yet queried, or NULL once the best value seen
 * is >= its index (ties stop) or every active arm has been queried.  With
 * nothing queried (queried NULL or empty) it always names the first arm.
 */
Datum
model_select_cascade_next(PG_FUNCTION_ARGS)
{
	CascadeSelector *sel;
	CascadeArm **order;
	int			k,
				nq = 0;
	char	  **queried = NULL;
	double		best = 0;

	if (PG_ARGISNULL(0) || PG_ARGISNULL(1))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("selector and context must not be NULL")));
	order = cascade_ordered(fcinfo, beta_arg(fcinfo, 4), &sel, NULL, &k);
	if (!PG_ARGISNULL(3))
		queried = text_elements(PG_GETARG_ARRAYTYPE_P(3), "queried", &nq);
	for (int i = 0; i < nq; i++)
		arm_by_name(sel, queried[i])->active = false;	/* marks it queried */
	if (nq > 0)
	{
		if (PG_ARGISNULL(2))
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("best_value must not be NULL once an arm has been queried")));
		best = PG_GETARG_FLOAT8(2);
		if (isnan(best))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("best_value must not be NaN")));
	}
	for (int i = 0; i < k; i++)
	{
		if (!order[i]->active)
			continue;
		if (nq > 0 && best >= order[i]->index)
			PG_RETURN_NULL();
		PG_RETURN_TEXT_P(cstring_to_text(order[i]->name));
	}
	PG_RETURN_NULL();
}

/*
 * SQL: cascade_select(selector, values, arms) → the arm with the largest
 * value (the first of equal ones).  Each arm at most once.
 */
Datum
model_select_cascade_select(PG_FUNCTION_ARGS)
{
	CascadeSelector *sel = cascade_load(text_to_cstring(PG_GETARG_TEXT_PP(0)), false);
	int			nv,
				na,
				best = 0;
	double	   *v = float_array(PG_GETARG_ARRAYTYPE_P(1), &nv, "values", NULL);
	char	  **arms = text_elements(PG_GETARG_ARRAYTYPE_P(2), "arms", &na);

	if (nv != na || na == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("values and arms must be non-empty arrays of the same length, not %d and %d",
						nv, na)));
	for (int i = 0; i < na; i++)
	{
		CascadeArm *a = arm_by_name(sel, arms[i]);

		if (a->key != 0)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("arm \"%s\" appears twice: each arm is queried at most once", arms[i])));
		a->key = 1;
		if (v[i] > v[best])
			best = i;
	}
	PG_RETURN_TEXT_P(cstring_to_text(arms[best]));
}

/*
 * SQL: cascade_route(selector, context, beta) → (cascade_id, arms, indices):
 * the order of cascade(), logged in model_select.cascade_decisions so that
 * observations can name the cascade they belong to.
 */
Datum
model_select_cascade_route(PG_FUNCTION_ARGS)
{
	static SPIPlanPtr plan = NULL;
	Oid			types[5] = {INT4OID, FLOAT8ARRAYOID, FLOAT8OID, TEXTARRAYOID, FLOAT8ARRAYOID};
	double		beta = beta_arg(fcinfo, 2);
	CascadeSelector *sel;
	double	   *raw;
	int			k;
	CascadeArm **order = cascade_ordered(fcinfo, beta, &sel, &raw, &k);
	Datum	   *names = palloc(sizeof(Datum) * k);
	double	   *indices = palloc(sizeof(double) * k);
	Datum		args[5];
	Datum		values[3];
	bool		nulls[3] = {false};
	TupleDesc	tupdesc;

	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "cascade_route() must return a composite type");
	for (int i = 0; i < k; i++)
	{
		names[i] = CStringGetTextDatum(order[i]->name);
		indices[i] = order[i]->index;
	}
	args[0] = Int32GetDatum(sel->cfg.selector_id);
	args[1] = PointerGetDatum(float8_array(raw, NULL, sel->cfg.dim));
	args[2] = Float8GetDatum(beta);
	args[3] = values[1] = PointerGetDatum(construct_array(names, k, TEXTOID, -1, false, TYPALIGN_INT));
	args[4] = values[2] = PointerGetDatum(float8_array(indices, NULL, k));
	/* as the extension owner: clients need no right on cascade_decisions */
	values[0] = Int64GetDatum(insert_returning_id_as_owner(&plan,
														   "INSERT INTO model_select.cascade_decisions(selector_id, context, beta, arms, indices)"
														   " VALUES ($1, $2, $3, $4, $5) RETURNING cascade_id",
														   5, types, args, NULL, "log the cascade"));
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(BlessTupleDesc(tupdesc), values, nulls)));
}
