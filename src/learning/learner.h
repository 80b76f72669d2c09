/*
 * learner.h — the learner process and maintain() (learner.c); its pass and
 * the hook through which it publishes: learner_pass.h.
 */
#ifndef MODEL_SELECT_LEARNER_H
#define MODEL_SELECT_LEARNER_H

extern void learner_preload(void);
extern PGDLLEXPORT void model_select_learner_main(Datum arg);

#endif
