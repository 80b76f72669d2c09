/*
 * state.h — an arm's state (its layout: state_layout.h): appending and
 * building through the policy, allocating, checking a stored one, the size
 * limits at create and alter.
 */
#ifndef MODEL_SELECT_STATE_H
#define MODEL_SELECT_STATE_H

#include "model/state_layout.h"

extern StateHeader *state_append(const SelectorConfig *cfg, const StateHeader *old,
								 const double *x, double r);
extern StateHeader *state_build(const SelectorConfig *cfg, int n, const double *X, const double *r);
extern int	discount_horizon(const SelectorConfig *cfg);
extern int	compacted_rows(int cap, int n);
extern int32 state_forgetting(const SelectorConfig *cfg);
extern StateHeader *state_alloc(const SelectorConfig *cfg, int32 n, Size body_doubles);
extern StateHeader *state_check(const SelectorConfig *cfg, bytea *raw);
extern StateHeader *state_check_head(const SelectorConfig *cfg, bytea *raw);
extern bool state_fits(const SelectorConfig *cfg, const StateHeader *st);
extern int	max_model_size_kb;
extern void state_check_limits(const SelectorConfig *cfg);
extern Size state_body_doubles(const StateHeader *st);

#endif
