/*
 * table_selectors.h — the columns of model_select.selectors that are read
 * through its index (pg/index_read.h), declared once: their names and their
 * places in that list (a values array of own_columns()).  The configuration
 * comes first, in ConfigColumn order, so that config_from_values() reads
 * such an array as it is.
 */
#ifndef MODEL_SELECT_TABLE_SELECTORS_H
#define MODEL_SELECT_TABLE_SELECTORS_H

#include "model/catalog.h"

typedef enum SelectorsColumn
{
	/* CONFIG_SELECTOR_ID … CONFIG_SETTINGS_VERSION (model/catalog.h) */
	SELECTORS_OWNER = CONFIG_NCOLUMNS,
	SELECTORS_NAME,
	SELECTORS_NCOLUMNS
} SelectorsColumn;

static const char *const selectors_columns[SELECTORS_NCOLUMNS] = {
	[CONFIG_SELECTOR_ID] = "selector_id", [CONFIG_DIM] = "dim", [CONFIG_POLICY] = "policy",
	[CONFIG_KERNEL] = "kernel", [CONFIG_SETTINGS] = "settings", [CONFIG_SEED] = "seed",
	[CONFIG_SETTINGS_VERSION] = "settings_version", [SELECTORS_OWNER] = "owner",
	[SELECTORS_NAME] = "name"
};

#endif
