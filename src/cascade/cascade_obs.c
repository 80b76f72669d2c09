/*
 * cascade_obs.c — model_select.cascade_observations: the BEFORE INSERT row
 * trigger that resolves and validates an observation, the AFTER INSERT
 * statement trigger that folds a statement's observations into each arm's
 * cascade_state (one rank-1 update of the design factor per observation,
 * a refit of rho when cascade_refit_due() says so, one write per arm, arms
 * locked in arm_id order), and cascade_refit().
 */
#include "postgres.h"

#include <math.h>

#include "access/htup_details.h"
#include "catalog/pg_type.h"
#include "commands/trigger.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/memutils.h"
#include "utils/rel.h"

#include "cascade/cascade.h"
#include "model/catalog.h"
#include "model/log_table.h"
#include "model/context.h"
#include "model/reward_value.h"
#include "pg/owner.h"
#include "model/privilege.h"
#include "model/tags.h"
#include "math/linalg.h"
#include "pg/float_text.h"

PG_FUNCTION_INFO_V1(model_select_cascade_resolve);
PG_FUNCTION_INFO_V1(model_select_cascade_apply);
PG_FUNCTION_INFO_V1(model_select_cascade_refit);

/* ---------------------------------------------------------------- */
/* cascade_observations: BEFORE INSERT FOR EACH ROW                  */
/* ---------------------------------------------------------------- */

/* The LogTarget columns first, in their order (log_row_complete). */
typedef struct ObsColumns
{
	int			selector;
	int			arm;
	int			context;
	int			selector_id;
	int			arm_id;
	int			cascade_id;
	int			value;
	int			cost;
} ObsColumns;

static const char *const obs_column_names[] = {
	"selector", "arm", "context", "selector_id", "arm_id", "cascade_id", "value", "cost"
};

/* The columns of from_cascade()'s query. */
enum
{
	FROM_CASCADE_NAME = 1,
	FROM_CASCADE_CONTEXT,
	FROM_CASCADE_SELECTOR_ID,
	FROM_CASCADE_OWNER,
	FROM_CASCADE_GRANTEES
};

/* The selector name and context of a logged cascade; selector/context given must match. */
static Datum
from_cascade(int64 cascade_id, char **selector, bool context_given, Datum context)
{
	static SPIPlanPtr plan = NULL;
	Oid			types[2] = {INT8OID, TEXTARRAYOID};
	Datum		args[2] = {Int64GetDatum(cascade_id), selector_privilege_names(SELECTOR_REWARD)};
	char	   *what = psprintf("cascade " INT64_FORMAT, cascade_id);
	HeapTuple	row;
	char	   *name;
	Datum		logged;

	row = spi_fetch_one(spi_plan(&plan,
								 "SELECT s.name, d.context, d.selector_id, s.owner, "
								 SELECTOR_GRANTEES_COLUMN("s", "$2")
								 " FROM model_select.cascade_decisions d"
								 " JOIN model_select.selectors s USING (selector_id) WHERE d.cascade_id = $1",
								 2, types), args, true, what, NULL);
	/* before anything about the cascade, not even its selector's name, shows in an error */
	selector_check_privilege_of(spi_int32(row, SPI_tuptable->tupdesc, FROM_CASCADE_SELECTOR_ID), what,
								SELECTOR_REWARD,
								DatumGetObjectId(spi_datum(row, SPI_tuptable->tupdesc, FROM_CASCADE_OWNER)),
								spi_datum(row, SPI_tuptable->tupdesc, FROM_CASCADE_GRANTEES));
	name = spi_text(row, SPI_tuptable->tupdesc, FROM_CASCADE_NAME);
	logged = spi_datum(row, SPI_tuptable->tupdesc, FROM_CASCADE_CONTEXT);
	if (*selector != NULL && strcmp(*selector, name) != 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("cascade " INT64_FORMAT " belongs to selector \"%s\", not \"%s\"",
						cascade_id, name, *selector)));
	/* a context equal to the logged one is accepted: pg_dump's rows have it */
	if (context_given)
	{
		int			na,
					nb;
		double	   *xa = float_array(DatumGetArrayTypeP(context), &na, "context", NULL);
		double	   *xb = float_array(DatumGetArrayTypeP(logged), &nb, "context", NULL);

		if (na != nb || memcmp(xa, xb, sizeof(double) * na) != 0)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("an observation of a cascade takes its context from the cascade"),
					 errhint("Leave context NULL when cascade_id is given.")));
	}
	*selector = name;
	return logged;
}

/* selector_id and arm_id of the row's arm, by names: active, or it was when the row was logged. */
static void
resolve_arm(HeapTuple tuple, TupleDesc desc, const ObsColumns *c, const char *selector, const char *arm,
			int32 *selector_id, int32 *arm_id)
{
	bool		active;
	TimestampTz retired_at;

	arm_lookup(selector, arm, SELECTOR_REWARD, selector_id, arm_id, &active, &retired_at);
	if (!active && !log_row_predates_retirement(tuple, desc, c->arm_id, retired_at))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("arm \"%s\" of selector \"%s\" is retired", arm, selector),
				 errhint("Re-activate it with model_select.add_arm().")));
}

/* value within [reward_min, reward_max], cost finite and >= 0, neither NULL */
static void
check_value_cost(const SelectorConfig *cfg, HeapTuple tuple, TupleDesc desc, const ObsColumns *c)
{
	bool		value_null,
				cost_null;
	double		value = DatumGetFloat8(SPI_getbinval(tuple, desc, c->value, &value_null));
	double		cost = DatumGetFloat8(SPI_getbinval(tuple, desc, c->cost, &cost_null));

	if (value_null || cost_null)
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("an observation needs a value and a cost")));
	check_reward(cfg, "value", value);
	check_cost(cost);
}

/* As the extension owner, for a caller with the reward right: the row completed. */
static HeapTuple
resolve_observation(TriggerData *td)
{
	int			spi_level;
	HeapTuple	tuple;
	TupleDesc	desc;
	ObsColumns	c;
	SelectorConfig cfg;
	char	   *selector,
			   *arm;
	bool		cid_null,
				ctx_null;
	Datum		cid,
				context;
	LogTarget	target;
	int32		selector_id,
				arm_id;

	tuple = td->tg_trigtuple;
	desc = RelationGetDescr(td->tg_relation);
	LOG_COLUMNS(desc, obs_column_names, &c);
	selector = spi_text_column(tuple, desc, c.selector);
	arm = spi_text_column(tuple, desc, c.arm);
	cid = SPI_getbinval(tuple, desc, c.cascade_id, &cid_null);
	context = SPI_getbinval(tuple, desc, c.context, &ctx_null);

	spi_level = spi_connect();
	if (!cid_null)
		context = from_cascade(DatumGetInt64(cid), &selector, !ctx_null, context);
	else if (selector == NULL || ctx_null)
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("an observation needs either cascade_id or both selector and context")));
	if (arm == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("an observation needs the arm that was queried")));
	resolve_arm(tuple, desc, &c, selector, arm, &selector_id, &arm_id);
	/* as a reward insert: alter_selector() waits for us, later inserts for it */
	config_load_for_reward(selector_id, selector, &cfg);
	/* cascades read the embedding alone */
	cfg = config_untagged(&cfg);
	check_value_cost(&cfg, tuple, desc, &c);

	/* the context validated, stored as float8[] */
	target.selector = selector;
	target.arm = arm;
	target.context = PointerGetDatum(float8_array(context_from_array(DatumGetArrayTypeP(context), cfg.dim),
												  NULL, cfg.dim));
	target.selector_id = selector_id;
	target.arm_id = arm_id;
	tuple = log_row_complete(tuple, desc, (const int *) &c, &target, 0, NULL, NULL);
	spi_finish(spi_level);
	return tuple;
}

Datum
model_select_cascade_resolve(PG_FUNCTION_ARGS)
{
	return log_row_resolve(fcinfo, resolve_observation);
}

/* ---------------------------------------------------------------- */
/* Learning: AFTER INSERT FOR EACH STATEMENT, and cascade_refit()    */
/* ---------------------------------------------------------------- */

/*
 * Every observation of an arm, in log order, as the fit uses it.  Not
 * read-only: the AFTER trigger must see its own statement's rows.
 */
/* The columns of samples_load()'s query. */
enum
{
	SAMPLE_CONTEXT = 1,
	SAMPLE_VALUE,
	SAMPLE_COST
};

static CascadeSamples *
samples_load(const SelectorConfig *cfg, int32 arm_id, int m)
{
	static SPIPlanPtr plan = NULL;
	Oid			types[1] = {INT4OID};
	Datum		args[1] = {Int32GetDatum(arm_id)};
	CascadeSamples *s = palloc0(sizeof(CascadeSamples));
	double		lo = cfg->reward_min,
				R = cascade_range(cfg);

	spi_execute(spi_plan(&plan,
						 "SELECT context, value, cost FROM model_select.cascade_observations"
						 " WHERE arm_id = $1 ORDER BY obs_id",
						 1, types), args, NULL, false, 0, SPI_OK_SELECT,
				"read the cascade observations of arm %d", arm_id);
	if ((double) (SPI_processed + 1) * m * sizeof(double) >= (double) MaxAllocSize)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("arm %d has too many cascade observations to fit in memory (%lu of %d features)",
						arm_id, (unsigned long) SPI_processed, m)));
	s->n = (int) SPI_processed;
	s->m = m;
	s->psi = palloc(sizeof(double) * (Size) Max(s->n, 1) * m);
	s->mu = palloc(sizeof(double) * Max(s->n, 1));
	s->c = palloc(sizeof(double) * Max(s->n, 1));
	for (int i = 0; i < s->n; i++)
	{
		HeapTuple	row = SPI_tuptable->vals[i];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		double	   *x = context_from_array(DatumGetArrayTypeP(spi_datum(row, desc, SAMPLE_CONTEXT)), cfg->dim);
		double		v = spi_float8(row, desc, SAMPLE_VALUE);

		/* a log checked under other settings may hold what these refuse */
		if (!(v >= lo && v <= cfg->reward_max))
			ereport(ERROR,
					(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
					 errmsg("the cascade observations hold value %s, outside the selector's range [%s, %s]",
							exact_text(v), exact_text(lo), exact_text(cfg->reward_max)),
					 errhint("Keep reward_min and reward_max around every observed value.")));
		cascade_psi(cfg, x, s->psi + (Size) i * m);
		s->mu[i] = Max(0.0, Min(1.0, (v - lo) / R));
		s->c[i] = spi_float8(row, desc, SAMPLE_COST) / R;
		pfree(x);
	}
	return s;
}

/* The columns of state_lock()'s row. */
enum
{
	STATE_N = 1,
	STATE_FIT_N,
	STATE_RHO,
	STATE_DESIGN
};

/*
 * Lock an arm's cascade_state row (creating it if missing): n, fit_n, rho,
 * design, left in SPI_tuptable.
 */
static HeapTuple
state_lock(int32 arm_id, int32 selector_id)
{
	static SPIPlanPtr lock_plan = NULL;
	static SPIPlanPtr create_plan = NULL;
	Oid			types[2] = {INT4OID, INT4OID};
	Datum		args[2] = {Int32GetDatum(arm_id), Int32GetDatum(selector_id)};

	if (spi_execute(spi_plan(&lock_plan,
							 "SELECT n, fit_n, rho, design FROM model_select.cascade_state"
							 " WHERE arm_id = $1 FOR UPDATE",
							 1, types), args, NULL, false, 1, SPI_OK_SELECT,
					"lock the cascade state of arm %d", arm_id) == 0)
	{
		spi_execute(spi_plan(&create_plan,
							 "INSERT INTO model_select.cascade_state(arm_id, selector_id) VALUES ($1, $2)"
							 " ON CONFLICT (arm_id) DO NOTHING",
							 2, types), args, NULL, false, 0, SPI_OK_INSERT,
					"create the cascade state of arm %d", arm_id);
		if (spi_execute(lock_plan, args, NULL, false, 1, SPI_OK_SELECT,
						"lock the cascade state of arm %d", arm_id) != 1)
			elog(ERROR, "could not create the cascade state of arm %d", arm_id);
	}
	return SPI_tuptable->vals[0];
}

/*
 * Lock an arm's state and decode it (XX001 if damaged).  Returns whether it
 * matches m features (an empty state does).
 */
static bool
state_lock_read(int32 arm_id, int32 selector_id, int m, CascadeState *st)
{
	HeapTuple	row = state_lock(arm_id, selector_id);
	TupleDesc	desc = SPI_tuptable->tupdesc;
	bool		rho_null,
				design_null;
	Datum		rho = SPI_getbinval(row, desc, STATE_RHO, &rho_null);
	Datum		design = SPI_getbinval(row, desc, STATE_DESIGN, &design_null);

	st->arm_id = arm_id;
	st->n = spi_int64(row, desc, STATE_N);
	st->fit_n = spi_int64(row, desc, STATE_FIT_N);
	cascade_state_decode(st, m, rho_null, rho, design_null, design);
	return st->m == m;
}

static void
state_write(int32 arm_id, const CascadeState *st)
{
	static SPIPlanPtr plan = NULL;
	Oid			types[5] = {INT4OID, INT8OID, INT8OID, FLOAT8ARRAYOID, BYTEAOID};
	Datum		args[5] = {0};
	char		nulls[5] = {' ', ' ', ' ', ' ', ' '};

	args[0] = Int32GetDatum(arm_id);
	args[1] = Int64GetDatum(st->n);
	args[2] = Int64GetDatum(st->fit_n);
	if (st->rho == NULL)
		nulls[3] = nulls[4] = 'n';
	else
	{
		Size		bytes = sizeof(double) * PACKED_SIZE(st->m);
		bytea	   *design = palloc(VARHDRSZ + bytes);

		SET_VARSIZE(design, VARHDRSZ + bytes);
		memcpy(VARDATA(design), st->L, bytes);
		args[3] = PointerGetDatum(float8_array(st->rho, NULL, st->m));
		args[4] = PointerGetDatum(design);
	}
	spi_execute(spi_plan(&plan,
						 "UPDATE model_select.cascade_state SET n = $2, fit_n = $3, rho = $4,"
						 " design = $5, version = version + 1, updated_at = now()"
						 " WHERE arm_id = $1",
						 5, types), args, nulls, false, 1, SPI_OK_UPDATE,
				"update the cascade state of arm %d", arm_id);
}

static void
state_mismatch(int32 arm_id, int stored, int m)
{
	ereport(ERROR,
			(errcode(ERRCODE_DATA_CORRUPTED),
			 errmsg("cascade state of arm %d has %d features, its selector now has %d", arm_id, stored, m),
			 errhint("Run model_select.cascade_refit() after changing the selector's settings.")));
}

/* An empty state for m features: V = eta1·I, rho = 0. */
static void
state_init(CascadeState *st, int m)
{
	st->m = m;
	st->rho = palloc0(sizeof(double) * m);
	st->L = palloc0(sizeof(double) * PACKED_SIZE(m));
	for (int j = 0; j < m; j++)
		st->L[PACKED_ROW(j) + j] = sqrt(CASCADE_DESIGN_RIDGE);
}

/* The statement's observations, arm by arm (arm_id first: for_each_arm_of_statement()). */
#define NEW_OBSERVATIONS_QUERY \
	"SELECT arm_id, selector_id, context FROM new_observations ORDER BY arm_id, obs_id"
enum
{
	NEW_OBS_ARM_ID = STATEMENT_ARM_ID_COLUMN,
	NEW_OBS_SELECTOR_ID,
	NEW_OBS_CONTEXT
};

/* Fold rows [first, last) of NEW_OBSERVATIONS_QUERY (one arm) into its state. */
static void
apply_arm(SPITupleTable *tt, uint64 first, uint64 last, SelectorConfig *cfg)
{
	bool		isnull;
	int32		arm_id = DatumGetInt32(SPI_getbinval(tt->vals[first], tt->tupdesc, NEW_OBS_ARM_ID, &isnull));
	int32		selector_id = DatumGetInt32(SPI_getbinval(tt->vals[first], tt->tupdesc, NEW_OBS_SELECTOR_ID, &isnull));
	CascadeState st;
	int			m;
	double	   *psi;

	/*
	 * Not under the statement's snapshot: a settings change committed
	 * before the BEFORE trigger took the settings lock would be missing, and
	 * the state locked below already refit under it.
	 */
	if (cfg->selector_id != selector_id)
	{
		config_load_for_reward(selector_id, NULL, cfg);
		/* cascades read the embedding alone */
		*cfg = config_untagged(cfg);
	}
	m = cascade_psi_dim(cfg);
	if (!state_lock_read(arm_id, selector_id, m, &st))
		state_mismatch(arm_id, st.m, m);
	if (st.rho == NULL)
		state_init(&st, m);
	psi = palloc(sizeof(double) * m);
	for (uint64 i = first; i < last; i++)
	{
		double	   *x = context_from_array(DatumGetArrayTypeP(SPI_getbinval(tt->vals[i], tt->tupdesc,
																		NEW_OBS_CONTEXT, &isnull)),
										   cfg->dim);

		cascade_psi(cfg, x, psi);
		chol_rank1_update(m, st.L, psi);
		st.n++;
		pfree(x);
	}
	if (cascade_refit_due(st.n, st.fit_n))
	{
		cascade_fit(samples_load(cfg, arm_id, m), st.rho);
		st.fit_n = st.n;
	}
	state_write(arm_id, &st);
}

/* for_each_arm_of_statement() callback, in a short-lived memory context. */
static void
apply_arm_rows(SPITupleTable *tt, uint64 first, uint64 last, void *arg)
{
	MemoryContext work = AllocSetContextCreate(CurrentMemoryContext, "model_select cascade",
											   ALLOCSET_DEFAULT_SIZES);
	MemoryContext old = MemoryContextSwitchTo(work);

	apply_arm(tt, first, last, (SelectorConfig *) arg);
	MemoryContextSwitchTo(old);
	MemoryContextDelete(work);
}

/* The statement's observations, as the extension owner: clients need no right on cascade_state. */
static void
apply_statement(void *arg)
{
	int			spi_level;
	SelectorConfig cfg = {0};

	cfg.selector_id = -1;
	spi_level = spi_connect();
	for_each_arm_of_statement((FunctionCallInfo) arg, NEW_OBSERVATIONS_QUERY, apply_arm_rows, &cfg);
	spi_finish(spi_level);
}

Datum
model_select_cascade_apply(PG_FUNCTION_ARGS)
{
	run_as_extension_owner(apply_statement, fcinfo);
	return PointerGetDatum(NULL);
}

/*
 * Refit one arm from all its observations; returns their number.  The
 * stored state is only locked, its rho a warm start when usable: a damaged
 * state is repaired, not refused.
 */
static int64
refit_arm(const SelectorConfig *cfg, int32 arm_id, bool from_scratch)
{
	int			m = cascade_psi_dim(cfg);
	HeapTuple	row = state_lock(arm_id, cfg->selector_id);
	bool		rho_null;
	Datum		rho = SPI_getbinval(row, SPI_tuptable->tupdesc, STATE_RHO, &rho_null);
	int			k = 0;
	double	   *start = rho_null || from_scratch ? NULL : cascade_rho_decode(rho, &k);
	CascadeState st = {.arm_id = arm_id};
	CascadeSamples *s = samples_load(cfg, arm_id, m);

	if (s->n == 0)
	{
		st.rho = st.L = NULL;
		state_write(arm_id, &st);
		return 0;
	}
	state_init(&st, m);
	if (start != NULL && k == m)
		memcpy(st.rho, start, sizeof(double) * m);
	gram_packed(s->n, m, s->psi, CASCADE_DESIGN_RIDGE, true, st.L);
	cascade_fit(s, st.rho);
	st.n = st.fit_n = s->n;
	state_write(arm_id, &st);
	return s->n;
}

typedef struct RefitCall
{
	const char *name;
	bool		from_scratch;
	int64		total;
} RefitCall;

/* As the extension owner, for a caller with the admin right: refit every arm. */
static void
refit_selector(void *arg)
{
	int			spi_level;
	static SPIPlanPtr arms_plan = NULL;
	RefitCall  *call = arg;
	Oid			int_type[1] = {INT4OID};
	Datum		args[1];
	SelectorConfig cfg;
	int			narms;
	int32	   *arm_ids;
	int32		selector_id;

	spi_level = spi_connect();
	selector_id = selector_id_by_name(call->name);
	selector_check_privilege(selector_id, call->name, SELECTOR_ADMIN);
	/* under the settings lock, as an observation insert: the states it locks are refit under these */
	config_load_for_reward(selector_id, call->name, &cfg);
	/* cascades read the embedding alone */
	cfg = config_untagged(&cfg);
	args[0] = Int32GetDatum(cfg.selector_id);
	narms = (int) spi_execute(spi_plan(&arms_plan,
									   "SELECT arm_id FROM model_select.arms WHERE selector_id = $1 ORDER BY arm_id",
									   1, int_type), args, NULL, true, 0, SPI_OK_SELECT,
							  "read the arms of selector %d", cfg.selector_id);
	arm_ids = palloc(sizeof(int32) * Max(narms, 1));
	for (int i = 0; i < narms; i++)
		arm_ids[i] = spi_int32(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, SPI_SOLE_COLUMN);
	for (int i = 0; i < narms; i++)
	{
		MemoryContext work = AllocSetContextCreate(CurrentMemoryContext, "model_select cascade refit",
												   ALLOCSET_DEFAULT_SIZES);
		MemoryContext old = MemoryContextSwitchTo(work);

		call->total += refit_arm(&cfg, arm_ids[i], call->from_scratch);
		MemoryContextSwitchTo(old);
		MemoryContextDelete(work);
	}
	spi_finish(spi_level);
}

/* SQL: cascade_refit(selector, from_scratch) → observations refit. */
Datum
model_select_cascade_refit(PG_FUNCTION_ARGS)
{
	RefitCall	call = {text_to_cstring(PG_GETARG_TEXT_PP(0)), PG_GETARG_BOOL(1), 0};

	run_as_extension_owner(refit_selector, &call);
	PG_RETURN_INT64(call.total);
}
