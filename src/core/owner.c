/*
 * owner.c — see owner.h.
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/table.h"
#include "access/genam.h"
#include "catalog/indexing.h"
#include "catalog/pg_extension.h"
#include "commands/extension.h"
#include "miscadmin.h"
#include "storage/proc.h"
#include "storage/sinval.h"
#include "utils/fmgroids.h"
#include "utils/rel.h"

#include "core/owner.h"

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
	Oid			ext;
	Relation	rel;
	ScanKeyData key;
	SysScanDesc scan;
	HeapTuple	tuple;
	Oid			owner = InvalidOid;

	if (OidIsValid(cached_owner) && cached_lxid == MyProc->lxid &&
		cached_inval == SharedInvalidMessageCounter)
		return cached_owner;
	ext = get_extension_oid("model_select", false);
	rel = table_open(ExtensionRelationId, AccessShareLock);
	ScanKeyInit(&key, Anum_pg_extension_oid, BTEqualStrategyNumber, F_OIDEQ,
				ObjectIdGetDatum(ext));
	scan = systable_beginscan(rel, ExtensionOidIndexId, true, NULL, 1, &key);
	tuple = systable_getnext(scan);
	if (HeapTupleIsValid(tuple))
		owner = ((Form_pg_extension) GETSTRUCT(tuple))->extowner;
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	if (!OidIsValid(owner))
		elog(ERROR, "extension model_select has no owner");
	cached_owner = owner;
	cached_lxid = MyProc->lxid;
	cached_inval = SharedInvalidMessageCounter;
	return owner;
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

	GetUserIdAndSecContext(&save_userid, &save_sec_context);
	SetUserIdAndSecContext(extension_owner(), save_sec_context | SECURITY_LOCAL_USERID_CHANGE);
	PG_TRY();
	{
		fn(arg);
	}
	PG_FINALLY();
	{
		SetUserIdAndSecContext(save_userid, save_sec_context);
	}
	PG_END_TRY();
}
