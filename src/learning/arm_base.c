/*
 * arm_base.c — reading an arm's base (see arm_base.h).
 */
#include "postgres.h"

#include "utils/fmgroids.h"

#include "learning/arm_base.h"
#include "pg/index_read.h"

/*
 * The base of arm_id, if it has one: its totals and state ((Datum) 0:
 * none), read through arm_base's primary key under the active snapshot.
 */
bool
arm_base_read(int32 arm_id, FoldTotals *totals, Datum *state)
{
	static const char *const columns[] = {"n", "reward_sum", "cost_sum", "cost_n", "spend_sum", "spend_n",
	"state"};
	Relation	base = own_table_open("arm_base");
	Datum		v[lengthof(columns)];
	bool		nulls[lengthof(columns)];
	bool		found = own_row_by_key(base, "arm_id", F_INT4EQ, Int32GetDatum(arm_id),
									   lengthof(columns), columns, v, nulls);

	own_table_close(base);
	if (!found)
		return false;
	totals->n = DatumGetInt64(v[0]);
	totals->reward_sum = DatumGetFloat8(v[1]);
	totals->cost_sum = DatumGetFloat8(v[2]);
	totals->cost_n = DatumGetInt64(v[3]);
	totals->spend_sum = DatumGetFloat8(v[4]);
	totals->spend_n = DatumGetInt64(v[5]);
	totals->lineage = 0;		/* a base stands for a checkpoint (fold.h) */
	*state = nulls[6] ? (Datum) 0 : v[6];
	return true;
}

/* fold_begin onto arm_id's base (none: empty), at the start of its retained log. */
void
fold_begin_base(StateFold *f, const SelectorConfig *cfg, int32 arm_id)
{
	FoldTotals	totals;
	Datum		state;

	if (arm_base_read(arm_id, &totals, &state))
		fold_begin_stored(f, cfg, arm_id, state, false, LOG_START, &totals);
	else
		fold_begin(f, cfg, NULL, LOG_START, NULL);
}
