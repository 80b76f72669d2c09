/*
 * spi_util.h — the one way this extension talks to SPI: checked connect and
 * finish (search_path pinned in between, or read-only for the caller's own
 * query text), plans prepared once per backend, statements whose result code is
 * checked, "exactly one row or 42704 naming the object", and column getters.
 *
 * Column getters: spi_int32() … spi_text() read a column the schema declares
 * NOT NULL (a NULL there is an internal error); spi_text_column() and
 * SPI_getbinval() with its isnull flag read the nullable ones.
 */
#ifndef MODEL_SELECT_SPI_UTIL_H
#define MODEL_SELECT_SPI_UTIL_H

#include "executor/spi.h"
#include "utils/builtins.h"

extern int	spi_connect(void);
extern int	spi_connect_read_only(void);
extern void spi_finish(int token);
extern int	read_only_begin(void);
extern void read_only_end(int level);
extern SPIPlanPtr spi_plan(SPIPlanPtr *slot, const char *sql, int nargs, const Oid *argtypes);
extern uint64 spi_execute(SPIPlanPtr plan, Datum *args, const char *nulls, bool read_only,
						  long count, int expected, const char *what,...) pg_attribute_printf(7, 8);
extern HeapTuple spi_fetch_one(SPIPlanPtr plan, Datum *args, bool read_only,
							   const char *object, const char *hint);
extern int64 spi_insert_returning_id(SPIPlanPtr *slot, const char *sql, int nargs,
									const Oid *argtypes, Datum *args, const char *nulls,
									const char *what);

/* The column of a query that selects one (SPI numbers columns from 1). */
#define SPI_SOLE_COLUMN 1

extern Datum spi_datum(HeapTuple row, TupleDesc desc, int col);
extern char *spi_text_column(HeapTuple row, TupleDesc desc, int col);

/* NOT NULL columns by type (spi_text: a palloc'd C string). */
#define spi_int32(row, desc, col) DatumGetInt32(spi_datum(row, desc, col))
#define spi_int64(row, desc, col) DatumGetInt64(spi_datum(row, desc, col))
#define spi_float8(row, desc, col) DatumGetFloat8(spi_datum(row, desc, col))
#define spi_bool(row, desc, col) DatumGetBool(spi_datum(row, desc, col))
#define spi_text(row, desc, col) TextDatumGetCString(spi_datum(row, desc, col))

#endif
