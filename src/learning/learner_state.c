/*
 * learner_state.c — the learners' shared state (learner_state.h): their
 * shared memory, whether learners serve this backend's database, and which
 * arms a learner process takes.
 *
 * A database's learner_workers workers split its arms by arm_id modulo
 * their number, each folding and publishing its own (so that the learner's
 * share of the CPU grows with the workers when many backends compete for
 * it); the work that spans a selector's arms (a clock that ticks across
 * them, retention) is worker 0's.  They serve the database only together:
 * learner_serving() and learner_fresh() ask every one of them.
 */
#include "postgres.h"

#include <math.h>

#include "access/xact.h"
#include "access/xlog.h"
#include "miscadmin.h"
#include "storage/ipc.h"
#include "storage/procarray.h"
#include "storage/shmem.h"
#include "utils/builtins.h"
#include "utils/float.h"
#include "utils/timestamp.h"

#include "learning/fold.h"
#include "learning/learner_state.h"

#define LEARNER_TRANCHE "model_select learner"

/* A learner serves while its last pass ended within this many naptimes (and this long). */
#define LEARNER_STALE_PASSES 20
#define LEARNER_STALE_MIN_MS 10000

LearnerShared *learner = NULL;
int			learner_naptime_ms = 200;
int			learner_max_lag_ms = 1000;
int			learner_workers = 2;

/*
 * In a learner process (the slot NULL elsewhere): its slot, worker number
 * and its database's number of workers.
 */
static LearnerSlot *my_attached_slot = NULL;
static int	my_worker = 0;
static int	my_workers = 1;

/* The databases of model_select.learner_databases, from _PG_init (postmaster memory). */
static int	learner_ndatabases = 0;
static char **learner_databases = NULL;

/*
 * This transaction logged rewards: for each learner worker, how many of its
 * arms' (none: nothing to wake), and the (worker, selector) pairs to mark
 * (past WAKE_MARKS of them, every selector of those workers) with its full
 * transaction id; the callback that wakes them is registered.
 */
#define WAKE_MARKS 16
static bool wake_at_commit = false;
static int64 wake_rewards[LEARNER_MAX_WORKERS];
static struct
{
	int			worker;
	int32		selector_id;
}			wake_marks[WAKE_MARKS];
static int	nwake_marks = 0;		/* WAKE_MARKS + 1: overflowed */
static uint64 wake_xid = 0;
static bool wake_callback_registered = false;

static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;

/*
 * The first of the slots of this backend's database (learner->workers side
 * by side), or NULL.  A slot's database is written by its learner when it
 * connects; an Oid is read whole.
 */
static LearnerSlot *
my_learner_slot(void)
{
	if (learner == NULL)
		return NULL;
	for (int i = 0; i < learner->nslots; i++)
		if (learner->slots[i].database == MyDatabaseId)
			return &learner->slots[i - i % learner->workers];
	return NULL;
}

/*
 * Do this database's learners serve it, so that reward inserts leave
 * checkpoints to them?  Only while every worker's passes keep coming.
 */
bool
learner_serving(void)
{
	LearnerSlot *slot = my_learner_slot();
	bool		serving = true;
	long		stale_ms = Max((long) LEARNER_STALE_PASSES * learner_naptime_ms, LEARNER_STALE_MIN_MS);
	TimestampTz now = GetCurrentTimestamp();

	if (slot == NULL)
		return false;
	LWLockAcquire(learner->lock, LW_SHARED);
	for (int w = 0; w < learner->workers && serving; w++)
		serving = slot[w].pid != 0 && slot[w].last_pass != 0 &&
			!TimestampDifferenceExceeds(slot[w].last_pass, now, (int) stale_ms);
	LWLockRelease(learner->lock);
	return serving;
}

/*
 * Does a learner publish this database's versions, so that decisions score
 * them (a final prefix of each arm's log plus their own transaction's
 * rewards) rather than the exact fold of their snapshot?  On a primary
 * whose learner has connected once; whether it keeps up is learner_fresh().
 */
bool
learner_configured(void)
{
	return my_learner_slot() != NULL && !RecoveryInProgress();
}

/*
 * Are the versions the learner publishes recent enough to score from?  Its
 * process runs, its last pass published every version that grew (no error,
 * busy selector or full shared cache), and no reward committed more than
 * model_select.learner_max_lag ago waits for a pass: else (stopped, crashed,
 * behind) a backend folds the final rows itself.
 */
bool
learner_fresh(void)
{
	LearnerSlot *slot = my_learner_slot();
	bool		fresh = slot != NULL && learner_max_lag_ms != 0;
	TimestampTz now = GetCurrentTimestamp();

	if (!fresh)
		return false;
	LWLockAcquire(learner->lock, LW_SHARED);
	for (int w = 0; w < learner->workers && fresh; w++)
		fresh = slot[w].pid != 0 && slot[w].last_pass != 0 && slot[w].last_pass_complete;
	LWLockRelease(learner->lock);
	for (int w = 0; w < learner->workers && fresh; w++)
	{
		TimestampTz pending = (TimestampTz) pg_atomic_read_u64(&slot[w].pending_since);

		fresh = pending == 0 || !TimestampDifferenceExceeds(pending, now, learner_max_lag_ms);
	}
	return fresh;
}

/*
 * The learner starts a pass: the commit time of the oldest reward waiting
 * for it (0: none), and *rewards, how many committed since the last pass.
 */
TimestampTz
learner_take_pending(LearnerSlot *slot, int64 *rewards)
{
	*rewards = (int64) pg_atomic_exchange_u64(&slot->pending_rewards, 0);
	return (TimestampTz) pg_atomic_exchange_u64(&slot->pending_since, 0);
}

/* A pass that started on rewards committed from `pending` on ended now.  Under the lock, exclusive. */
void
learner_record_lag(LearnerSlot *slot, TimestampTz pending, int64 rewards)
{
	LearnerLag *lag = &slot->lags[slot->next_lag];
	long		ms = (long) ((GetCurrentTimestamp() - pending) / 1000);

	lag->ms = (int32) Min(Max(ms, 0), PG_INT32_MAX);
	lag->rewards = (int32) Min(rewards, PG_INT32_MAX);
	slot->next_lag = (slot->next_lag + 1) % LEARNER_LAG_PASSES;
	slot->nlags = Min(slot->nlags + 1, LEARNER_LAG_PASSES);
}

static int
int32_cmp(const void *a, const void *b)
{
	int32		x = *(const int32 *) a;
	int32		y = *(const int32 *) b;

	return (x > y) - (x < y);
}

/*
 * The p50 and p99 (nearest rank) of the recorded passes' lags: ms[0..1] in
 * milliseconds, rewards[0..1] in rewards; NaN when no pass had any.
 */
void
learner_lag_percentiles(const LearnerSlot *slot, double *ms, double *rewards)
{
	int32		a[LEARNER_LAG_PASSES] = {0};
	int32		b[LEARNER_LAG_PASSES] = {0};
	int			n = slot->nlags;
	static const double q[2] = {0.50, 0.99};

	for (int i = 0; i < n; i++)
	{
		a[i] = slot->lags[i].ms;
		b[i] = slot->lags[i].rewards;
	}
	qsort(a, n, sizeof(int32), int32_cmp);
	qsort(b, n, sizeof(int32), int32_cmp);
	for (int k = 0; k < 2; k++)
	{
		int			rank = (int) ceil(q[k] * n) - 1;

		ms[k] = n > 0 ? (double) a[Max(rank, 0)] : get_float8_nan();
		rewards[k] = n > 0 ? (double) b[Max(rank, 0)] : get_float8_nan();
	}
}

/* *mark becomes xid unless it holds a newer one. */
static void
mark_newest(pg_atomic_uint64 *mark, uint64 xid)
{
	uint64		seen = pg_atomic_read_u64(mark);

	while (seen < xid && !pg_atomic_compare_exchange_u64(mark, &seen, xid))
		;
}

/*
 * At the end of a transaction that logged rewards: a commit wakes the
 * learner, whose next version then holds them (callbacks run after the
 * commit is visible).  The latch pointer is read without the lock: a stale
 * one is a latch in shared memory all the same, and setting it is harmless.
 */
static void
learner_wake_xact(XactEvent event, void *arg)
{
	TimestampTz now;
	LearnerSlot *slots = arg;

	if (!wake_at_commit || (event != XACT_EVENT_COMMIT && event != XACT_EVENT_ABORT &&
							event != XACT_EVENT_PREPARE))
		return;
	wake_at_commit = false;
	/* prepared too: its mark stays until the prepared transaction ends */
	for (int i = 0; i < nwake_marks && i < WAKE_MARKS; i++)
		mark_newest(&slots[wake_marks[i].worker].marked[learner_dirty_bit(wake_marks[i].selector_id)], wake_xid);
	for (int w = 0; w < learner->workers && nwake_marks > WAKE_MARKS; w++)
		for (int k = 0; wake_rewards[w] > 0 && k < LEARNER_DIRTY_BITS; k++)
			mark_newest(&slots[w].marked[k], wake_xid);
	if (event == XACT_EVENT_PREPARE)
		return;
	now = GetCurrentTimestamp();
	for (int w = 0; w < learner->workers; w++)
	{
		LearnerSlot *slot = &slots[w];
		Latch	   *latch = slot->latch;
		uint64		none = 0;

		if (wake_rewards[w] == 0)
			continue;
		/* the oldest commit waiting for a pass stays: only a pass takes it */
		if (event == XACT_EVENT_COMMIT)
		{
			(void) pg_atomic_compare_exchange_u64(&slot->pending_since, &none, (uint64) now);
			(void) pg_atomic_fetch_add_u64(&slot->pending_rewards, (uint64) wake_rewards[w]);
		}
		if (latch != NULL)
			SetLatch(latch);
	}
}

/*
 * A reward of arm_id of selector_id was logged: wake the learner worker of
 * that arm when the transaction commits (or rolls back: rows behind it may
 * be final then), with the selector marked dirty for it.
 */
void
learner_wake_at_commit(int32 selector_id, int32 arm_id)
{
	int			worker;

	LearnerSlot *slot = my_learner_slot();
	bool		running = false;

	/* none running: nothing to wake, and no commit time for a later one's lag */
	for (int w = 0; slot != NULL && w < learner->workers; w++)
		running |= slot[w].pid != 0;
	if (!running)
		return;
	if (!wake_callback_registered)
	{
		RegisterXactCallback(learner_wake_xact, slot);
		wake_callback_registered = true;
	}
	if (!wake_at_commit)
	{
		memset(wake_rewards, 0, sizeof(wake_rewards));
		nwake_marks = 0;
		/* a reward row was written: the transaction has its id */
		wake_xid = U64FromFullTransactionId(GetTopFullTransactionId());
	}
	wake_at_commit = true;
	worker = LEARNER_WORKER_OF(arm_id, learner->workers);
	wake_rewards[worker]++;
	for (int i = 0; i < nwake_marks && i < WAKE_MARKS; i++)
		if (wake_marks[i].worker == worker && wake_marks[i].selector_id == selector_id)
			return;
	if (nwake_marks < WAKE_MARKS)
	{
		wake_marks[nwake_marks].worker = worker;
		wake_marks[nwake_marks].selector_id = selector_id;
	}
	nwake_marks = Min(nwake_marks + 1, WAKE_MARKS + 1);
}

/*
 * The worker's marked bits, added to *into, with their marks in seen[] (0:
 * none).  Then the oldest transaction id still running, as a full id: a
 * mark older than it stood for rows every later snapshot finds final.
 */
uint64
learner_marks_read(LearnerSlot *slot, LearnerDirty *into, uint64 *seen)
{
	for (int k = 0; k < LEARNER_DIRTY_BITS; k++)
		if ((seen[k] = pg_atomic_read_u64(&slot->marked[k])) != 0)
			into->w[k / 64] |= UINT64CONST(1) << (k % 64);
	if (RecoveryInProgress())
		return 0;				/* no rewards are logged on a standby: nothing to clear */
	/* read after the marks: a mark's transaction had ended, so the oldest running is newer or it */
	return U64FromFullTransactionId(full_xid(GetOldestActiveTransactionId()));
}

/* After a pass that visited them: the marks seen older than horizon go, unless a newer one came. */
void
learner_marks_clear(LearnerSlot *slot, const uint64 *seen, uint64 horizon)
{
	for (int k = 0; k < LEARNER_DIRTY_BITS; k++)
	{
		uint64		mark = seen[k];

		if (mark != 0 && mark < horizon)
			(void) pg_atomic_compare_exchange_u64(&slot->marked[k], &mark, 0);
	}
}

/* In a learner process, from its slot: the arms it takes. */
void
learner_worker_attach(LearnerSlot *slot)
{
	my_attached_slot = slot;
	my_worker = slot->worker;
	my_workers = learner->workers;
}

/* Is this a learner process? */
bool
learner_process(void)
{
	return my_attached_slot != NULL;
}

/* In a learner process: have rewards committed since its pass began that wait for the next? */
bool
learner_rewards_waiting(void)
{
	return my_attached_slot != NULL &&
		pg_atomic_read_u64(&my_attached_slot->pending_since) != 0;
}

/*
 * Does this process fold, checkpoint and publish the arm?  Every arm outside
 * a learner (maintain()).  On a clock that ticks across the arms
 * (across_arms) the arms go together, to worker 0.
 */
bool
learner_owns_arm(int32 arm_id, bool across_arms)
{
	return across_arms ? learner_owns_selectors() : LEARNER_WORKER_OF(arm_id, my_workers) == my_worker;
}

/* Does this process do the work that spans a selector's arms?  Worker 0, or not a learner. */
bool
learner_owns_selectors(void)
{
	return my_worker == 0;
}

static Size
learner_shmem_size(void)
{
	return add_size(offsetof(LearnerShared, slots),
					mul_size(mul_size(learner_ndatabases, learner_workers), sizeof(LearnerSlot)));
}

static void
learner_request(void)
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	RequestAddinShmemSpace(MAXALIGN(learner_shmem_size()));
	RequestNamedLWLockTranche(LEARNER_TRANCHE, 1);
}

static void
learner_startup(void)
{
	bool		found;

	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();
	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	learner = ShmemInitStruct("model_select learner", learner_shmem_size(), &found);
	if (!found)
	{
		memset(learner, 0, learner_shmem_size());
		learner->lock = &(GetNamedLWLockTranche(LEARNER_TRANCHE))->lock;
		learner->nslots = learner_ndatabases * learner_workers;
		learner->workers = learner_workers;
		for (int i = 0; i < learner->nslots; i++)
		{
			namestrcpy(&learner->slots[i].dbname, learner_databases[i / learner_workers]);
			learner->slots[i].worker = i % learner_workers;
			pg_atomic_init_u64(&learner->slots[i].pending_since, 0);
			pg_atomic_init_u64(&learner->slots[i].pending_rewards, 0);
			for (int k = 0; k < LEARNER_DIRTY_BITS; k++)
				pg_atomic_init_u64(&learner->slots[i].marked[k], 0);
		}
	}
	LWLockRelease(AddinShmemInitLock);
}

/*
 * From _PG_init while shared_preload_libraries are loaded: learner_workers
 * slots per database of model_select.learner_databases (names kept by the
 * caller).
 */
void
learner_shmem_preload(int ndatabases, char **databases)
{
	learner_ndatabases = ndatabases;
	learner_databases = databases;
	prev_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = learner_request;
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = learner_startup;
}
