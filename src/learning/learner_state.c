/*
 * learner_state.c — the learners' shared state (learner_state.h): their
 * shared memory, and whether a learner serves this backend's database.
 */
#include "postgres.h"

#include "access/xact.h"
#include "miscadmin.h"
#include "storage/ipc.h"
#include "storage/shmem.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"

#include "learning/learner_state.h"

#define LEARNER_TRANCHE "model_select learner"

/* A learner serves while its last pass ended within this many naptimes (and this long). */
#define LEARNER_STALE_PASSES 20
#define LEARNER_STALE_MIN_MS 10000

LearnerShared *learner = NULL;
int			learner_naptime_ms = 200;

/* The databases of model_select.learner_databases, from _PG_init (postmaster memory). */
static int	learner_ndatabases = 0;
static char **learner_databases = NULL;

/* This transaction logged a reward; the callback that wakes the learner is registered. */
static bool wake_at_commit = false;
static bool wake_callback_registered = false;

static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;

/*
 * The slot of this backend's database, or NULL.  A slot's database is
 * written by its learner when it connects; an Oid is read whole.
 */
static LearnerSlot *
my_learner_slot(void)
{
	if (learner == NULL)
		return NULL;
	for (int i = 0; i < learner->nslots; i++)
		if (learner->slots[i].database == MyDatabaseId)
			return &learner->slots[i];
	return NULL;
}

/*
 * Does a learner serve this database, so that reward inserts leave
 * checkpoints to it?  Only while its passes keep coming.
 */
bool
learner_serving(void)
{
	LearnerSlot *slot = my_learner_slot();
	bool		serving;
	long		stale_ms = Max((long) LEARNER_STALE_PASSES * learner_naptime_ms, LEARNER_STALE_MIN_MS);

	if (slot == NULL)
		return false;
	LWLockAcquire(learner->lock, LW_SHARED);
	serving = slot->pid != 0 && slot->last_pass != 0 &&
		!TimestampDifferenceExceeds(slot->last_pass, GetCurrentTimestamp(), (int) stale_ms);
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
	latch = event == XACT_EVENT_COMMIT ? ((LearnerSlot *) arg)->latch : NULL;
	if (latch != NULL)
		SetLatch(latch);
}

/* A reward was logged: wake this database's learner when the transaction commits. */
void
learner_wake_at_commit(void)
{
	LearnerSlot *slot = my_learner_slot();

	if (slot == NULL || slot->pid == 0)
		return;
	if (!wake_callback_registered)
	{
		RegisterXactCallback(learner_wake_xact, slot);
		wake_callback_registered = true;
	}
	wake_at_commit = true;
}

static Size
learner_shmem_size(void)
{
	return add_size(offsetof(LearnerShared, slots),
					mul_size(learner_ndatabases, sizeof(LearnerSlot)));
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
		learner->nslots = learner_ndatabases;
		for (int i = 0; i < learner_ndatabases; i++)
			namestrcpy(&learner->slots[i].dbname, learner_databases[i]);
	}
	LWLockRelease(AddinShmemInitLock);
}

/*
 * From _PG_init while shared_preload_libraries are loaded: one slot per
 * database of model_select.learner_databases (names kept by the caller).
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
