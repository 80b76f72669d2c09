/*
 * privilege.h — who may use a selector: its owner (and the members of the
 * owner role), the roles it granted a right to (model_select.selector_grants),
 * superusers and the extension owner.  One check serves every entry point,
 * the row-level security policies and has_selector_privilege().
 */
#ifndef MODEL_SELECT_PRIVILEGE_H
#define MODEL_SELECT_PRIVILEGE_H

#include "datatype/timestamp.h"

/* Rights on a selector, as bits: a mask asks for any one of them. */
typedef enum SelectorPrivilege
{
	SELECTOR_ROUTE = 1 << 0,	/* select_model, route, scores, cascades, drift */
	SELECTOR_REWARD = 1 << 1,	/* INSERT into rewards, cascade_observations */
	SELECTOR_ADMIN = 1 << 2,	/* alter, arms, rebuild, checkpoint, drop */
	SELECTOR_OWNER = 1 << 3		/* grant and revoke: never granted */
} SelectorPrivilege;

#define SELECTOR_ANY (SELECTOR_ROUTE | SELECTOR_REWARD | SELECTOR_ADMIN)

/*
 * The grantees (regrole[]) of any right in the text[] parameter `names` on
 * the selectors row `alias`, as a column of a query run as the extension
 * owner: selector_check_privilege_given() reads it.
 */
#define SELECTOR_GRANTEES_COLUMN(alias, names) \
	"ARRAY(SELECT g.grantee FROM model_select.selector_grants g" \
	" WHERE g.selector_id OPERATOR(pg_catalog.=) " alias ".selector_id" \
	" AND g.privilege OPERATOR(pg_catalog.=) ANY (" names "))"

extern int	selector_privilege_parse(const char *list);
extern Datum selector_privilege_names(int mask);
extern Datum selector_grantees(int32 selector_id, int mask);
extern bool role_has_selector_privilege(Oid role, int32 selector_id, int mask, bool *exists);
extern bool selector_visible_by_name(const char *name);
extern void selector_check_privilege(int32 selector_id, const char *name, int mask);
extern void selector_check_privilege_by_name(const char *name, int mask);
extern void selector_check_privilege_given(int32 selector_id, const char *name, int mask,
										   Oid owner, Datum grantees);
extern void arm_lookup(const char *selector, const char *arm, int mask, int32 *selector_id,
					   int32 *arm_id, bool *active, TimestampTz *retired_at);
extern void selector_check_privilege_of(int32 selector_id, const char *what, int mask,
										Oid owner, Datum grantees);

#endif
