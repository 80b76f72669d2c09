/*
 * apply.c — rewards_apply: the AFTER INSERT ... FOR EACH STATEMENT trigger
 * of the reward log.
 *
 * A reward INSERT writes only its log rows: the learned state is derived
 * from the log (see fold.h), and readers fold rewards logged after an arm's
 * checkpoint themselves.  This trigger only keeps that pending tail short:
 * it notes each arm the statement touched, and the transaction checkpoints
 * those with enough final rewards pending just before it commits
 * (checkpoint_note_rewards: never waits for another writer, never under
 * REPEATABLE READ or SERIALIZABLE).
 */
#include "postgres.h"

#include "commands/trigger.h"
#include "fmgr.h"

#include "model/log_table.h"
#include "learning/checkpoint.h"

PG_FUNCTION_INFO_V1(model_select_rewards_apply);

Datum
model_select_rewards_apply(PG_FUNCTION_ARGS)
{
	int			narms;
	StatementArm *arms = arms_of_statement(fcinfo, &narms);

	for (int i = 0; i < narms; i++)
		checkpoint_note_rewards(arms[i].selector_id, arms[i].arm_id, arms[i].nrows);
	return PointerGetDatum(NULL);
}
