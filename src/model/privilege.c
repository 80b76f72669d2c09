/*
 * privilege.c — see privilege.h.  Owner and grants are read as the extension
 * owner (who bypasses the row-level security that hides them from clients),
 * membership is PostgreSQL's own (has_privs_of_role: pg_has_role(...,
 * 'USAGE')).  Answers are kept while the caller's snapshot sees the same
 * rows (snapshot_key.h): within a statement (the row-level security policy
 * asks once per row, the reward trigger asks first) and across statements
 * with nothing committed in between; a revoke takes effect at the next
 * statement that sees it.
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "model/catalog.h"
#include "pg/index_read.h"
#include "pg/owner.h"
#include "model/privilege.h"
#include "pg/snapshot_key.h"

PG_FUNCTION_INFO_V1(model_select_has_selector_privilege);
PG_FUNCTION_INFO_V1(model_select_has_selector_privilege_id);

static const struct
{
	const char *name;
	int			bit;
}			privilege_names[] =
{
	{"route", SELECTOR_ROUTE},
	{"reward", SELECTOR_REWARD},
	{"admin", SELECTOR_ADMIN},
};

/*
 * A privilege name, or a comma-separated list of them meaning any one (as
 * has_table_privilege() reads 'SELECT, INSERT'); 22023 for anything else.
 */
int
selector_privilege_parse(const char *list)
{
	char	   *copy = pstrdup(list);
	char	   *save = NULL;
	int			mask = 0;

	for (char *tok = strtok_r(copy, ",", &save); tok != NULL; tok = strtok_r(NULL, ",", &save))
	{
		int			flag = 0;
		char	   *end;

		while (*tok == ' ')
			tok++;
		for (end = tok + strlen(tok); end > tok && end[-1] == ' '; end--)
			end[-1] = '\0';
		for (int i = 0; i < lengthof(privilege_names); i++)
			if (pg_strcasecmp(tok, privilege_names[i].name) == 0)
				flag = privilege_names[i].bit;
		if (flag == 0)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("unrecognized selector privilege \"%s\"", tok),
					 errhint("Selector privileges are route, reward and admin.")));
		mask |= flag;
	}
	if (mask == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("unrecognized selector privilege \"%s\"", list),
				 errhint("Selector privileges are route, reward and admin.")));
	return mask;
}

/* The granted privileges a mask accepts, as the text[] of selector_grants.privilege. */
Datum
selector_privilege_names(int mask)
{
	Datum		names[lengthof(privilege_names)];
	int			n = 0;

	for (int i = 0; i < lengthof(privilege_names); i++)
		if (mask & privilege_names[i].bit)
			names[n++] = CStringGetTextDatum(privilege_names[i].name);
	return PointerGetDatum(construct_array(names, n, TEXTOID, -1, false, TYPALIGN_INT));
}

/*
 * The grantees of any right in mask on the selector, a regrole[] as
 * SELECTOR_GRANTEES_COLUMN gives them, read through the grants' index (the
 * caller runs as the extension owner).
 */
Datum
selector_grantees(int32 selector_id, int mask)
{
	static const char *const key[] = {"selector_id"};
	enum
	{
		GRANT_GRANTEE,
		GRANT_PRIVILEGE,
		GRANT_NCOLUMNS
	};
	static const char *const columns[GRANT_NCOLUMNS] = {
		[GRANT_GRANTEE] = "grantee", [GRANT_PRIVILEGE] = "privilege"
	};
	Relation	grants = own_table_open("selector_grants");
	Datum	   *roles = palloc(sizeof(Datum) * 4);
	int			nroles = 0,
				capacity = 4;
	IndexRead	r;
	HeapTuple	row;

	index_read_begin(&r, grants, 1, key);
	index_read_key(&r, "selector_id", BTEqualStrategyNumber, F_INT4EQ, Int32GetDatum(selector_id));
	while ((row = index_read_next(&r)) != NULL)
	{
		Datum		values[lengthof(columns)];
		bool		nulls[lengthof(columns)];

		own_columns(grants, row, lengthof(columns), columns, values, nulls);
		if ((selector_privilege_parse(TextDatumGetCString(values[GRANT_PRIVILEGE])) & mask) == 0)
			continue;
		if (nroles == capacity)
			roles = repalloc(roles, sizeof(Datum) * (capacity *= 2));
		roles[nroles++] = values[GRANT_GRANTEE];
	}
	index_read_end(&r);
	own_table_close(grants);
	return PointerGetDatum(construct_array(roles, nroles, REGROLEOID, sizeof(Oid), true, TYPALIGN_INT));
}

/* Superusers and the extension owner (and the members of its role) have every right. */
static bool
role_privileged(Oid role)
{
	return superuser_arg(role) || has_privs_of_role(role, extension_owner());
}

/* Is role the selector's owner, or a member of it or of one of grantees (a regrole[])? */
static bool
role_owns_or_granted(Oid role, Oid owner, Datum grantees)
{
	Datum	   *roles;
	int			nroles;

	if (has_privs_of_role(role, owner))
		return true;
	deconstruct_array(DatumGetArrayTypeP(grantees), REGROLEOID, sizeof(Oid), true, TYPALIGN_INT,
					  &roles, NULL, &nroles);
	for (int i = 0; i < nroles; i++)
		if (has_privs_of_role(role, DatumGetObjectId(roles[i])))
			return true;
	return false;
}

/*
 * Answers of role_has_selector_privilege() under one snapshot key: all are
 * dropped when the caller's snapshot sees other rows.
 */
#define PRIVILEGE_CACHE_SIZE 32

typedef struct PrivilegeAnswer
{
	Oid			role;
	int32		selector_id;
	int			mask;
	bool		exists;
	bool		result;
} PrivilegeAnswer;

static MemoryContext answers_cxt = NULL;	/* the key's lists */
static SnapshotKey answers_key;
static PrivilegeAnswer answers[PRIVILEGE_CACHE_SIZE];
static int	nanswers = 0;

/* The kept answer for (role, selector_id, mask) under the caller's snapshot, or NULL. */
static const PrivilegeAnswer *
answer_find(Oid role, int32 selector_id, int mask)
{
	if (nanswers == 0 || !snapshot_key_matches(&answers_key, snapshot_key_current()))
		return NULL;
	for (int i = 0; i < nanswers; i++)
		if (answers[i].role == role && answers[i].selector_id == selector_id && answers[i].mask == mask)
			return &answers[i];
	return NULL;
}

static void
answer_keep(Oid role, int32 selector_id, int mask, bool exists, bool result)
{
	Snapshot	snap = snapshot_key_current();

	if (snap == NULL)
		return;
	if (nanswers == 0 || nanswers == PRIVILEGE_CACHE_SIZE || !snapshot_key_matches(&answers_key, snap))
	{
		if (answers_cxt == NULL)
			answers_cxt = AllocSetContextCreate(CacheMemoryContext, "model_select privilege answers",
												ALLOCSET_SMALL_SIZES);
		MemoryContextReset(answers_cxt);
		nanswers = 0;
		snapshot_key_remember(&answers_key, snap, answers_cxt);
	}
	answers[nanswers++] = (PrivilegeAnswer) {role, selector_id, mask, exists, result};
}

/*
 * Has role a right in mask on an existing selector, given its owner and the
 * grantees of those rights?  The answer is kept under the caller's snapshot.
 */
static bool
answer_given(Oid role, int32 selector_id, int mask, Oid owner, Datum grantees)
{
	bool		result = role_privileged(role) || role_owns_or_granted(role, owner, grantees);

	answer_keep(role, selector_id, mask, true, result);
	return result;
}

/* The columns of role_has_selector_privilege()'s query. */
enum
{
	PRIV_OWNER = 1,
	PRIV_GRANTEES
};

/*
 * Has role any one of the rights in mask on the selector?  *exists (when
 * not NULL) tells whether the selector exists.  Superusers, the extension
 * owner and the selector's owner (and the members of either role) have
 * every right; SELECTOR_OWNER is never granted.  The caller is connected to
 * SPI as the extension owner.
 */
bool
role_has_selector_privilege(Oid role, int32 selector_id, int mask, bool *exists)
{
	static SPIPlanPtr plan = NULL;
	Oid			types[2] = {INT4OID, TEXTARRAYOID};
	Datum		args[2];
	const PrivilegeAnswer *kept;
	bool		found,
				result;
	HeapTuple	row;

	if (exists == NULL && role_privileged(role))
		return true;
	if ((kept = answer_find(role, selector_id, mask)) != NULL)
	{
		if (exists)
			*exists = kept->exists;
		return kept->result;
	}
	args[0] = Int32GetDatum(selector_id);
	args[1] = selector_privilege_names(mask);
	found = spi_execute(spi_plan(&plan,
								 "SELECT s.owner, " SELECTOR_GRANTEES_COLUMN("s", "$2")
								 " FROM model_select.selectors s WHERE s.selector_id OPERATOR(pg_catalog.=) $1",
								 2, types), args, NULL, true, 1, SPI_OK_SELECT,
						"read the owner and grants of selector %d", selector_id) > 0;
	if (found)
	{
		row = SPI_tuptable->vals[0];
		result = answer_given(role, selector_id, mask,
							  DatumGetObjectId(spi_datum(row, SPI_tuptable->tupdesc, PRIV_OWNER)),
							  spi_datum(row, SPI_tuptable->tupdesc, PRIV_GRANTEES));
	}
	else
	{
		result = false;
		answer_keep(role, selector_id, mask, false, false);
	}
	if (exists)
		*exists = found;
	return result;
}

/* The name of the first right in mask, for messages. */
static const char *
privilege_name(int mask)
{
	for (int i = 0; i < lengthof(privilege_names); i++)
		if (mask & privilege_names[i].bit)
			return privilege_names[i].name;
	return "owner";
}

/* 42501 for the calling user on the selector `name`. */
static void
privilege_denied(const char *name, int mask)
{
	if (mask == SELECTOR_OWNER)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("must be owner of selector \"%s\"", name),
				 errhint("Only the selector's owner (or a member of its role) and superusers grant and revoke its privileges.")));
	ereport(ERROR,
			(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
			 errmsg("permission denied for selector \"%s\"", name),
			 errdetail("This needs the %s privilege on the selector.", privilege_name(mask)),
			 errhint("The selector's owner can grant it with model_select.grant_selector('%s', role, '%s').",
					 name, privilege_name(mask))));
}

/*
 * 42501 unless the calling user (the client, also inside the extension's
 * own code) has a right in mask on the selector `name`.  The caller is
 * connected to SPI as the extension owner.
 */
void
selector_check_privilege(int32 selector_id, const char *name, int mask)
{
	if (!role_has_selector_privilege(calling_user(), selector_id, mask, NULL))
		privilege_denied(name, mask);
}

/*
 * selector_check_privilege() from the selector's owner and the grantees of
 * the rights in mask (SELECTOR_GRANTEES_COLUMN), read by the caller in a
 * query of its own: the check of the routing functions, which read them with
 * the selector's configuration and arms, and of reward inserts, with the
 * decision or arm.  The answer is kept like role_has_selector_privilege()'s.
 */
void
selector_check_privilege_given(int32 selector_id, const char *name, int mask, Oid owner,
							   Datum grantees)
{
	/* kept: row-level security asks the same again under this snapshot */
	if (!answer_given(calling_user(), selector_id, mask, owner, grantees))
		privilege_denied(name, mask);
}

/*
 * selector_check_privilege_given() for a log row that names its selector
 * only through `what` (a decision or a cascade, by id): the 42501 names
 * `what`, not the selector, so that another selector's ids tell that they
 * exist, never which selector they belong to.
 */
void
selector_check_privilege_of(int32 selector_id, const char *what, int mask, Oid owner,
							Datum grantees)
{
	if (!answer_given(calling_user(), selector_id, mask, owner, grantees))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied for %s", what),
				 errdetail("This needs the %s privilege on its selector.", privilege_name(mask))));
}

typedef struct PrivilegeCall
{
	const char *name;			/* by name (42704 if unknown, unless missing_ok) ... */
	int32		selector_id;	/* ... or by id */
	bool		missing_ok;
	int			mask;
	Oid			role;
	bool		exists;
	bool		result;
} PrivilegeCall;

static void
privilege_lookup(void *arg)
{
	PrivilegeCall *call = arg;
	int			spi_level;

	spi_level = spi_connect();
	if (call->name)
		call->selector_id = call->missing_ok ? selector_id_if_exists(call->name)
			: selector_id_by_name(call->name);
	if (call->selector_id != 0)
		call->result = role_has_selector_privilege(call->role, call->selector_id, call->mask, &call->exists);
	spi_finish(spi_level);
}

/*
 * May the calling role see the named selector (any right)?  False for a
 * selector that no longer exists: for lists kept by name in shared memory
 * (routing/latency.c), which must show a role only its own selectors.
 */
bool
selector_visible_by_name(const char *name)
{
	PrivilegeCall call = {.name = name, .missing_ok = true, .mask = SELECTOR_ANY, .role = calling_user()};

	run_as_extension_owner(privilege_lookup, &call);
	return call.result;
}

/* 42501 unless the calling role has a right in mask on the named selector (42704 if none). */
void
selector_check_privilege_by_name(const char *name, int mask)
{
	PrivilegeCall call = {.name = name, .mask = mask, .role = calling_user()};

	run_as_extension_owner(privilege_lookup, &call);
	if (!call.result)
		privilege_denied(name, mask);
}

/* SQL: has_selector_privilege(selector text, privilege text) → boolean. */
Datum
model_select_has_selector_privilege(PG_FUNCTION_ARGS)
{
	PrivilegeCall call = {.name = text_to_cstring(PG_GETARG_TEXT_PP(0)),
		.mask = selector_privilege_parse(text_to_cstring(PG_GETARG_TEXT_PP(1))),
	.role = calling_user()};

	run_as_extension_owner(privilege_lookup, &call);
	PG_RETURN_BOOL(call.result);
}

/*
 * The row-level security policies call the by-id form once per row: the
 * kept answers (answer_find) spare them the connection as the owner.
 */
static void
privilege_cached(PrivilegeCall *call)
{
	const PrivilegeAnswer *kept = answer_find(call->role, call->selector_id, call->mask);

	if (kept == NULL)
	{
		run_as_extension_owner(privilege_lookup, call);
		return;
	}
	call->exists = kept->exists;
	call->result = kept->result;
}

/* SQL: has_selector_privilege(selector_id int, privilege text) → boolean, NULL if no such selector. */
Datum
model_select_has_selector_privilege_id(PG_FUNCTION_ARGS)
{
	PrivilegeCall call = {.selector_id = PG_GETARG_INT32(0),
		.mask = selector_privilege_parse(text_to_cstring(PG_GETARG_TEXT_PP(1))),
	.role = calling_user()};

	privilege_cached(&call);
	if (!call.exists)
		PG_RETURN_NULL();
	PG_RETURN_BOOL(call.result);
}

/*
 * Resolve an arm by selector and arm names (42704 if either is unknown) for
 * a caller that needs a right in `mask` on the selector (42501, checked
 * before the arm is looked up: no arm names leak); *active tells whether it
 * may still learn, *retired_at (if not NULL) since when it may not (infinity
 * while active).  The caller is connected to SPI as the extension owner.
 */
/* The columns of arm_lookup()'s query. */
enum
{
	LOOKUP_SELECTOR_ID = 1,
	LOOKUP_ARM_ID,
	LOOKUP_ACTIVE,
	LOOKUP_OWNER,
	LOOKUP_GRANTEES,
	LOOKUP_RETIRED_AT
};

void
arm_lookup(const char *selector, const char *arm, int mask, int32 *selector_id, int32 *arm_id,
		   bool *active, TimestampTz *retired_at)
{
	static SPIPlanPtr plan = NULL;
	Oid			types[3] = {TEXTOID, TEXTOID, TEXTARRAYOID};
	Datum		args[3] = {CStringGetTextDatum(selector), CStringGetTextDatum(arm),
	selector_privilege_names(mask)};
	HeapTuple	row;
	TupleDesc	desc;
	bool		isnull;

	row = selector_row(spi_plan(&plan,
								"SELECT s.selector_id, a.arm_id, a.active, s.owner, "
								SELECTOR_GRANTEES_COLUMN("s", "$3")
								", coalesce(a.retired_at, 'infinity')"
								" FROM model_select.selectors s"
								" LEFT JOIN model_select.arms a ON a.selector_id = s.selector_id AND a.name = $2"
								" WHERE s.name = $1",
								3, types), args, selector);
	desc = SPI_tuptable->tupdesc;
	*selector_id = spi_int32(row, desc, LOOKUP_SELECTOR_ID);
	*arm_id = DatumGetInt32(SPI_getbinval(row, desc, LOOKUP_ARM_ID, &isnull));
	*active = !isnull && spi_bool(row, desc, LOOKUP_ACTIVE);
	selector_check_privilege_given(*selector_id, selector, mask, DatumGetObjectId(spi_datum(row, desc, LOOKUP_OWNER)),
								   spi_datum(row, desc, LOOKUP_GRANTEES));
	if (isnull)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("selector \"%s\" has no arm \"%s\"", selector, arm)));
	if (retired_at)
		*retired_at = DatumGetTimestampTz(spi_datum(row, desc, LOOKUP_RETIRED_AT));
}
