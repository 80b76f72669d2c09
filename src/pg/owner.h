/*
 * owner.h — running the extension's own SQL with the extension owner's
 * rights, as a SECURITY DEFINER function would (and as PostgreSQL's RI
 * triggers run as the table owner): clients need rights on the functions
 * they call and on the reward log, not on the tables those functions use.
 */
#ifndef MODEL_SELECT_OWNER_H
#define MODEL_SELECT_OWNER_H

#include "executor/spi.h"

extern Oid	extension_owner(void);
extern void run_as_extension_owner(void (*fn) (void *arg), void *arg);
extern Oid	calling_user(void);
extern int64 insert_returning_id_as_owner(SPIPlanPtr *slot, const char *sql, int nargs,
										  const Oid *argtypes, Datum *args, const char *nulls,
										  const char *what);

#endif
