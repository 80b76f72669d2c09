/*
 * state_store.h — an arm's checkpointed state as stored in arm_state.state
 * and, for a state kept by rows (pak_ucb), model_select.arm_state_rows.
 */
#ifndef MODEL_SELECT_STATE_STORE_H
#define MODEL_SELECT_STATE_STORE_H

#include "model/settings.h"
#include "model/state.h"

extern StateHeader *state_store_read(const SelectorConfig *cfg, int32 arm_id, Datum stored,
									 bool read_only);
extern bytea *state_store_write(const SelectorConfig *cfg, int32 arm_id,
								const StateHeader *stored, const StateHeader *st);

#endif
