/*
 * learner_state.h — what the learner processes share with every backend
 * (learner_state.c): one LearnerSlot per database of
 * model_select.learner_databases, all under one LWLock.  A slot's worker
 * writes its pid, latch, database and counters; learner_serving(),
 * learner_wake_at_commit() and learner_status() read them.  A slot's name is
 * set when shared memory is created and never changes.
 */
#ifndef MODEL_SELECT_LEARNER_STATE_H
#define MODEL_SELECT_LEARNER_STATE_H

#include "datatype/timestamp.h"
#include "storage/latch.h"
#include "storage/lwlock.h"

typedef struct LearnerSlot
{
	NameData	dbname;			/* the database it serves, as configured */
	pid_t		pid;			/* 0: its learner is not running */
	Latch	   *latch;			/* its latch: a reward's commit there sets it */
	Oid			database;		/* InvalidOid until its learner connects */
	TimestampTz started;
	TimestampTz last_pass;		/* end of the last pass (0: none yet) */
	int64		passes;
	int64		arms_checkpointed;
	int64		rewards_folded;
	int64		selectors_skipped;	/* settings lock busy */
	int64		errors;
	int64		versions_published;	/* arm bases put in the shared cache */
} LearnerSlot;

typedef struct LearnerShared
{
	LWLock	   *lock;
	int			nslots;
	LearnerSlot slots[FLEXIBLE_ARRAY_MEMBER];
} LearnerShared;

/* NULL unless preloaded */
extern LearnerShared *learner;
/* GUC model_select.learner_naptime, in ms */
extern int	learner_naptime_ms;

extern void learner_shmem_preload(int ndatabases, char **databases);
extern bool learner_serving(void);
extern void learner_wake_at_commit(void);

#endif
