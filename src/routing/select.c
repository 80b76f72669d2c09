/*
 * select.c — SQL entry points that score arms: select_model(), route() and
 * scores().  The decision rule itself is in decide.c.
 */
#include "postgres.h"

#include <math.h>

#include "access/htup_details.h"
#include "access/xact.h"
#include "access/xlog.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "funcapi.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/memutils.h"
#include "utils/xid8.h"

#include "model/catalog.h"
#include "model/codebook.h"
#include "model/selector_lock.h"
#include "model/context.h"
#include "model/tags.h"
#include "pg/owner.h"
#include "pg/snapshot_key.h"
#include "model/clock_ops.h"
#include "routing/decide.h"
#include "routing/model_cache.h"

PG_FUNCTION_INFO_V1(model_select_select_model);
PG_FUNCTION_INFO_V1(model_select_route);
PG_FUNCTION_INFO_V1(model_select_scores);

/*
 * The backend's last load of each recently used selector, reused while the
 * caller's snapshot sees exactly the same rows (snapshot_key.h), so that a
 * call with nothing new reads no table at all.  The same rows also mean the
 * same grants, owner and role memberships (catalog changes end transactions
 * too), so the privilege check of the load holds for the same user.  A load
 * points to models of the model cache, which may evict them:
 * selector_models_current() checks that they are still there.
 */
#define LOADED_SELECTORS 8

typedef struct LoadedSelector
{
	MemoryContext cxt;			/* everything below; NULL: slot unused */
	char	   *name;			/* NULL: nothing loaded */
	Oid			user;			/* whose route right the load checked */
	SnapshotKey key;
	double		now;			/* its clock's now when loaded (ClockOps.now) */
	Selector   *sel;
	uint64		last_used;
} LoadedSelector;

static LoadedSelector loaded[LOADED_SELECTORS];
static uint64 loaded_clock = 0;

/* The slot of name (found) or the one to load it into (least recently used). */
static LoadedSelector *
loaded_slot(const char *name, bool *found)
{
	LoadedSelector *victim = &loaded[0];

	for (int i = 0; i < LOADED_SELECTORS; i++)
	{
		if (loaded[i].name != NULL && strcmp(loaded[i].name, name) == 0)
		{
			*found = true;
			return &loaded[i];
		}
		if (loaded[i].cxt == NULL || loaded[i].last_used < victim->last_used)
			victim = &loaded[i];
	}
	*found = false;
	return victim;
}

/* The selector `name` as the caller's snapshot sees it, loaded or reused. */
static Selector *
selector_for_call(const char *name)
{
	Snapshot	snap = snapshot_key_current();
	bool		found;
	LoadedSelector *slot = loaded_slot(name, &found);
	MemoryContext old;

	slot->last_used = ++loaded_clock;
	/* a time-clocked model also depends on a now the snapshot does not give */
	if (found && slot->sel != NULL && slot->user == calling_user() &&
		snapshot_key_matches(&slot->key, snap) &&
		slot->now == clock_ops(slot->sel->cfg.clock)->now() &&
		selector_models_current(slot->sel))
	{
		/* the codebook's centroids as renewed for this transaction (codebook.c) */
		slot->sel->cfg.centroids = codebook_centroids(&slot->sel->cfg);
		return slot->sel;
	}
	if (slot->cxt == NULL)
		slot->cxt = AllocSetContextCreate(CacheMemoryContext, "model_select loaded selector",
										  ALLOCSET_SMALL_SIZES);
	else
		MemoryContextReset(slot->cxt);
	slot->sel = NULL;
	slot->name = NULL;
	/* an error leaves the slot without a selector (error recovery resets the context) */
	old = MemoryContextSwitchTo(slot->cxt);
	slot->name = pstrdup(name);
	slot->user = calling_user();
	snapshot_key_remember(&slot->key, snap, slot->cxt);
	slot->sel = selector_load(name);
	slot->now = clock_ops(slot->sel->cfg.clock)->now();
	MemoryContextSwitchTo(old);
	return slot->sel;
}

/* The tags argument (argument 2: NULL for none), checked (model/tags.c). */
static ArrayType *
tags_arg(FunctionCallInfo fcinfo)
{
	return PG_NARGS() > 2 && !PG_ARGISNULL(2) ? tags_checked(PG_GETARG_ARRAYTYPE_P(2)) : NULL;
}

/*
 * The context (argument 1) with the tags as the policies read it (model/tags.c),
 * validated; the selector and the context must not be NULL (the functions
 * are not STRICT, for tags may be).
 */
static double *
context_arg(FunctionCallInfo fcinfo, const Selector *sel)
{
	return context_read(&sel->cfg, PG_GETARG_ARRAYTYPE_P(1), tags_arg(fcinfo));
}

/* Validate the context and tags arguments and decide; raw_out gets them as read. */
static int
decide_arg(FunctionCallInfo fcinfo, const Selector *sel, ArmScore *scores, double **raw_out)
{
	double	   *raw = context_arg(fcinfo, sel);

	if (raw_out)
		*raw_out = raw;
	return decide(sel, raw, scores);
}

Datum
model_select_select_model(PG_FUNCTION_ARGS)
{
	Selector   *sel;
	ArmScore   *scores;
	int			chosen;

	if (PG_ARGISNULL(0) || PG_ARGISNULL(1))
		PG_RETURN_NULL();
	sel = selector_for_call(text_to_cstring(PG_GETARG_TEXT_PP(0)));
	scores = palloc(sizeof(ArmScore) * Max(sel->narms, 1));
	chosen = decide_arg(fcinfo, sel, scores, NULL);
	PG_RETURN_TEXT_P(cstring_to_text(sel->arms[chosen].name));
}

/*
 * Logging a decision writes: refuse early, with a hint, where that cannot
 * work (a hot standby, a read-only transaction), rather than fail inside.
 */
void
check_decisions_writable(const char *function)
{
	if (RecoveryInProgress() || XactReadOnly)
		ereport(ERROR,
				(errcode(ERRCODE_READ_ONLY_SQL_TRANSACTION),
				 errmsg("%s logs decisions and cannot run in a read-only transaction%s", function,
						RecoveryInProgress() ? " on a standby" : ""),
				 errhint("Send route(), route_batch(log => true) and reward inserts to the primary; "
						 "select_model(), scores() and route_batch() without log run anywhere.")));
}

/*
 * What a decision scored with, as its row records it (args and nulls from
 * `at` on): under the learner's rule each arm's version (the rows of its
 * log's prefix, in arm order) and, when it folded rows of its own
 * transaction, that transaction and the last of those rows' seq; else
 * NULLs (the exact fold of its snapshot).
 */
void
decision_version_args(const Selector *sel, Datum *args, char *nulls, int at)
{
	Datum	   *n = palloc(sizeof(Datum) * Max(sel->narms, 1));

	nulls[at] = nulls[at + 1] = nulls[at + 2] = 'n';
	if (!sel->versioned)
		return;
	for (int i = 0; i < sel->narms; i++)
		n[i] = Int64GetDatum(sel->arms[i].prefix_n);
	args[at] = PointerGetDatum(construct_array(n, sel->narms, INT8OID, 8, FLOAT8PASSBYVAL,
											   TYPALIGN_DOUBLE));
	nulls[at] = ' ';
	if (sel->own_seq > 0)
	{
		args[at + 1] = FullTransactionIdGetDatum(GetTopFullTransactionId());
		args[at + 2] = Int64GetDatum(sel->own_seq);
		nulls[at + 1] = nulls[at + 2] = ' ';
	}
}

Datum
model_select_route(PG_FUNCTION_ARGS)
{
	static SPIPlanPtr plan = NULL;
	Oid			types[13] = {INT4OID, INT4OID, FLOAT8ARRAYOID, FLOAT8OID, FLOAT8OID, FLOAT8OID,
	FLOAT4ARRAYOID, INT8ARRAYOID, XID8OID, INT8OID, TEXTARRAYOID, FLOAT8ARRAYOID, FLOAT8OID};
	Selector   *sel;
	ArmScore   *scores;
	double	   *raw;
	int			chosen;
	int			e;
	Datum		args[13] = {0};
	char		arg_nulls[14] = "             ";
	double		expected_cost = 0.0;
	TupleDesc	tupdesc;
	Datum		values[3];
	bool		nulls[3] = {false, false, false};

	if (PG_ARGISNULL(0) || PG_ARGISNULL(1))
		PG_RETURN_NULL();
	check_decisions_writable("route()");
	sel = selector_for_call(text_to_cstring(PG_GETARG_TEXT_PP(0)));
	scores = palloc(sizeof(ArmScore) * Max(sel->narms, 1));
	chosen = decide_arg(fcinfo, sel, scores, &raw);
	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "route() must return a composite type");

	args[0] = Int32GetDatum(sel->cfg.selector_id);
	args[1] = Int32GetDatum(sel->arms[chosen].arm_id);
	/* the embedding once, compactly: real[] when it has no more precision */
	e = sel->cfg.embed_dim;
	if (context_is_real(raw, e))
	{
		args[6] = PointerGetDatum(float4_array(raw, e));
		arg_nulls[2] = 'n';
	}
	else
	{
		args[2] = PointerGetDatum(float8_array(raw, NULL, e));
		arg_nulls[6] = 'n';
	}
	/* and the tags as given (checked), once */
	args[10] = PointerGetDatum(tags_arg(fcinfo));
	if (args[10] == (Datum) 0)
		arg_nulls[10] = 'n';
	args[3] = Float8GetDatum(scores[chosen].ucb);
	args[4] = Float8GetDatum(scores[chosen].mean);
	args[5] = Float8GetDatum(pacer_lambda(sel));
	decision_version_args(sel, args, arg_nulls, 7);
	awaited_arg(sel, args, arg_nulls, 11);
	if (pacer_expected_cost(sel, scores, chosen, &expected_cost))
		args[12] = Float8GetDatum(expected_cost);
	else
		arg_nulls[12] = 'n';
	/* before the insert: its triggers may load selectors anew */
	values[1] = CStringGetTextDatum(sel->arms[chosen].name);
	values[2] = Float8GetDatum(scores[chosen].ucb);
	selector_write_lock(sel->cfg.selector_id, sel->name);
	/* as the extension owner: clients need no right on decisions */
	values[0] = Int64GetDatum(insert_returning_id_as_owner(&plan,
														   "INSERT INTO model_select.decisions(selector_id, arm_id, context, score, mean,"
														   " cost_weight, context_real, versions, own_tx, own_seq, tags, awaited, expected_cost)"
														   " VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13) RETURNING decision_id",
														   13, types, args, arg_nulls, "log the decision"));
	pacer_logged(sel, chosen, DatumGetInt64(values[0]), DatumGetFloat8(args[5]),
				 arg_nulls[12] == 'n' ? NULL : &expected_cost);
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(BlessTupleDesc(tupdesc), values, nulls)));
}

/*
 * scores()'s rows for sel's arms (and decision_scores()'s): name, active, n,
 * mean, width, ucb, the radius and ridge of the bound, and with a budget the
 * cost the arm was priced at.
 */
void
scores_rows(FunctionCallInfo fcinfo, const Selector *sel, const ArmScore *scores)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;

	InitMaterializedSRF(fcinfo, 0);
	for (int i = 0; i < sel->narms; i++)
	{
		Datum		values[9];
		bool		nulls[9] = {false};
		double		cost = 0.0;

		values[0] = CStringGetTextDatum(sel->arms[i].name);
		values[1] = BoolGetDatum(sel->arms[i].active);
		values[2] = Int64GetDatum(sel->arms[i].n);
		values[3] = Float8GetDatum(scores[i].mean);
		values[4] = Float8GetDatum(scores[i].width);
		values[5] = Float8GetDatum(scores[i].ucb);
		/* the radius and regulariser of the bound, where there is one */
		values[6] = Float8GetDatum(scores[i].radius);
		values[7] = Float8GetDatum(scores[i].alpha);
		nulls[6] = nulls[7] = isnan(scores[i].alpha);
		nulls[8] = !pacer_price(sel, &scores[i], i, &cost);
		values[8] = Float8GetDatum(cost);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
}

Datum
model_select_scores(PG_FUNCTION_ARGS)
{
	Selector   *sel;
	ArmScore   *scores;

	/* NULL selector or context: no rows (a set, empty, not a NULL datum) */
	if (PG_ARGISNULL(0) || PG_ARGISNULL(1))
	{
		InitMaterializedSRF(fcinfo, 0);
		return (Datum) 0;
	}
	sel = selector_for_call(text_to_cstring(PG_GETARG_TEXT_PP(0)));
	scores = palloc(sizeof(ArmScore) * Max(sel->narms, 1));
	score_arms(sel, context_arg(fcinfo, sel), scores);
	scores_rows(fcinfo, sel, scores);
	return (Datum) 0;
}
