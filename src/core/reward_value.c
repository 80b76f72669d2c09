/*
 * reward_value.c — the values a selector learns from: the checks of a reward
 * (or a cascade value, a replay reward) and its cost, and the utility an arm
 * learns from them.  Shared by the reward trigger, the fold, cascades and
 * replay.
 */
#include "postgres.h"

#include <math.h>

#include "core/reward_value.h"

/*
 * The checks of a reward (or a cascade value, a replay reward) and its cost,
 * shared by every path that takes one: 22003 when out of range.
 */
void
check_reward(const SelectorConfig *cfg, const char *what, double value)
{
	if (!(value >= cfg->reward_min && value <= cfg->reward_max))
		ereport(ERROR,
				(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
				 errmsg("%s %g is outside the selector's range [%g, %g]", what, value,
						cfg->reward_min, cfg->reward_max),
				 errhint("The range is set by the reward_min and reward_max settings.")));
}

void
check_cost(double cost)
{
	if (!(isfinite(cost) && cost >= 0))
		ereport(ERROR,
				(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
				 errmsg("cost %g must be finite and not negative", cost)));
}

/*
 * What an arm learns from a reward: its utility reward − λ·cost (no cost:
 * 0), refused (22003) beyond ±UTILITY_MAX, where an arm's means would
 * overflow to ±Inf or NaN.
 */
double
learned_value(const SelectorConfig *cfg, double reward, bool cost_null, double cost)
{
	double		u = cost_null ? reward : reward - cfg->cost_weight * cost;

	if (!(fabs(u) <= UTILITY_MAX))
		ereport(ERROR,
				(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
				 errmsg("utility %g - %g * %g is out of range", reward, cfg->cost_weight, cost),
				 errdetail("An arm learns reward - cost_weight * cost, which must lie within ±%g.",
						   UTILITY_MAX),
				 errhint("Lower cost_weight or the cost.")));
	return u;
}
