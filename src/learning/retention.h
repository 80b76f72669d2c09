/*
 * retention.h — the reward log's horizon: rewards past a selector's "retain"
 * are absorbed into their arm's base (model_select.arm_base) and deleted,
 * and decisions without a reward expire after "decision_ttl".  An arm's
 * state is the fold of its base and then its retained log, in canonical
 * order (fold.h): what rebuild_state() computes.
 */
#ifndef MODEL_SELECT_RETENTION_H
#define MODEL_SELECT_RETENTION_H

#include "model/settings.h"

/* What one retention pass over a selector did. */
typedef struct RetentionPass
{
	int64		absorbed;		/* rewards absorbed into bases and deleted */
	int64		expired;		/* decisions without a reward deleted */
} RetentionPass;

extern void retention_pass(const SelectorConfig *cfg, RetentionPass *pass);

#endif
