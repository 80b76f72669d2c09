/*
 * checkpoint_due.c — when an arm is due for a checkpoint (checkpoint.c
 * writes it): after a reward INSERT (checkpoint_if_due) and at the
 * learner's and maintain()'s passes (checkpoint_due_arms).
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "utils/hsearch.h"
#include "utils/memutils.h"
#include "utils/xid8.h"

#include "model/catalog.h"
#include "model/clock_ops.h"
#include "model/registry.h"
#include "learning/checkpoint.h"
#include "learning/fold.h"
#include "learning/learner_state.h"
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
		*need = checkpoint_threshold;
		if (!isnull && !policy_ops(cfg->policy)->keeps_rows)
			*need = Max(*need, CHECKPOINT_LOG_RATIO * (int64) DatumGetInt32(bytes) /
						LOG_ROW_BYTES(cfg->dim) + 1);
		/* counted up to the limit only: count again when the state wants more */
		if (pending >= *need || pending < limit || *need <= limit)
			return pending >= *need;
	}
}

/*
 * After a reward INSERT of nrows rows for an arm: checkpoint it if it is
 * due -- unless the learner process serves this database (learner.c), which
 * then does it outside the application's transaction.  Only under READ
 * COMMITTED, where a row lock taken with SKIP LOCKED sees the newest
 * checkpoint; a transaction-snapshot isolation level could only fail with
 * 40001 here, so it leaves the work to the next READ COMMITTED writer, the
 * learner or checkpoint().
 */
void
checkpoint_if_due(const SelectorConfig *cfg, int32 arm_id, int64 nrows)
{
	DueMemo    *m;

	if (checkpoint_threshold <= 0 || IsolationUsesXactSnapshot() || learner_serving())
		return;
	m = due_memo(arm_id);
	m->since += nrows;
	if (m->since < Max(m->need / 16, 1))
		return;
	m->since = 0;
	if (!arm_is_due(cfg, arm_id, &m->need))
		return;
	if (clock_ops(cfg->clock)->ticks_across_arms)
		checkpoint_arms(cfg, true, false, NULL);
	else
		checkpoint_arm(cfg, arm_id, true, false, NULL);
}

/* The columns of due_rows()'s query. */
enum
{
	DUE_ARM_ID = 1,
	DUE_HAS_ROW,
	DUE_VERSION,
	DUE_XMIN,
	DUE_SETTINGS_VERSION,
	DUE_N,
	DUE_BYTES
};

/*
 * Is arm row `row` of due_rows()'s query due, by the rows this backend's arm
 * cache folded after its checkpoint (the learner folds every final row to
 * publish it: those are final pending rows)?  -1 when the cache holds no
 * fold of that checkpoint (a growing or clocked state, or none kept): then
 * they are counted (arm_is_due).  It may see fewer than a count would (rows
 * not folded yet): the arm is then due at the next pass.
 */
static int
arm_due_cached(const SelectorConfig *cfg, HeapTuple row, TupleDesc desc)
{
	const StateFold *cached;
	bool		isnull;
	int64		need = checkpoint_threshold;
	Datum		bytes;

	if (checkpoint_base_lookup == NULL || clock_ops(cfg->clock)->ages ||
		clock_ops(cfg->clock)->ticks_across_arms || policy_ops(cfg->policy)->keeps_rows ||
		!DatumGetBool(SPI_getbinval(row, desc, DUE_HAS_ROW, &isnull)) ||
		spi_int32(row, desc, DUE_SETTINGS_VERSION) != cfg->settings_version)
		return -1;
	cached = checkpoint_base_lookup(spi_int32(row, desc, DUE_ARM_ID), cfg->settings_version,
									spi_int64(row, desc, DUE_VERSION), spi_int64(row, desc, DUE_XMIN));
	if (cached == NULL)
		return -1;
	bytes = SPI_getbinval(row, desc, DUE_BYTES, &isnull);
	if (!isnull)
		need = Max(need, CHECKPOINT_LOG_RATIO * (int64) DatumGetInt32(bytes) / LOG_ROW_BYTES(cfg->dim) + 1);
	return cached->totals.n - spi_int64(row, desc, DUE_N) >= need;
}

/* The selector's arms in arm_id order with their checkpoint rows, for arm_due_cached(). */
static SPITupleTable *
due_rows(const SelectorConfig *cfg)
{
	static SPIPlanPtr plan = NULL;
	Oid			types[1] = {INT4OID};
	Datum		args[1] = {Int32GetDatum(cfg->selector_id)};

	spi_execute(spi_plan(&plan,
						 "SELECT a.arm_id, st.arm_id IS NOT NULL, st.version, st.xmin::text::bigint,"
						 " st.settings_version, st.n, pg_catalog.octet_length(st.state)"
						 " FROM model_select.arms a LEFT JOIN model_select.arm_state st USING (arm_id)"
						 " WHERE a.selector_id = $1 ORDER BY a.arm_id",
						 1, types), args, NULL, true, 0, SPI_OK_SELECT,
				"read the checkpoints of selector %d", cfg->selector_id);
	return SPI_tuptable;
}

/*
 * The learner's and maintain()'s work on one selector: checkpoint every arm
 * that is due, skipping arms another transaction is checkpointing (never
 * waiting for an application's transaction).  With by_cache (the learner,
 * which folds every final row at each pass), an arm whose checkpoint its
 * cache folded on from is judged by the rows it folded: no count per arm and
 * pass; else its pending rows are counted.
 * Returns the rows folded; *arms counts the arms checkpointed.  The caller
 * is connected to SPI, runs as the owner and holds the selector's settings
 * lock.
 */
int64
checkpoint_due_arms(const SelectorConfig *cfg, bool by_cache, int *arms)
{
	SPITupleTable *rows;
	int			narms;
	int32	   *ids;
	int		   *due;
	int64		folded = 0;

	*arms = 0;
	if (checkpoint_threshold <= 0)
		return 0;
	rows = due_rows(cfg);
	narms = (int) rows->numvals;
	ids = palloc(sizeof(int32) * Max(narms, 1));
	due = palloc(sizeof(int) * Max(narms, 1));
	for (int i = 0; i < narms; i++)
	{
		ids[i] = spi_int32(rows->vals[i], rows->tupdesc, DUE_ARM_ID);
		due[i] = by_cache ? arm_due_cached(cfg, rows->vals[i], rows->tupdesc) : -1;
	}
	SPI_freetuptable(rows);
	for (int i = 0; i < narms; i++)
	{
		int64		need = checkpoint_threshold;

		if (due[i] == 0 || (due[i] < 0 && !arm_is_due(cfg, ids[i], &need)))
			continue;
		if (clock_ops(cfg->clock)->ticks_across_arms)
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
