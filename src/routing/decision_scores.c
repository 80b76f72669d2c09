/*
 * decision_scores.c — a past decision's scores re-derived from the log.
 *
 * Under the learner's rule (arm_cache.h, LoadMode) a decision scores, for
 * each arm, a version (a prefix of the arm's log in canonical order) plus
 * the rows its own transaction had logged, and records both in its row:
 * decisions.versions (each arm's prefix, in rewards, in arm order), own_tx
 * and own_seq.  decision_scores(decision_id) folds exactly those rows from
 * the arm's base (what retention absorbed) and scores the decision's
 * context with them: the same bits as the decision, while the prefix is
 * still retained and the selector's settings are those it was made under.
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "funcapi.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/memutils.h"
#include "utils/xid8.h"

#include "learning/arm_base.h"
#include "learning/fold.h"
#include "model/catalog.h"
#include "model/clock_ops.h"
#include "model/context.h"
#include "model/tags.h"
#include "pg/owner.h"
#include "pg/spi_util.h"
#include "routing/decide.h"
#include "routing/model_cache.h"

PG_FUNCTION_INFO_V1(model_select_decision_scores);

/* A decision's row as read (decision_read), in the caller's memory. */
typedef struct DecisionCall
{
	int64		decision_id;
	MemoryContext caller;
	char	   *selector;
	ArrayType  *context;		/* float8[] */
	ArrayType  *tags;			/* text[], NULL: none */
	ArrayType  *awaited;		/* float8[] (count_pending), NULL: none */
	ArrayType  *versions;		/* int8[], NULL: none recorded */
	FullTransactionId own_tx;	/* invalid: no rows of its own */
	int64		own_seq;
	bool		has_lambda;		/* the cost weight it logged, if any */
	double		lambda;
	/* for decision_fold(): the loaded selector whose arms get the folds */
	Selector   *sel;
} DecisionCall;

enum
{
	DEC_SELECTOR = 1,
	DEC_CONTEXT,
	DEC_VERSIONS,
	DEC_OWN_TX,
	DEC_OWN_SEQ,
	DEC_COST_WEIGHT,
	DEC_TAGS,
	DEC_AWAITED
};

/* Read the decision's row (as the extension owner), copied into the caller's memory. */
static void
decision_read(void *arg)
{
	static SPIPlanPtr plan = NULL;
	DecisionCall *call = arg;
	Oid			types[1] = {INT8OID};
	Datum		args[1] = {Int64GetDatum(call->decision_id)};
	int			spi_level = spi_connect();
	HeapTuple	row;
	TupleDesc	desc;
	bool		isnull;
	Datum		versions;
	Datum		tags;
	Datum		awaited;
	Datum		own_tx;
	MemoryContext old;

	spi_execute(spi_plan(&plan,
						 "SELECT s.name, COALESCE(d.context, d.context_real::pg_catalog.float8[]),"
						 " d.versions, d.own_tx, d.own_seq, d.cost_weight, d.tags, d.awaited FROM model_select.decisions d"
						 " JOIN model_select.selectors s USING (selector_id) WHERE d.decision_id = $1",
						 1, types), args, NULL, true, 1, SPI_OK_SELECT, "read the decision");
	if (SPI_processed == 0)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("decision %lld does not exist", (long long) call->decision_id)));
	row = SPI_tuptable->vals[0];
	desc = SPI_tuptable->tupdesc;
	old = MemoryContextSwitchTo(call->caller);
	call->selector = TextDatumGetCString(SPI_getbinval(row, desc, DEC_SELECTOR, &isnull));
	call->context = DatumGetArrayTypePCopy(SPI_getbinval(row, desc, DEC_CONTEXT, &isnull));
	versions = SPI_getbinval(row, desc, DEC_VERSIONS, &isnull);
	call->versions = isnull ? NULL : DatumGetArrayTypePCopy(versions);
	tags = SPI_getbinval(row, desc, DEC_TAGS, &isnull);
	call->tags = isnull ? NULL : DatumGetArrayTypePCopy(tags);
	awaited = SPI_getbinval(row, desc, DEC_AWAITED, &isnull);
	call->awaited = isnull ? NULL : DatumGetArrayTypePCopy(awaited);
	MemoryContextSwitchTo(old);
	own_tx = SPI_getbinval(row, desc, DEC_OWN_TX, &isnull);
	call->own_tx = isnull ? InvalidFullTransactionId : DatumGetFullTransactionId(own_tx);
	call->own_seq = isnull ? 0 : DatumGetInt64(SPI_getbinval(row, desc, DEC_OWN_SEQ, &isnull));
	call->lambda = DatumGetFloat8(SPI_getbinval(row, desc, DEC_COST_WEIGHT, &call->has_lambda));
	call->has_lambda = !call->has_lambda;
	spi_finish(spi_level);
}

/*
 * Arm i of the loaded selector gets the fold of its first n rewards (from
 * its base) and the decision's own rows, decoded in the caller's memory.
 */
static void
arm_fold_prefix(DecisionCall *call, int i, int64 n)
{
	Selector   *sel = call->sel;
	ArmInfo    *arm = &sel->arms[i];
	const ClockOps *clock = clock_ops(sel->cfg.clock);
	StateFold	f;
	MemoryContext old = MemoryContextSwitchTo(call->caller);
	ClockKey	at;

	fold_begin_base(&f, &sel->cfg, arm->arm_id);
	if (n < f.totals.n)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("the rewards decision %lld scored arm \"%s\" with are no longer retained",
						(long long) call->decision_id, arm->name),
				 errdetail("It scored the arm's first %lld rewards; retention absorbed %lld.",
						   (long long) n, (long long) f.totals.n)));
	fold_prefix(&f, arm->arm_id, n, call->own_tx, call->own_seq);
	arm->n = f.totals.n;
	arm->cost_sum = f.totals.cost_sum;
	arm->cost_n = f.totals.cost_n;
	arm->spend_sum = f.totals.spend_sum;
	arm->spend_n = f.totals.spend_n;
	arm->prefix_n = n;
	/* a model of its own: no serial, so that share's kept priors are not used */
	arm->model = NULL;
	arm->model_serial = 0;
	/* (SPI left its own context current: the model goes in the caller's) */
	MemoryContextSwitchTo(call->caller);
	if (f.st != NULL && f.st->n > 0)
	{
		clock->key(&sel->cfg, f.st, clock->now(), &at);
		arm->model = clock->decode_at(&sel->cfg, f.st, &at);
	}
	MemoryContextSwitchTo(old);
}

/* Every arm the decision scored gets its fold (as the extension owner). */
static void
decision_fold(void *arg)
{
	DecisionCall *call = arg;
	int			spi_level = spi_connect();
	Datum	   *n;
	bool	   *nulls;
	int			narms;

	deconstruct_array(call->versions, INT8OID, 8, FLOAT8PASSBYVAL, TYPALIGN_DOUBLE, &n, &nulls,
					  &narms);
	if (narms > call->sel->narms)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("decision %lld scored %d arms, selector \"%s\" has %d",
						(long long) call->decision_id, narms, call->selector, call->sel->narms)));
	/* arms added since were not scored */
	call->sel->narms = narms;
	for (int i = 0; i < narms; i++)
		arm_fold_prefix(call, i, nulls[i] ? 0 : DatumGetInt64(n[i]));
	spi_finish(spi_level);
}

/*
 * SQL: decision_scores(decision_id) → the scores of every arm the decision
 * scored (the columns of scores()), re-derived from the versions and own
 * rows it recorded.  Needs the route right on its selector.
 */
Datum
model_select_decision_scores(PG_FUNCTION_ARGS)
{
	DecisionCall call = {.decision_id = PG_GETARG_INT64(0), .caller = CurrentMemoryContext};
	ArmScore   *scores;

	run_as_extension_owner(decision_read, &call);
	/* the caller's right on the selector (selector_load checks it) before any fold */
	call.sel = selector_load(call.selector);
	if (call.versions == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("decision %lld recorded no version", (long long) call.decision_id),
				 errdetail("It scored the exact fold of the log its snapshot saw: no learner published "
						   "versions of its selector then (docs/caches.md).")));
	run_as_extension_owner(decision_fold, &call);
	/*
	 * the pacer's λ counts the decisions then not rewarded yet, which the log
	 * no longer tells: the λ the decision logged is the one it scored with
	 */
	call.sel->lambda_logged = call.has_lambda;
	call.sel->lambda = call.lambda;
	/* nor which rewards it awaited (count_pending): those it logged */
	awaited_logged(call.sel, call.awaited);
	scores = palloc(sizeof(ArmScore) * Max(call.sel->narms, 1));
	score_arms(call.sel, context_read(&call.sel->cfg, call.context, call.tags), scores);
	scores_rows(fcinfo, call.sel, scores);
	return (Datum) 0;
}
