/*
 * model_cache.h — loading selectors for scoring through the backend's cache
 * of arm folds and decoded models (model_cache.c).
 */
#ifndef MODEL_SELECT_MODEL_CACHE_H
#define MODEL_SELECT_MODEL_CACHE_H

#include "model/catalog.h"
#include "learning/fold.h"

/* GUC model_select.cache_size: the cache's bound in kB */
extern int	model_cache_size_kb;

extern Selector *selector_load(const char *name);
extern int64 selector_publish(const char *name, bool growing, bool *complete);
extern bool selector_models_current(Selector *sel);
extern void model_cache_forget_all(void);
/* checkpoint_share.c: a checkpoint's version, published before it commits */
extern void checkpoint_publish(const SelectorConfig *cfg, int32 arm_id, int64 version, int64 xmin,
							   const StateFold *f);
extern const StateFold *model_cache_base(int32 arm_id, int32 settings_version, int64 version,
										 int64 xmin);

#endif
