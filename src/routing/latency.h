/*
 * latency.h — server-wide latency of select_model() and route() per
 * selector and arm, in shared memory when preloaded (view model_select.stats).
 */
#ifndef MODEL_SELECT_LATENCY_H
#define MODEL_SELECT_LATENCY_H

extern void latency_preload(void);

#endif
