/*
 * reward_value.c — the values a selector learns from: the checks of a reward
 * (or a cascade value, a replay reward) and its cost, and the utility an arm
 * learns from them.  Shared by the reward trigger, the fold, cascades and
 * replay.
 */
#include "postgres.h"

#include <math.h>

#include "model/reward_value.h"
#include "pg/float_text.h"

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
				 errmsg("%s %s is outside the selector's range [%s, %s]", what, exact_text(value),
						exact_text(cfg->reward_min), exact_text(cfg->reward_max)),
				 errhint("The range is set by the reward_min and reward_max settings.")));
}

/*
 * Costs are bounded like utilities: an arm's cost mean, a pacer's λ·cost
 * and the sums arm_stats shows must stay finite, so one reward of cost 1e300
 * cannot make every score −Infinity for good.
 */
void
check_cost(double cost)
{
	if (!(cost >= 0 && cost <= COST_MAX))
		ereport(ERROR,
				(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
				 errmsg("cost %s is outside the range [0, %g]", exact_text(cost), COST_MAX),
				 errhint("Give costs in a unit in which one call costs at most %g.", COST_MAX)));
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
				 errmsg("utility %s - %s * %s is out of range", exact_text(reward),
						exact_text(cfg->cost_weight), exact_text(cost)),
				 errdetail("An arm learns reward - cost_weight * cost, which must lie within ±%g.",
						   UTILITY_MAX),
				 errhint("Lower cost_weight or the cost.")));
	return u;
}
