/*
 * arm_base.c — reading an arm's base (see arm_base.h).
 */
#include "postgres.h"

#include "utils/fmgroids.h"
#include "utils/snapmgr.h"

#include "learning/arm_base.h"
#include "pg/index_read.h"

/*
 * The base of arm_id, if it has one: its totals and state ((Datum) 0:
 * none), read through arm_base's primary key under the active snapshot.
 */
bool
arm_base_read(int32 arm_id, FoldTotals *totals, Datum *state)
{
	enum
	{
		BASE_N, BASE_REWARD_SUM, BASE_COST_SUM, BASE_COST_N, BASE_SPEND_SUM, BASE_SPEND_N, BASE_STATE,
		BASE_NCOLUMNS
	};
	static const char *const columns[BASE_NCOLUMNS] = {
		[BASE_N] = "n", [BASE_REWARD_SUM] = "reward_sum", [BASE_COST_SUM] = "cost_sum",
		[BASE_COST_N] = "cost_n", [BASE_SPEND_SUM] = "spend_sum", [BASE_SPEND_N] = "spend_n",
		[BASE_STATE] = "state"
	};
	Relation	base = own_table_open("arm_base");
	Datum		v[lengthof(columns)];
	bool		nulls[lengthof(columns)];
	bool		found = own_row_by_key(base, "arm_id", F_INT4EQ, Int32GetDatum(arm_id),
									   lengthof(columns), columns, v, nulls);

	own_table_close(base);
	if (!found)
		return false;
	totals->n = DatumGetInt64(v[BASE_N]);
	totals->reward_sum = DatumGetFloat8(v[BASE_REWARD_SUM]);
	totals->cost_sum = DatumGetFloat8(v[BASE_COST_SUM]);
	totals->cost_n = DatumGetInt64(v[BASE_COST_N]);
	totals->spend_sum = DatumGetFloat8(v[BASE_SPEND_SUM]);
	totals->spend_n = DatumGetInt64(v[BASE_SPEND_N]);
	*state = nulls[BASE_STATE] ? (Datum) 0 : v[BASE_STATE];
	return true;
}

/*
 * fold_begin onto arm_id's base (none: empty), at the start of its retained
 * log, for a checkpoint or an absorption.  The caller holds the arm's
 * checkpoint row, which every writer of the base (retention.c) holds until
 * it commits; the base is read under a new snapshot, as the log after it is
 * (fold_log()'s fresh_snapshot), so that it holds every absorption that
 * committed before the row was ours.  Under the statement's snapshot, taken
 * before, one that committed since would be missing from the base while its
 * rows are gone from the log: lost.  (Under a transaction snapshot both are
 * that snapshot's, and the rows' deletion conflicts.)
 */
void
fold_begin_base(StateFold *f, const SelectorConfig *cfg, int32 arm_id)
{
	FoldTotals	totals;
	Datum		state;
	bool		found;

	PushActiveSnapshot(GetTransactionSnapshot());
	found = arm_base_read(arm_id, &totals, &state);
	PopActiveSnapshot();
	if (found)
		fold_begin_stored(f, cfg, arm_id, state, false, LOG_START, &totals);
	else
		fold_begin(f, cfg, NULL, LOG_START, NULL);
}
