/*
 * share_cache.h — the priors of "share" kept per set of decoded models.
 */
#ifndef MODEL_SELECT_SHARE_CACHE_H
#define MODEL_SELECT_SHARE_CACHE_H

#include "model/catalog.h"

extern double **share_priors_begin(const Selector *sel, bool *kept);
extern void share_priors_end(const Selector *sel, double **priors, bool kept);

#endif							/* MODEL_SELECT_SHARE_CACHE_H */
