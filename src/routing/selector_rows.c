/*
 * selector_rows.c — the rows a selector's load reads: its selectors row, the
 * grantees of its route right, its arms and their arm_state rows (without
 * the state), read through the tables' indexes (selector_rows_read.c), and
 * kept per backend by name, so that a route() that finds them current reads
 * none of them.
 *
 * When kept rows are current.  Kept rows were read under a snapshot S; a
 * load under snapshot S' takes them when S' sees the same rows of those
 * tables.  Every statement that writes one of them (selectors, arms,
 * arm_state, selector_grants) fires the trigger _selector_rows_changed()
 * (model_select_selector_rows_changed below), except an UPDATE of
 * arm_state that leaves its arm_id and selector_id: a checkpoint, which the
 * learner writes many times a second when there are many selectors.  Kept
 * arm_state rows are checked instead at each take, each row version looked
 * up under S' (checkpoints_current()).  The trigger
 *   - queues a relcache invalidation of the relation
 *     model_select_internal.selector_rows_signal, sent to every backend when
 *     the transaction commits, applied at once to this backend's own caches
 *     at the end of the command and undone locally at a rollback (of a
 *     subtransaction too): rows_relcache_changed() then drops every kept
 *     selector (a new generation);
 *   - takes ShareLock on that relation until the transaction ends.  A commit
 *     becomes visible to new snapshots before its invalidations are sent,
 *     and its locks go only after they are sent: the lock covers the gap.
 * A load takes kept rows only
 *   1. after it has locked the tables, found the signal relation's lock
 *      free of writers (a RowExclusiveLock taken without waiting and
 *      released at once: it conflicts with ShareLock alone; held only that
 *      long, it never makes a writer wait for more than that) and then
 *      processed the invalidations that had come: so every writer S' sees
 *      has had its invalidation processed;
 *   2. if no invalidation came since they were kept (the generation): so no
 *      writer S' sees committed after they were kept, and none that S did
 *      not see before (below);
 *   3. if S' sees every transaction S saw (snapshot_covers(): S' is not
 *      older than S, as a cursor's or an imported snapshot may be; within
 *      the transaction that kept them, its command id is not smaller).
 * Rows are kept only if S saw every writer whose invalidation had been
 * processed when they were kept: S sees all that a snapshot taken then
 * (GetLatestSnapshot()) sees, every writer whose invalidation came having
 * ended before it was sent.  A statement's snapshot taken before a commit
 * whose invalidation the load's locks then process (READ COMMITTED), or an
 * older REPEATABLE READ transaction's, reads the tables and keeps nothing.
 * Our own writes: a command that wrote invalidates at its end, a rollback
 * again.  On a standby (whose replay has the same gap and no lock), in
 * parallel mode and in SERIALIZABLE transactions (whose reads take the
 * predicate locks that find their conflicts) nothing is kept or taken.
 *
 * Whatever the rows, the caller's right is checked at every load, before
 * any arm is copied out.  The state of an arm_state row is not kept: the
 * arm cache reads it when it builds a model from it (checkpoint_state_read()).
 * At most ROWS_MAX_ENTRIES selectors and ROWS_MAX_BYTES are kept (a
 * router of one selector per tenant loads hundreds), least recently used
 * dropped first; an invalidation drops them all.
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/relation.h"
#include "access/xact.h"
#include "access/xlog.h"
#include "catalog/namespace.h"
#include "commands/trigger.h"
#include "common/hashfn.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "lib/ilist.h"
#include "storage/bufmgr.h"
#include "storage/lmgr.h"
#include "storage/lock.h"
#include "storage/proc.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"

#include "pg/index_read.h"
#include "routing/selector_rows.h"

#define ROWS_MAX_ENTRIES 4096
#define ROWS_MAX_BYTES (4 * 1024 * 1024)


/* A selector's rows as kept, and what they are current for. */
typedef struct RowsEntry
{
	MemoryContext cxt;			/* holds the entry */
	char	   *name;
	uint32		hash;			/* of the name: its key in rows_table */
	SelectorColumns rows;
	TransactionId xmax;			/* the snapshot they were read under: its xmax */
	int			xcnt;			/* and its running transactions, sorted */
	TransactionId *xip;
	LocalTransactionId lxid;	/* the transaction that kept them ... */
	CommandId	curcid;			/* ... and its snapshot's command id */
	dlist_node	lru;			/* in rows_lru, most recently used first */
	Size		bytes;
} RowsEntry;

/* rows_table's entries: a name's hash, and the rows kept of the one name kept under it */
typedef struct RowsSlot
{
	uint32		hash;
	RowsEntry  *entry;
} RowsSlot;

/*
 * The kept selectors, in rows_cxt.  They are all of generation
 * rows_table_generation, and current while that is rows_generation (which
 * the relcache callback moves on; the next load frees them).
 */
static MemoryContext rows_cxt = NULL;
static HTAB *rows_table = NULL;
static dlist_head rows_lru = DLIST_STATIC_INIT(rows_lru);
static int	rows_count = 0;
static Size rows_bytes = 0;
static uint64 rows_generation = 1;
static uint64 rows_table_generation = 0;
static Oid	signal_oid = InvalidOid;	/* selector_rows_signal as last looked up */
static Oid	table_oids[4];		/* the tables the rows were last read from */

/* Their columns' lengths and whether passed by value (a kept row's values are copied out by them). */
static int16 selectors_len[SELECTORS_NCOLUMNS];
static bool selectors_byval[SELECTORS_NCOLUMNS];
static int16 arms_len[ARMS_NCOLUMNS];
static bool arms_byval[ARMS_NCOLUMNS];
static int64 rows_hits = 0,
			rows_reads = 0,
			rows_invalidations = 0;

/* Every kept selector dropped: an empty table of generation rows_generation. */
static void
rows_reset(void)
{
	HASHCTL		ctl;

	if (rows_cxt == NULL)
		rows_cxt = AllocSetContextCreate(CacheMemoryContext, "model_select selector rows",
										 ALLOCSET_SMALL_SIZES);
	else
		MemoryContextReset(rows_cxt);
	ctl.keysize = sizeof(uint32);
	ctl.entrysize = sizeof(RowsSlot);
	ctl.hcxt = rows_cxt;
	rows_table = hash_create("model_select selector rows", 64, &ctl, HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	dlist_init(&rows_lru);
	rows_count = 0;
	rows_bytes = 0;
	rows_table_generation = rows_generation;
}

static void
rows_free(RowsEntry *e)
{
	hash_search(rows_table, &e->hash, HASH_REMOVE, NULL);
	dlist_delete(&e->lru);
	rows_count--;
	rows_bytes -= e->bytes;
	MemoryContextDelete(e->cxt);
}

/*
 * A relcache invalidation of the signal relation, of a table the rows come
 * from, or of everything: every kept selector is dropped (freed at the next
 * load: a load under way may still be reading one).
 */
static void
rows_relcache_changed(Datum arg, Oid relid)
{
	bool		ours = !OidIsValid(relid) || relid == signal_oid;

	for (int i = 0; !ours && i < lengthof(table_oids); i++)
		ours = relid == table_oids[i];
	if (!ours)
		return;
	rows_generation++;
	rows_invalidations++;
}

/* The oid of model_select_internal.selector_rows_signal; InvalidOid before 0.3.0. */
static Oid
signal_relation(void)
{
	Oid			schema = get_namespace_oid("model_select_internal", true);

	return OidIsValid(schema) ? get_relname_relid("selector_rows_signal", schema) : InvalidOid;
}

/* Does no transaction that wrote the rows hold the signal relation's lock now? */
static bool
signal_quiet(Oid signal)
{
	LOCKTAG		tag;

	SET_LOCKTAG_RELATION(tag, MyDatabaseId, signal);
	if (LockAcquire(&tag, RowExclusiveLock, false, true) == LOCKACQUIRE_NOT_AVAIL)
		return false;
	LockRelease(&tag, RowExclusiveLock, false);
	return true;
}

/*
 * The caller's snapshot, if this load may take kept rows or keep the rows
 * it reads, once the tables are locked (by the oids they were last read
 * from: a table dropped since sent an invalidation, processed here) and
 * every invalidation sent by a writer it may see is processed; NULL: it
 * reads and keeps nothing.  The signal relation is looked up again by every
 * load that reads (selector_rows()): kept rows are taken only while no
 * invalidation came since, so while the one they were kept under stands.
 */
static Snapshot
rows_snapshot(void)
{
	static bool registered = false;
	Snapshot	snap = ActiveSnapshotSet() ? GetActiveSnapshot() : NULL;

	if (!registered)
	{
		CacheRegisterRelcacheCallback(rows_relcache_changed, (Datum) 0);
		registered = true;
	}
	/* SERIALIZABLE: the reads take the predicate locks that find its conflicts */
	if (snap == NULL || snap->snapshot_type != SNAPSHOT_MVCC || snap->takenDuringRecovery ||
		RecoveryInProgress() || IsInParallelMode() || IsolationIsSerializable())
		return NULL;
	for (int i = 0; i < 3; i++)
		if (OidIsValid(table_oids[i]))
			LockRelationOid(table_oids[i], AccessShareLock);
	if (!OidIsValid(signal_oid))
		signal_oid = signal_relation();
	if (!OidIsValid(signal_oid) || !signal_quiet(signal_oid))
		return NULL;
	AcceptInvalidationMessages();
	if (rows_table_generation != rows_generation)
		rows_reset();
	return snap;
}

static int
xid_cmp(const void *a, const void *b)
{
	TransactionId x = *(const TransactionId *) a;
	TransactionId y = *(const TransactionId *) b;

	return (x > y) - (x < y);
}

/* snap's running transactions, sorted, in the current memory context (*n of them). */
static TransactionId *
running_sorted(Snapshot snap, int *n)
{
	TransactionId *xip = palloc(sizeof(TransactionId) * Max(snap->xcnt, 1));

	memcpy(xip, snap->xip, sizeof(TransactionId) * snap->xcnt);
	qsort(xip, snap->xcnt, sizeof(TransactionId), xid_cmp);
	*n = snap->xcnt;
	return xip;
}

/*
 * Does snap see every transaction that the snapshot (xmax, xip: its running
 * transactions, sorted) saw?  Every transaction below that xmax that it did
 * not list had ended: snap must not list it either, nor have a lower xmax.
 * (A subtransaction's rows are seen with its top transaction's, which xip
 * lists; our own transaction is in neither list.)
 */
static bool
snapshot_covers(Snapshot snap, TransactionId xmax, const TransactionId *xip, int xcnt)
{
	if (TransactionIdPrecedes(snap->xmax, xmax))
		return false;
	for (int i = 0; i < snap->xcnt; i++)
		if (TransactionIdPrecedes(snap->xip[i], xmax) &&
			bsearch(&snap->xip[i], xip, xcnt, sizeof(TransactionId), xid_cmp) == NULL)
			return false;
	return true;
}

/*
 * Are the arm_state rows e keeps the versions snap sees?  A checkpoint
 * updates its arm's row without the signal (the learner's checkpoints would
 * otherwise drop every kept selector of every backend, many times a second
 * with many selectors), so each kept version is looked up under snap.  A
 * new row, a deleted one or a changed arm_id or selector_id does signal.
 */
static bool
checkpoints_current(const RowsEntry *e, Snapshot snap)
{
	Relation	arm_state = NULL;
	BlockNumber nblocks = 0;
	bool		current = true;

	for (int i = 0; current && i < e->rows.narms; i++)
	{
		const ArmColumns *arm = &e->rows.arms[i];

		if (!arm->checkpointed)
			continue;
		if (arm_state == NULL)
		{
			/* locked by rows_snapshot() */
			arm_state = relation_open(table_oids[2], NoLock);
			nblocks = RelationGetNumberOfBlocks(arm_state);
		}
		current = own_row_version_visible(arm_state, nblocks, (ItemPointer) &arm->checkpoint.tid,
										  (TransactionId) DatumGetInt64(arm->checkpoint.values[CK_XMIN]),
										  snap);
	}
	if (arm_state != NULL)
		relation_close(arm_state, NoLock);
	return current;
}

/* The kept rows of selector name that snap sees as they are, or NULL. */
static RowsEntry *
rows_find(const char *name, Snapshot snap)
{
	uint32		hash = string_hash(name, 0);
	RowsSlot   *slot = hash_search(rows_table, &hash, HASH_FIND, NULL);
	RowsEntry  *e = slot != NULL ? slot->entry : NULL;

	if (e == NULL || strcmp(e->name, name) != 0 ||
		!snapshot_covers(snap, e->xmax, e->xip, e->xcnt) ||
		(e->lxid == MyProc->lxid && snap->curcid < e->curcid) ||
		!checkpoints_current(e, snap))
		return NULL;
	dlist_move_head(&rows_lru, &e->lru);
	return e;
}

/* The values passed by reference replaced by copies in the current memory context. */
static void
values_copy(Datum *values, const bool *nulls, int n, const int16 *len, const bool *byval)
{
	for (int i = 0; i < n; i++)
		if (!nulls[i] && !byval[i])
			values[i] = datumCopy(values[i], false, len[i]);
}

/* The shapes of the columns read (selectors_len ...), from the tables. */
static void
columns_shape(Relation selectors, Relation arms)
{
	for (int i = 0; i < SELECTORS_NCOLUMNS; i++)
	{
		Form_pg_attribute att = TupleDescAttr(RelationGetDescr(selectors),
											  own_column(selectors, selectors_columns[i]) - 1);

		selectors_len[i] = att->attlen;
		selectors_byval[i] = att->attbyval;
	}
	for (int i = 0; i < ARMS_NCOLUMNS; i++)
	{
		Form_pg_attribute att = TupleDescAttr(RelationGetDescr(arms), own_column(arms, arms_columns[i]) - 1);

		arms_len[i] = att->attlen;
		arms_byval[i] = att->attbyval;
	}
}

/* A copy of the rows src in the current memory context (byref values and arms copied). */
static void
rows_copy(SelectorColumns *dst, const SelectorColumns *src)
{
	*dst = *src;
	values_copy(dst->values, dst->nulls, SELECTORS_NCOLUMNS, selectors_len, selectors_byval);
	dst->route_grantees = datumCopy(src->route_grantees, false, -1);
	dst->arms = palloc(sizeof(ArmColumns) * Max(src->narms, 1));
	memcpy(dst->arms, src->arms, sizeof(ArmColumns) * src->narms);
	for (int i = 0; i < src->narms; i++)
		values_copy(dst->arms[i].values, dst->arms[i].nulls, ARMS_NCOLUMNS, arms_len, arms_byval);
}

/* Keep the rows s read under snap, if snap saw every writer whose invalidation came. */
static void
rows_keep(const char *name, const SelectorColumns *s, Snapshot snap)
{
	MemoryContext cxt;
	MemoryContext old;
	RowsEntry  *e;
	RowsSlot   *slot;
	Snapshot	latest = GetLatestSnapshot();
	int			nlatest;
	TransactionId *latest_xip = running_sorted(latest, &nlatest);

	/* snap must see every writer whose invalidation came: one a snapshot taken now sees */
	if (!snapshot_covers(snap, latest->xmax, latest_xip, nlatest))
		return;
	/* an invalidation processed while the tables were opened: a table of its generation */
	if (rows_table_generation != rows_generation)
		rows_reset();
	/* under the load's context until complete: an error frees it */
	cxt = AllocSetContextCreate(CurrentMemoryContext, "model_select selector rows entry",
								ALLOCSET_SMALL_SIZES);
	old = MemoryContextSwitchTo(cxt);
	e = palloc0(sizeof(RowsEntry));
	e->cxt = cxt;
	e->name = pstrdup(name);
	e->hash = string_hash(name, 0);
	rows_copy(&e->rows, s);
	e->xip = running_sorted(snap, &e->xcnt);
	MemoryContextSwitchTo(old);
	e->xmax = snap->xmax;
	e->lxid = MyProc->lxid;
	e->curcid = snap->curcid;
	e->bytes = MemoryContextMemAllocated(cxt, true);
	if (e->bytes > ROWS_MAX_BYTES)
	{
		MemoryContextDelete(cxt);
		return;
	}
	/* the older rows under the same hash out, then the least recently used until it fits */
	slot = hash_search(rows_table, &e->hash, HASH_FIND, NULL);
	if (slot != NULL)
		rows_free(slot->entry);
	while (rows_count >= ROWS_MAX_ENTRIES || rows_bytes + e->bytes > ROWS_MAX_BYTES)
		rows_free(dlist_container(RowsEntry, lru, dlist_tail_node(&rows_lru)));
	MemoryContextSetParent(cxt, rows_cxt);
	slot = hash_search(rows_table, &e->hash, HASH_ENTER, NULL);
	slot->entry = e;
	dlist_push_head(&rows_lru, &e->lru);
	rows_count++;
	rows_bytes += e->bytes;
}

/*
 * selector_rows: selector_rows_read()'s answer, from the rows kept for the selector
 * when they are current for the caller's snapshot (the caller's right
 * checked the same), else read and, if they may be, kept.
 */
bool
selector_rows(const char *name, SelectorColumns *s)
{
	Snapshot	snap = rows_snapshot();
	RowsEntry  *kept = snap != NULL ? rows_find(name, snap) : NULL;
	Relation	selectors;
	Relation	arms;
	Relation	arm_state;
	Oid			signal;
	bool		found;

	if (kept != NULL)
	{
		rows_hits++;
		selector_rows_check_privilege(name, &kept->rows);
		rows_copy(s, &kept->rows);
		return true;
	}
	rows_reads++;
	selectors = own_table_open("selectors");
	arms = own_table_open("arms");
	arm_state = own_table_open("arm_state");
	table_oids[0] = RelationGetRelid(selectors);
	table_oids[1] = RelationGetRelid(arms);
	table_oids[2] = RelationGetRelid(arm_state);
	table_oids[3] = get_relname_relid("selector_grants", RelationGetNamespace(selectors));
	columns_shape(selectors, arms);
	signal = signal_relation();
	if (signal != signal_oid)
	{
		/* another extension's (dropped and created again): keep nothing under the old one */
		signal_oid = signal;
		rows_generation++;
		snap = NULL;
	}
	found = selector_rows_read(name, s, selectors, arms, arm_state);
	if (found && snap != NULL)
		rows_keep(name, s, snap);
	own_table_close(arm_state);
	own_table_close(arms);
	own_table_close(selectors);
	return found;
}

PG_FUNCTION_INFO_V1(model_select_selector_rows_changed);
PG_FUNCTION_INFO_V1(model_select_selector_rows_stats);

/*
 * _selector_rows_changed(): AFTER each statement that writes selectors,
 * arms, arm_state or selector_grants, the signal that kept rows are no
 * longer current (see the head of this file).
 */
Datum
model_select_selector_rows_changed(PG_FUNCTION_ARGS)
{
	TriggerData *td = (TriggerData *) fcinfo->context;
	Oid			signal;

	if (!CALLED_AS_TRIGGER(fcinfo) || !TRIGGER_FIRED_FOR_STATEMENT(td->tg_event) ||
		!TRIGGER_FIRED_AFTER(td->tg_event))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("%s must fire AFTER, FOR EACH STATEMENT", get_func_name(fcinfo->flinfo->fn_oid))));
	signal = signal_relation();
	if (!OidIsValid(signal))
		elog(ERROR, "relation model_select_internal.selector_rows_signal does not exist");
	LockRelationOid(signal, ShareLock);
	CacheInvalidateRelcacheByRelid(signal);
	PG_RETURN_POINTER(NULL);
}

/* _selector_rows_stats(): this backend's kept selectors, their bytes, hits, reads and invalidations. */
Datum
model_select_selector_rows_stats(PG_FUNCTION_ARGS)
{
	TupleDesc	desc;
	Datum		values[5];
	bool		nulls[5] = {false};
	bool		current = rows_table != NULL && rows_table_generation == rows_generation;

	if (get_call_result_type(fcinfo, NULL, &desc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "_selector_rows_stats() must return a row");
	values[0] = Int32GetDatum(current ? rows_count : 0);
	values[1] = Int64GetDatum(current ? (int64) rows_bytes : 0);
	values[2] = Int64GetDatum(rows_hits);
	values[3] = Int64GetDatum(rows_reads);
	values[4] = Int64GetDatum(rows_invalidations);
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(desc, values, nulls)));
}
