/*
 * learner_pass.h — a learner worker's pass over its database's selectors
 * (learner_pass.c), and the one-selector work it shares with maintain()
 * (learner.c).
 */
#ifndef MODEL_SELECT_LEARNER_PASS_H
#define MODEL_SELECT_LEARNER_PASS_H

#include "learning/learner_state.h"

/* One selector's pass (run as the extension owner). */
typedef struct PassCall
{
	int32		selector_id;	/* 0: look it up by name */
	const char *name;
	bool		check_privilege;	/* maintain(selector): the caller's admin right, or 42501 */
	bool		if_admin;		/* maintain(): skip unless the caller administers it */
	bool		background;		/* the learner's pass: absorbs in batches only */
	bool		skipped;
	int			arms;
	int64		folded;
} PassCall;

/* The selectors of this database in id order (selector_list()). */
typedef struct SelectorList
{
	int			n;
	int32	   *ids;
	char	  **names;
} SelectorList;

/*
 * The selectors a worker visits (learner_state.h): in its publishing passes
 * the marked ones and those of `publish` (their last visit published or
 * did not complete), in its checkpointing passes those marked since the
 * last and a tenth of the others in turn, so every selector once in
 * LEARNER_SLICES checkpointing passes (the log's horizon, the work that
 * spans a selector's arms).  A mark stays, and its selector is visited at
 * every pass, until every transaction up to it has ended: rows that an
 * older transaction held back, even one that logged nothing there, are
 * published as soon as they are final.  Every bit is set at the start: a
 * worker starting does not know what changed before.  At 1,000 selectors of 3 arms and 8 clients, passes over every selector
 * made the learner's lag p99 848 ms.
 */
typedef struct PassSets
{
	LearnerDirty publish;
	LearnerDirty checkpoint;
	int			slice;			/* the next checkpointing pass's share of the others */
	uint64		seen[LEARNER_DIRTY_BITS];	/* the marks a pass read (learner_marks_read) */
} PassSets;

/*
 * Brings a selector's arm models to its final rows and publishes them, the
 * growing ones too if `growing`; returns how many, and *complete: whether
 * every one that grew was published.
 */
typedef int64 (*LearnerPublishHook) (const char *name, bool growing, bool *complete);
/* Set in _PG_init: the routing layer's selector_publish() (learning cannot include routing). */
extern LearnerPublishHook learner_publish_hook;

extern void learn_selector(void *arg);
extern void selector_list(void *arg);
extern void learner_passes_start(LearnerSlot *slot, PassSets *sets);
extern bool learner_pass(bool checkpoints, PassSets *sets);

#endif
