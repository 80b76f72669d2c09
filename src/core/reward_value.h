/*
 * reward_value.h — checks of rewards and costs, and the utility an arm
 * learns (reward_value.c).
 */
#ifndef MODEL_SELECT_REWARD_VALUE_H
#define MODEL_SELECT_REWARD_VALUE_H

#include "core/settings.h"

/*
 * The largest |reward − λ·cost| an arm learns, and the bound of the reward
 * range (reward_min, reward_max): far below where squares and sums over an
 * arm's rewards overflow.
 */
#define UTILITY_MAX 1e15

/*
 * The largest cost of one call: with λ ≤ COST_WEIGHT_MAX, λ·cost and the
 * sums of many costs stay far from overflow.
 */
#define COST_MAX 1e15

/* The largest cost weight λ: the bound of the setting cost_weight and of the pacer's λ. */
#define COST_WEIGHT_MAX 1e12

extern char *exact_text(double value);
extern void check_reward(const SelectorConfig *cfg, const char *what, double value);
extern void check_cost(double cost);
extern double learned_value(const SelectorConfig *cfg, double reward, bool cost_null, double cost);

#endif
