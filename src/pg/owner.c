/*
 * owner.c — see owner.h.
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/table.h"
#include "access/genam.h"
#include "catalog/indexing.h"
#include "catalog/pg_extension.h"
#include "jit/jit.h"
#include "miscadmin.h"
#include "storage/proc.h"
#include "storage/sinval.h"
#include "utils/fmgroids.h"
#include "utils/guc.h"
#include "utils/rel.h"

#include "pg/owner.h"
#include "pg/spi_util.h"

/*
 * The owner of extension model_select, read from pg_extension (a catalog
 * index lookup) once per transaction: every route() and reward INSERT runs
 * three or four pieces as the owner.  It is read again when this backend
 * has processed invalidation messages since (another session's DDL, such
 * as REASSIGN OWNED or a dropped and re-created extension, takes effect at
 * once), and in every new transaction.
 */
Oid
extension_owner(void)
{
	static Oid	cached_owner = InvalidOid;
	static LocalTransactionId cached_lxid = InvalidLocalTransactionId;
	static uint64 cached_inval = 0;
	Relation	rel;
	ScanKeyData key;
	SysScanDesc scan;
	HeapTuple	tuple;
	bool		found;
	Oid			owner = InvalidOid;

	if (OidIsValid(cached_owner) && cached_lxid == MyProc->lxid &&
		cached_inval == SharedInvalidMessageCounter)
		return cached_owner;
	/* one look-up by name, as get_extension_oid() does, reading the owner off the row */
	rel = table_open(ExtensionRelationId, AccessShareLock);
	ScanKeyInit(&key, Anum_pg_extension_extname, BTEqualStrategyNumber, F_NAMEEQ,
				CStringGetDatum("model_select"));
	scan = systable_beginscan(rel, ExtensionNameIndexId, true, NULL, 1, &key);
	tuple = systable_getnext(scan);
	found = HeapTupleIsValid(tuple);
	if (found)
		owner = ((Form_pg_extension) GETSTRUCT(tuple))->extowner;
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	if (!found)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("extension \"model_select\" does not exist")));
	if (!OidIsValid(owner))
		elog(ERROR, "extension model_select has no owner");
	cached_owner = owner;
	cached_lxid = MyProc->lxid;
	cached_inval = SharedInvalidMessageCounter;
	return owner;
}

/*
 * The user that entered the outermost run_as_extension_owner() of this
 * backend, InvalidOid outside.  Privilege checks need the client's identity
 * also when they run inside the extension's own code (an admin function's
 * body calls rebuild_state(), a trigger fires below route()...), where
 * GetUserId() is the extension owner.
 */
static Oid	outer_user = InvalidOid;

/* The role whose privileges count: the client, even inside run_as_extension_owner(). */
Oid
calling_user(void)
{
	return OidIsValid(outer_user) ? outer_user : GetUserId();
}

/*
 * Call fn(arg) as the extension owner.  SECURITY_LOCAL_USERID_CHANGE, like
 * a SECURITY DEFINER function: the change is undone on error, and SET ROLE
 * or SET SESSION AUTHORIZATION inside is refused.
 */
void
run_as_extension_owner(void (*fn) (void *arg), void *arg)
{
	Oid			save_userid;
	int			save_sec_context;
	bool		outermost = !OidIsValid(outer_user);

	volatile int guc_level = -1;

	GetUserIdAndSecContext(&save_userid, &save_sec_context);
	if (outermost)
		outer_user = save_userid;
	SetUserIdAndSecContext(extension_owner(), save_sec_context | SECURITY_LOCAL_USERID_CHANGE);

	/*
	 * No JIT for the extension's own queries: the cost estimates of their
	 * kept generic plans grow with the reward log, and past some 10^5
	 * rewards they crossed jit_above_cost, so that every execution compiled
	 * its expressions (bench-pgbench, rff_ucb at 4 clients: 8x the CPU per
	 * decision).  Undone like a function's SET clause: on return here, by
	 * the (sub)transaction's abort on error.
	 */
	if (outermost && jit_enabled)
	{
		guc_level = NewGUCNestLevel();
		(void) set_config_option("jit", "off", PGC_USERSET, PGC_S_SESSION, GUC_ACTION_SAVE,
								 true, 0, false);
	}
	PG_TRY();
	{
		fn(arg);
		if (guc_level >= 0)
			AtEOXact_GUC(true, guc_level);
	}
	PG_FINALLY();
	{
		SetUserIdAndSecContext(save_userid, save_sec_context);
		if (outermost)
			outer_user = InvalidOid;
	}
	PG_END_TRY();
}

typedef struct InsertCall
{
	SPIPlanPtr *slot;
	const char *sql;
	int			nargs;
	const Oid  *argtypes;
	Datum	   *args;
	const char *nulls;
	const char *what;
	int64		id;
} InsertCall;

static void
insert_as_owner(void *arg)
{
	InsertCall *call = arg;

	call->id = spi_insert_returning_id(call->slot, call->sql, call->nargs, call->argtypes,
									   call->args, call->nulls, call->what);
}

/*
 * spi_insert_returning_id() as the extension owner: how route() and
 * cascade_route() log, so that clients need no right on the log tables.
 */
int64
insert_returning_id_as_owner(SPIPlanPtr *slot, const char *sql, int nargs, const Oid *argtypes,
							 Datum *args, const char *nulls, const char *what)
{
	InsertCall	call = {slot, sql, nargs, argtypes, args, nulls, what, 0};

	run_as_extension_owner(insert_as_owner, &call);
	return call.id;
}
