/*
 * pacer_window.c — a selector's newest decisions and whether each has a
 * reward: the window that the budget's pacer and the awaited rewards count
 * (pacer.c, awaited.c).
 *
 * A full read takes the newest `limit` decisions by created_at, then
 * decision_id (a backward read of the index on (selector_id, created_at,
 * decision_id)), and the selector's rewards from the window's smallest
 * decision_id on (the index on (selector_id, decision_id)): two reads
 * bounded by the window, not the log, as the caller's snapshot sees them.
 * With 1,000 decisions it is about 2,000 index and heap fetches, 4.4 M
 * instructions: five times a whole lin_ucb decision at d = 384 (0.84 M).
 *
 * So where the learner serves, and decisions score its versions, already a
 * bounded-staleness view of the log (arm_cache.h), a backend keeps each
 * selector's window (also for a clock that ages, whose arms are folded
 * exactly; and on a standby, whose view trails the primary).  Each read
 * takes only the decisions logged after the newest it holds, and each arm's
 * rewards of the other transactions that were still running at the last
 * read or began after it (tx from the oldest that read could not see on)
 * and of ours after the last of them read: usually a few rows, so other
 * sessions' new decisions and every new reward of a decision held count at
 * once, also in a long transaction of our own.  route() puts each decision it logs into the window
 * (pacer_window_logged()), so the transaction's own count at once too, even
 * when it began before the newest decision held; route_batch() drops the
 * window (its reads between blocks keep none).  What the reads miss is
 * another transaction's decision committed with an older created_at than
 * the newest held (it began before that one's): so once per pacer_window_reuse decisions (default 16) or
 * model_select.learner_max_lag, whichever ends first, the decisions are read
 * anew, but not their rewards, which the decisions held keep
 * (window_read_late()); every PACER_WINDOW_ANEW_PER_FULL-th such read is a
 * full one, for a reward deleted from the log.  With more than
 * PACER_WINDOW_MAX_ARMS arms rewards are not read arm by arm: then every
 * reward of a decision held waits for that read, which is a full one.
 * Without the learner every read is full: the exact count under the
 * snapshot.  An aborted (sub)transaction or a prepared one drops every kept
 * window, which may hold its decisions.
 *
 * The kept windows are a cache: PACER_WINDOWS selectors, least recently used
 * replaced, rows in their own memory context; a window longer than
 * PACER_WINDOW_MAX_ROWS (pending_horizon 16,384, or 8,192 with
 * count_pending) is not kept.
 */
#include "postgres.h"

#include "access/xact.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"
#include "utils/xid8.h"

#include "learning/fold.h"
#include "learning/learner_state.h"
#include "pg/index_read.h"
#include "routing/arm_cache.h"
#include "routing/pacer_window.h"

#define PACER_WINDOWS 8
/* the longest window kept (1.4 MB: 88 bytes a row); longer ones are read in full every time */
#define PACER_WINDOW_MAX_ROWS 16384
/*
 * the most arms whose rewards are read arm by arm between full reads (an
 * index probe each, about 14 k instructions); with more, rewards of the
 * decisions held wait for the next full read
 */
#define PACER_WINDOW_MAX_ARMS 16
/*
 * the most decisions not held whose rewards a refresh looks up one by one
 * (an index probe each); with more it reads the window's rewards in full
 */
#define PACER_WINDOW_MAX_PROBES 64
/*
 * reads anew per full read: the marks a window keeps are read again now and
 * then, so that a reward deleted from the log (DELETE, then rebuild_state())
 * stops counting as one
 */
#define PACER_WINDOW_ANEW_PER_FULL 16

int			pacer_window_reuse = 16;

/* One selector's window as this backend last read it. */
typedef struct PacerWindow
{
	int32		selector_id;	/* 0: a free slot */
	int			limit;			/* the rows the window holds at most */
	int			n;
	WindowDecision *rows;		/* newest first, room for limit */
	int			narms;			/* the arms whose rewards it reads, */
	int32	   *arm_ids;
	FullTransactionId since;	/* others' rewards from this transaction on */
	FullTransactionId own;		/* our transaction at the last read (or invalid), */
	int64		own_seq;		/* and the last seq of its rewards read then */
	int			served;			/* reads answered since it was read anew */
	int			anew;			/* reads anew since the full read */
	TimestampTz read_at;		/* of the full read */
	uint64		used;			/* when it last answered (window_clock) */
} PacerWindow;

static PacerWindow windows[PACER_WINDOWS];
static MemoryContext window_context = NULL;
static uint64 window_clock = 0;

/* The log's order of two decisions: created_at, then decision_id. */
static int
window_key_cmp(const WindowDecision *a, const WindowDecision *b)
{
	if (a->created_at != b->created_at)
		return (a->created_at > b->created_at) - (a->created_at < b->created_at);
	return (a->decision_id > b->decision_id) - (a->decision_id < b->decision_id);
}

/*
 * Mark the decisions of w that have a reward among arm_id's rewards after
 * position from, of transactions before until (invalid: of all); *read
 * counts them, *own_seq is the last seq of ours among them.  Stops once
 * *read passes w->limit.
 */
static void
window_arm_rewards(PacerWindow *w, Relation rewards, const AttrNumber *attnums, int32 arm_id,
				   LogPosition from, FullTransactionId until, int *read, int64 *own_seq)
{
	FullTransactionId mine = GetTopFullTransactionIdIfAny();
	IndexRead	r;
	HeapTuple	row;

	arm_log_rows_begin(&r, rewards, arm_id, from);
	while (*read <= w->limit && (row = index_read_next(&r)) != NULL)
	{
		Datum		values[WINDOW_REWARD_COLUMNS];
		bool		nulls[WINDOW_REWARD_COLUMNS];

		own_columns_at(rewards, row, WINDOW_REWARD_COLUMNS, attnums, values, nulls);
		if (FullTransactionIdIsValid(until) &&
			!FullTransactionIdPrecedes(DatumGetFullTransactionId(values[1]), until))
			break;
		(*read)++;
		window_own_read(mine, values[1], values[2], own_seq);
		/* most rewards are of the newest decisions, at the front */
		for (int k = 0; !nulls[0] && k < w->n; k++)
			if (w->rows[k].decision_id == DatumGetInt64(values[0]))
			{
				window_reward_set(&w->rows[k].reward, values, nulls);
				break;
			}
	}
	index_read_end(&r);
}

/*
 * Mark the decisions of w that have a reward among those logged since its
 * last read, arm by arm (the index on (arm_id, tx, seq)): other
 * transactions' from w->since on, and ours (w->own) after w->own_seq.  Every
 * reward of an older transaction but ours was visible at the read that set
 * w->since, and so was each of ours up to w->own_seq: each was marked then
 * if its decision was held.  So the rewards of held decisions are counted at
 * once, whatever order they commit in, also in a long transaction of our
 * own.  Then w->since moves to the oldest transaction other than ours that
 * the caller's snapshot cannot see, w->own to ours.  False, and w kept, if
 * there are more of those rewards than the window's length (an old
 * transaction holds the horizon back): then a full read is cheaper.
 */
static bool
window_rewards_after(PacerWindow *w)
{
	FullTransactionId mine = GetTopFullTransactionIdIfAny();
	FullTransactionId none = InvalidFullTransactionId;
	bool		own = FullTransactionIdIsValid(w->own);
	LogPosition others = {w->since, -1};
	LogPosition ours = {w->own, w->own_seq};
	FullTransactionId after_ours = FullTransactionIdFromU64(U64FromFullTransactionId(w->own) + 1);
	int64		own_seq = FullTransactionIdEquals(w->own, mine) ? w->own_seq : -1;
	Relation	rewards = own_table_open("rewards");
	AttrNumber	attnums[WINDOW_REWARD_COLUMNS];
	int			read = 0;

	for (int i = 0; i < WINDOW_REWARD_COLUMNS; i++)
		attnums[i] = own_column(rewards, window_reward_columns[i]);
	for (int a = 0; a < w->narms && read <= w->limit; a++)
	{
		int32		arm = w->arm_ids[a];

		if (!own)
			window_arm_rewards(w, rewards, attnums, arm, others, none, &read, &own_seq);
		else if (FullTransactionIdPrecedes(w->own, w->since))
		{
			window_arm_rewards(w, rewards, attnums, arm, ours, after_ours, &read, &own_seq);
			window_arm_rewards(w, rewards, attnums, arm, others, none, &read, &own_seq);
		}
		else
		{
			window_arm_rewards(w, rewards, attnums, arm, others, w->own, &read, &own_seq);
			window_arm_rewards(w, rewards, attnums, arm, ours, none, &read, &own_seq);
		}
	}
	own_table_close(rewards);
	if (read > w->limit)
		return false;
	w->since = others_horizon();
	w->own = mine;
	w->own_seq = own_seq;
	return true;
}

/* The slot that holds, or is to hold, selector_id's window: its own, else a free or the least recently used one. */
static PacerWindow *
window_slot(int32 selector_id)
{
	PacerWindow *slot = &windows[0];

	for (int i = 0; i < PACER_WINDOWS; i++)
	{
		if (windows[i].selector_id == selector_id)
			return &windows[i];
		if (windows[i].used < slot->used)
			slot = &windows[i];
	}
	return slot;
}

/* Does w hold selector_id's window of limit rows, of these arms? */
static bool
window_holds(const PacerWindow *w, int32 selector_id, int limit, int narms, const int32 *arm_ids)
{
	return w->selector_id == selector_id && w->limit == limit && w->narms == narms &&
		memcmp(w->arm_ids, arm_ids, sizeof(int32) * narms) == 0;
}

/*
 * Is w due to be read anew (after pacer_window_reuse reads, or
 * model_select.learner_max_lag), for the decisions committed late?
 */
static bool
window_due(const PacerWindow *w)
{
	return w->served >= pacer_window_reuse ||
		TimestampDifferenceExceeds(w->read_at, GetCurrentTimestamp(), Max(learner_max_lag_ms, 0));
}

/* Read the window anew into w. */
static void
window_read_full(PacerWindow *w, int32 selector_id, int limit, int narms, const int32 *arm_ids)
{
	if (w->arm_ids == NULL || w->narms < narms)
	{
		if (w->arm_ids != NULL)
			pfree(w->arm_ids);
		w->arm_ids = MemoryContextAlloc(window_context, sizeof(int32) * Max(narms, 1));
	}
	w->narms = narms;
	memcpy(w->arm_ids, arm_ids, sizeof(int32) * narms);
	if (w->rows == NULL || w->limit < limit)
	{
		if (w->rows != NULL)
			pfree(w->rows);
		w->rows = MemoryContextAlloc(window_context, sizeof(WindowDecision) * Max(limit, 1));
	}
	w->n = window_read(selector_id, limit, NULL, narms, arm_ids, w->rows);
	window_rewarded(selector_id, w->rows, w->n, true, &w->own_seq);
	/* every reward of an older transaction but ours is visible to the snapshot, or never will be */
	w->since = others_horizon();
	w->own = GetTopFullTransactionIdIfAny();
	w->limit = limit;
	w->served = 0;
	w->anew = 0;
	w->read_at = GetCurrentTimestamp();
}

/*
 * Put the decisions logged after w's newest (all, if it has none) in front
 * of its rows, keeping the newest limit; then mark those of its rows whose
 * rewards were logged since.  False: too many rewards to read (read w in
 * full instead).
 */
static bool
window_read_newer(PacerWindow *w, int32 selector_id)
{
	WindowDecision *newer = palloc(sizeof(WindowDecision) * w->limit);
	int			m = window_read(selector_id, w->limit, w->n > 0 ? &w->rows[0] : NULL, w->narms, w->arm_ids,
									newer);
	int			kept = Min(w->n, w->limit - m);

	memmove(w->rows + m, w->rows, sizeof(WindowDecision) * kept);
	memcpy(w->rows, newer, sizeof(WindowDecision) * m);
	w->n = m + kept;
	pfree(newer);
	return w->narms > PACER_WINDOW_MAX_ARMS || window_rewards_after(w);
}

/*
 * Read w's decisions anew, after window_read_newer(), for those committed
 * with an older created_at than one it held, which reads of newer decisions
 * miss.  A decision w holds keeps its mark: each of its rewards since was
 * marked by window_rewards_after().  Those it did not hold, usually a few,
 * are looked up one by one (the unique index on decision_id); more than
 * PACER_WINDOW_MAX_PROBES, and every reward is read as in a full read.  False
 * with more than PACER_WINDOW_MAX_ARMS arms, whose marks were not kept: read
 * w in full instead.
 */
static bool
window_read_late(PacerWindow *w, int32 selector_id)
{
	WindowDecision *rows;
	int		   *unheld;
	int			m;
	int			held = 0;
	int			nunheld = 0;

	if (w->narms > PACER_WINDOW_MAX_ARMS)
		return false;
	rows = palloc(sizeof(WindowDecision) * Max(w->limit, 1));
	unheld = palloc(sizeof(int) * Max(w->limit, 1));
	m = window_read(selector_id, w->limit, NULL, w->narms, w->arm_ids, rows);
	/* both newest first; a decision held but not read again was deleted */
	for (int k = 0; k < m; k++)
	{
		while (held < w->n && window_key_cmp(&w->rows[held], &rows[k]) > 0)
			held++;
		if (held < w->n && w->rows[held].decision_id == rows[k].decision_id)
			rows[k].reward = w->rows[held].reward;
		else
			unheld[nunheld++] = k;
	}
	if (nunheld > PACER_WINDOW_MAX_PROBES)
		window_rewarded(selector_id, rows, m, true, NULL);
	else
		window_rewards_looked_up(rows, unheld, nunheld);
	memcpy(w->rows, rows, sizeof(WindowDecision) * m);
	w->n = m;
	w->served = 0;
	w->anew++;
	w->read_at = GetCurrentTimestamp();
	pfree(unheld);
	pfree(rows);
	return true;
}

/*
 * The window kept for selector_id, if any, is read in full next time: after a
 * read without reuse, during which it would miss what is logged (the learner
 * no longer serves the database; route_batch()'s reads between blocks).
 */
static void
pacer_window_forget(int32 selector_id)
{
	for (int i = 0; i < PACER_WINDOWS; i++)
		if (windows[i].selector_id == selector_id)
			windows[i].selector_id = 0;
}

/*
 * The selector's newest limit decisions (by created_at, then decision_id),
 * newest first, each marked whether it has a reward; *n of them.  reuse
 * (the learner serves the database, or a standby): from the window this backend
 * keeps, as above, if it has at most PACER_WINDOW_MAX_ROWS rows; else read in
 * full under the caller's snapshot into memory of the caller's context,
 * each reward's cost and place only if whole (a kept window has them).
 * Valid until the next call; pass the rows to pacer_window_release() when
 * done.  Run as the extension owner.
 */
const WindowDecision *
pacer_window(int32 selector_id, int limit, bool reuse, bool whole, int narms, const int32 *arm_ids, int *n)
{
	PacerWindow *w;
	bool		holds;
	bool		full;

	if (!reuse || limit > PACER_WINDOW_MAX_ROWS)
	{
		WindowDecision *rows = palloc(sizeof(WindowDecision) * Max(limit, 1));

		/* a window kept before would miss what is logged meanwhile */
		pacer_window_forget(selector_id);

		*n = window_read_marked(selector_id, limit, narms, arm_ids, whole, rows);
		return rows;
	}
	if (window_context == NULL)
		window_context = AllocSetContextCreate(TopMemoryContext, "model_select pacer windows",
											   ALLOCSET_SMALL_SIZES);
	w = window_slot(selector_id);
	holds = window_holds(w, selector_id, limit, narms, arm_ids);
	/* a read that fails leaves no half-read window */
	w->selector_id = 0;
	full = !holds || !window_read_newer(w, selector_id);
	if (!full && window_due(w))
		full = w->anew + 1 >= PACER_WINDOW_ANEW_PER_FULL || !window_read_late(w, selector_id);
	if (full)
		window_read_full(w, selector_id, limit, narms, arm_ids);
	w->selector_id = selector_id;
	w->served++;
	w->used = ++window_clock;
	*n = w->n;
	return w->rows;
}

/* Done with rows pacer_window() returned: freed unless a kept window's. */
void
pacer_window_release(const WindowDecision *rows)
{
	for (int i = 0; i < PACER_WINDOWS; i++)
		if (windows[i].rows == rows)
			return;
	pfree((void *) rows);
}

/*
 * route() logged decision (not rewarded) for selector_id: into the window
 * this backend keeps for it, if any, in the log's order, so that its next
 * decisions count it at once.  The reads of newer decisions would miss it
 * when its transaction began before the newest decision the window holds.
 */
void
pacer_window_logged(int32 selector_id, const WindowDecision *decision)
{
	PacerWindow *w = NULL;
	int			at = 0;

	for (int i = 0; i < PACER_WINDOWS; i++)
		if (windows[i].selector_id == selector_id)
			w = &windows[i];
	if (w == NULL)
		return;
	while (at < w->n && window_key_cmp(&w->rows[at], decision) > 0)
		at++;
	if (at == w->limit)
		return;
	memmove(w->rows + at + 1, w->rows + at, sizeof(WindowDecision) * (Min(w->n, w->limit - 1) - at));
	w->rows[at] = *decision;
	w->rows[at].arm = window_arm(decision->arm_id, w->narms, w->arm_ids);
	w->n = Min(w->n + 1, w->limit);
}

/* Every kept window may hold decisions that will never commit. */
static void
windows_forget(void)
{
	for (int i = 0; i < PACER_WINDOWS; i++)
		windows[i].selector_id = 0;
}

static void
pacer_window_xact(XactEvent event, void *arg)
{
	if (event == XACT_EVENT_ABORT || event == XACT_EVENT_PARALLEL_ABORT || event == XACT_EVENT_PREPARE)
		windows_forget();
}

static void
pacer_window_subxact(SubXactEvent event, SubTransactionId mySubid, SubTransactionId parentSubid, void *arg)
{
	if (event == SUBXACT_EVENT_ABORT_SUB)
		windows_forget();
}

/* At load: the setting, and the callbacks that drop windows an abort may have made wrong. */
void
pacer_window_init(void)
{
	DefineCustomIntVariable("model_select.pacer_window_reuse",
							"Decisions of a backend that may count a budget's pending decisions "
							"before it reads them anew.",
							"Where the learner serves, and on standbys, the pacer keeps a "
							"selector's newest pending_horizon decisions and their rewards, and "
							"reads only the decisions and rewards logged since; once per this many "
							"decisions (or model_select.learner_max_lag) it reads the decisions anew, "
							"for those other transactions committed late.  1: every decision.",
							&pacer_window_reuse, 16, 1, 1000000,
							PGC_USERSET, 0, NULL, NULL, NULL);
	RegisterXactCallback(pacer_window_xact, NULL);
	RegisterSubXactCallback(pacer_window_subxact, NULL);
}
