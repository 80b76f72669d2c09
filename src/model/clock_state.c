/*
 * clock_state.c — the size and the checks of a clocked arm state
 * (clock_state.h); learning/clock.c folds and decodes it.
 */
#include "postgres.h"

#include <math.h>

#include "model/clock_state.h"
#include "model/registry.h"

Size
clock_body_size(const SelectorConfig *cfg, int n)
{
	return CLOCK_HEAD + (Size) n * (cfg->dim + 2);
}

/*
 * The most rows a clocked state holds: on the selector's clock ticks are
 * distinct integers, so at most W, R or the discount's horizon of them
 * still count, and a policy that keeps its rows uses only the newest cap of
 * them; on the time clock any number of rows may share a second: cap.
 */
int32
clock_max_rows(const SelectorConfig *cfg)
{
	int32		rows = discount_horizon(cfg);

	if (cfg->clock == CLOCK_TIME)
		return cfg->cap;
	if (cfg->window > 0)
		rows = cfg->window;
	else if (cfg->restart_every > 0)
		rows = cfg->restart_every;
	if (policy_ops(cfg->policy)->keeps_rows)
		rows = Min(rows, cfg->cap);
	return rows;
}

/*
 * Further checks of a stored clocked state (state_check has checked its
 * size): ticks from 1 to C, increasing (time: finite, not decreasing), and
 * finite rewards; else a reader would fold onto rows out of order (XX001).
 */
void
clock_check(const SelectorConfig *cfg, const StateHeader *st)
{
	const double *ticks = CLOCK_TICKS(st);
	double		count = STATE_BODY(st)[2];
	bool		timed = cfg->clock == CLOCK_TIME;

	for (int i = 0; i < st->n; i++)
		if (!(timed ? isfinite(ticks[i]) && (i == 0 || ticks[i] >= ticks[i - 1])
			  : ticks[i] >= (i == 0 ? 1 : ticks[i - 1] + 1) && ticks[i] <= count) ||
			!isfinite(CLOCK_REWARDS(st)[i]))
			ereport(ERROR,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg("clocked arm state has row %d at tick %g of %g", i, ticks[i], count),
					 errhint("Run model_select.rebuild_state() to recompute it from the reward log.")));
}
