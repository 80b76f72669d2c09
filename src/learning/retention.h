/*
 * retention.h — the reward log's horizon: rewards past a selector's "retain"
 * (without it, those its forgetting can no longer count) are absorbed into
 * their arm's base (model_select.arm_base) and deleted,
 * and decisions without a reward expire after "decision_ttl".  An arm's
 * state is the fold of its base and then its retained log, in canonical
 * order (fold.h): what rebuild_state() computes.
 */
#ifndef MODEL_SELECT_RETENTION_H
#define MODEL_SELECT_RETENTION_H

#include "model/settings.h"

extern void retention_pass(const SelectorConfig *cfg, bool batched);

#endif
