/*
 * retention.c — the reward log's horizon (see retention.h).
 *
 * Absorbing an arm (retention_pass(), run by maintain() and the learner
 * process, as the extension owner under the selector's settings lock):
 *   1. checkpoint the arm, skipping it when another transaction holds its
 *      checkpoint row, which then stays locked until we commit: every row up
 *      to the checkpoint's position P is final and folded (fold.h), and no
 *      checkpoint or rebuild of the arm runs alongside;
 *   2. fold the oldest rows onto the arm's base (read only now, under a
 *      new snapshot, fold_begin_base(): step 1's row lock orders this pass
 *      after every absorption of the arm that committed), in canonical
 *      order, in batches of ABSORB_BATCH, up to P and no further than the setting
 *      allows: a count keeps the arm's newest `retain` rows, an interval
 *      stops at the first row created since now() - retain (without
 *      retain, the horizon the selector's forgetting sets:
 *      clock_forget_horizon());
 *   3. delete exactly the rows folded, with their decisions, in the same
 *      statement per batch (a bounded DELETE that VACUUM keeps up with),
 *      and store the base.
 * One transaction: an immediate stop rolls all of it back, and concurrent
 * writers only add rows after P.  The checkpoint is untouched: it already
 * holds base + rows up to P, and readers fold only rows after it.
 *
 * The base is the fold of exactly the rows deleted, without a log position:
 * a restored log (whose rows get the restoring transaction's id, fold.h)
 * folds onto it the same.  rebuild_state() and every from-scratch
 * checkpoint start from it (checkpoint.c), readers too when an arm has no
 * checkpoint yet (a restore, routing/selector_load.c).  The fold of any
 * prefix is exact, whatever the policy, forgetting or clock: the base holds
 * what the state holds (sums, or the rows kept).  The selector's clock,
 * whose ticks count every arm's rows, absorbs a prefix of the selector's
 * log from every arm at once (absorb_selector()).
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"
#include "utils/xid8.h"

#include "learning/checkpoint.h"
#include "learning/arm_base.h"
#include "learning/clock.h"
#include "learning/retention.h"
#include "pg/spi_util.h"

/* Rows folded and deleted per statement, and most rows absorbed per arm and pass. */
#define ABSORB_BATCH 4096
#define ABSORB_MAX_PER_PASS (64 * ABSORB_BATCH)
/* Decisions deleted per statement, and most per selector and pass. */
#define EXPIRE_BATCH 4096
#define EXPIRE_MAX_PER_PASS (64 * EXPIRE_BATCH)

/*
 * What an arm keeps in its log: its newest `rows`, or its rows created in
 * the last `seconds` (0: no bound of that kind).  The setting retain, else
 * the horizon that forgetting sets (clock_forget_horizon()).
 */
typedef struct Horizon
{
	int32		rows;
	double		seconds;
	int64		least;			/* absorb an arm (on the selector's clock: the
								 * selector) only with this many rows to absorb */
} Horizon;

/*
 * cfg's horizon; false: the log keeps every row.  batched: the learner's
 * pass, which absorbs only ABSORB_BATCH rows or more at once, so that a
 * base (a pak_ucb one takes 22 MB at cap 2,000 and dimension 384) is not
 * rewritten every naptime for a few rows.
 */
static bool
retention_horizon(const SelectorConfig *cfg, bool batched, Horizon *h)
{
	h->least = batched ? ABSORB_BATCH : 1;
	h->rows = cfg->retain;
	h->seconds = cfg->retain_seconds;
	if (!RETAINS(cfg))
		clock_forget_horizon(cfg, &h->rows, &h->seconds);
	return h->rows > 0 || h->seconds > 0;
}

/*
 * Checkpoint the arm and keep its row locked (step 1); *held gets the
 * checkpoint's position.  False when another transaction holds the arm.
 */
static bool
absorb_hold(const SelectorConfig *cfg, int32 arm_id, LogPosition *held)
{
	static SPIPlanPtr plan = NULL;
	/* plan's columns */
	enum
	{
		HELD_SETTINGS_VERSION = 1,
		HELD_POSITION			/* CHECKPOINT_POSITION_COLUMNS from here */
	};
	Oid			types[1] = {INT4OID};
	Datum		args[1] = {Int32GetDatum(arm_id)};
	FoldTotals	unused;

	(void) checkpoint_arm(cfg, arm_id, true, false, NULL);
	/* ours now, or someone else's: then SKIP LOCKED finds nothing */
	spi_execute(spi_plan(&plan, "SELECT st.settings_version, " CHECKPOINT_POSITION_COLUMNS
						 " FROM model_select.arm_state st WHERE st.arm_id = $1 FOR UPDATE SKIP LOCKED",
						 1, types), args, NULL, false, 1, SPI_OK_SELECT, "lock the checkpoint of arm %d", arm_id);
	if (SPI_processed == 0 ||
		spi_int32(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, HELD_SETTINGS_VERSION) != cfg->settings_version)
		return false;
	checkpoint_position_from_row(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, HELD_POSITION, held, &unused);
	return true;
}

/*
 * Has the arm h->least rows up to limit to absorb (created before cutoff,
 * when keeping an interval)?
 */
static bool
absorb_enough(int32 arm_id, const Horizon *h, LogPosition limit, TimestampTz cutoff)
{
	static SPIPlanPtr plan = NULL;
	Oid			types[5] = {INT4OID, XID8OID, INT8OID, TIMESTAMPTZOID, INT8OID};
	Datum		args[5] = {Int32GetDatum(arm_id), FullTransactionIdGetDatum(limit.tx), Int64GetDatum(limit.seq),
		TimestampTzGetDatum(h->seconds > 0 ? cutoff : DT_NOEND), Int64GetDatum(h->least)};

	spi_execute(spi_plan(&plan, "SELECT pg_catalog.count(*) FROM (SELECT FROM model_select.rewards r"
						 " WHERE r.arm_id = $1 AND (r.tx, r.seq) <= ($2, $3) AND r.created_at < $4 LIMIT $5) c",
						 5, types), args, NULL, false, 1, SPI_OK_SELECT, "count the rewards of arm %d to absorb", arm_id);
	return spi_int64(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, SPI_SOLE_COLUMN) >= h->least;
}

/*
 * Hold the arm (absorb_hold); *limit gets the last row that may be
 * absorbed.  False when there is nothing to absorb, or another transaction
 * holds the arm.
 */
static bool
absorb_limit(const SelectorConfig *cfg, const Horizon *h, int32 arm_id, TimestampTz cutoff, LogPosition *limit)
{
	static SPIPlanPtr newest_plan = NULL;
	Oid			types[2] = {INT4OID, INT4OID};
	Datum		args[2] = {Int32GetDatum(arm_id), Int32GetDatum(h->rows)};
	LogPosition newest;

	if (!absorb_hold(cfg, arm_id, limit))
		return false;
	if (h->rows > 0)
	{
		/* a count: the newest row past the arm's newest `rows` */
		spi_execute(spi_plan(&newest_plan, "SELECT r.tx, r.seq FROM model_select.rewards r WHERE r.arm_id = $1"
							 " ORDER BY r.tx DESC, r.seq DESC OFFSET $2 LIMIT 1", 2, types),
					args, NULL, false, 1, SPI_OK_SELECT, "find the retained rewards of arm %d", arm_id);
		if (SPI_processed == 0)
			return false;
		newest = fold_row_position(SPI_tuptable, 0);
		if (log_position_cmp(newest, *limit) < 0)
			*limit = newest;
	}
	return h->least <= 1 || absorb_enough(arm_id, h, *limit, cutoff);
}

/*
 * Delete the arm's rows up to last (the n rows just folded) with their
 * decisions, in one statement; fewer or more rows than folded is an error,
 * which rolls the whole pass back.
 */
static void
absorb_delete(int32 arm_id, LogPosition last, uint64 n)
{
	static SPIPlanPtr plan = NULL;
	Oid			types[3] = {INT4OID, XID8OID, INT8OID};
	Datum		args[3] = {Int32GetDatum(arm_id), FullTransactionIdGetDatum(last.tx), Int64GetDatum(last.seq)};
	int64		deleted;

	spi_execute(spi_plan(&plan,
						 "WITH gone AS (DELETE FROM model_select.rewards r WHERE r.arm_id = $1"
						 "   AND (r.tx, r.seq) <= ($2, $3) RETURNING r.decision_id),"
						 " d AS (DELETE FROM model_select.decisions d USING gone"
						 "   WHERE d.decision_id = gone.decision_id)"
						 " SELECT pg_catalog.count(*) FROM gone", 3, types),
				args, NULL, false, 1, SPI_OK_SELECT, "delete the absorbed rewards of arm %d", arm_id);
	deleted = spi_int64(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, SPI_SOLE_COLUMN);
	if (deleted != (int64) n)
		elog(ERROR, "absorbing arm %d folded " UINT64_FORMAT " rewards but would delete " INT64_FORMAT,
			 arm_id, n, deleted);
}

/* Store f as the arm's base (step 3). */
static void
base_write(const SelectorConfig *cfg, int32 arm_id, const StateFold *f)
{
	static SPIPlanPtr plan = NULL;
	Oid			types[9] = {INT4OID, INT4OID, INT8OID, FLOAT8OID, FLOAT8OID, INT8OID, FLOAT8OID, INT8OID,
	BYTEAOID};
	Datum		args[9];
	char		nulls[10] = "         ";

	args[0] = Int32GetDatum(arm_id);
	args[1] = Int32GetDatum(cfg->selector_id);
	fold_totals_args(&f->totals, args + 2);
	args[8] = PointerGetDatum(f->st);
	nulls[8] = f->st != NULL ? ' ' : 'n';
	spi_execute(spi_plan(&plan,
						 "INSERT INTO model_select.arm_base AS b (arm_id, selector_id, n, reward_sum, cost_sum,"
						 " cost_n, spend_sum, spend_n, state) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)"
						 " ON CONFLICT (arm_id) DO UPDATE SET n = $3, reward_sum = $4, cost_sum = $5,"
						 " cost_n = $6, spend_sum = $7, spend_n = $8, state = $9, updated_at = pg_catalog.now()",
						 9, types), args, nulls, false, 0, SPI_OK_INSERT, "write the base of arm %d", arm_id);
}

/*
 * The rows of this batch to absorb: at most n of tt (FOLD_COLUMNS, then
 * created_at), stopping before the first one created at or after cutoff
 * when keeping an interval.
 */
static uint64
absorb_count(const Horizon *h, SPITupleTable *tt, uint64 n, TimestampTz cutoff)
{
	bool		isnull;

	if (h->seconds <= 0)
		return n;
	for (uint64 i = 0; i < n; i++)
		if (DatumGetTimestampTz(SPI_getbinval(tt->vals[i], tt->tupdesc, FOLD_COL_TICK, &isnull)) >= cutoff)
			return i;
	return n;
}

/*
 * Absorb one arm (steps 2 and 3); returns the rewards absorbed.  The base
 * is folded as a checkpoint folds (fold_some(): a state that grows with its
 * rows is built at once onto an empty base, and the time clock's rows are
 * ticked by created_at, the column after FOLD_COLUMNS), so that the arm's
 * checkpoint and the fold of its base and retained log agree.
 */
static int64
absorb_arm(const SelectorConfig *cfg, const Horizon *h, int32 arm_id, TimestampTz cutoff)
{
	static SPIPlanPtr plan = NULL;
	Oid			types[4] = {INT4OID, XID8OID, INT8OID, INT4OID};
	Datum		args[4];
	LogPosition limit;
	StateFold	f;
	int64		absorbed = 0;

	if (!absorb_limit(cfg, h, arm_id, cutoff, &limit))
		return 0;
	fold_begin_base(&f, cfg, arm_id);
	args[0] = Int32GetDatum(arm_id);
	args[1] = FullTransactionIdGetDatum(limit.tx);
	args[2] = Int64GetDatum(limit.seq);
	args[3] = Int32GetDatum(ABSORB_BATCH);
	while (absorbed < ABSORB_MAX_PER_PASS)
	{
		uint64		n;

		/* the oldest rows: those of earlier batches are gone */
		spi_execute(spi_plan(&plan, "SELECT " FOLD_COLUMNS ", r.created_at FROM model_select.rewards r"
							 " WHERE r.arm_id = $1 AND (r.tx, r.seq) <= ($2, $3) ORDER BY r.tx, r.seq LIMIT $4",
							 4, types), args, NULL, false, 0, SPI_OK_SELECT,
					"read the rewards of arm %d to absorb", arm_id);
		n = absorb_count(h, SPI_tuptable, SPI_processed, cutoff);
		if (n == 0)
			break;
		fold_some(&f, SPI_tuptable, 0, n, false);
		absorb_delete(arm_id, f.pos, n);
		absorbed += (int64) n;
		if (n < ABSORB_BATCH)
			break;
	}
	if (absorbed > 0)
		base_write(cfg, arm_id, &f);
	return absorbed;
}

/*
 * The selector's clock (clock.c) ticks every arm's rows: a pass absorbs a
 * prefix of the selector's log from every arm at once, or nothing.  It
 * holds every arm, checkpointed up to the final horizon taken first, and
 * absorbs no further than it (clock_absorb_cut(): readers tick from the
 * arms' checkpoints); each arm's base then stands for the prefix and counts
 * its rows (clock_base_rewind()), from which the retained log ticks on.
 * A count keeps the selector's newest rows.
 */
static int64
absorb_selector(const SelectorConfig *cfg, const Horizon *h, int narms, const int32 *ids, TimestampTz cutoff)
{
	FullTransactionId below = final_horizon_for(cfg);
	LogPosition end;
	StateFold  *folds;
	int64	   *folded;
	int64		absorbed = 0;

	for (int i = 0; i < narms; i++)
		if (!absorb_hold(cfg, ids[i], &end))
			return 0;
	if (!clock_absorb_cut(clock_arm_ids(cfg->selector_id), below, h->rows, h->seconds, cutoff,
						  h->least, ABSORB_MAX_PER_PASS, &end))
		return 0;
	/* every fold ticks the whole prefix: delete only once all are folded */
	folds = palloc(sizeof(StateFold) * narms);
	folded = palloc(sizeof(int64) * narms);
	for (int i = 0; i < narms; i++)
	{
		fold_begin_base(&folds[i], cfg, ids[i]);
		folded[i] = clock_fold_before(&folds[i], ids[i], end);
	}
	for (int i = 0; i < narms; i++)
	{
		if (folded[i] > 0)
			absorb_delete(ids[i], folds[i].pos, folded[i]);
		clock_base_rewind(folds[i].st);
		base_write(cfg, ids[i], &folds[i]);
		MemoryContextDelete(folds[i].cxt);
		absorbed += folded[i];
	}
	return absorbed;
}

/*
 * Where a selector's expiry scans begin (per process).  A pass deletes the
 * decisions created before its cutoff (now() − decision_ttl) that have no
 * reward; those it keeps have a reward and never expire (a reward leaves
 * the log only with its decision, retention's step 3).  So the next pass of
 * the same process scans only from that cutoff on: a full scan read every
 * rewarded decision of the log again at every checkpointing pass (45 ms
 * with 100,000 of them, at each naptime of the learner).  A decision that
 * becomes visible with an older created_at (a transaction open across a
 * pass, a prepared one, a restore, a row a concurrent reward held locked,
 * a pass whose transaction rolled back) is left to the next full scan, at least once per min(decision_ttl,
 * EXPIRE_FULL_SCAN_EVERY) and at a process's first pass.
 */
typedef struct ExpireMark
{
	int32		selector_id;	/* the key */
	TimestampTz scanned_to;		/* the last complete pass's cutoff */
	TimestampTz full_scan_at;	/* the last complete full scan's time */
} ExpireMark;

#define EXPIRE_FULL_SCAN_EVERY ((int64) 3600 * USECS_PER_SEC)

static HTAB *expire_marks = NULL;

static ExpireMark *
expire_mark(int32 selector_id)
{
	bool		found;
	ExpireMark *mark;

	if (expire_marks == NULL)
	{
		HASHCTL		ctl;

		ctl.keysize = sizeof(int32);
		ctl.entrysize = sizeof(ExpireMark);
		expire_marks = hash_create("model_select expiry scans", 16, &ctl, HASH_ELEM | HASH_BLOBS);
	}
	mark = hash_search(expire_marks, &selector_id, HASH_ENTER, &found);
	if (!found)
	{
		mark->scanned_to = DT_NOBEGIN;
		mark->full_scan_at = DT_NOBEGIN;
	}
	return mark;
}

/* Delete the selector's decisions older than decision_ttl that have no reward. */
static int64
expire_decisions(const SelectorConfig *cfg)
{
	static SPIPlanPtr plan = NULL;
	TimestampTz now = GetCurrentTransactionStartTimestamp();
	int64		ttl = (int64) (cfg->decision_ttl * USECS_PER_SEC);
	TimestampTz cutoff = now - ttl;
	ExpireMark *mark = expire_mark(cfg->selector_id);
	bool		full = mark->full_scan_at == DT_NOBEGIN ||
		now - mark->full_scan_at >= Min(ttl, EXPIRE_FULL_SCAN_EVERY);
	Oid			types[4] = {INT4OID, TIMESTAMPTZOID, TIMESTAMPTZOID, INT4OID};
	Datum		args[4] = {Int32GetDatum(cfg->selector_id),
		TimestampTzGetDatum(full ? DT_NOBEGIN : mark->scanned_to), TimestampTzGetDatum(cutoff),
	Int32GetDatum(EXPIRE_BATCH)};
	int64		expired = 0;
	bool		complete = false;

	while (expired < EXPIRE_MAX_PER_PASS)
	{
		/* a decision a reward insert is checking (its foreign key) is skipped */
		spi_execute(spi_plan(&plan,
							 "WITH doomed AS (SELECT d.decision_id FROM model_select.decisions d"
							 "   WHERE d.selector_id = $1"
							 "   AND d.created_at >= $2 AND d.created_at < $3"
							 "   AND NOT EXISTS (SELECT FROM model_select.rewards r"
							 "                   WHERE r.decision_id = d.decision_id)"
							 "   LIMIT $4 FOR UPDATE SKIP LOCKED)"
							 " DELETE FROM model_select.decisions d USING doomed"
							 " WHERE d.decision_id = doomed.decision_id", 4, types),
					args, NULL, false, 0, SPI_OK_DELETE, "expire the decisions of selector %d",
					cfg->selector_id);
		expired += (int64) SPI_processed;
		if (SPI_processed < EXPIRE_BATCH)
		{
			complete = true;
			break;
		}
	}
	/* only a pass that found every expired decision of its range moves the mark */
	if (complete)
	{
		mark->scanned_to = cutoff;
		if (full)
			mark->full_scan_at = now;
	}
	return expired;
}

/*
 * The selector's retention work now: absorb every arm past its horizon
 * ("retain", else what its forgetting can no longer count), expire
 * decisions past "decision_ttl".  The caller is connected to SPI, runs as
 * the owner and holds the selector's settings lock.
 */
void
retention_pass(const SelectorConfig *cfg, bool batched)
{
	int64		absorbed = 0;
	int64		expired = 0;
	Horizon		h;

	if (retention_horizon(cfg, batched, &h))
	{
		int32	   *ids;
		int			narms = selector_arm_ids(cfg, &ids);
		TimestampTz cutoff = GetCurrentTransactionStartTimestamp() -
			(TimestampTz) (h.seconds * USECS_PER_SEC);

		if (clock_ops(cfg->clock)->ticks_across_arms)
			absorbed = absorb_selector(cfg, &h, narms, ids, cutoff);
		else
			for (int i = 0; i < narms; i++)
				absorbed += absorb_arm(cfg, &h, ids[i], cutoff);
	}
	if (cfg->decision_ttl > 0)
		expired = expire_decisions(cfg);
	if (absorbed > 0 || expired > 0)
		elog(DEBUG1, "model_select: selector %d absorbed " INT64_FORMAT " rewards, expired " INT64_FORMAT " decisions",
			 cfg->selector_id, absorbed, expired);
}
