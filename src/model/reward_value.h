/*
 * reward_value.h — checks of rewards and costs, and the utility an arm
 * learns (reward_value.c).
 */
#ifndef MODEL_SELECT_REWARD_VALUE_H
#define MODEL_SELECT_REWARD_VALUE_H

#include "model/settings.h"

extern void check_reward(const SelectorConfig *cfg, const char *what, double value);
extern void check_cost(double cost);
extern double learned_value(const SelectorConfig *cfg, double reward, bool cost_null, double cost);

#endif
