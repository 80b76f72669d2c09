/*
 * pacer_window_read.c — the reads of the decision log that make the pacer's
 * window (pacer_window.c): a selector's newest decisions, and which of them
 * have a reward, under the caller's snapshot.  Bounded by the window, not the
 * log: the decisions through the index on (selector_id, created_at,
 * decision_id), backwards; their rewards through the index on (selector_id,
 * decision_id) from the window's smallest decision_id on, or one by one.
 */
#include "postgres.h"

#include "access/stratnum.h"
#include "access/xact.h"
#include "utils/fmgroids.h"
#include "utils/timestamp.h"
#include "utils/xid8.h"

#include "pg/index_read.h"
#include "routing/pacer_window_read.h"

const char *const window_reward_columns[WINDOW_REWARD_COLUMNS] = {"decision_id", "tx", "seq", "cost"};

/* A window row's decision_id and place, sorted by decision_id to look rewards up. */
typedef struct WindowId
{
	int64		decision_id;
	int			k;
} WindowId;

static int
window_id_cmp(const void *a, const void *b)
{
	int64		x = ((const WindowId *) a)->decision_id;
	int64		y = ((const WindowId *) b)->decision_id;

	return (x > y) - (x < y);
}

/* Where arm_id is among the narms arm_ids, -1 if not there. */
int32
window_arm(int32 arm_id, int narms, const int32 *arm_ids)
{
	for (int i = 0; i < narms; i++)
		if (arm_ids[i] == arm_id)
			return i;
	return -1;
}

/*
 * The selector's newest decisions, newest first, at most limit of them, into
 * out: all of them, or (after not NULL) those after *after in the index's
 * order; each with its place among the narms arm_ids.  Returns how many;
 * none marked rewarded.
 */
int
window_read(int32 selector_id, int limit, const WindowDecision *after, int narms, const int32 *arm_ids,
			WindowDecision *out)
{
	static const char *const key[] = {"selector_id", "created_at", "decision_id"};
	static const char *const columns[] = {"decision_id", "arm_id", "cost_weight", "expected_cost", "created_at"};
	Relation	decisions = own_table_open("decisions");
	AttrNumber	attnums[lengthof(columns)];
	IndexRead	r;
	HeapTuple	row;
	int			n = 0;

	for (int i = 0; i < lengthof(columns); i++)
		attnums[i] = own_column(decisions, columns[i]);
	index_read_begin(&r, decisions, lengthof(key), key);
	index_read_key(&r, "selector_id", BTEqualStrategyNumber, F_INT4EQ, Int32GetDatum(selector_id));
	if (after != NULL)
		index_read_after(&r, "created_at", F_TIMESTAMP_CMP, TimestampTzGetDatum(after->created_at),
						 "decision_id", F_BTINT8CMP, Int64GetDatum(after->decision_id));
	index_read_backward(&r);
	while (n < limit && (row = index_read_next(&r)) != NULL)
	{
		Datum		values[lengthof(columns)];
		bool		nulls[lengthof(columns)];

		own_columns_at(decisions, row, lengthof(columns), attnums, values, nulls);
		out[n].decision_id = DatumGetInt64(values[0]);
		out[n].arm_id = DatumGetInt32(values[1]);
		out[n].arm = window_arm(out[n].arm_id, narms, arm_ids);
		out[n].priced = !nulls[2];
		out[n].cost_weight = nulls[2] ? 0.0 : DatumGetFloat8(values[2]);
		out[n].expects = !nulls[3];
		out[n].expected_cost = nulls[3] ? 0.0 : DatumGetFloat8(values[3]);
		out[n].created_at = DatumGetTimestampTz(values[4]);
		out[n].reward = (WindowReward) {.logged = false};
		n++;
	}
	index_read_end(&r);
	own_table_close(decisions);
	return n;
}

/* A reward read: values and nulls of window_reward_columns. */
void
window_reward_set(WindowReward *reward, const Datum *values, const bool *nulls)
{
	reward->logged = true;
	reward->costs = !nulls[3];
	reward->cost = nulls[3] ? 0.0 : DatumGetFloat8(values[3]);
	reward->tx = DatumGetFullTransactionId(values[1]);
	reward->seq = DatumGetInt64(values[2]);
}

/*
 * Our own reward at (tx, seq) was read: the last of ours read, *own_seq, is
 * at least seq (a backend gives its rows rising seqs, and the rows of ours a
 * snapshot sees are those up to some seq).
 */
void
window_own_read(FullTransactionId mine, Datum tx, Datum seq, int64 *own_seq)
{
	if (FullTransactionIdIsValid(mine) && FullTransactionIdEquals(DatumGetFullTransactionId(tx), mine))
		*own_seq = Max(*own_seq, DatumGetInt64(seq));
}

/*
 * Mark the decisions of w (n, newest first) that have a reward: one read of
 * the selector's rewards from the window's smallest decision_id on, through
 * the index on (selector_id, decision_id), so again bounded by the window,
 * not the log.  Each reward's cost and place in the log only if `whole` (the
 * exact count needs neither, and each is a column read per reward).  own_seq
 * not NULL (only whole): the last seq of our transaction's rewards read
 * there (-1 if none).
 */
void
window_rewarded(int32 selector_id, WindowDecision *w, int n, bool whole, int64 *own_seq)
{
	static const char *const key[] = {"selector_id", "decision_id"};
	FullTransactionId mine = GetTopFullTransactionIdIfAny();
	WindowId   *by_id;
	Relation	rewards;
	AttrNumber	attnums[WINDOW_REWARD_COLUMNS];
	IndexRead	r;
	HeapTuple	row;

	Assert(whole || own_seq == NULL);
	if (own_seq != NULL)
		*own_seq = -1;
	if (n == 0)
		return;
	by_id = palloc(sizeof(WindowId) * n);
	for (int k = 0; k < n; k++)
		by_id[k] = (WindowId) {w[k].decision_id, k};
	qsort(by_id, n, sizeof(WindowId), window_id_cmp);
	rewards = own_table_open("rewards");
	for (int i = 0; i < WINDOW_REWARD_COLUMNS; i++)
		attnums[i] = own_column(rewards, window_reward_columns[i]);
	index_read_begin(&r, rewards, lengthof(key), key);
	index_read_key(&r, "selector_id", BTEqualStrategyNumber, F_INT4EQ, Int32GetDatum(selector_id));
	index_read_key(&r, "decision_id", BTGreaterEqualStrategyNumber, F_INT8GE, Int64GetDatum(by_id[0].decision_id));
	while ((row = index_read_next(&r)) != NULL)
	{
		WindowId	probe = {0};
		WindowId   *hit;
		Datum		values[WINDOW_REWARD_COLUMNS];
		bool		nulls[WINDOW_REWARD_COLUMNS];

		own_columns_at(rewards, row, whole ? WINDOW_REWARD_COLUMNS : 1, attnums, values, nulls);
		probe.decision_id = nulls[0] ? 0 : DatumGetInt64(values[0]);
		hit = nulls[0] ? NULL : bsearch(&probe, by_id, n, sizeof(WindowId), window_id_cmp);
		if (hit != NULL && whole)
			window_reward_set(&w[hit->k].reward, values, nulls);
		else if (hit != NULL)
			w[hit->k].reward.logged = true;
		if (own_seq != NULL)
			window_own_read(mine, values[1], values[2], own_seq);
	}
	index_read_end(&r);
	own_table_close(rewards);
	pfree(by_id);
}

/*
 * The newest limit decisions into rows, each marked whether it has a reward
 * (whole: with the reward's cost and place): a full read.  Returns how many.
 */
int
window_read_marked(int32 selector_id, int limit, int narms, const int32 *arm_ids, bool whole,
				   WindowDecision *rows)
{
	int			n = window_read(selector_id, limit, NULL, narms, arm_ids, rows);

	window_rewarded(selector_id, rows, n, whole, NULL);
	return n;
}

/*
 * Mark the decisions rows[idx[0..n-1]] that have a reward, each looked up by
 * the unique index on rewards.decision_id: for a few decisions.
 */
void
window_rewards_looked_up(WindowDecision *rows, const int *idx, int n)
{
	Relation	rewards;

	if (n == 0)
		return;
	rewards = own_table_open("rewards");
	for (int i = 0; i < n; i++)
	{
		Datum		values[WINDOW_REWARD_COLUMNS];
		bool		nulls[WINDOW_REWARD_COLUMNS];

		if (own_row_by_key(rewards, "decision_id", F_INT8EQ, Int64GetDatum(rows[idx[i]].decision_id),
						   WINDOW_REWARD_COLUMNS, window_reward_columns, values, nulls))
			window_reward_set(&rows[idx[i]].reward, values, nulls);
	}
	own_table_close(rewards);
}
