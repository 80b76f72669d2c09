/*
 * model_select.c — module entry: magic block and load-time set-up.
 */
#include "postgres.h"

#include "fmgr.h"
#include "miscadmin.h"
#include "utils/guc.h"


#include "model/registry.h"
#include "model/state.h"
#include "routing/latency.h"
#include "pg/progress.h"
#include "learning/checkpoint.h"
#include "learning/learner.h"
#include "learning/learner_pass.h"
#include "routing/cache_counters.h"
#include "routing/model_cache.h"
#include "routing/pacer_window.h"
#include "routing/shared_cache.h"

PG_MODULE_MAGIC;

void		_PG_init(void);

void
_PG_init(void)
{
	/* the domain's lookups read the policies' table (model cannot call policy) */
	policy_table = policy_registry;
	/* checkpoints reuse the folds the arm cache made (learning cannot include routing) */
	checkpoint_base_lookup = model_cache_base;
	/* and publish their versions before they commit */
	checkpoint_publish_hook = checkpoint_publish;
	/* the learner publishes arm models through the arm cache */
	learner_publish_hook = selector_publish;

	DefineCustomIntVariable("model_select.checkpoint_threshold",
							"Pending rewards of an arm that make the commit of a reward INSERT checkpoint it.",
							"Readers fold an arm's pending rewards in memory; a checkpoint stores "
							"the fold.  0 turns automatic checkpoints off.",
							&checkpoint_threshold, 128, 0, 1000000,
							PGC_USERSET, 0, NULL, NULL, NULL);
	DefineCustomIntVariable("model_select.cache_size",
							"Memory each backend may keep for decoded arm models and random features.",
							"Least recently used selectors are evicted past it; a selector "
							"larger than it is still loaded, alone.",
							&model_cache_size_kb, 256 * 1024, 1024, INT_MAX / 2,
							PGC_USERSET, GUC_UNIT_KB, NULL, NULL, NULL);
	DefineCustomIntVariable("model_select.max_model_size",
							"The largest model one arm of a new or altered selector may need.",
							"create_selector() and alter_selector() refuse settings whose model "
							"(state and random features) could outgrow it.",
							&max_model_size_kb, 256 * 1024, 64, INT_MAX / 2,
							PGC_SUSET, GUC_UNIT_KB, NULL, NULL, NULL);
	progress_init();
	pacer_window_init();
	if (process_shared_preload_libraries_in_progress)
	{
		shared_cache_preload();
		cache_counters_preload();
		learner_preload();
		progress_preload();
		latency_preload();
	}
	MarkGUCPrefixReserved("model_select");
}
