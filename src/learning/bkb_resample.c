/*
 * bkb_resample.c — model_select.resample(selector): resample the dictionary of
 * every arm of a bkb selector now (Calandriello et al. 2019 (BKB), bkb_resample in
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

#include "model/catalog.h"
#include "pg/owner.h"
#include "model/privilege.h"
#include "learning/checkpoint.h"
#include "policy/bkb.h"
#include "model/registry.h"

PG_FUNCTION_INFO_V1(model_select_resample);

/* Only bkb selectors have a dictionary. */
static void
require_dictionary(const char *name, const SelectorConfig *cfg)
{
	if (!policy_ops(cfg->policy)->dictionary)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("selector \"%s\" uses policy %s; only bkb selectors have a dictionary to resample",
						name, policy_name(cfg->policy))));
}

Datum
model_select_resample(PG_FUNCTION_ARGS)
{
	StateTransform resample = {bkb_resample, require_dictionary, 0};

	checkpoint_named_selector(text_to_cstring(PG_GETARG_TEXT_PP(0)), false, &resample);
	PG_RETURN_INT64(resample.applied);
}
