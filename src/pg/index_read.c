/*
 * index_read.c — see index_read.h.
 */
#include "postgres.h"

#include "access/heapam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "catalog/namespace.h"
#include "catalog/pg_am_d.h"
#include "catalog/pg_index.h"
#include "nodes/pg_list.h"
#include "storage/bufmgr.h"
#include "utils/datum.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"

#include "pg/index_read.h"

/*
 * A table of schema model_select, share-locked for the transaction like a
 * query's; NULL if there is none (a table newer than the installed
 * extension's version).
 */
Relation
own_table_open_if_exists(const char *name)
{
	Oid			table = get_relname_relid(name, get_namespace_oid("model_select", false));

	return OidIsValid(table) ? table_open(table, AccessShareLock) : NULL;
}

/* The same, for a table the extension always has. */
Relation
own_table_open(const char *name)
{
	Relation	table = own_table_open_if_exists(name);

	if (table == NULL)
		elog(ERROR, "table model_select.%s does not exist", name);
	return table;
}

void
own_table_close(Relation table)
{
	table_close(table, NoLock);
}

/*
 * Does snapshot see the row version at tid that transaction xmin inserted?
 * A version is never changed in place, so the columns read from it earlier
 * are still its columns.  A slot freed by pruning and reused holds another
 * transaction's row: its xmin differs.  nblocks: the table's size in blocks
 * (RelationGetNumberOfBlocks(), under a lock that keeps VACUUM from
 * truncating it), which a tid past a truncation is beyond.
 */
bool
own_row_version_visible(Relation table, BlockNumber nblocks, ItemPointer tid, TransactionId xmin,
						Snapshot snapshot)
{
	HeapTupleData row;
	Buffer		buffer;
	bool		same;

	if (ItemPointerGetBlockNumber(tid) >= nblocks)
		return false;
	row.t_self = *tid;
	if (!heap_fetch(table, snapshot, &row, &buffer, false))
		return false;
	same = TransactionIdEquals(HeapTupleHeaderGetRawXmin(row.t_data), xmin);
	ReleaseBuffer(buffer);
	return same;
}

/*
 * Column numbers found by name, kept per table and name (the names are the
 * callers' static strings) and checked against the table's descriptor at
 * each use, so a table re-created with other numbers is looked up again.
 */
#define COLUMN_GUESSES 256

typedef struct ColumnGuess
{
	Oid			table;
	const char *name;
	AttrNumber	attnum;
} ColumnGuess;

static ColumnGuess column_guesses[COLUMN_GUESSES];

/* A column's number; "xmin" is the row's inserting transaction (a 32-bit xid). */
AttrNumber
own_column(Relation table, const char *name)
{
	TupleDesc	desc = RelationGetDescr(table);
	/* a multiplicative hash: the names are neighbouring literals, the tables neighbouring oids */
	uint64		h = ((uint64) (uintptr_t) name ^ ((uint64) RelationGetRelid(table) << 32)) *
		UINT64CONST(0x9E3779B97F4A7C15);
	ColumnGuess *guess = &column_guesses[(h >> 32) % COLUMN_GUESSES];

	if (guess->table == RelationGetRelid(table) && guess->name == name && guess->attnum <= desc->natts &&
		strcmp(NameStr(TupleDescAttr(desc, guess->attnum - 1)->attname), name) == 0 &&
		!TupleDescAttr(desc, guess->attnum - 1)->attisdropped)
		return guess->attnum;
	if (strcmp(name, "xmin") == 0)
		return MinTransactionIdAttributeNumber;
	for (int i = 0; i < desc->natts; i++)
		if (!TupleDescAttr(desc, i)->attisdropped && strcmp(NameStr(TupleDescAttr(desc, i)->attname), name) == 0)
		{
			guess->table = RelationGetRelid(table);
			guess->name = name;
			guess->attnum = (AttrNumber) (i + 1);
			return guess->attnum;
		}
	elog(ERROR, "table %s has no column %s", RelationGetRelationName(table), name);
	return InvalidAttrNumber;	/* keep the compiler quiet */
}

/*
 * The columns attnums (own_column()'s) of a row of table into values and
 * nulls (pointing into the row): one column read where it is, several by
 * deforming the row once rather than walking it per column.  For a loop over
 * many rows, with the numbers looked up once.
 */
void
own_columns_at(Relation table, HeapTuple row, int ncols, const AttrNumber *attnums, Datum *values,
			   bool *nulls)
{
	TupleDesc	desc = RelationGetDescr(table);
	Datum		all[OWN_TABLE_MAX_COLUMNS];
	bool		all_nulls[OWN_TABLE_MAX_COLUMNS];

	if (ncols == 1)
	{
		values[0] = heap_getattr(row, attnums[0], desc, &nulls[0]);
		return;
	}
	if (desc->natts > OWN_TABLE_MAX_COLUMNS)
		elog(ERROR, "table %s has more than %d columns", RelationGetRelationName(table), OWN_TABLE_MAX_COLUMNS);
	heap_deform_tuple(row, desc, all, all_nulls);
	for (int i = 0; i < ncols; i++)
	{
		if (attnums[i] > 0)
		{
			values[i] = all[attnums[i] - 1];
			nulls[i] = all_nulls[attnums[i] - 1];
		}
		else
			values[i] = heap_getattr(row, attnums[i], desc, &nulls[i]);
	}
}

/* The named columns of a row of table into values and nulls (pointing into the row). */
void
own_columns(Relation table, HeapTuple row, int ncols, const char *const *names, Datum *values, bool *nulls)
{
	AttrNumber	attnums[OWN_TABLE_MAX_COLUMNS];

	Assert(ncols <= OWN_TABLE_MAX_COLUMNS);
	for (int i = 0; i < ncols; i++)
		attnums[i] = own_column(table, names[i]);
	own_columns_at(table, row, ncols, attnums, values, nulls);
}

/* own_columns(), the values copied out of the row (into the current memory context). */
void
own_columns_copy(Relation table, HeapTuple row, int ncols, const char *const *names, Datum *values,
				 bool *nulls)
{
	own_columns(table, row, ncols, names, values, nulls);
	for (int i = 0; i < ncols; i++)
	{
		AttrNumber	attnum = own_column(table, names[i]);
		Form_pg_attribute att;

		if (nulls[i] || attnum < 0)
			continue;			/* system columns are passed by value */
		att = TupleDescAttr(RelationGetDescr(table), attnum - 1);
		values[i] = datumCopy(values[i], att->attbyval, att->attlen);
	}
}

/*
 * The named columns of the row of table whose key column equals key (eq:
 * its equality function), copied out of the table; false when there is no
 * such row.  The key column must lead a btree index (a primary or unique
 * key: the first row found is taken).
 */
bool
own_row_by_key(Relation table, const char *key_column, RegProcedure eq, Datum key,
			   int ncols, const char *const *names, Datum *values, bool *nulls)
{
	IndexRead	r;
	HeapTuple	row;

	index_read_begin(&r, table, 1, &key_column);
	index_read_key(&r, key_column, BTEqualStrategyNumber, eq, key);
	row = index_read_next(&r);
	if (row != NULL)
		own_columns_copy(table, row, ncols, names, values, nulls);
	index_read_end(&r);
	return row != NULL;
}

/*
 * own_row_by_key() of the table named table_name, opened and closed around
 * the read, as snapshot sees it (pushed as the active snapshot for the
 * read): one row read in a snapshot other than the caller's, such as a
 * fresh one after a lock was taken.
 */
bool
own_row_by_key_as_of(const char *table_name, Snapshot snapshot, const char *key_column,
					 RegProcedure eq, Datum key, int ncols, const char *const *names,
					 Datum *values, bool *nulls)
{
	Relation	table = own_table_open(table_name);
	bool		found;

	PushActiveSnapshot(snapshot);
	found = own_row_by_key(table, key_column, eq, key, ncols, names, values, nulls);
	PopActiveSnapshot();
	own_table_close(table);
	return found;
}

/* Do the index's key columns begin with these heap columns? */
static bool
index_leads_with(Oid index, int ncols, const AttrNumber *cols)
{
	HeapTuple	tuple = SearchSysCache1(INDEXRELID, ObjectIdGetDatum(index));
	Form_pg_index form;
	bool		match;

	if (!HeapTupleIsValid(tuple))
		return false;
	form = (Form_pg_index) GETSTRUCT(tuple);
	/* an expression column's indkey is 0, so only plain columns match */
	match = form->indisvalid && heap_attisnull(tuple, Anum_pg_index_indpred, NULL) &&
		form->indnkeyatts >= ncols;
	for (int i = 0; match && i < ncols; i++)
		match = form->indkey.values[i] == cols[i];
	ReleaseSysCache(tuple);
	return match;
}

/*
 * Start an ordered read of table through its btree index whose key columns
 * begin with cols (in that order); the keys follow with index_read_key().
 */
void
index_read_begin(IndexRead *r, Relation table, int ncols, const char *const *cols)
{
	AttrNumber	attnums[INDEX_READ_MAX_KEYS];
	List	   *indexes;
	ListCell   *lc;

	if (ncols > INDEX_READ_MAX_KEYS)
		elog(ERROR, "index_read_begin: more than %d key columns", INDEX_READ_MAX_KEYS);
	indexes = RelationGetIndexList(table);
	for (int i = 0; i < ncols; i++)
		attnums[i] = own_column(table, cols[i]);
	memset(r, 0, sizeof(*r));
	r->table = table;
	foreach(lc, indexes)
	{
		if (index_leads_with(lfirst_oid(lc), ncols, attnums))
		{
			r->index = index_open(lfirst_oid(lc), AccessShareLock);
			if (r->index->rd_rel->relam == BTREE_AM_OID)
				break;
			index_close(r->index, AccessShareLock);
			r->index = NULL;
		}
	}
	list_free(indexes);
	if (r->index == NULL)
		elog(ERROR, "table %s has no btree index on its columns %s...",
			 RelationGetRelationName(table), cols[0]);
}

/* The index's key column (from 0) of a table column, and the next free key. */
static ScanKey
next_key(IndexRead *r, AttrNumber attnum, const char *col, int *indexcol)
{
	*indexcol = -1;
	if (r->nkeys >= lengthof(r->keys) || r->scan != NULL)
		elog(ERROR, "index_read_key: too many keys, or the read has begun");
	for (int i = 0; i < IndexRelationGetNumberOfKeyAttributes(r->index); i++)
		if (r->index->rd_index->indkey.values[i] == attnum)
			*indexcol = i;
	if (*indexcol < 0)
		elog(ERROR, "index %s has no key column %s", RelationGetRelationName(r->index), col);
	return &r->keys[r->nkeys++];
}

/*
 * A condition "col <strategy> value" (proc: the comparison function) on a
 * key column of the index, compared under the index column's collation.
 */
void
index_read_key(IndexRead *r, const char *col, StrategyNumber strategy, RegProcedure proc, Datum value)
{
	AttrNumber	attnum = own_column(r->table, col);
	int			indexcol;
	ScanKey		key = next_key(r, attnum, col, &indexcol);

	ScanKeyInit(key, attnum, strategy, proc, value);
	key->sk_collation = r->index->rd_indcollation[indexcol];
}

/*
 * The row comparison "(col1, col2) > (value1, value2)" on two consecutive
 * key columns of the index (cmp1, cmp2: their btree order procedures), as
 * the executor builds it for a RowCompareExpr: the read starts right after
 * that position, and reads no row before it.  The members carry index
 * column numbers; the header's table column number becomes one when the
 * scan begins (systable_beginscan_ordered()).
 */
void
index_read_after(IndexRead *r, const char *col1, RegProcedure cmp1, Datum value1,
				 const char *col2, RegProcedure cmp2, Datum value2)
{
	AttrNumber	attnum1 = own_column(r->table, col1);
	int			indexcol1;
	ScanKey		header = next_key(r, attnum1, col1, &indexcol1);
	int			indexcol2 = indexcol1 + 1;

	if (indexcol2 >= IndexRelationGetNumberOfKeyAttributes(r->index) ||
		r->index->rd_index->indkey.values[indexcol2] != own_column(r->table, col2))
		elog(ERROR, "index %s has no key column %s after %s", RelationGetRelationName(r->index), col2, col1);
	ScanKeyEntryInitialize(&r->row[0], SK_ROW_MEMBER, (AttrNumber) (indexcol1 + 1), BTGreaterStrategyNumber,
						   InvalidOid, r->index->rd_indcollation[indexcol1], cmp1, value1);
	ScanKeyEntryInitialize(&r->row[1], SK_ROW_MEMBER | SK_ROW_END, (AttrNumber) (indexcol2 + 1),
						   BTGreaterStrategyNumber, InvalidOid, r->index->rd_indcollation[indexcol2], cmp2,
						   value2);
	ScanKeyEntryInitialize(header, SK_ROW_HEADER, attnum1, BTGreaterStrategyNumber, InvalidOid, InvalidOid,
						   InvalidOid, PointerGetDatum(r->row));
}

/* The rows from the last in index order to the first (before the first index_read_next()). */
void
index_read_backward(IndexRead *r)
{
	if (r->scan != NULL)
		elog(ERROR, "index_read_backward: the read has begun");
	r->backward = true;
}

/* The next row in index order, valid until the next call; NULL at the end. */
HeapTuple
index_read_next(IndexRead *r)
{
	if (r->scan == NULL)
		r->scan = systable_beginscan_ordered(r->table, r->index, GetActiveSnapshot(), r->nkeys, r->keys);
	return systable_getnext_ordered(r->scan, r->backward ? BackwardScanDirection : ForwardScanDirection);
}

void
index_read_end(IndexRead *r)
{
	if (r->scan != NULL)
		systable_endscan_ordered(r->scan);
	index_close(r->index, NoLock);
	r->scan = NULL;
	r->index = NULL;
}

/*
 * The row type of a result table: columns of the given built-in types,
 * made once per backend in *slot.
 */
TupleDesc
result_desc(TupleDesc *slot, int ncols, const Oid *types)
{
	if (*slot == NULL)
	{
		MemoryContext old = MemoryContextSwitchTo(TopMemoryContext);
		TupleDesc	desc = CreateTemplateTupleDesc(ncols);

		for (int i = 0; i < ncols; i++)
			TupleDescInitEntry(desc, (AttrNumber) (i + 1), NULL, types[i], -1, 0);
		MemoryContextSwitchTo(old);
		*slot = desc;
	}
	return *slot;
}

/* An empty result table with room for capacity rows (it grows as needed). */
SPITupleTable *
result_table_new(TupleDesc desc, uint64 capacity)
{
	SPITupleTable *tt = palloc0(sizeof(SPITupleTable));

	tt->tupdesc = desc;
	tt->alloced = Max(capacity, 4);
	tt->vals = palloc(sizeof(HeapTuple) * tt->alloced);
	return tt;
}

/* Append a row (kept, not copied). */
void
result_table_add(SPITupleTable *tt, HeapTuple row)
{
	if (tt->numvals == tt->alloced)
	{
		tt->alloced *= 2;
		tt->vals = repalloc(tt->vals, sizeof(HeapTuple) * tt->alloced);
	}
	tt->vals[tt->numvals++] = row;
}
