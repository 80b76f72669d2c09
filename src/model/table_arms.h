/*
 * table_arms.h — the columns of model_select.arms that are read through its
 * indexes (pg/index_read.h), declared once: their names and their places in
 * that list (a values array of own_columns()).
 */
#ifndef MODEL_SELECT_TABLE_ARMS_H
#define MODEL_SELECT_TABLE_ARMS_H

typedef enum ArmsColumn
{
	ARMS_ARM_ID,
	ARMS_NAME,
	ARMS_ORDINAL,
	ARMS_ACTIVE,
	ARMS_RETIRED_AT,			/* NULL while active */
	ARMS_NCOLUMNS
} ArmsColumn;

static const char *const arms_columns[ARMS_NCOLUMNS] = {
	[ARMS_ARM_ID] = "arm_id", [ARMS_NAME] = "name", [ARMS_ORDINAL] = "ordinal",
	[ARMS_ACTIVE] = "active", [ARMS_RETIRED_AT] = "retired_at"
};

#endif
