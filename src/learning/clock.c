/*
 * clock.c — forgetting on the selector's clock ("clock": "selector").
 *
 * With the arm's clock (the default) window, discount and restart_every
 * count an arm's own rewards, so an arm that is not chosen never forgets.
 * On the selector's clock they count the rewards of every arm: each reward
 * row gets a tick, its position (1, 2, …) in the selector's log in canonical
 * order (tx, seq), and "now" is the number of the selector's rewards a
 * reader's snapshot sees (in replay(), the rounds played).  At now an arm's
 * model is built from its rows that still count:
 *
 *   window W         rows with tick > now − W
 *   discount γ       every row, weighted γ^(now − tick) (rows whose weight
 *                    fell below 1e-6 are dropped, as pak_ucb's are)
 *   restart_every R  rows with ⌊(tick − 1)/R⌋ = ⌊(now − 1)/R⌋
 *
 * Ticks grow along an arm's log, so the rows that count are always a suffix
 * of the rows it keeps, and a row that stops counting never counts again.
 *
 * The state (layout variant FORGET_CLOCK) therefore keeps rows, not a
 * factor: body = [Q, C, ticks[n], r[n], X[n][dim]], the rows that may still
 * count, with Q a position in the selector's log (tx and seq, their
 * bits in two float8 slots) up to which every row of the arm is in the
 * state, and C the number of the selector's rows up to Q.  A checkpoint
 * moves Q to the last row below its final horizon (fold.h): positions there
 * never change, so a reader counts only the selector's rows after the
 * oldest Q of its arms to tick their pending rows, and a checkpoint only
 * those since its previous Q.  The policy's model is built from scratch at each now
 * (PolicyOps.build_weighted) and decoded: as the state is the rows
 * themselves, a fold from scratch (rebuild_state) and one row at a time
 * agree exactly, and every reader, checkpoint and replay builds the same
 * model from the same rows.  Retention (retention.c, clock_horizon.c)
 * deletes a prefix of the selector's log at once, below every arm's Q, and
 * leaves in each arm's base Q at the log's start and C the rows deleted:
 * the retained log ticks on from C, and so does an arm without a state of
 * its own (clock_origin()).
 *
 * On the time clock ("clock": "time") ticks are seconds since the Unix
 * epoch: a row's tick is the latest created_at among its arm's rows up to
 * it in canonical order (a row older than one before it counts as of that
 * one's time), so ticks depend on the arm's own rows only and never fall
 * along its log.  Now is the transaction's timestamp (now()); an arm is
 * evaluated at e = max(now, its newest tick), under half_life at now
 * rounded down to a multiple of half_life/256 first.  Window, half_life and
 * restart_every are seconds, and
 *
 *   window W         rows with tick > e − W
 *   half_life h      weight γ^(e − tick), γ = 2^(−1/h) (dropped below 1e-6)
 *   restart_every R  rows with ⌊tick/R⌋ = ⌊e/R⌋ (periods from the epoch)
 *
 * with at most cap rows per arm.  There is no Q or C (both 0).  The model
 * at e depends only on which rows count and, under half_life, on e:
 * clock_key() says which, so a cached model is reused while its key holds.
 */
#include "postgres.h"

#include <math.h>

#include "access/xact.h"
#include "catalog/pg_type.h"
#include "utils/array.h"
#include "utils/datum.h"
#include "utils/timestamp.h"
#include "utils/xid8.h"

#include "pg/spi_util.h"
#include "learning/clock.h"
#include "learning/fold.h"
#include "model/clock_state.h"
#include "model/registry.h"

/* Rows fetched per round trip by a checkpoint's fold. */
#define CLOCK_BATCH 4096

/* Under half_life the time clock evaluates at multiples of half_life / this. */
#define HALF_LIFE_STEPS 256

/*
 * Does a row of this tick still count at now (>= tick)?  Once it does not,
 * it never will again: the rows that count are a suffix of an arm's.
 */
static bool
clock_counts(const SelectorConfig *cfg, double tick, double now)
{
	/* the selector's ticks start at 1, the time clock's periods at the epoch */
	double		start = cfg->clock == CLOCK_TIME ? 0 : 1;

	if (cfg->window > 0)
		return tick > now - cfg->window;
	if (cfg->restart_every > 0)
		return floor((tick - start) / cfg->restart_every) == floor((now - start) / cfg->restart_every);
	return now - tick < discount_horizon(cfg);
}

/* The first of st's rows that still counts at now (a binary search). */
static int
clock_first_counting(const SelectorConfig *cfg, const StateHeader *st, double now)
{
	int			lo = 0,
				hi = st->n;

	while (lo < hi)
	{
		int			mid = lo + (hi - lo) / 2;

		if (clock_counts(cfg, CLOCK_TICKS(st)[mid], now))
			hi = mid;
		else
			lo = mid + 1;
	}
	return lo;
}

/*
 * What the model of st at now depends on: the first row that counts and,
 * under a discount, the time the weights are taken at (see the head
 * comment for the time clock's).
 */
void
clock_key(const SelectorConfig *cfg, const StateHeader *st, double now, ClockKey *key)
{
	double		at = now;

	if (cfg->clock == CLOCK_TIME && cfg->half_life > 0)
	{
		double		step = cfg->half_life / HALF_LIFE_STEPS;

		at = floor(now / step) * step;
	}
	if (cfg->clock == CLOCK_TIME && st->n > 0)
		at = Max(at, CLOCK_TICKS(st)[st->n - 1]);
	key->first = clock_first_counting(cfg, st, at);
	key->at = cfg->discount < 1 ? at : 0;
}

bool
clock_key_equal(const ClockKey *a, const ClockKey *b)
{
	return a->first == b->first && a->at == b->at;
}

/* The position Q and the count C of the selector's rows up to it (see above). */
void
clock_base(const StateHeader *st, LogPosition *q, double *count)
{
	uint64		tx = 0;

	*q = LOG_START;
	*count = 0;
	if (st != NULL)
	{
		memcpy(&tx, STATE_BODY(st), sizeof(tx));
		memcpy(&q->seq, STATE_BODY(st) + 1, sizeof(q->seq));
		*count = STATE_BODY(st)[2];
	}
	q->tx = FullTransactionIdFromU64(tx);
}

static void
clock_set_base(StateHeader *st, LogPosition q, double count)
{
	uint64		tx = U64FromFullTransactionId(q.tx);

	memcpy(STATE_BODY(st), &tx, sizeof(tx));
	memcpy(STATE_BODY(st) + 1, &q.seq, sizeof(q.seq));
	STATE_BODY(st)[2] = count;
}

/*
 * An arm's base on the selector's clock (retention.c) stands for a prefix
 * of the selector's log, absorbed from every arm at once: its Q is the
 * log's start (the rows after it are the retained log, whatever ids a
 * restore gives them) and its C the selector's rows absorbed.
 */
void
clock_base_rewind(StateHeader *st)
{
	LogPosition q;
	double		count;

	clock_base(st, &q, &count);
	clock_set_base(st, LOG_START, count);
}

/*
 * old (NULL: empty) with the row (x, r) of this tick, without the rows that
 * no longer count at it (they never will again): a new state.
 */
StateHeader *
clock_append(const SelectorConfig *cfg, const StateHeader *old, const double *x, double r,
			 double tick)
{
	int			n = old ? old->n : 0;
	int			first;
	int			keep;
	StateHeader *st;

	/* time: a row older than the arm's newest counts as of that one's time */
	if (n > 0 && cfg->clock == CLOCK_TIME)
		tick = Max(tick, CLOCK_TICKS(old)[n - 1]);
	if (n > 0 && !(tick > CLOCK_TICKS(old)[n - 1] ||
				   (cfg->clock == CLOCK_TIME && tick == CLOCK_TICKS(old)[n - 1])))
		elog(ERROR, "clocked reward rows out of order: tick %.0f after %.0f",
			 tick, CLOCK_TICKS(old)[n - 1]);
	first = old ? clock_first_counting(cfg, old, tick) : 0;
	first = Max(first, n + 1 - clock_max_rows(cfg));
	keep = n - first;
	st = state_alloc(cfg, keep + 1, clock_body_size(cfg, keep + 1));
	if (old != NULL)
		memcpy(STATE_BODY(st), STATE_BODY(old), sizeof(double) * CLOCK_HEAD);
	if (keep > 0)
	{
		memcpy(CLOCK_TICKS(st), CLOCK_TICKS(old) + first, sizeof(double) * keep);
		memcpy(CLOCK_REWARDS(st), CLOCK_REWARDS(old) + first, sizeof(double) * keep);
		memcpy(CLOCK_X(st), CLOCK_X(old) + (Size) first * cfg->dim,
			   sizeof(double) * keep * cfg->dim);
	}
	CLOCK_TICKS(st)[keep] = tick;
	CLOCK_REWARDS(st)[keep] = r;
	memcpy(CLOCK_X(st) + (Size) keep * cfg->dim, x, sizeof(double) * cfg->dim);
	return st;
}

/*
 * The model of a clocked state at its key (clock_key), in the current
 * memory context: the policy's state built from the rows that count,
 * weighted γ^(at − tick) under a discount, decoded under the same settings
 * without window, restart or clock (scoring reads none of those).  NULL: no
 * row counts.
 */
ArmModel *
clock_decode_at(const SelectorConfig *cfg, const StateHeader *st, const ClockKey *key)
{
	const PolicyOps *ops = policy_ops(cfg->policy);
	SelectorConfig *plain;
	int			first = key->first;
	int			k = st->n - first;
	double	   *w = NULL;
	StateHeader *built;

	if (k == 0)
		return NULL;
	if (ops->build_weighted == NULL)
		elog(ERROR, "policy %s has no weighted build", ops->name);
	/* in the model's context, should a policy's model ever keep its cfg */
	plain = palloc(sizeof(SelectorConfig));
	*plain = *cfg;
	plain->window = 0;
	plain->restart_every = 0;
	plain->clock = CLOCK_ARM;
	if (cfg->discount < 1)
	{
		w = palloc(sizeof(double) * k);
		for (int i = 0; i < k; i++)
			w[i] = pow(cfg->discount, key->at - CLOCK_TICKS(st)[first + i]);
	}
	built = ops->build_weighted(plain, k, CLOCK_X(st) + (Size) first * cfg->dim,
								CLOCK_REWARDS(st) + first, w);
	return ops->decode(plain, built);
}

/* The model of a clocked state at now (clock_decode_at). */
ArmModel *
clock_decode(const SelectorConfig *cfg, const StateHeader *st, double now)
{
	ClockKey	key;

	clock_key(cfg, st, now, &key);
	return clock_decode_at(cfg, st, &key);
}

/*
 * A timestamp in seconds since the Unix epoch: the time clock's ticks.
 * ±infinity has none (22008): a reward there would stop every row of its
 * arm from counting, or never count.
 */
double
clock_seconds(TimestampTz t)
{
	if (TIMESTAMP_NOT_FINITE(t))
		ereport(ERROR,
				(errcode(ERRCODE_DATETIME_FIELD_OVERFLOW),
				 errmsg("a reward's created_at must be finite on the time clock")));
	return (double) (t + (POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE) * USECS_PER_DAY) / USECS_PER_SEC;
}

/*
 * The time clock's now: the transaction's timestamp (now(), the default
 * created_at), so that a transaction sees one model throughout and its own
 * rewards are 0 seconds old.
 */
double
clock_now(void)
{
	return clock_seconds(GetCurrentTransactionStartTimestamp());
}

/*
 * Row `row`'s tick as the query gives it (CLOCK_TICK_COLUMN): the
 * selector's count, or created_at on the time clock (clock_append makes it
 * the arm's running latest).
 */
double
clock_row_tick(const SelectorConfig *cfg, SPITupleTable *tt, uint64 row)
{
	bool		isnull;
	Datum		tick = SPI_getbinval(tt->vals[row], tt->tupdesc, CLOCK_TICK_COLUMN, &isnull);

	return cfg->clock == CLOCK_TIME ? clock_seconds(DatumGetTimestampTz(tick)) : DatumGetFloat8(tick);
}

/* The ids of a selector's arms, as an int4[] valid until SPI_finish. */
Datum
clock_arm_ids(int32 selector_id)
{
	static SPIPlanPtr plan = NULL;
	Oid			types[1] = {INT4OID};
	Datum		args[1] = {Int32GetDatum(selector_id)};
	bool		isnull;
	Datum		ids;

	spi_execute(spi_plan(&plan, "SELECT COALESCE(pg_catalog.array_agg(arm_id ORDER BY arm_id),"
						 " '{}'::pg_catalog.int4[]) FROM model_select.arms WHERE selector_id = $1", 1, types),
				args, NULL, true, 1, SPI_OK_SELECT, "read the arms of selector %d", selector_id);
	ids = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
	return datumCopy(ids, false, -1);
}

/*
 * A checkpoint's fold of a clocked arm: the selector's rows after the
 * state's Q below `below` (final), ticked by their positions, of which the
 * arm's after f->pos are folded; Q then moves to the last of them.
 * Returns the rows folded.  The caller is connected to SPI.
 */
int64
clock_fold_log(StateFold *f, int32 arm_id, FullTransactionId below)
{
	return clock_fold_before(f, arm_id, (LogPosition) {below, 0});
}

/* clock_fold_log of the rows before end (final), a position (retention.c). */
int64
clock_fold_before(StateFold *f, int32 arm_id, LogPosition end)
{
	static SPIPlanPtr plan = NULL;
	Oid			types[6] = {INT4ARRAYOID, XID8OID, INT8OID, XID8OID, FLOAT8OID, INT8OID};
	Datum		args[6];
	LogPosition q;
	double		count;
	Portal		portal;
	int64		before = f->totals.n;

	args[0] = clock_arm_ids(f->cfg->selector_id);
	if (f->st == NULL)
	{
		MemoryContext old = MemoryContextSwitchTo(f->cxt);

		f->st = state_alloc(f->cfg, 0, clock_body_size(f->cfg, 0));
		MemoryContextSwitchTo(old);
		clock_set_base(f->st, LOG_START, clock_origin(args[0]));
	}
	clock_base(f->st, &q, &count);
	args[1] = FullTransactionIdGetDatum(q.tx);
	args[2] = Int64GetDatum(q.seq);
	args[3] = FullTransactionIdGetDatum(end.tx);
	args[4] = Float8GetDatum(count);
	args[5] = Int64GetDatum(end.seq);
	portal = SPI_cursor_open(NULL,
							 spi_plan(&plan,
									  "SELECT " FOLD_COLUMNS ", ($5 + pg_catalog.row_number() OVER"
									  " (ORDER BY r.tx, r.seq))::float8, r.arm_id"
									  " FROM model_select.rewards r WHERE r.arm_id = ANY ($1)"
									  " AND r.tx >= $2 AND (r.tx, r.seq) > ($2, $3) AND (r.tx, r.seq) < ($4, $6)"
									  " ORDER BY r.tx, r.seq", 6, types),
							 args, NULL, false);
	for (;;)
	{
		uint64		run = 0;

		SPI_cursor_fetch(portal, true, CLOCK_BATCH);
		if (SPI_processed == 0)
			break;
		count += (double) SPI_processed;
		q = fold_row_position(SPI_tuptable, SPI_processed - 1);
		/* fold the arm's rows after f->pos, in runs */
		for (uint64 i = 0; i <= SPI_processed; i++)
		{
			bool		mine = i < SPI_processed &&
				spi_int32(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, CLOCK_TICK_COLUMN + 1) == arm_id &&
				log_position_cmp(fold_row_position(SPI_tuptable, i), f->pos) > 0;

			if (!mine)
			{
				if (i > run)
					fold_rows(f, SPI_tuptable, run, i);
				run = i + 1;
			}
		}
		SPI_freetuptable(SPI_tuptable);
	}
	SPI_cursor_close(portal);
	clock_set_base(f->st, q, count);
	return f->totals.n - before;
}

/*
 * A time-clocked reader's rows (clock_rows_after): each arm's visible rows
 * after its position with created_at as the tick; args are the arms' ids,
 * txs and seqs.
 */
static SPITupleTable *
clock_time_rows_after(Datum *args)
{
	static SPIPlanPtr plan = NULL;

	spi_execute(spi_plan(&plan,
						 "SELECT " FOLD_COLUMNS ", r.created_at, b.i"
						 " FROM unnest($1, $2, $3) WITH ORDINALITY AS b(arm_id, tx, seq, i)"
						 " CROSS JOIN LATERAL (SELECT " FOLD_COLUMNS ", r.created_at"
						 "   FROM model_select.rewards r"
						 "   WHERE r.arm_id = b.arm_id AND (r.tx, r.seq) > (b.tx, b.seq)"
						 "   ORDER BY r.tx, r.seq) r"
						 " ORDER BY b.i, r.tx, r.seq",
						 3, (Oid[]) {INT4ARRAYOID, XID8ARRAYOID, INT8ARRAYOID}),
				args, NULL, true, 0, SPI_OK_SELECT, "read the pending rewards");
	return SPI_tuptable;
}

/*
 * A reader's rows: for each of narms arms (ids, the positions of their
 * bases and the bases' states, NULL: none) the visible rows after its
 * position (FOLD_COLUMNS, the tick, then the arm's index + 1), ordered by
 * arm index then canonical order.  On the selector's clock they are ticked
 * by counting the selector's rows after the oldest base's Q, and *now gets
 * the selector's clock as the snapshot sees it; on the time clock the tick
 * is created_at and *now clock_now().  The table stays valid until
 * SPI_finish.
 */
SPITupleTable *
clock_rows_after(ClockKind clock, int narms, const int32 *arm_ids, const LogPosition *pos,
				 StateHeader *const *bases, double *now)
{
	static SPIPlanPtr count_plan = NULL;
	static SPIPlanPtr rows_plan = NULL;
	Oid			types[6] = {INT4ARRAYOID, XID8ARRAYOID, INT8ARRAYOID, XID8OID, INT8OID, FLOAT8OID};
	Datum	   *ids = palloc(sizeof(Datum) * Max(narms, 1));
	Datum	   *txs = palloc(sizeof(Datum) * Max(narms, 1));
	Datum	   *seqs = palloc(sizeof(Datum) * Max(narms, 1));
	Datum		args[6];
	LogPosition start = LOG_START;
	double		count = 0;
	bool		isnull;
	bool		unbased = false;	/* an arm without a state */

	for (int i = 0; i < narms; i++)
	{
		LogPosition q;
		double		c;

		clock_base(bases[i], &q, &c);
		unbased |= bases[i] == NULL;
		if (i == 0 || log_position_cmp(q, start) < 0)
		{
			start = q;
			count = c;
		}
		ids[i] = Int32GetDatum(arm_ids[i]);
		txs[i] = FullTransactionIdGetDatum(pos[i].tx);
		seqs[i] = Int64GetDatum(pos[i].seq);
	}
	args[0] = PointerGetDatum(construct_array(ids, narms, INT4OID, 4, true, TYPALIGN_INT));
	args[1] = PointerGetDatum(construct_array(txs, narms, XID8OID, 8, FLOAT8PASSBYVAL,
											  TYPALIGN_DOUBLE));
	args[2] = PointerGetDatum(construct_array(seqs, narms, INT8OID, 8, FLOAT8PASSBYVAL,
											  TYPALIGN_DOUBLE));
	if (clock == CLOCK_TIME)
	{
		*now = clock_now();
		return clock_time_rows_after(args);
	}
	if (unbased)
		count = clock_origin(args[0]);	/* start is the log's start */
	args[3] = FullTransactionIdGetDatum(start.tx);
	args[4] = Int64GetDatum(start.seq);
	args[5] = Float8GetDatum(count);
	spi_execute(spi_plan(&count_plan, "SELECT pg_catalog.count(*) FROM model_select.rewards r"
						 " WHERE r.arm_id = ANY ($1) AND r.tx >= $2 AND (r.tx, r.seq) > ($2, $3)",
						 3, (Oid[]) {INT4ARRAYOID, XID8OID, INT8OID}),
				(Datum[]) {args[0], args[3], args[4]}, NULL, true, 1, SPI_OK_SELECT,
				"count the selector's pending rewards");
	*now = count + (double) DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0],
														SPI_tuptable->tupdesc, 1, &isnull));
	spi_execute(spi_plan(&rows_plan,
						 "SELECT " FOLD_COLUMNS ", r.tick, b.i"
						 " FROM unnest($1, $2, $3) WITH ORDINALITY AS b(arm_id, tx, seq, i)"
						 " JOIN (SELECT r.*, ($6 + pg_catalog.row_number() OVER"
						 "       (ORDER BY r.tx, r.seq))::float8 AS tick"
						 "     FROM model_select.rewards r WHERE r.arm_id = ANY ($1)"
						 "     AND r.tx >= $4 AND (r.tx, r.seq) > ($4, $5)) r"
						 "   ON r.arm_id = b.arm_id AND (r.tx, r.seq) > (b.tx, b.seq)"
						 " ORDER BY b.i, r.tx, r.seq",
						 6, types), args, NULL, true, 0, SPI_OK_SELECT,
				"read the pending rewards");
	return SPI_tuptable;
}
