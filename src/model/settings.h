/*
 * settings.h — a selector's jsonb settings: resolving them into its
 * configuration (config.h), and back.
 */
#ifndef MODEL_SELECT_SETTINGS_H
#define MODEL_SELECT_SETTINGS_H

#include "nodes/pg_list.h"
#include "utils/jsonb.h"

#include "model/config.h"

extern const char *kernel_name(KernelKind kernel);
extern void settings_resolve(SelectorConfig *cfg, Jsonb *settings);
extern void config_set_dim(SelectorConfig *cfg, int32 embed_dim);
extern void settings_resolve_over(SelectorConfig *cfg, Jsonb *current, Jsonb *settings);
extern Jsonb *settings_to_jsonb(const SelectorConfig *cfg);
extern List *settings_keys(const SelectorConfig *cfg);
extern const char *confidence_name(ConfidenceKind confidence);
extern char *name_list(const char *const *names, int n);

#endif
