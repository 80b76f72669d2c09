/*
 * apply.c — rewards_apply: the AFTER INSERT ... FOR EACH STATEMENT trigger
 * of the reward log.
 *
 * A reward INSERT writes only its log rows: the learned state is derived
 * from the log (see fold.h), and readers fold rewards logged after an arm's
 * checkpoint themselves.  This trigger only keeps that pending tail short:
 * for each arm the statement touched it checkpoints the arm when enough
 * final rewards are pending (checkpoint_if_due: never waits for another
 * writer, never under REPEATABLE READ or SERIALIZABLE).
 */
#include "postgres.h"

#include "commands/trigger.h"
#include "executor/spi.h"
#include "fmgr.h"

#include "model/catalog.h"
#include "model/log_table.h"
#include "pg/owner.h"
#include "learning/checkpoint.h"

PG_FUNCTION_INFO_V1(model_select_rewards_apply);

static void
checkpoint_statement_arms(void *arg)
{
	int			spi_level;
	int			narms;
	StatementArm *arms = arms_of_statement((FunctionCallInfo) arg, &narms);
	SelectorConfig cfg = {.selector_id = -1};

	spi_level = spi_connect();
	for (int i = 0; i < narms; i++)
	{
		if (cfg.selector_id != arms[i].selector_id)
			config_load_in_reward_transaction(arms[i].selector_id, &cfg);
		checkpoint_if_due(&cfg, arms[i].arm_id, arms[i].nrows);
	}
	spi_finish(spi_level);
}

Datum
model_select_rewards_apply(PG_FUNCTION_ARGS)
{
	run_as_extension_owner(checkpoint_statement_arms, fcinfo);
	return PointerGetDatum(NULL);
}
