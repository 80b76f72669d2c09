/*
 * index_read.h — reads of the extension's own tables through their btree
 * indexes, without SPI, for the statements every route() and reward runs:
 * there a planned query's executor start-up and plan-cache checks cost
 * several times the few index probes it makes.
 *
 * A read sees what a read-only SPI query of the caller would: rows visible
 * to the active snapshot.  The caller runs as the extension owner, whose
 * queries no ACL or row-level security policy restricts either.  Indexes are
 * found by their key columns, not their names.
 *
 * Results come as an SPITupleTable-shaped table (tupdesc and vals only,
 * allocated in the current memory context), so that the code that reads
 * SPI results reads these the same way.
 */
#ifndef MODEL_SELECT_INDEX_READ_H
#define MODEL_SELECT_INDEX_READ_H

#include "access/genam.h"
#include "executor/spi.h"
#include "utils/rel.h"

/* The most columns a table read this way may have (own_columns). */
#define OWN_TABLE_MAX_COLUMNS 32

/* The most key columns (and conditions) one read may use. */
#define INDEX_READ_MAX_KEYS 3

/* An ordered scan of one table through the index on its leading key columns. */
typedef struct IndexRead
{
	Relation	table;
	Relation	index;
	SysScanDesc scan;
	int			nkeys;
	ScanKeyData keys[INDEX_READ_MAX_KEYS];
	ScanKeyData row[2];			/* the members of a row comparison (index_read_after) */
	bool		backward;		/* rows in descending index order (index_read_backward) */
} IndexRead;

extern Relation own_table_open(const char *name);
extern Relation own_table_open_if_exists(const char *name);
extern void own_table_close(Relation table);
extern AttrNumber own_column(Relation table, const char *name);
extern void own_columns_at(Relation table, HeapTuple row, int ncols, const AttrNumber *attnums,
						   Datum *values, bool *nulls);
extern void own_columns(Relation table, HeapTuple row, int ncols, const char *const *names,
						Datum *values, bool *nulls);
extern void own_columns_copy(Relation table, HeapTuple row, int ncols, const char *const *names,
							 Datum *values, bool *nulls);
extern bool own_row_version_visible(Relation table, BlockNumber nblocks, ItemPointer tid, TransactionId xmin,
									Snapshot snapshot);
extern bool own_row_by_key(Relation table, const char *key_column, RegProcedure eq, Datum key,
						   int ncols, const char *const *names, Datum *values, bool *nulls);
extern bool own_row_by_key_as_of(const char *table_name, Snapshot snapshot, const char *key_column,
								 RegProcedure eq, Datum key, int ncols, const char *const *names,
								 Datum *values, bool *nulls);

extern void index_read_begin(IndexRead *r, Relation table, int ncols, const char *const *cols);
extern void index_read_key(IndexRead *r, const char *col, StrategyNumber strategy,
						   RegProcedure proc, Datum value);
extern void index_read_after(IndexRead *r, const char *col1, RegProcedure cmp1, Datum value1,
							 const char *col2, RegProcedure cmp2, Datum value2);
extern void index_read_backward(IndexRead *r);
extern HeapTuple index_read_next(IndexRead *r);
extern void index_read_end(IndexRead *r);

extern TupleDesc result_desc(TupleDesc *slot, int ncols, const Oid *types);
extern SPITupleTable *result_table_new(TupleDesc desc, uint64 capacity);
extern void result_table_add(SPITupleTable *tt, HeapTuple row);

#endif
