/*
 * learner.h — the learner process and maintain() (learner.c).
 */
#ifndef MODEL_SELECT_LEARNER_H
#define MODEL_SELECT_LEARNER_H

/*
 * Brings a selector's arm models to its final rows and publishes them, the
 * growing ones too if `growing`; returns how many, and *complete: whether
 * every one that grew was published.
 */
typedef int64 (*LearnerPublishHook) (const char *name, bool growing, bool *complete);
extern LearnerPublishHook learner_publish_hook;

extern void learner_preload(void);
extern PGDLLEXPORT void model_select_learner_main(Datum arg);

#endif
