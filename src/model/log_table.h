/*
 * log_table.h — what the triggers of the two append-only logs (rewards and
 * cascade_observations) share: checking how a trigger fired, finding the
 * log's columns by name, and the arms of a statement's rows (counted, or
 * each arm's rows handed to a callback).
 */
#ifndef MODEL_SELECT_LOG_TABLE_H
#define MODEL_SELECT_LOG_TABLE_H

#include "commands/trigger.h"
#include "datatype/timestamp.h"
#include "executor/spi.h"

/* Completes a log row as the extension owner; returns the row to store. */
typedef HeapTuple (*LogRowResolver) (TriggerData *td);

extern TriggerData *log_row_trigger(FunctionCallInfo fcinfo);
extern Datum log_row_resolve(FunctionCallInfo fcinfo, LogRowResolver resolve);
/*
 * What a resolver fills in every log row: names, the context (float8[];
 * (Datum) 0: NULL, a reward's by decision) and the ids; LogTarget's columns
 * are given by attribute number, in this order.
 */
typedef struct LogTarget
{
	const char *selector;
	const char *arm;
	Datum		context;
	int32		selector_id;
	int32		arm_id;
} LogTarget;

#define LOG_TARGET_COLUMNS 5

extern HeapTuple log_row_complete(HeapTuple tuple, TupleDesc desc,
								  const int attnums[LOG_TARGET_COLUMNS], const LogTarget *target,
								  int nextra, const int *extra_attnums, const Datum *extra_values);
extern bool log_row_predates_retirement(HeapTuple tuple, TupleDesc desc, int arm_id_attnum,
										TimestampTz retired_at);
extern void log_columns(TupleDesc desc, const char *const *names, int ncolumns, int *attnums);
/* One arm's rows in a statement (arms_of_statement). */
typedef struct StatementArm
{
	int32		arm_id;			/* first: a hash key */
	int32		selector_id;
	int64		nrows;
} StatementArm;

extern StatementArm *arms_of_statement(FunctionCallInfo fcinfo, int *count);
/* for_each_arm_of_statement()'s query yields arm_id in this column, rows by arm_id. */
#define STATEMENT_ARM_ID_COLUMN 1
extern void for_each_arm_of_statement(FunctionCallInfo fcinfo, const char *query,
									  void (*fn) (SPITupleTable *tt, uint64 first, uint64 last, void *arg),
									  void *arg);

/*
 * Fill a struct of int attribute numbers, one per name, in order: the
 * struct must hold exactly one int per name.
 */
#define LOG_COLUMNS(desc, names, columns) \
	do { \
		StaticAssertStmt(sizeof(*(columns)) == lengthof(names) * sizeof(int), \
						 "one int per column name"); \
		log_columns((desc), (names), lengthof(names), (int *) (columns)); \
	} while (0)

#endif
