/*
 * replay_totals.c — replay()'s metrics: the running totals kept at every
 * checkpoint and the result rows made of them.
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "fmgr.h"
#include "funcapi.h"
#include "utils/array.h"

#include "eval/eval.h"

/*
 * Room for n checkpoints' totals, which are all kept until the best arm in
 * hindsight is known: refused (54000) beyond 1 GB in all (checkpoint 1 over
 * 2^31 - 1 rounds would be 2^31 of them).
 */
ReplayTotals *
checkpoints_alloc(int64 n, int narms)
{
	double		bytes = (double) n * (sizeof(ReplayTotals) + narms * (sizeof(double) + sizeof(int64)));

	if (bytes > MaxAllocSize)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("replay: " INT64_FORMAT " checkpoints of %d arms would need %.0f MB",
						n, narms, bytes / 1048576.0),
				 errhint("Raise checkpoint (rounds between result rows), or lower rounds.")));
	return palloc(sizeof(ReplayTotals) * (Size) n);
}

void
totals_copy(ReplayTotals *dst, const ReplayTotals *src, int narms)
{
	*dst = *src;
	dst->arm_utility = palloc(sizeof(double) * narms);
	dst->picks = palloc(sizeof(int64) * narms);
	memcpy(dst->arm_utility, src->arm_utility, sizeof(double) * narms);
	memcpy(dst->picks, src->picks, sizeof(int64) * narms);
}

static void
emit_checkpoint(ReturnSetInfo *rsinfo, const ReplayTotals *ck, int narms, int best_arm)
{
	Datum		values[11];
	bool		nulls[11] = {false};
	Datum	   *picks = palloc(sizeof(Datum) * narms);

	for (int a = 0; a < narms; a++)
		picks[a] = Int64GetDatum(ck->picks[a]);
	values[0] = Int32GetDatum(ck->round);
	values[1] = Float8GetDatum(ck->reward);
	values[2] = Float8GetDatum(ck->cost);
	values[3] = Float8GetDatum(ck->utility);
	values[4] = Float8GetDatum(ck->arm_utility[best_arm] - ck->judged);
	values[5] = Float8GetDatum(ck->oracle - ck->judged);
	values[6] = Float8GetDatum((double) ck->optimal / ck->round);
	values[7] = Float8GetDatum((double) ck->window_optimal / ck->window_rounds);
	values[8] = Float8GetDatum((ck->judged - ck->arm_utility[best_arm]) / ck->round);
	values[9] = PointerGetDatum(construct_array(picks, narms, INT8OID, sizeof(int64),
												FLOAT8PASSBYVAL, TYPALIGN_DOUBLE));
	values[10] = Int64GetDatum(ck->learned);
	tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
}

/*
 * The result rows: every checkpoint, with the best single arm in hindsight
 * over all rounds played (tot).
 */
void
emit_checkpoints(FunctionCallInfo fcinfo, const ReplayTotals *checkpoints, int nck,
				 const ReplayTotals *tot, int narms)
{
	int			best_arm = 0;

	for (int a = 1; a < narms; a++)
		if (tot->arm_utility[a] > tot->arm_utility[best_arm])
			best_arm = a;
	InitMaterializedSRF(fcinfo, 0);
	for (int i = 0; i < nck; i++)
		emit_checkpoint((ReturnSetInfo *) fcinfo->resultinfo, &checkpoints[i], narms, best_arm);
}
