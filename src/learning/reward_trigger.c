/*
 * reward_trigger.c — rewards_resolve (BEFORE INSERT, per row) completes and
 * validates a reward row: either it references a decision (selector, arm and
 * context come from it) or it names selector, arm and context.  Learning
 * from the rows is apply.c's job.
 */
#include "postgres.h"

#include <math.h>

#include "access/htup_details.h"
#include "access/xact.h"
#include "catalog/pg_type.h"
#include "commands/trigger.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/timestamp.h"
#include "utils/xid8.h"

#include "model/catalog.h"
#include "model/selector_lock.h"
#include "pg/index_read.h"
#include "model/log_table.h"
#include "model/context.h"
#include "model/tags.h"
#include "model/reward_value.h"
#include "pg/owner.h"
#include "model/privilege.h"
#include "model/table_arms.h"
#include "model/table_decisions.h"
#include "model/table_selectors.h"
#include "pg/progress.h"
#include "learning/decision_ref.h"
#include "learning/learner_state.h"
#include "model/clock_ops.h"

PG_FUNCTION_INFO_V1(model_select_rewards_resolve);

/* Columns of model_select.rewards that the triggers read or fill. */
/* The LogTarget columns first, in their order (log_row_complete). */
typedef struct RewardColumns
{
	int			selector;
	int			arm;
	int			context;
	int			selector_id;
	int			arm_id;
	int			decision_id;
	int			reward;
	int			cost;
	int			tx;
	int			seq;
	int			reward_id;
	int			tags;
} RewardColumns;

static const char *const reward_column_names[] = {
	"selector", "arm", "context", "selector_id", "arm_id", "decision_id", "reward", "cost", "tx", "seq",
	"reward_id", "tags"
};

/* Resolved identity of the reward's arm. */
typedef struct RewardTarget
{
	int32		selector_id;
	int32		arm_id;
	char	   *selector;
	char	   *arm;
	bool		active;
	TimestampTz retired_at;		/* DT_NOEND while active */
	Datum		context;		/* from the decision, or (Datum) 0 */
	ArrayType  *tags;			/* the decision's, or the reward's; NULL: none */
} RewardTarget;

/*
 * The decision's selector, arm and context, read through the indexes
 * (index_read.h), after the caller's right to reward on that selector is
 * checked: nothing about the decision, not even its selector's name, shows
 * in an error before.
 */
static void
target_from_decision(int64 decision_id, RewardTarget *t)
{
	Relation	decisions = own_table_open("decisions");
	Relation	selectors = own_table_open("selectors");
	Relation	arms = own_table_open("arms");
	/* a row of each table in turn */
	Datum		values[OWN_TABLE_MAX_COLUMNS];
	bool		nulls[OWN_TABLE_MAX_COLUMNS];

	/* locked FOR KEY SHARE: the decision stays until this transaction ends (decision_ref.c) */
	if (!decision_read_locked(decisions, decision_id, DECISIONS_NCOLUMNS, decisions_columns, values, nulls))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("decision " INT64_FORMAT " does not exist", decision_id),
				 errdetail("A decision without a reward is removed once its selector's decision_ttl has passed, "
						   "and a rewarded one once retain absorbs its reward; its id was drawn by server %d "
						   "(decision_id >> 48), and is rewarded where its selector lives.",
						   (int) (decision_id >> 48)),
				 errhint("Reward a decision within decision_ttl; without a decision, give selector, arm and context.")));
	t->selector_id = DatumGetInt32(values[DECISIONS_SELECTOR_ID]);
	t->arm_id = DatumGetInt32(values[DECISIONS_ARM_ID]);
	/* stored once: float8[], or real[] when no value needs more */
	t->context = nulls[DECISIONS_CONTEXT] ? values[DECISIONS_CONTEXT_REAL] : values[DECISIONS_CONTEXT];
	t->tags = nulls[DECISIONS_TAGS] ? NULL : DatumGetArrayTypeP(values[DECISIONS_TAGS]);
	/* its selector and arm stay while the log does (drop_selector() deletes the log first) */
	if (!own_row_by_key(selectors, "selector_id", F_INT4EQ, Int32GetDatum(t->selector_id),
						SELECTORS_NCOLUMNS, selectors_columns, values, nulls))
		elog(ERROR, "decision " INT64_FORMAT " has no selector", decision_id);
	t->selector = TextDatumGetCString(values[SELECTORS_NAME]);
	selector_check_privilege_of(t->selector_id, psprintf("decision " INT64_FORMAT, decision_id),
								SELECTOR_REWARD, DatumGetObjectId(values[SELECTORS_OWNER]),
								selector_grantees(t->selector_id, SELECTOR_REWARD));
	if (!own_row_by_key(arms, "arm_id", F_INT4EQ, Int32GetDatum(t->arm_id),
						ARMS_NCOLUMNS, arms_columns, values, nulls))
		elog(ERROR, "decision " INT64_FORMAT " has no arm", decision_id);
	t->arm = TextDatumGetCString(values[ARMS_NAME]);
	t->active = DatumGetBool(values[ARMS_ACTIVE]);
	t->retired_at = nulls[ARMS_RETIRED_AT] ? DT_NOEND : DatumGetTimestampTz(values[ARMS_RETIRED_AT]);
	own_table_close(arms);
	own_table_close(selectors);
	own_table_close(decisions);
}

static void
target_from_names(const char *selector, const char *arm, RewardTarget *t)
{
	arm_lookup(selector, arm, SELECTOR_REWARD, &t->selector_id, &t->arm_id, &t->active, &t->retired_at);
	t->selector = pstrdup(selector);
	t->arm = pstrdup(arm);
	t->context = (Datum) 0;
}

static bool
same_context(Datum a, Datum b)
{
	int			na,
				nb;
	double	   *xa = float_array(DatumGetArrayTypeP(a), &na, "context", NULL);
	double	   *xb = float_array(DatumGetArrayTypeP(b), &nb, "context", NULL);

	return na == nb && memcmp(xa, xb, sizeof(double) * na) == 0;
}

/*
 * The reward's arm and context, from its decision or from its names; t gets
 * them and *context the context as given or the decision's (then also in
 * t->context, which is (Datum) 0 for a reward without a decision).
 */
static void
resolve_target(HeapTuple tuple, TupleDesc desc, const RewardColumns *c, RewardTarget *t,
			   Datum *context, bool context_null)
{
	bool		isnull;
	Datum		decision = SPI_getbinval(tuple, desc, c->decision_id, &isnull);
	char	   *selector = spi_text_column(tuple, desc, c->selector);
	char	   *arm = spi_text_column(tuple, desc, c->arm);
	bool		tags_null;
	Datum		tags = SPI_getbinval(tuple, desc, c->tags, &tags_null);
	ArrayType  *own_tags = tags_checked(tags_null ? NULL : DatumGetArrayTypeP(tags));

	if (!isnull)
	{
		target_from_decision(DatumGetInt64(decision), t);
		if (own_tags != NULL)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("a reward for a decision takes its tags from the decision"),
					 errhint("Leave tags NULL when decision_id is given.")));
		/* a context equal to the decision's is accepted: pg_dump's rows have it */
		if (!context_null && !same_context(*context, t->context))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("a reward for a decision takes its context from the decision"),
					 errhint("Leave context NULL when decision_id is given.")));
		if ((selector && strcmp(selector, t->selector) != 0) || (arm && strcmp(arm, t->arm) != 0))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("decision " INT64_FORMAT " was made by selector \"%s\" for arm \"%s\"",
							DatumGetInt64(decision), t->selector, t->arm)));
		*context = t->context;
	}
	else
	{
		if (selector == NULL || arm == NULL || context_null)
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("a reward needs either decision_id or all of selector, arm and context")));
		target_from_names(selector, arm, t);
		t->tags = own_tags;
	}
	if (!t->active && !log_row_predates_retirement(tuple, desc, c->arm_id, t->retired_at))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("arm \"%s\" of selector \"%s\" is retired", t->arm, t->selector),
				 errhint("Re-activate it with model_select.add_arm().")));
}

static void
check_reward_values(const SelectorConfig *cfg, HeapTuple tuple, TupleDesc desc, const RewardColumns *c)
{
	const ClockOps *clock = clock_ops(cfg->clock);
	bool		isnull,
				cost_null;
	Datum		reward = SPI_getbinval(tuple, desc, c->reward, &isnull);
	Datum		cost = SPI_getbinval(tuple, desc, c->cost, &cost_null);

	if (isnull)
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("reward must not be NULL")));
	check_reward(cfg, "reward", DatumGetFloat8(reward));
	if (!cost_null)
		check_cost(DatumGetFloat8(cost));
	/* refused now, not when an arm folds it */
	(void) learned_value(cfg, DatumGetFloat8(reward), cost_null,
						 cost_null ? 0 : DatumGetFloat8(cost));
	/* a clock's tick column must give a tick (the time clock's: a finite created_at) */
	if (clock->tick_column != NULL)
		(void) clock->tick(SPI_getbinval(tuple, desc, SPI_fnumber(desc, clock->tick_column), &isnull));
}

/*
 * A new reward_id, drawn here rather than by a column default: defaults are
 * evaluated before this trigger, and nextval() gives the transaction its id
 * (when it logs the sequence) -- before the selector's settings lock, which
 * would make it a late writer (selector_check_log_writer()).  A row that
 * comes with its id (a restore) keeps it.
 */
static Datum
next_reward_id(Oid namespace)
{
	Oid			seq = get_relname_relid("rewards_reward_id_seq", namespace);

	if (!OidIsValid(seq))
		elog(ERROR, "model_select.rewards_reward_id_seq does not exist");
	return DirectFunctionCall1(nextval_oid, ObjectIdGetDatum(seq));
}

/*
 * The last seq this backend gave a row.  A transaction's rows are all
 * inserted by its backend, so the counter orders them as they were inserted
 * (a restore: as pg_dump wrote them, in canonical order); rows of different
 * transactions are told apart by tx.
 */
static int64 log_seq = 0;

/* The row completed: names, context (none by decision), ids and its place in the log. */
static HeapTuple
resolve_row(TriggerData *td)
{
	int			spi_level;
	HeapTuple	tuple = td->tg_trigtuple;
	TupleDesc	desc = RelationGetDescr(td->tg_relation);
	RewardColumns c;
	RewardTarget t;
	SelectorConfig cfg;
	LogTarget	target;
	Datum		context;
	bool		context_null;
	int			position_columns[3];
	Datum		position[3];
	int			npositions = 2;
	bool		id_null;

	LOG_COLUMNS(desc, reward_column_names, &c);
	position_columns[0] = c.tx;
	position_columns[1] = c.seq;
	context = SPI_getbinval(tuple, desc, c.context, &context_null);
	spi_level = spi_connect();
	resolve_target(tuple, desc, &c, &t, &context, context_null);
	config_load_for_reward(t.selector_id, t.selector, &cfg);
	selector_check_log_writer(t.selector_id, t.selector);

	/*
	 * The context must be valid for the selector (also once prepared, as it
	 * will be learned).  A reward by decision stores none (the fold reads
	 * the decision's, fold.h); another stores it as float8[].
	 */
	{
		double	   *x = context_read(&cfg, DatumGetArrayTypeP(context), t.tags);

		context = t.context != (Datum) 0 ? (Datum) 0 : PointerGetDatum(float8_array(x, NULL, cfg.embed_dim));
		context_prepare(&cfg, x);
	}
	check_reward_values(&cfg, tuple, desc, &c);

	target.selector = t.selector;
	target.arm = t.arm;
	target.context = context;
	target.selector_id = t.selector_id;
	target.arm_id = t.arm_id;
	/* tx and seq whatever the client wrote: the log's order is the server's */
	position[0] = FullTransactionIdGetDatum(GetTopFullTransactionId());
	position[1] = Int64GetDatum(++log_seq);
	(void) SPI_getbinval(tuple, desc, c.reward_id, &id_null);
	if (id_null)
	{
		position_columns[npositions] = c.reward_id;
		position[npositions++] = next_reward_id(RelationGetNamespace(td->tg_relation));
	}
	tuple = log_row_complete(tuple, desc, (const int *) &c, &target, npositions, position_columns, position);
	spi_finish(spi_level);
	learner_wake_at_commit(target.selector_id, target.arm_id);
	return tuple;
}

Datum
model_select_rewards_resolve(PG_FUNCTION_ARGS)
{
	Datum		row = log_row_resolve(fcinfo, resolve_row);

	progress_add(1);			/* warm_start's progress (none outside a command) */
	return row;
}
