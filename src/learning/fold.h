/*
 * fold.h — folding reward-log rows into an arm's state, in the log's
 * canonical order.  One implementation serves the three places that learn:
 * readers folding the rewards logged after a checkpoint (routing/model_cache.c),
 * checkpoints and rebuild_state (learning/checkpoint.c).
 *
 * The canonical order of an arm's log is (tx, seq), both stamped by the
 * BEFORE trigger: tx is the inserting transaction's full id, seq orders a
 * transaction's rows by insertion (reward_trigger.c).  Once every
 * transaction below some H has ended, no row can appear below (H, 0): that
 * prefix of the log is final and may be checkpointed (final_horizon(), in
 * fold_horizon.c).
 * A restore keeps the order: pg_dump writes the log in it, and the rows
 * restored by one transaction get their seq in the order they arrive.
 */
#ifndef MODEL_SELECT_FOLD_H
#define MODEL_SELECT_FOLD_H

#include "access/transam.h"
#include "executor/spi.h"

#include "model/state.h"

/* A position in an arm's log: the last row folded, in canonical order. */
typedef struct LogPosition
{
	FullTransactionId tx;
	int64		seq;
} LogPosition;

#define LOG_START ((LogPosition) {{0}, 0})

static inline int
log_position_cmp(LogPosition a, LogPosition b)
{
	if (U64FromFullTransactionId(a.tx) != U64FromFullTransactionId(b.tx))
		return U64FromFullTransactionId(a.tx) < U64FromFullTransactionId(b.tx) ? -1 : 1;
	if (a.seq != b.seq)
		return a.seq < b.seq ? -1 : 1;
	return 0;
}

/*
 * Counts and sums of the raw rewards and costs folded (for arm_stats and the
 * budget's pacer).  cost_sum/cost_n cover every reward with a cost (the
 * arm's mean cost); spend_sum/spend_n only the rewards of decisions (what
 * the router spent: rewards inserted without a decision, such as
 * warm_start()'s, teach the cost but are no spend).
 */
typedef struct FoldTotals
{
	int64		n;
	double		reward_sum;
	double		cost_sum;
	int64		cost_n;
	double		spend_sum;
	int64		spend_n;
} FoldTotals;

/*
 * A state being folded: st lives in its own memory context cxt (a child of
 * the context current at fold_begin), replaced as appends copy the state,
 * so memory stays at about two states whatever the number of rows.
 */
typedef struct StateFold
{
	const SelectorConfig *cfg;
	StateHeader *st;			/* NULL: no reward kept yet */
	MemoryContext cxt;
	LogPosition pos;
	FoldTotals	totals;
} StateFold;

/*
 * Columns of the row queries fold_rows() reads, in this order; queries
 * select them as FOLD_COLUMNS from rows r of the reward log (or of a query
 * that selects its columns by name).  A reward by decision_id stores no
 * context: it is its decision's, stored once as float8[] or real[] (read as
 * float8, the same values), looked up in the same snapshot as the row.  A
 * row that repeats it (logged by 0.2.0 or older) is read as it is.
 */
#define FOLD_CONTEXT \
	"COALESCE(r.context, (SELECT COALESCE(d.context, d.context_real::pg_catalog.float8[])" \
	" FROM model_select.decisions d WHERE d.decision_id = r.decision_id)) AS context"
/* the tags that go with the context: the row's own, or its decision's */
#define FOLD_TAGS \
	"CASE WHEN r.context IS NULL THEN (SELECT d.tags FROM model_select.decisions d" \
	" WHERE d.decision_id = r.decision_id) ELSE r.tags END AS tags"
#define FOLD_COLUMNS "r.tx, r.seq, " FOLD_CONTEXT ", r.reward, r.cost, r.decision_id, " FOLD_TAGS

/* Their places, 1-based as SPI numbers columns (a values array: place - 1). */
typedef enum FoldColumn
{
	FOLD_COL_TX = 1,
	FOLD_COL_SEQ,
	FOLD_COL_CONTEXT,
	FOLD_COL_REWARD,
	FOLD_COL_COST,
	FOLD_COL_DECISION,
	FOLD_COL_TAGS,
	FOLD_NCOLUMNS = FOLD_COL_TAGS,
	/* after them: a row's tick (ClockOps.tick; none on the arm's clock) */
	FOLD_COL_TICK,
	/* then, in rows of several arms, the arm's (a reader's: its index + 1; else its id) */
	FOLD_COL_ARM
} FoldColumn;

extern void fold_begin(StateFold *f, const SelectorConfig *cfg, StateHeader *st,
					   LogPosition pos, const FoldTotals *totals);
extern void fold_begin_stored(StateFold *f, const SelectorConfig *cfg, int32 arm_id, Datum stored,
							  bool read_only, LogPosition pos, const FoldTotals *totals);
extern void fold_rows(StateFold *f, SPITupleTable *tt, uint64 first, uint64 last);
extern void fold_build(StateFold *f, SPITupleTable *tt, uint64 first, uint64 last);
extern void fold_some(StateFold *f, SPITupleTable *tt, uint64 first, uint64 last, bool build);
extern LogPosition fold_row_position(SPITupleTable *tt, uint64 row);
extern int64 fold_log(StateFold *f, int32 arm_id, bool fresh_snapshot, FullTransactionId below,
					  bool build);
extern int64 fold_prefix(StateFold *f, int32 arm_id, int64 n, FullTransactionId own_tx,
						 int64 own_seq);
extern FullTransactionId full_xid(TransactionId xid);
extern FullTransactionId final_horizon(void);
extern FullTransactionId final_horizon_for(const SelectorConfig *cfg);
extern FullTransactionId others_horizon(void);
extern FullTransactionId shared_horizon(void);
extern void fold_totals_args(const FoldTotals *totals, Datum *out);
extern void checkpoint_position_from_row(HeapTuple row, TupleDesc desc, int first_col,
										 LogPosition *pos, FoldTotals *totals);
extern void checkpoint_position_from_values(const Datum *values, LogPosition *pos, FoldTotals *totals);

/*
 * The arm_state columns checkpoint_position_from_row() reads, from
 * first_col on, in this order, and their places in that list.
 */
#define CHECKPOINT_POSITION_COLUMNS "ckpt_tx, ckpt_seq, n, reward_sum, cost_sum, cost_n, spend_sum, spend_n"
typedef enum CheckpointPositionColumn
{
	CKPT_POS_TX,
	CKPT_POS_SEQ,
	CKPT_POS_N,
	CKPT_POS_REWARD_SUM,
	CKPT_POS_COST_SUM,
	CKPT_POS_COST_N,
	CKPT_POS_SPEND_SUM,
	CKPT_POS_SPEND_N,
	CHECKPOINT_POSITION_NCOLUMNS
} CheckpointPositionColumn;

#endif
