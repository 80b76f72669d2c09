/*
 * model_cache.h — loading selectors for scoring through the backend's cache
 * of arm folds and decoded models (model_cache.c).
 */
#ifndef MODEL_SELECT_MODEL_CACHE_H
#define MODEL_SELECT_MODEL_CACHE_H

#include "core/catalog.h"

/* GUC model_select.cache_size: the cache's bound in kB */
extern int	model_cache_size_kb;

extern Selector *selector_load(const char *name);
extern bool selector_models_current(Selector *sel);
extern void model_cache_forget_all(void);

#endif
