/*
 * selector_load.c — loading a selector for scoring: its configuration, owner
 * and grants, its arms with their checkpoints (selector_rows.c: kept while
 * current), and the rewards logged after each arm's cached base, read as the
 * extension owner through the tables' indexes (index_read.h: a route() runs
 * this every call) and folded through the arm cache (model_cache.c).  A reader scores the exact fold of the log
 * its snapshot sees, or, where the learner publishes versions, a final
 * prefix of each arm's log plus its own transaction's rows (LoadMode).
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/stratnum.h"
#include "access/xact.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/memutils.h"
#include "utils/xid8.h"

#include "model/catalog.h"
#include "pg/index_read.h"
#include "pg/owner.h"
#include "model/privilege.h"
#include "model/registry.h"
#include "model/table_arms.h"
#include "model/table_selectors.h"
#include "learning/clock.h"
#include "learning/arm_base.h"
#include "learning/learner_state.h"
#include "routing/arm_cache.h"
#include "routing/cache_counters.h"
#include "routing/decide.h"
#include "routing/model_cache.h"
#include "routing/selector_rows.h"

/*
 * An arm's checkpoint from its arm_state row.  Without a checkpoint under
 * the current settings (none yet, or none restored: arm_state is dumped
 * empty) the whole log is folded onto the arm's base (retention.c), which
 * then stands for the checkpoint at the log's start.
 */
static void
checkpoint_row(const SelectorConfig *cfg, const ArmColumns *arm, int32 arm_id, CheckpointRow *ck)
{
	memset(ck, 0, sizeof(*ck));
	if (arm->checkpointed)
	{
		const CheckpointColumns *row = &arm->checkpoint;

		ck->version = DatumGetInt64(row->values[CK_VERSION]);
		ck->xmin = DatumGetInt64(row->values[CK_XMIN]);
		ck->valid = DatumGetInt32(row->values[CK_SETTINGS_VERSION]) == cfg->settings_version;
		checkpoint_position_from_values(row->values + CK_POSITION, &ck->pos, &ck->totals);
		/* read if a model is built from it (checkpoint_state_read()) */
		ck->state_unread = ck->valid;
	}
	if (!ck->valid)
	{
		ck->pos = LOG_START;
		ck->valid = arm_base_read(arm_id, &ck->totals, &ck->state);
	}
}


/* The log position of a row read into values (the columns of FoldColumn). */
static LogPosition
values_position(const Datum *values)
{
	LogPosition p = {.tx = DatumGetFullTransactionId(values[FOLD_COL_TX - 1]),
	.seq = DatumGetInt64(values[FOLD_COL_SEQ - 1])};

	return p;
}

static int
position_cmp(const void *a, const void *b)
{
	return log_position_cmp(*(const LogPosition *) a, *(const LogPosition *) b);
}

/*
 * On a clock whose ticks are counted across the selector's arms
 * (learning/clock.c): the oldest Q of the entries' bases (*start) with its
 * count C (*count), and the positions of every visible row of the arms
 * after it, sorted (*n of them): a row's tick is C + its rank among them,
 * the selector's clock C + *n.
 */
static LogPosition *
counted_positions(Relation rewards, ModelCacheEntry **entries, int narms, LogPosition *start,
				  double *count, int64 *n)
{
	static const char *const columns[] = {[FOLD_COL_TX - 1] = "tx", [FOLD_COL_SEQ - 1] = "seq"};
	int64		capacity = 64;
	LogPosition *positions = palloc(sizeof(LogPosition) * capacity);

	bool		unbased = false;	/* an arm without a state */

	*start = LOG_START;
	*count = 0;
	for (int i = 0; i < narms; i++)
	{
		LogPosition q;
		double		c;

		clock_base(entries[i]->fold.st, &q, &c);
		unbased |= entries[i]->fold.st == NULL;
		if (i == 0 || log_position_cmp(q, *start) < 0)
		{
			*start = q;
			*count = c;
		}
	}
	/* it ticks the retained log from the rows retention absorbed (learning/clock.c) */
	if (unbased)
		*count = clock_origin(clock_arm_ids(entries[0]->cfg.selector_id));
	*n = 0;
	for (int i = 0; i < narms; i++)
	{
		IndexRead	r;
		HeapTuple	row;

		arm_log_rows_begin(&r, rewards, entries[i]->arm_id, *start);
		while ((row = index_read_next(&r)) != NULL)
		{
			Datum		values[lengthof(columns)];
			bool		nulls[lengthof(columns)];

			own_columns(rewards, row, lengthof(columns), columns, values, nulls);
			if (*n == capacity)
				positions = repalloc_huge(positions, sizeof(LogPosition) * (capacity *= 2));
			positions[(*n)++] = values_position(values);
		}
		index_read_end(&r);
	}
	qsort(positions, *n, sizeof(LogPosition), position_cmp);
	return positions;
}

/* The rank (from 1) of position p among the counted positions (counted_positions()). */
static int64
counted_rank(const LogPosition *counted, int64 n, LogPosition p)
{
	const LogPosition *found = bsearch(&p, counted, n, sizeof(LogPosition), position_cmp);

	if (found == NULL)
		elog(ERROR, "a pending reward of the selector's clock was not counted");
	return found - counted + 1;
}

/*
 * Under the learner's rule only this transaction's rows are read after a
 * version: they start after (mine, 0).  false: it has logged none.
 */
static bool
own_rows_start(LogPosition *after)
{
	FullTransactionId mine = GetTopFullTransactionIdIfAny();
	LogPosition first = {.tx = mine,.seq = 0};

	if (!FullTransactionIdIsValid(mine))
		return false;
	if (log_position_cmp(first, *after) > 0)
		*after = first;
	return true;
}

/*
 * Does a load under the learner's rule (or the learner's own) keep a row of
 * transaction tx: a final one (below horizon), unless only this
 * transaction's are read, or one of this transaction's?
 */
static bool
row_read(FullTransactionId tx, FullTransactionId horizon, bool own_only)
{
	FullTransactionId mine = GetTopFullTransactionIdIfAny();

	if (FullTransactionIdIsValid(mine) && FullTransactionIdEquals(tx, mine))
		return true;
	return !own_only && FullTransactionIdPrecedes(tx, horizon);
}

/*
 * The visible rows after every entry's base (FOLD_COLUMNS, the row's tick:
 * the clock's tick column, counted, or NULL; then the arm's index + 1:
 * FoldColumn), by arm index then canonical order: what
 *   SELECT FOLD_COLUMNS, <tick>, b.i FROM unnest(arm ids, base positions) WITH ORDINALITY b
 *   CROSS JOIN LATERAL (SELECT ... FROM rewards r WHERE r.arm_id = b.arm_id
 *                       AND (r.tx, r.seq) > (b.tx, b.seq) ORDER BY r.tx, r.seq)
 * returns, read through the log's index on (arm_id, tx, seq).  On a clock
 * whose ticks are counted, only rows after the oldest base's Q count and are
 * read, and *now gets the selector's clock (counted_positions()).  Under
 * the learner's rule (mode), only the final rows (below horizon) and this
 * transaction's are kept, and after a version only this transaction's are
 * read (own_rows_start()).  Where the learner is behind (LOAD_FINAL), one
 * backend at a time folds an arm's final rows and publishes them, holding
 * its load lock (catching_up[i]: the caller releases it), from the newest
 * version once it holds the lock (the previous holder may have published
 * since the entry was taken); the others score the newest version
 * meanwhile, as when it keeps up: each of 16 routers folding the same
 * backlog had stalled them all for up to a second.  Not
 * inlined into arms_load(), whose PG_TRY would make its locals volatile.
 */
static pg_noinline SPITupleTable *
rows_after_bases(ModelCacheEntry **entries, int narms, const ClockOps *clock, double *now,
				 LoadMode mode, FullTransactionId horizon, bool *catching_up)
{
	/* by clock: the tick column is created_at (timestamptz), counted or none (float8) */
	static TupleDesc desc[CLOCK_COUNT];
	Oid			types[FOLD_COL_ARM] = {
		[FOLD_COL_TX - 1] = XID8OID, [FOLD_COL_SEQ - 1] = INT8OID,
		[FOLD_COL_CONTEXT - 1] = FLOAT8ARRAYOID, [FOLD_COL_REWARD - 1] = FLOAT8OID,
		[FOLD_COL_COST - 1] = FLOAT8OID, [FOLD_COL_DECISION - 1] = INT8OID,
		[FOLD_COL_TAGS - 1] = TEXTARRAYOID,
		[FOLD_COL_TICK - 1] = clock->tick_column ? TIMESTAMPTZOID : FLOAT8OID,
		[FOLD_COL_ARM - 1] = INT8OID
	};
	/* the reward log's columns of FoldColumn, in its order */
	const char *const columns[FOLD_COL_TICK] = {
		[FOLD_COL_TX - 1] = "tx", [FOLD_COL_SEQ - 1] = "seq", [FOLD_COL_CONTEXT - 1] = "context",
		[FOLD_COL_REWARD - 1] = "reward", [FOLD_COL_COST - 1] = "cost",
		[FOLD_COL_DECISION - 1] = "decision_id", [FOLD_COL_TAGS - 1] = "tags",
		[FOLD_COL_TICK - 1] = clock->tick_column
	};
	int			ncolumns = clock->tick_column ? FOLD_COL_TICK : FOLD_NCOLUMNS;

	/* opened once a read needs it: a decision with only versions to score reads no log */
	Relation	rewards = clock->ticks_across_arms ? own_table_open("rewards") : NULL;
	SPITupleTable *tt = result_table_new(result_desc(&desc[clock->kind], lengthof(types), types), narms);
	Datum		values[lengthof(types)];
	bool		nulls[lengthof(types)];
	LogPosition start = LOG_START;
	double		count = 0;
	int64		ncounted = 0;
	LogPosition *counted = clock->ticks_across_arms
		? counted_positions(rewards, entries, narms, &start, &count, &ncounted) : NULL;

	if (counted != NULL)
		*now = count + (double) ncounted;
	for (int i = 0; i < narms; i++)
	{
		LogPosition after;
		IndexRead	r;
		HeapTuple	row;
		bool		own_only = false;

		catching_up[i] = false;
		if (entry_shareable(entries[i]) && mode == LOAD_VERSIONS)
			own_only = true;
		else if (entry_shareable(entries[i]) && mode == LOAD_FINAL &&
				 !policy_ops(entries[i]->cfg.policy)->keeps_rows)
		{
			own_only = !(catching_up[i] = shared_load_try_lock(entries[i]->arm_id));
			/* the backend that held the lock may have published since this load looked */
			if (catching_up[i])
				(void) entry_take_newest(entries[i]);
		}
		after = entries[i]->fold.pos;
		if (log_position_cmp(start, after) > 0)
			after = start;
		if (own_only && !own_rows_start(&after))
			continue;
		if (rewards == NULL)
			rewards = own_table_open("rewards");
		arm_log_rows_begin(&r, rewards, entries[i]->arm_id, after);
		while ((row = index_read_next(&r)) != NULL)
		{
			own_columns(rewards, row, ncolumns, columns, values, nulls);
			if (mode != LOAD_OWN && !row_read(values_position(values).tx, horizon, own_only))
			{
				if (own_only)
					break;
				continue;
			}
			nulls[FOLD_COL_TICK - 1] = clock->tick_column == NULL && counted == NULL;
			if (counted != NULL)
				values[FOLD_COL_TICK - 1] =
					Float8GetDatum(count + (double) counted_rank(counted, ncounted, values_position(values)));
			values[FOLD_COL_ARM - 1] = Int64GetDatum(i + 1);
			nulls[FOLD_COL_ARM - 1] = false;
			result_table_add(tt, heap_form_tuple(tt->tupdesc, values, nulls));
		}
		index_read_end(&r);
	}
	if (rewards != NULL)
		own_table_close(rewards);
	return tt;
}

typedef struct LoadCall
{
	const char *name;
	MemoryContext caller;
	LoadMode	mode;
	Selector   *sel;
} LoadCall;

/*
 * Every arm's identity, and the cache entry of every arm the load takes
 * from its rows in s, then its rewards: every arm, but a learner's
 * publishing load only the arms it owns (learner_owns_arm(); all of them or
 * none on a clock that ticks across the arms, whose ticks count them all).
 */
static void
arms_load(Selector *sel, MemoryContext caller, const SelectorColumns *s, FullTransactionId horizon,
		  LoadMode mode)
{
	ModelCacheEntry **entries = palloc(sizeof(ModelCacheEntry *) * Max(sel->narms, 1));
	int		   *taken = palloc(sizeof(int) * Max(sel->narms, 1));	/* entries[j] is arm taken[j] */
	bool	   *catching_up = palloc(sizeof(bool) * Max(sel->narms, 1));
	int			ntaken = 0;
	SPITupleTable *rows;
	uint64		nrows,
				next = 0;
	MemoryContext old = CurrentMemoryContext;
	const ClockOps *clock = clock_ops(sel->cfg.clock);
	double		now = clock->now();

	uint64		load = model_cache_next_load();

	for (int i = 0; i < sel->narms; i++)
	{
		const ArmColumns *row = &s->arms[i];
		ArmInfo    *arm = &sel->arms[i];
		CheckpointRow ck;

		arm->arm_id = DatumGetInt32(row->values[ARMS_ARM_ID]);
		arm->name = MemoryContextStrdup(caller, TextDatumGetCString(row->values[ARMS_NAME]));
		arm->ordinal = DatumGetInt32(row->values[ARMS_ORDINAL]);
		arm->active = DatumGetBool(row->values[ARMS_ACTIVE]);
		if (LOAD_PUBLISHES(mode) && !learner_owns_arm(arm->arm_id, clock->ticks_across_arms))
			continue;
		checkpoint_row(&sel->cfg, row, arm->arm_id, &ck);
		entries[ntaken] = model_cache_entry(&sel->cfg, arm->arm_id, &ck, horizon, mode);
		taken[ntaken++] = i;
	}
	rows = rows_after_bases(entries, ntaken, clock, &now, mode, horizon, catching_up);
	nrows = rows->numvals;
	for (int j = 0; j < ntaken; j++)
	{
		ModelCacheEntry *entry = entries[j];
		ArmInfo    *arm = &sel->arms[taken[j]];
		uint64		first = next;

		while (next < nrows && spi_int64(rows->vals[next], rows->tupdesc, FOLD_COL_ARM) == j + 1)
			next++;
		PG_TRY();
		{
			model_cache_absorb(entry, rows, first, next, horizon, now, mode);
		}
		PG_CATCH();
		{
			MemoryContextSwitchTo(old);
			model_cache_remove(entry);
			PG_RE_THROW();
		}
		PG_END_TRY();
		if (catching_up[j])
			shared_load_unlock(entry->arm_id);
		model_cache_touch(entry, load);
		arm->n = entry->totals.n;
		arm->cost_sum = entry->totals.cost_sum;
		arm->cost_n = entry->totals.cost_n;
		arm->spend_sum = entry->totals.spend_sum;
		arm->spend_n = entry->totals.spend_n;
		arm->version = entry->version;
		arm->xmin = entry->xmin;
		arm->model = entry->model;
		arm->model_serial = entry->model_serial;
		arm->prefix_n = entry->fold.totals.n;
		arm->prefix_tx = entry->fold.pos.tx;
		arm->prefix_seq = entry->fold.pos.seq;
		/* versioned, an overlay holds this transaction's rows only */
		if (sel->versioned && entry->noverlay > 0)
			sel->own_seq = Max(sel->own_seq, entry->overlay[entry->noverlay - 1].seq);
	}
	if (next != nrows)
		elog(ERROR, "the pending rewards of selector \"%s\" came out of arm order", sel->name);
	model_cache_fit(load);
}

static void
selector_load_as_owner(void *arg)
{
	int			spi_level;
	LoadCall   *call = arg;
	Selector   *sel;
	SelectorColumns s;
	bool		keep_window;

	spi_level = spi_connect();
	sel = call->sel = MemoryContextAllocZero(call->caller, sizeof(Selector));
	sel->name = MemoryContextStrdup(call->caller, call->name);
	if (!selector_rows(call->name, &s))
		selector_unknown(call->name);
	config_from_values(&sel->cfg, s.values, s.nulls);
	sel->narms = s.narms;
	sel->arms = MemoryContextAllocZero(call->caller, sizeof(ArmInfo) * Max(sel->narms, 1));
	/*
	 * where the learner serves, and on a standby (whose view trails the
	 * primary anyway), the pacer's window may be kept (pacer_window.c)
	 */
	keep_window = LOAD_VERSIONED(call->mode) || RecoveryInProgress();
	/* a clock that ages, or ticks across the arms, scores the exact fold */
	if (LOAD_VERSIONED(call->mode) &&
		(clock_ops(sel->cfg.clock)->ages || clock_ops(sel->cfg.clock)->ticks_across_arms))
		call->mode = LOAD_OWN;
	sel->versioned = LOAD_VERSIONED(call->mode);
	arms_load(sel, call->caller, &s, shared_horizon(), call->mode);
	/* the learner's publish decides nothing: no price, no awaited rewards */
	if (!LOAD_PUBLISHES(call->mode))
		pacer_pending_load(sel, keep_window);
	spi_finish(spi_level);
}

/*
 * Load a selector by name with every arm and its decoded model.  The result
 * is allocated in the caller's memory context.  Where a learner publishes
 * this database's versions, under its rule (LoadMode, arm_cache.h): the
 * newest versions while it keeps up, else the final rows folded here.
 */
Selector *
selector_load(const char *name)
{
	LoadCall	call = {name, CurrentMemoryContext,
		!learner_configured() ? LOAD_OWN : learner_fresh() ? LOAD_VERSIONS : LOAD_FINAL, NULL};

	run_as_extension_owner(selector_load_as_owner, &call);
	return call.sel;
}

/*
 * The learner's load: every arm's base brought to the final rows and, when
 * it grew, published in the shared cache (LOAD_PUBLISH; growing states only
 * if `growing`, else LOAD_PUBLISH_FIXED).  Nothing is decoded or handed out.
 * Returns the versions published; *complete: none failed for want of room
 * (else decisions would score a version that no longer moves on).
 */
int64
selector_publish(const char *name, bool growing, bool *complete)
{
	LoadCall	call = {name, CurrentMemoryContext, growing ? LOAD_PUBLISH : LOAD_PUBLISH_FIXED, NULL};
	int64		publishes = cache_counter(CACHE_SHARED_PUBLISHES);
	int64		failures = cache_counter(CACHE_SHARED_PUBLISH_FAILURES);

	*complete = true;
	if (!shared_cache_active())
		return 0;
	/* this process's counts: shared_cache_stats() would also read every slot */
	run_as_extension_owner(selector_load_as_owner, &call);
	*complete = cache_counter(CACHE_SHARED_PUBLISH_FAILURES) == failures;
	return cache_counter(CACHE_SHARED_PUBLISHES) - publishes;
}
