/*
 * learner_state.h — what the learner process shares with every backend
 * (learner_state.c): one LearnerShared under its LWLock, written by the
 * worker (its pid, database and counters) and read by learner_serving()
 * and learner_status().
 */
#ifndef MODEL_SELECT_LEARNER_STATE_H
#define MODEL_SELECT_LEARNER_STATE_H

#include "datatype/timestamp.h"
#include "storage/latch.h"
#include "storage/lwlock.h"

typedef struct LearnerShared
{
	LWLock	   *lock;
	pid_t		pid;			/* 0: no learner running */
	Latch	   *latch;			/* its latch: a reward's commit sets it */
	Oid			database;
	TimestampTz started;
	TimestampTz last_pass;		/* end of the last pass (0: none yet) */
	int64		passes;
	int64		arms_checkpointed;
	int64		rewards_folded;
	int64		selectors_skipped;	/* settings lock busy */
	int64		errors;
	int64		versions_published;	/* arm bases put in the shared cache */
} LearnerShared;

/* NULL unless preloaded */
extern LearnerShared *learner;
/* GUC model_select.learner_naptime, in ms */
extern int	learner_naptime_ms;

extern void learner_shmem_preload(void);
extern bool learner_serving(void);
extern void learner_wake_at_commit(void);

#endif
