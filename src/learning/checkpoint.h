/*
 * checkpoint.h — stored checkpoints of arm states: the only code that writes
 * model_select.arm_state.
 */
#ifndef MODEL_SELECT_CHECKPOINT_H
#define MODEL_SELECT_CHECKPOINT_H

#include "model/settings.h"
#include "model/state.h"

/* GUC model_select.checkpoint_threshold */
extern int	checkpoint_threshold;

/*
 * Where a checkpoint may find a fold of the log that this backend already
 * made from the same checkpoint (arm_id, settings_version, version, xmin),
 * or NULL.  The routing layer's arm cache holds such folds; it sets this
 * hook when the module loads (model_select.c), as PostgreSQL's hooks are
 * set, so that learning does not include routing.  NULL: no reuse.
 */
struct StateFold;
typedef const struct StateFold *(*CheckpointBaseLookup) (int32 arm_id, int32 settings_version,
														 int64 version, int64 xmin);
extern CheckpointBaseLookup checkpoint_base_lookup;

/*
 * Publishes the fold f a checkpoint row (version, xmin) of arm_id is about
 * to hold, before the row commits, where decisions score published versions
 * (the routing layer's, set like checkpoint_base_lookup).  NULL: nothing.
 */
typedef void (*CheckpointPublish) (const SelectorConfig *cfg, int32 arm_id, int64 version,
								   int64 xmin, const struct StateFold *f);
extern CheckpointPublish checkpoint_publish_hook;

/*
 * A change made to a checkpointed state before it is stored (resample()'s
 * new dictionary); check (optional) refuses a selector it does not apply
 * to; applied counts the arms it changed.
 */
typedef struct StateTransform
{
	StateHeader *(*fn) (const SelectorConfig *cfg, const StateHeader *st);
	void		(*check) (const char *name, const SelectorConfig *cfg);
	int64		applied;
} StateTransform;

extern int64 checkpoint_arm(const SelectorConfig *cfg, int32 arm_id, bool skip_locked,
							bool from_scratch, StateTransform *transform);
/* Every arm of a selector in arm_id order; skip_locked skips busy arms (checkpoint_due.c). */
extern int64 checkpoint_arms(const SelectorConfig *cfg, bool skip_locked, bool from_scratch,
							 StateTransform *transform);
/*
 * Whether checkpoints of a selector's arms start from cached folds
 * (fixed-size states on the arm's own clock), and this backend's cached
 * fold of the stored checkpoint (version, xmin), or NULL (checkpoint_due.c:
 * the learner's due check).
 */
extern bool checkpoint_reuses_folds(const SelectorConfig *cfg);
extern const struct StateFold *checkpoint_cached_base(const SelectorConfig *cfg, int32 arm_id,
													  int64 version, int64 xmin,
													  const StateTransform *transform);
extern void checkpoint_note_rewards(int32 selector_id, int32 arm_id, int64 nrows);
extern int64 checkpoint_due_arms(const SelectorConfig *cfg, int *arms);
extern int64 checkpoint_named_selector(const char *name, bool from_scratch,
									   StateTransform *transform);
extern int	selector_arm_ids(const SelectorConfig *cfg, int32 **ids);
extern int64 checkpoint_selector_arms(const SelectorConfig *cfg, bool from_scratch,
									  StateTransform *transform);

#endif
