/*
 * learner_state.h — what the learner processes share with every backend
 * (learner_state.c): model_select.learner_workers LearnerSlots per database
 * of model_select.learner_databases, side by side, all under one LWLock.  A
 * slot's worker writes its pid, latch, database and counters;
 * learner_serving(), learner_fresh(), learner_wake_at_commit() and
 * learner_status() read them.  A slot's name and worker number are set when
 * shared memory is created and never change.
 */
#ifndef MODEL_SELECT_LEARNER_STATE_H
#define MODEL_SELECT_LEARNER_STATE_H

#include "datatype/timestamp.h"
#include "port/atomics.h"
#include "storage/latch.h"
#include "storage/lwlock.h"

/*
 * A pass's lag: from the commit of the oldest reward it was woken for to
 * the end of the pass (every version it publishes holds that reward, if
 * final), and the rewards it folded.
 */
typedef struct LearnerLag
{
	int32		ms;
	int32		rewards;
} LearnerLag;

#define LEARNER_LAG_PASSES 256

/*
 * Selectors a worker has work for, as bits (selector_id modulo
 * LEARNER_DIRTY_BITS; selectors that share a bit are visited together).  A
 * transaction that logged rewards on the worker's arms marks its selector's
 * bit with its transaction id as it ends (committed: new rows; rolled back
 * or prepared: rows behind it wait for it), keeping the newest id.  A pass
 * visits the marked selectors, not every selector of the database
 * (learner.c), and clears a mark once every transaction up to its id had
 * ended when the pass began: the rows it stood for were final for the pass.
 */
#define LEARNER_DIRTY_WORDS 64
#define LEARNER_DIRTY_BITS (64 * LEARNER_DIRTY_WORDS)

typedef struct LearnerDirty
{
	uint64		w[LEARNER_DIRTY_WORDS];
} LearnerDirty;

/* The bit of a selector. */
static inline uint32
learner_dirty_bit(int32 selector_id)
{
	return (uint32) selector_id % LEARNER_DIRTY_BITS;
}

static inline bool
learner_dirty_test(const LearnerDirty *d, int32 selector_id)
{
	uint32		bit = learner_dirty_bit(selector_id);

	return (d->w[bit / 64] >> (bit % 64)) & 1;
}

static inline void
learner_dirty_set(LearnerDirty *d, int32 selector_id)
{
	uint32		bit = learner_dirty_bit(selector_id);

	d->w[bit / 64] |= UINT64CONST(1) << (bit % 64);
}

/* the most model_select.learner_workers per database */
#define LEARNER_MAX_WORKERS 16

/* The worker, of `workers`, that folds and publishes an arm. */
#define LEARNER_WORKER_OF(arm_id, workers) ((int) ((uint32) (arm_id) % (uint32) (workers)))

typedef struct LearnerSlot
{
	NameData	dbname;			/* the database it serves, as configured */
	int			worker;			/* which of the database's workers: the arms it takes (learner_owns_arm()) */
	pid_t		pid;			/* 0: its learner is not running */
	Latch	   *latch;			/* its latch: a reward's commit there sets it */
	Oid			database;		/* InvalidOid until its learner connects */
	TimestampTz started;
	TimestampTz last_pass;		/* end of the last pass (0: none yet) */
	bool		last_pass_complete; /* it published every version that grew */
	int64		passes;
	int64		arms_checkpointed;
	int64		rewards_folded;
	int64		selectors_skipped;	/* settings lock busy */
	int64		errors;
	int64		versions_published;	/* arm bases put in the shared cache */
	/*
	 * The commit time of the oldest reward no pass has started on yet (0:
	 * none): set by committing backends (compare-and-swap from 0), taken
	 * (exchanged for 0) by the learner as a pass starts.  Read without the
	 * lock.
	 */
	pg_atomic_uint64 pending_since;
	pg_atomic_uint64 pending_rewards;	/* rewards committed since the pass started */
	/* per bit, the newest marking transaction's full id (0: none); set by backends, cleared by the worker */
	pg_atomic_uint64 marked[LEARNER_DIRTY_BITS];
	/* the last LEARNER_LAG_PASSES passes that had rewards to publish: their lag */
	int			nlags;
	int			next_lag;
	LearnerLag	lags[LEARNER_LAG_PASSES];
} LearnerSlot;

typedef struct LearnerShared
{
	LWLock	   *lock;
	int			nslots;
	int			workers;		/* slots per database */
	LearnerSlot slots[FLEXIBLE_ARRAY_MEMBER];
} LearnerShared;

/* NULL unless preloaded */
extern LearnerShared *learner;
/* GUC model_select.learner_naptime, in ms */
extern int	learner_naptime_ms;
/* GUC model_select.learner_max_lag, in ms */
extern int	learner_max_lag_ms;
/* GUC model_select.learner_workers */
extern int	learner_workers;

extern void learner_shmem_preload(int ndatabases, char **databases);
extern bool learner_serving(void);
extern bool learner_configured(void);
extern bool learner_fresh(void);
extern TimestampTz learner_take_pending(LearnerSlot *slot, int64 *rewards);
extern void learner_record_lag(LearnerSlot *slot, TimestampTz pending, int64 rewards);
extern void learner_lag_percentiles(const LearnerSlot *slot, double *ms, double *rewards);
extern void learner_wake_at_commit(int32 selector_id, int32 arm_id);
extern uint64 learner_marks_read(LearnerSlot *slot, LearnerDirty *into, uint64 *seen);
extern void learner_marks_clear(LearnerSlot *slot, const uint64 *seen, uint64 horizon);
extern void learner_worker_attach(LearnerSlot *slot);
extern bool learner_owns_arm(int32 arm_id, bool across_arms);
extern bool learner_owns_selectors(void);
extern bool learner_rewards_waiting(void);
extern bool learner_process(void);

#endif
