/*
 * selector_rows.h — the rows a selector's load reads (its selectors row,
 * the grantees of its route right, its arms with their arm_state rows),
 * kept per backend while no change to them can be seen (selector_rows.c),
 * and their reads (selector_rows_read.c).
 */
#ifndef MODEL_SELECT_SELECTOR_ROWS_H
#define MODEL_SELECT_SELECTOR_ROWS_H

#include "storage/itemptr.h"
#include "utils/relcache.h"

#include "learning/fold.h"
#include "model/table_arms.h"
#include "model/table_selectors.h"

/*
 * The arm_state columns kept (xmin: the 32-bit xid, then widened): the
 * checkpoint's position from CK_POSITION on, in CheckpointPositionColumn
 * order.  Not the state: it is read when an arm's model is built from it
 * (checkpoint_state_read()), not at every load.
 */
enum
{
	CK_ARM_ID,
	CK_VERSION,
	CK_XMIN,
	CK_SETTINGS_VERSION,
	CK_POSITION,
	CK_NCOLUMNS = CK_POSITION + CHECKPOINT_POSITION_NCOLUMNS
};

/* An arm_state row, by the columns above, and where its version is. */
typedef struct CheckpointColumns
{
	Datum		values[CK_NCOLUMNS];
	bool		nulls[CK_NCOLUMNS];
	ItemPointerData tid;
} CheckpointColumns;

/* An arms row, by arms_columns (model/table_arms.h), with its arm_state row if it has one. */
typedef struct ArmColumns
{
	Datum		values[ARMS_NCOLUMNS];
	bool		nulls[ARMS_NCOLUMNS];
	bool		checkpointed;	/* it has an arm_state row: */
	CheckpointColumns checkpoint;
} ArmColumns;

/* A selector as selector_rows() reads it: its row, route grantees and arms. */
typedef struct SelectorColumns
{
	Datum		values[SELECTORS_NCOLUMNS];
	bool		nulls[SELECTORS_NCOLUMNS];
	Datum		route_grantees; /* regrole[] */
	int			narms;
	ArmColumns *arms;			/* by ordinal */
} SelectorColumns;

/* selector_rows.c: the rows, kept while current */
extern bool selector_rows(const char *name, SelectorColumns *s);

/* selector_rows_read.c: their reads */
extern bool selector_rows_read(const char *name, SelectorColumns *s, Relation selectors, Relation arms,
							   Relation arm_state);
extern void selector_rows_check_privilege(const char *name, const SelectorColumns *s);
extern Datum checkpoint_state_read(int32 arm_id, int64 version, int64 xmin);

#endif
