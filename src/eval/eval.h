/*
 * eval.h — helpers shared by the offline-evaluation functions (replay, the
 * synthetic environments and warm starts from outcome tables).
 */
#ifndef MODEL_SELECT_EVAL_H
#define MODEL_SELECT_EVAL_H

#include "utils/array.h"

#include "model/config.h"

/* An outcome table in memory: per row a context and each arm's outcome. */
typedef struct ReplayData
{
	const char *label;			/* names the source in error messages */
	int			nrows;
	int			dim;
	int			narms;
	double	   *contexts;		/* nrows × dim, as given */
	double	   *rewards;		/* nrows × narms */
	double	   *costs;			/* nrows × narms, 0 where absent */
	bool	   *row_has_costs;	/* nrows: the row gave costs */
	double	   *expected;		/* nrows × narms, or NULL: judge by rewards */
	bool	   *available;		/* nrows × narms: reward not NULL */
	ArrayType **tags;			/* nrows: a "tags" column's (NULL: none), or NULL: no column */
} ReplayData;

/* Running totals; a copy is kept at every checkpoint. */
typedef struct ReplayTotals
{
	int			round;
	double		reward;
	double		cost;
	double		utility;
	double		judged;			/* utility of the picks as judged */
	double		oracle;			/* sum of the best judged utility of each row */
	int64		optimal;
	int64		window_optimal;
	int			window_rounds;
	double	   *arm_utility;	/* per arm: judged utility had it always been played */
	int64	   *picks;
	int64		learned;		/* rewards learned so far */
} ReplayTotals;

extern ReplayTotals *checkpoints_alloc(int64 n, int narms);
extern void totals_copy(ReplayTotals *dst, const ReplayTotals *src, int narms);
extern void emit_checkpoints(FunctionCallInfo fcinfo, const ReplayTotals *checkpoints, int nck,
							 const ReplayTotals *tot, int narms);

/*
 * The last `horizon` decisions of a replay with a budget or count_pending
 * (replay_pending.c), and with count_pending the `horizon` before them: per
 * slot t % size, round t's arm and whether its reward was learned.
 */
typedef struct ReplayPending
{
	int			horizon;		/* 0: no budget, nothing counted */
	int			size;			/* horizon, or 2·horizon with count_pending */
	int		   *arm;
	double	   *lambda;			/* the cost weight each decision was priced at */
	bool	   *expects;		/* it has an expected cost (pacer_expected_cost()) */
	double	   *expected_cost;
	bool	   *rewarded;
	int			decided;		/* the rounds decided so far */
} ReplayPending;

struct Selector;
struct SelectorConfig;
struct ArmScore;
extern void pending_init(ReplayPending *pending, const struct SelectorConfig *cfg);
extern void pending_decided(ReplayPending *pending, struct Selector *sel, int t, int a,
							const struct ArmScore *scores);
extern void pending_rewarded(ReplayPending *pending, struct Selector *sel, int r, int decided);
extern void pending_awaited(const ReplayPending *pending, struct Selector *sel);
extern void pending_window_lambda(const ReplayPending *pending, struct Selector *sel);

extern void eval_check_arg(bool ok, const char *function, const char *problem);
extern void source_load(const char *source, const char *label, bool with_expected,
						ReplayData *data);
extern void source_add_tags(ReplayData *data, const SelectorConfig *cfg);

#endif
