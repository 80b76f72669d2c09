/*
 * admin.c — the SQL functions that change who owns what: create_selector,
 * alter_selector, drop_selector, add_arm, retire_arm, grant_selector and
 * revoke_selector (and stats_reset, which writes the owner's table of
 * resets).  Each is this one C entry: it checks the caller's right
 * on the selector its first argument names, then runs the PL/pgSQL body
 * model_select_internal._<name>(...) as the extension owner.  Like a SECURITY
 * DEFINER function, but the check sees the caller (inside a SECURITY DEFINER
 * body current_user is the definer).  So clients need no write right on
 * selectors, arms or selector_grants, and no direct UPDATE of a selector's
 * settings can desynchronise them from its learned state.
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/pg_proc.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "lib/stringinfo.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"

#include "model/catalog.h"
#include "pg/owner.h"
#include "model/privilege.h"
#include "pg/progress.h"

PG_FUNCTION_INFO_V1(model_select_admin_call);

/* What each function requires; 0: creates a selector, the caller owns it. */
static const struct
{
	const char *name;
	int			required;
}			admin_functions[] =
{
	{"create_selector", 0},
	{"alter_selector", SELECTOR_ADMIN},
	{"drop_selector", SELECTOR_ADMIN},
	{"add_arm", SELECTOR_ADMIN},
	{"retire_arm", SELECTOR_ADMIN},
	{"stats_reset", SELECTOR_ADMIN},
	{"grant_selector", SELECTOR_OWNER},
	{"revoke_selector", SELECTOR_OWNER},
};

#define ADMIN_MAX_ARGS 8

typedef struct AdminCall
{
	FunctionCallInfo fcinfo;
	char	   *name;
	int			required;
	int			nargs;
	Oid			argtypes[ADMIN_MAX_ARGS];
	Oid			rettype;
	Datum		result;
	bool		isnull;
} AdminCall;

/* The called function's name, argument and result types from pg_proc. */
static void
admin_call_init(AdminCall *call, FunctionCallInfo fcinfo)
{
	HeapTuple	proc = SearchSysCache1(PROCOID, ObjectIdGetDatum(fcinfo->flinfo->fn_oid));
	Form_pg_proc form;
	int			i;

	if (!HeapTupleIsValid(proc))
		elog(ERROR, "cache lookup failed for function %u", fcinfo->flinfo->fn_oid);
	form = (Form_pg_proc) GETSTRUCT(proc);
	call->fcinfo = fcinfo;
	call->name = pstrdup(NameStr(form->proname));
	call->nargs = form->pronargs;
	call->rettype = form->prorettype;
	if (call->nargs + 1 > ADMIN_MAX_ARGS)
		elog(ERROR, "model_select.%s() has too many arguments", call->name);
	memcpy(call->argtypes, form->proargtypes.values, sizeof(Oid) * call->nargs);
	ReleaseSysCache(proc);
	for (i = 0; i < lengthof(admin_functions); i++)
		if (strcmp(admin_functions[i].name, call->name) == 0)
		{
			call->required = admin_functions[i].required;
			return;
		}
	elog(ERROR, "model_select.%s() is not an administration function", call->name);
}

/* As the extension owner: check, then SELECT model_select_internal._<name>([owner,] $1, ...). */
static void
admin_run(void *arg)
{
	AdminCall  *call = arg;
	FunctionCallInfo fcinfo = call->fcinfo;
	Oid			types[ADMIN_MAX_ARGS];
	Datum		values[ADMIN_MAX_ARGS];
	char		nulls[ADMIN_MAX_ARGS];
	int			n = 0;
	int			spi_level;
	StringInfoData sql;

	spi_level = spi_connect();
	initStringInfo(&sql);
	appendStringInfo(&sql, "SELECT model_select_internal._%s(", call->name);
	if (call->required == 0)
	{
		/* the body's first argument: the new selector's owner */
		types[n] = REGROLEOID;
		values[n] = ObjectIdGetDatum(calling_user());
		nulls[n++] = ' ';
	}
	else
	{
		char	   *selector;

		if (PG_ARGISNULL(0))
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("%s: selector must not be NULL", call->name)));
		selector = text_to_cstring(PG_GETARG_TEXT_PP(0));
		selector_check_privilege(selector_id_by_name(selector), selector, call->required);
	}
	for (int i = 0; i < call->nargs; i++, n++)
	{
		types[n] = call->argtypes[i];
		values[n] = PG_GETARG_DATUM(i);
		nulls[n] = PG_ARGISNULL(i) ? 'n' : ' ';
	}
	for (int i = 1; i <= n; i++)
		appendStringInfo(&sql, i > 1 ? ", $%d" : "$%d", i);
	appendStringInfoChar(&sql, ')');
	if (SPI_execute_with_args(sql.data, n, types, values, nulls, false, 1) != SPI_OK_SELECT ||
		SPI_processed != 1)
		elog(ERROR, "could not run model_select_internal._%s()", call->name);
	call->result = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, SPI_SOLE_COLUMN, &call->isnull);
	if (!call->isnull && call->rettype != VOIDOID)
	{
		int16		typlen;
		bool		typbyval;

		get_typlenbyval(call->rettype, &typlen, &typbyval);
		call->result = SPI_datumTransfer(call->result, typbyval, typlen);
	}
	spi_finish(spi_level);
}

/* SQL: every function of admin_functions (see the file comment). */
Datum
model_select_admin_call(PG_FUNCTION_ARGS)
{
	AdminCall	call;

	admin_call_init(&call, fcinfo);
	/* alter_selector's re-derivation reports under its name (progress.c) */
	progress_begin(call.name, PG_ARGISNULL(0) ? NULL : text_to_cstring(PG_GETARG_TEXT_PP(0)), -1, "steps");
	run_as_extension_owner(admin_run, &call);
	progress_end();
	if (call.rettype == VOIDOID)
		PG_RETURN_VOID();
	if (call.isnull)
		PG_RETURN_NULL();
	return call.result;
}
