/*
 * bkb.h — bkb entry points beyond PolicyOps: an explicit resample of an
 * arm's dictionary (model_select.resample(), bkb_resample.c), and how many
 * of an arm's newest rewards its state keeps.
 */
#ifndef MODEL_SELECT_POLICY_BKB_H
#define MODEL_SELECT_POLICY_BKB_H

#include "model/settings.h"
#include "model/state.h"

/* New state: st with its dictionary resampled now (Calandriello et al. 2019 (BKB)). */
extern StateHeader *bkb_resample(const SelectorConfig *cfg, const StateHeader *st);
extern int	bkb_kept_rows(const SelectorConfig *cfg, int n);

#endif
