/*
 * learner_state.c — the learner's shared state (learner_state.h): its
 * shared memory, and whether the learner serves this backend's database.
 */
#include "postgres.h"

#include "access/xact.h"
#include "miscadmin.h"
#include "storage/ipc.h"
#include "storage/shmem.h"
#include "utils/timestamp.h"

#include "learning/learner_state.h"

#define LEARNER_TRANCHE "model_select learner"

/* A learner serves while its last pass ended within this many naptimes (and this long). */
#define LEARNER_STALE_PASSES 20
#define LEARNER_STALE_MIN_MS 10000

LearnerShared *learner = NULL;
int			learner_naptime_ms = 200;

/* This transaction logged a reward; the callback that wakes the learner is registered. */
static bool wake_at_commit = false;
static bool wake_callback_registered = false;

static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;

/*
 * Does a learner serve this database, so that reward inserts leave
 * checkpoints to it?  Only while its passes keep coming.
 */
bool
learner_serving(void)
{
	bool		serving;
	long		stale_ms = Max((long) LEARNER_STALE_PASSES * learner_naptime_ms, LEARNER_STALE_MIN_MS);

	if (learner == NULL)
		return false;
	LWLockAcquire(learner->lock, LW_SHARED);
	serving = learner->pid != 0 && learner->database == MyDatabaseId && learner->last_pass != 0 &&
		!TimestampDifferenceExceeds(learner->last_pass, GetCurrentTimestamp(), (int) stale_ms);
	LWLockRelease(learner->lock);
	return serving;
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
	Latch	   *latch;

	if (!wake_at_commit || (event != XACT_EVENT_COMMIT && event != XACT_EVENT_ABORT &&
							event != XACT_EVENT_PREPARE))
		return;
	wake_at_commit = false;
	latch = learner->latch;
	if (event == XACT_EVENT_COMMIT && latch != NULL && learner->database == MyDatabaseId)
		SetLatch(latch);
}

/* A reward was logged: wake the learner when the transaction commits. */
void
learner_wake_at_commit(void)
{
	if (learner == NULL || learner->pid == 0)
		return;
	if (!wake_callback_registered)
	{
		RegisterXactCallback(learner_wake_xact, NULL);
		wake_callback_registered = true;
	}
	wake_at_commit = true;
}

static void
learner_request(void)
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	RequestAddinShmemSpace(MAXALIGN(sizeof(LearnerShared)));
	RequestNamedLWLockTranche(LEARNER_TRANCHE, 1);
}

static void
learner_startup(void)
{
	bool		found;

	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();
	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	learner = ShmemInitStruct("model_select learner", sizeof(LearnerShared), &found);
	if (!found)
	{
		memset(learner, 0, sizeof(LearnerShared));
		learner->lock = &(GetNamedLWLockTranche(LEARNER_TRANCHE))->lock;
	}
	LWLockRelease(AddinShmemInitLock);
}

/* From _PG_init while shared_preload_libraries are loaded. */
void
learner_shmem_preload(void)
{
	prev_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = learner_request;
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = learner_startup;
}
