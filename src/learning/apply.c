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

#include "core/catalog.h"
#include "core/log_table.h"
#include "core/owner.h"
#include "learning/checkpoint.h"

PG_FUNCTION_INFO_V1(model_select_rewards_apply);

/* for_each_arm_of_statement() callback: arg is the cached SelectorConfig. */
static void
checkpoint_arm_rows(SPITupleTable *tt, uint64 first, uint64 last, void *arg)
{
	SelectorConfig *cfg = arg;
	int32		arm_id = spi_int32(tt->vals[first], tt->tupdesc, 1);
	int32		selector_id = spi_int32(tt->vals[first], tt->tupdesc, 2);

	if (cfg->selector_id != selector_id)
		config_load(selector_id, cfg);
	checkpoint_if_due(cfg, arm_id, spi_int64(tt->vals[first], tt->tupdesc, 3));
}

static void
checkpoint_statement_arms(void *arg)
{
	int			spi_level;
	FunctionCallInfo fcinfo = arg;
	SelectorConfig cfg = {0};

	cfg.selector_id = -1;
	spi_level = spi_connect();
	for_each_arm_of_statement(fcinfo,
							  "SELECT arm_id, selector_id, count(*) FROM new_rewards"
							  " GROUP BY arm_id, selector_id ORDER BY arm_id",
							  checkpoint_arm_rows, &cfg);
	spi_finish(spi_level);
}

Datum
model_select_rewards_apply(PG_FUNCTION_ARGS)
{
	run_as_extension_owner(checkpoint_statement_arms, fcinfo);
	return PointerGetDatum(NULL);
}
