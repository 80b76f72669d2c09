/*
 * selector_rows_read.c — a selector's rows as a load reads them through the
 * tables' indexes (its selectors row, route grantees, arms and arm_state
 * rows), and an arm's stored state when a model is built from it; kept per
 * backend by selector_rows.c.
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/stratnum.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"

#include "model/privilege.h"
#include "pg/index_read.h"
#include "routing/selector_rows.h"

static const char *const checkpoint_columns[CK_NCOLUMNS] = {
	[CK_ARM_ID] = "arm_id", [CK_VERSION] = "version", [CK_XMIN] = "xmin",
	[CK_SETTINGS_VERSION] = "settings_version",
	[CK_POSITION + CKPT_POS_TX] = "ckpt_tx", [CK_POSITION + CKPT_POS_SEQ] = "ckpt_seq",
	[CK_POSITION + CKPT_POS_N] = "n", [CK_POSITION + CKPT_POS_REWARD_SUM] = "reward_sum",
	[CK_POSITION + CKPT_POS_COST_SUM] = "cost_sum", [CK_POSITION + CKPT_POS_COST_N] = "cost_n",
	[CK_POSITION + CKPT_POS_SPEND_SUM] = "spend_sum", [CK_POSITION + CKPT_POS_SPEND_N] = "spend_n"
};

static int
checkpoint_arm_cmp(const void *a, const void *b)
{
	int32		x = DatumGetInt32(((const CheckpointColumns *) a)->values[CK_ARM_ID]);
	int32		y = DatumGetInt32(((const CheckpointColumns *) b)->values[CK_ARM_ID]);

	return (x > y) - (x < y);
}

/* The selector's arm_state rows (one scan of its index on selector_id), sorted by arm_id. */
static CheckpointColumns *
selector_checkpoints(Relation arm_state, Datum selector_id, int *n)
{
	static const char *const key[] = {"selector_id"};
	int			capacity = 8;
	CheckpointColumns *ck = palloc(sizeof(CheckpointColumns) * capacity);
	IndexRead	r;
	HeapTuple	row;

	/* the columns are passed by value: read in place, kept as they are */
	StaticAssertStmt(FLOAT8PASSBYVAL, "int8, float8 and xid8 must be passed by value");
	*n = 0;
	index_read_begin(&r, arm_state, 1, key);
	index_read_key(&r, "selector_id", BTEqualStrategyNumber, F_INT4EQ, selector_id);
	while ((row = index_read_next(&r)) != NULL)
	{
		if (*n == capacity)
			ck = repalloc(ck, sizeof(CheckpointColumns) * (capacity *= 2));
		own_columns(arm_state, row, CK_NCOLUMNS, checkpoint_columns, ck[*n].values, ck[*n].nulls);
		ck[*n].values[CK_XMIN] = Int64GetDatum((int64) DatumGetTransactionId(ck[*n].values[CK_XMIN]));
		ck[*n].tid = row->t_self;
		(*n)++;
	}
	index_read_end(&r);
	qsort(ck, *n, sizeof(CheckpointColumns), checkpoint_arm_cmp);
	return ck;
}

/* The caller's right to route with the selector of rows s. */
void
selector_rows_check_privilege(const char *name, const SelectorColumns *s)
{
	selector_check_privilege_given(DatumGetInt32(s->values[CONFIG_SELECTOR_ID]), name, SELECTOR_ROUTE,
								   DatumGetObjectId(s->values[SELECTORS_OWNER]), s->route_grantees);
}

/*
 * selector_rows_read: what the query
 *   SELECT <the columns above> FROM selectors s
 *   LEFT JOIN arms a USING (selector_id) LEFT JOIN arm_state st USING (arm_id)
 *   WHERE s.name = $1 ORDER BY a.ordinal
 * would return, read through the indexes into *s (in the current memory
 * context), once the caller's right to route with the selector is checked.
 * false: no such selector.
 */
bool
selector_rows_read(const char *name, SelectorColumns *s, Relation selectors, Relation arms, Relation arm_state)
{
	static const char *const name_key[] = {"name"};
	static const char *const arms_key[] = {"selector_id", "ordinal"};
	IndexRead	by_name;
	IndexRead	by_selector;
	HeapTuple	row;
	CheckpointColumns *checkpoints;
	int			ncheckpoints;
	int			capacity = 8;
	bool		found;

	index_read_begin(&by_name, selectors, 1, name_key);
	index_read_key(&by_name, "name", BTEqualStrategyNumber, F_TEXTEQ, CStringGetTextDatum(name));
	found = (row = index_read_next(&by_name)) != NULL;
	if (found)
	{
		Datum		selector_id;

		own_columns_copy(selectors, row, SELECTORS_NCOLUMNS, selectors_columns, s->values, s->nulls);
		selector_id = s->values[CONFIG_SELECTOR_ID];
		s->route_grantees = selector_grantees(DatumGetInt32(selector_id), SELECTOR_ROUTE);

		/*
		 * The caller's right, before any arm or state is read: a refused
		 * call costs the same whatever the selector's size, so its time
		 * tells nothing of another tenant's selector.  At every load, kept
		 * rows or not: a revoke takes effect at once.
		 */
		selector_rows_check_privilege(name, s);
		checkpoints = selector_checkpoints(arm_state, selector_id, &ncheckpoints);
		s->narms = 0;
		s->arms = palloc(sizeof(ArmColumns) * capacity);
		index_read_begin(&by_selector, arms, 2, arms_key);
		index_read_key(&by_selector, "selector_id", BTEqualStrategyNumber, F_INT4EQ, selector_id);
		while ((row = index_read_next(&by_selector)) != NULL)
		{
			ArmColumns *arm;
			CheckpointColumns probe = {0};
			const CheckpointColumns *ck;

			if (s->narms == capacity)
				s->arms = repalloc(s->arms, sizeof(ArmColumns) * (capacity *= 2));
			arm = &s->arms[s->narms++];
			own_columns_copy(arms, row, ARMS_NCOLUMNS, arms_columns, arm->values, arm->nulls);
			probe.values[CK_ARM_ID] = arm->values[ARMS_ARM_ID];
			ck = bsearch(&probe, checkpoints, ncheckpoints, sizeof(CheckpointColumns), checkpoint_arm_cmp);
			arm->checkpointed = ck != NULL;
			if (ck != NULL)
				arm->checkpoint = *ck;
		}
		index_read_end(&by_selector);
	}
	index_read_end(&by_name);
	return found;
}

/*
 * The state of an arm's arm_state row, which must be the row (version,
 * xmin) its load read: the caller's snapshot sees it (NULL: none yet).
 */
Datum
checkpoint_state_read(int32 arm_id, int64 version, int64 xmin)
{
	enum
	{
		STATE_VERSION,
		STATE_XMIN,
		STATE_STATE,
		STATE_NCOLUMNS
	};
	static const char *const columns[STATE_NCOLUMNS] = {
		[STATE_VERSION] = "version", [STATE_XMIN] = "xmin", [STATE_STATE] = "state"
	};
	Relation	arm_state = own_table_open("arm_state");
	Datum		values[STATE_NCOLUMNS];
	bool		nulls[STATE_NCOLUMNS];
	bool		found = own_row_by_key(arm_state, "arm_id", F_INT4EQ, Int32GetDatum(arm_id),
									   STATE_NCOLUMNS, columns, values, nulls);

	own_table_close(arm_state);
	if (!found || DatumGetInt64(values[STATE_VERSION]) != version ||
		(int64) DatumGetTransactionId(values[STATE_XMIN]) != xmin)
		elog(ERROR, "the checkpoint of arm %d is not the one its load read", arm_id);
	return nulls[STATE_STATE] ? (Datum) 0 : values[STATE_STATE];
}
