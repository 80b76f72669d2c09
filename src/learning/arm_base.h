/*
 * arm_base.h — an arm's base (model_select.arm_base): the fold of the
 * rewards that retention absorbed and deleted from its log (retention.c).
 * An arm's state is the fold of its base and then its retained log, in
 * canonical order (fold.h): rebuild_state() and every checkpoint from
 * scratch start from the base, and so do readers of an arm without a
 * checkpoint.
 */
#ifndef MODEL_SELECT_ARM_BASE_H
#define MODEL_SELECT_ARM_BASE_H

#include "learning/fold.h"

extern bool arm_base_read(int32 arm_id, FoldTotals *totals, Datum *state);
extern void fold_begin_base(StateFold *f, const SelectorConfig *cfg, int32 arm_id);

#endif
