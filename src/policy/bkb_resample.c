/*
 * bkb_resample.c — model_select.resample(selector): resample the dictionary of
 * every arm of a bkb selector now (spec/003.md §2.3, bkb_resample in
 * policy_bkb.c), instead of waiting for the next scheduled resample.  Each
 * arm is checkpointed (in arm_id order, as the owner, like checkpoint()) and
 * its new dictionary stored with that checkpoint.  Returns the number of arms
 * resampled (arms without rewards have nothing to resample).
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "utils/builtins.h"

#include "core/catalog.h"
#include "core/owner.h"
#include "core/privilege.h"
#include "learning/checkpoint.h"
#include "policy/bkb.h"
#include "policy/registry.h"

PG_FUNCTION_INFO_V1(model_select_resample);

/* The selector's configuration; it must exist and use bkb. */
static void
resample_config(const char *name, SelectorConfig *cfg)
{
	config_load(selector_id_by_name(name), cfg);
	selector_check_privilege(cfg->selector_id, name, SELECTOR_ADMIN);
	if (!policy_ops(cfg->policy)->dictionary)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("selector \"%s\" uses policy %s; only bkb selectors have a dictionary to resample",
						name, policy_name(cfg->policy))));
}

typedef struct ResampleCall
{
	const char *name;
	StateTransform transform;
} ResampleCall;

/* Checkpoint every arm, then give the state of each arm with rewards a new dictionary. */
static void
resample_selector(void *arg)
{
	int			spi_level;
	ResampleCall *call = arg;
	SelectorConfig cfg;

	spi_level = spi_connect();
	resample_config(call->name, &cfg);
	checkpoint_selector_arms(&cfg, false, &call->transform);
	spi_finish(spi_level);
}

Datum
model_select_resample(PG_FUNCTION_ARGS)
{
	ResampleCall call = {text_to_cstring(PG_GETARG_TEXT_PP(0)), {bkb_resample, 0}};

	run_as_extension_owner(resample_selector, &call);
	PG_RETURN_INT64(call.transform.applied);
}
