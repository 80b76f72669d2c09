/*
 * checkpoint_due.c — when an arm is due for a checkpoint: at the commit of a
 * reward insert (checkpoint_note_rewards(), counted in the log) and at the learner's and
 * maintain()'s passes (checkpoint_due_arms(): in a learner by the rows its
 * own fold holds past the checkpoint, elsewhere counted).
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "utils/hsearch.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/xid8.h"

#include "learning/checkpoint.h"
#include "learning/clock.h"
#include "learning/fold.h"
#include "learning/learner_state.h"
#include "model/catalog.h"
#include "model/registry.h"
#include "pg/owner.h"
#include "pg/spi_util.h"

/*
 * When an arm is due.  A checkpoint rewrites the arm's stored state, so
 * counting rewards alone would make WAL per reward grow with the state
 * (a lin_ucb arm at d = 384 is 0.6 MB: 4.6 kB per reward at 128).  An arm
 * is due once it has checkpoint_threshold final pending rewards and their
 * log rows take at least CHECKPOINT_LOG_RATIO times the state's bytes: a
 * checkpoint then adds at most 1/CHECKPOINT_LOG_RATIO of the log's own WAL
 * (LOG_ROW_BYTES estimates a row), and readers fold at most about that many
 * rows.  Not for policies whose state grows with its rows (pak_ucb, bkb):
 * a reader's fold of one of their rows costs O(n²) or more, so their
 * pending tail stays at checkpoint_threshold.  (A pak_ucb checkpoint writes
 * only the rows added since the last one, state_store.c: O(n) bytes per
 * reward; bkb's rewrites its state.)  Counting is an index scan; a backend
 * counts an arm at its first insert for it, then again only after inserting
 * a sixteenth of what it last found due (DueMemo), so the count costs about
 * one row's scan per insert.  (Counting first keeps an application that
 * opens a connection per reward checkpointing.)
 */
#define CHECKPOINT_LOG_RATIO 2
/*
 * In a learner process: decisions score its versions, so the rows past a
 * checkpoint are folded by the learner alone (once each) and by backends
 * only while it falls behind.  Checkpointing 4 times less often cuts the
 * WAL and the CPU of rewriting whole states (a pass that checkpoints
 * delays the rewards committed meanwhile) for a longer fold after a crash.
 */
#define CHECKPOINT_LOG_RATIO_LEARNER 8
#define LOG_ROW_BYTES(dim) (8 * (int64) (dim) + 96)

typedef struct DueMemo
{
	int32		arm_id;			/* hash key */
	int64		since;			/* rows this backend inserted since it counted */
	int64		need;			/* pending rows that make the arm due */
} DueMemo;

static DueMemo *
due_memo(int32 arm_id)
{
	static HTAB *memo = NULL;
	DueMemo    *m;
	bool		found;

	/* a heuristic: forgetting it only makes a backend count sooner */
	if (memo != NULL && hash_get_num_entries(memo) >= 4096)
	{
		hash_destroy(memo);
		memo = NULL;
	}
	if (memo == NULL)
		memo = id_hash_create("model_select checkpoint memo", sizeof(DueMemo), TopMemoryContext);
	m = hash_search(memo, &arm_id, HASH_ENTER, &found);
	if (!found)
	{
		m->need = checkpoint_threshold;
		m->since = Max(m->need / 16, 1) - 1;	/* this insert counts */
	}
	return m;
}

/* The columns of arm_is_due()'s query. */
enum
{
	DUE_PENDING = 1,
	DUE_STATE_BYTES
};

/* The pending rows that make an arm due, from its stored state's bytes (NULL: none). */
static int64
due_need(const SelectorConfig *cfg, Datum bytes, bool isnull)
{
	int64		need = checkpoint_threshold;

	if (!isnull && !policy_ops(cfg->policy)->keeps_rows)
		need = Max(need, (learner_process() ? CHECKPOINT_LOG_RATIO_LEARNER : CHECKPOINT_LOG_RATIO) *
				   (int64) DatumGetInt32(bytes) / LOG_ROW_BYTES(cfg->dim) + 1);
	return need;
}

/* The columns of learner_judges_due()'s query. */
enum
{
	LD_SETTINGS_VERSION = 1,
	LD_VERSION,
	LD_XMIN,
	LD_N,
	LD_STATE_BYTES
};

/*
 * In a learner: is the arm due, judged by its own fold?  It folds every
 * final row for its versions before it checkpoints (learner_pass()), so the
 * rows its arm cache folded past the stored checkpoint are the final
 * pending rows: read off the cached fold instead of counting them in the
 * log at every naptime (a scan of up to `need` index entries and heap rows
 * per arm).  Returns false, leaving *due alone, where the cache holds no
 * fold of the stored checkpoint (a growing or clocked state, a missing
 * checkpoint row, a settings change, an arm it has not loaded): then they
 * are counted.
 */
static bool
learner_judges_due(const SelectorConfig *cfg, int32 arm_id, bool *due)
{
	static SPIPlanPtr plan = NULL;
	Oid			types[1] = {INT4OID};
	Datum		args[1] = {Int32GetDatum(arm_id)};
	HeapTuple	row;
	TupleDesc	desc;
	bool		isnull;
	const StateFold *cached;
	Datum		bytes;

	if (!learner_process() || !checkpoint_reuses_folds(cfg))
		return false;
	spi_execute(spi_plan(&plan, "SELECT settings_version, version, xmin::text::bigint, n,"
						 " pg_catalog.octet_length(state) FROM model_select.arm_state WHERE arm_id = $1",
						 1, types), args, NULL, true, 1, SPI_OK_SELECT, "read the checkpoint of arm %d", arm_id);
	if (SPI_processed == 0)
		return false;
	row = SPI_tuptable->vals[0];
	desc = SPI_tuptable->tupdesc;
	if (DatumGetInt32(SPI_getbinval(row, desc, LD_SETTINGS_VERSION, &isnull)) != cfg->settings_version)
		return false;
	cached = checkpoint_cached_base(cfg, arm_id, DatumGetInt64(SPI_getbinval(row, desc, LD_VERSION, &isnull)),
									DatumGetInt64(SPI_getbinval(row, desc, LD_XMIN, &isnull)), NULL);
	if (cached == NULL)
		return false;
	bytes = SPI_getbinval(row, desc, LD_STATE_BYTES, &isnull);
	*due = cached->totals.n - DatumGetInt64(SPI_getbinval(row, desc, LD_N, &isnull)) >=
		due_need(cfg, bytes, isnull);
	return true;
}

/*
 * Is the arm due (see above)?  *need: the pending rows that make it due,
 * at least checkpoint_threshold, updated from the size of its stored state.
 * The count is not read-only: under the statement's own snapshot it would
 * miss the rows this statement inserted (a bulk load would then leave its
 * whole log pending).
 */
static bool
arm_is_due(const SelectorConfig *cfg, int32 arm_id, int64 *need)
{
	static SPIPlanPtr plan = NULL;
	Oid			types[4] = {INT4OID, INT4OID, INT8OID, XID8OID};
	Datum		args[4];
	bool		due;

	if (learner_judges_due(cfg, arm_id, &due))
		return due;
	args[0] = Int32GetDatum(arm_id);
	args[1] = Int32GetDatum(cfg->settings_version);
	args[3] = FullTransactionIdGetDatum(final_horizon_for(cfg));
	for (;;)
	{
		int64		limit = Max(*need, checkpoint_threshold);
		int64		pending;
		bool		isnull;
		Datum		bytes;

		args[2] = Int64GetDatum(limit);
		spi_execute(spi_plan(&plan,
							 "SELECT (SELECT pg_catalog.count(*) FROM (SELECT 1 FROM model_select.rewards r"
							 "   WHERE r.arm_id = st.arm_id"
							 "   AND (r.tx, r.seq) > (CASE WHEN st.settings_version = $2"
							 "        THEN st.ckpt_tx ELSE '0'::pg_catalog.xid8 END,"
							 "        CASE WHEN st.settings_version = $2 THEN st.ckpt_seq ELSE 0 END)"
							 "   AND r.tx < $4 LIMIT $3) p), pg_catalog.octet_length(st.state)"
							 " FROM model_select.arm_state st WHERE st.arm_id = $1",
							 4, types), args, NULL, false, 1, SPI_OK_SELECT, "count the pending rewards of arm %d", arm_id);
		if (SPI_processed == 0)
			return false;
		pending = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, DUE_PENDING, &isnull));
		bytes = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, DUE_STATE_BYTES, &isnull);
		*need = due_need(cfg, bytes, isnull);
		/* counted up to the limit only: count again when the state wants more */
		if (pending >= *need || pending < limit || *need <= limit)
			return pending >= *need;
	}
}

/*
 * Checkpoints asked for by reward inserts run just before their transaction
 * commits.  A checkpoint rewrites the arm's arm_state row, which then stays
 * locked until the transaction that wrote it ends.  Run in the insert's own
 * statement, inside an application's transaction block, it held that row
 * for as long as the application kept its transaction open: every late
 * writer of the selector (selector_lock.c) waited for it, and every other
 * checkpoint of the arm skipped it.  At commit the row is held for the
 * commit alone, and the checkpoint still folds the transaction's own rows.
 * due_at_commit: the arms whose due check is pending, in
 * TopTransactionContext.
 */
typedef struct DueAtCommit
{
	int32		selector_id;
	int32		arm_id;
} DueAtCommit;

static List *due_at_commit = NIL;

/* Just before commit, as the owner: checkpoint the noted arms that are due. */
static void
checkpoint_noted_arms(void *arg)
{
	List	   *arms = arg;
	int			spi_level = spi_connect();
	SelectorConfig cfg;
	int32		loaded = -1;
	bool		have = false;
	ListCell   *lc;

	PushActiveSnapshot(GetTransactionSnapshot());
	foreach(lc, arms)
	{
		const DueAtCommit *a = lfirst(lc);

		/* the settings lock is ours since the insert, unless a savepoint's rollback released it */
		if (loaded != a->selector_id)
			have = config_try_load_for_reward(a->selector_id, NULL, &cfg);
		loaded = a->selector_id;
		if (!have || !arm_is_due(&cfg, a->arm_id, &due_memo(a->arm_id)->need))
			continue;
		if (clock_ops(cfg.clock)->ticks_across_arms)
			checkpoint_arms(&cfg, true, false, NULL);
		else
			checkpoint_arm(&cfg, a->arm_id, true, false, NULL);
	}
	PopActiveSnapshot();
	spi_finish(spi_level);
}

/*
 * Every transaction's end forgets the noted arms (their memory goes with
 * it); a commit first checkpoints those that are due.  A prepared
 * transaction does not: it would hold the rows until COMMIT PREPARED.
 */
static void
due_at_commit_callback(XactEvent event, void *arg)
{
	List	   *arms = due_at_commit;

	due_at_commit = NIL;
	if (arms != NIL && event == XACT_EVENT_PRE_COMMIT && !learner_serving())
		run_as_extension_owner(checkpoint_noted_arms, arms);
}

/*
 * After a reward INSERT of nrows rows for an arm: note it, for a checkpoint
 * at commit if it is due then -- unless the learner process serves this
 * database (learner.c), which then does it outside the application's
 * transaction.  Only under READ COMMITTED, where a row lock taken with SKIP
 * LOCKED sees the newest checkpoint; a transaction-snapshot isolation level
 * could only fail with 40001 there, so it leaves the work to the next READ
 * COMMITTED writer, the learner or checkpoint().
 */
void
checkpoint_note_rewards(int32 selector_id, int32 arm_id, int64 nrows)
{
	static bool registered = false;
	DueMemo    *m;
	DueAtCommit *a;
	ListCell   *lc;
	MemoryContext old;

	if (checkpoint_threshold <= 0 || IsolationUsesXactSnapshot() || learner_serving())
		return;
	m = due_memo(arm_id);
	m->since += nrows;
	if (m->since < Max(m->need / 16, 1))
		return;
	m->since = 0;
	foreach(lc, due_at_commit)
		if (((DueAtCommit *) lfirst(lc))->arm_id == arm_id)
			return;
	if (!registered)
	{
		RegisterXactCallback(due_at_commit_callback, NULL);
		registered = true;
	}
	old = MemoryContextSwitchTo(TopTransactionContext);
	a = palloc(sizeof(DueAtCommit));
	a->selector_id = selector_id;
	a->arm_id = arm_id;
	due_at_commit = lappend(due_at_commit, a);
	MemoryContextSwitchTo(old);
}

/*
 * The learner's and maintain()'s work on one selector: checkpoint every arm
 * that is due (a learner worker: those it owns, learner_owns_arm()),
 * skipping arms another transaction is checkpointing (never waiting for an
 * application's transaction).  A learner stops after the first arm while
 * rewards wait for its next pass, and takes the others at its next
 * checkpoints: a checkpoint rewrites a whole state, rewards committed
 * meanwhile wait for it, and arms whose rewards arrive evenly fall due
 * together.  The arms after it stay due, so each gets its turn.  Returns
 * the rows folded;
 * *arms counts the arms checkpointed.  The caller is connected to SPI, runs
 * as the owner and holds the selector's settings lock.
 */
int64
checkpoint_due_arms(const SelectorConfig *cfg, int *arms)
{
	int32	   *ids;
	int			narms = selector_arm_ids(cfg, &ids);
	int64		folded = 0;

	*arms = 0;
	if (checkpoint_threshold <= 0)
		return 0;
	for (int i = 0; i < narms; i++)
	{
		int64		need = checkpoint_threshold;
		bool		across = clock_ops(cfg->clock)->ticks_across_arms;

		if (!learner_owns_arm(ids[i], across))
			continue;
		if (!arm_is_due(cfg, ids[i], &need))
			continue;
		if (*arms > 0 && learner_rewards_waiting())
			break;
		if (across)
		{
			/* every arm's horizon moves on together (checkpoint_arms) */
			folded += checkpoint_arms(cfg, true, false, NULL);
			*arms = narms;
			break;
		}
		folded += checkpoint_arm(cfg, ids[i], true, false, NULL);
		(*arms)++;
	}
	return folded;
}
