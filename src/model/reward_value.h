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

/*
 * Fill the cost columns of a row an arm learns from (row_dim values: its
 * prepared context, then with cfg->learns_cost whether its reward logged a
 * cost and that cost), where its cost model reads them (policy/lin_fold.c).
 */
static inline void
row_set_cost(const SelectorConfig *cfg, double *row, bool cost_null, double cost)
{
	if (cfg->learns_cost)
	{
		row[cfg->dim] = cost_null ? 0.0 : 1.0;
		row[cfg->dim + 1] = cost_null ? 0.0 : cost;
	}
}

#endif
