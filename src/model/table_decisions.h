/*
 * table_decisions.h — the columns of model_select.decisions that are read
 * through its index (pg/index_read.h), declared once: their names and their
 * places in that list (a values array of own_row_by_key()).
 */
#ifndef MODEL_SELECT_TABLE_DECISIONS_H
#define MODEL_SELECT_TABLE_DECISIONS_H

typedef enum DecisionsColumn
{
	DECISIONS_SELECTOR_ID,
	DECISIONS_ARM_ID,
	DECISIONS_CONTEXT,			/* float8[], or NULL when context_real holds it */
	DECISIONS_CONTEXT_REAL,		/* real[], when no value needs more */
	DECISIONS_TAGS,				/* text[], NULL: none */
	DECISIONS_NCOLUMNS
} DecisionsColumn;

static const char *const decisions_columns[DECISIONS_NCOLUMNS] = {
	[DECISIONS_SELECTOR_ID] = "selector_id", [DECISIONS_ARM_ID] = "arm_id",
	[DECISIONS_CONTEXT] = "context", [DECISIONS_CONTEXT_REAL] = "context_real",
	[DECISIONS_TAGS] = "tags"
};

#endif
