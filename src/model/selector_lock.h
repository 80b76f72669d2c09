/*
 * selector_lock.h — the extension's heavyweight locks on advisory tags, and a
 * selector's settings lock with its late-writer check (selector_lock.c).
 */
#ifndef MODEL_SELECT_SELECTOR_LOCK_H
#define MODEL_SELECT_SELECTOR_LOCK_H

#include "storage/lockdefs.h"

/*
 * The extension's heavyweight locks on advisory tags: field4 (objsubid in
 * pg_locks) is MS_LOCK_CLASS, which pg_advisory_lock() never uses (1 and 2);
 * field3 (objid) says which lock, field2 (classid) is a selector's or an
 * arm's id.  Distinct kinds, since selector and arm ids overlap.
 */
#define MS_LOCK_CLASS 0x4d53	/* "MS" */
#define MS_LOCK_SETTINGS 0		/* a selector's settings (selector_lock.c) */
#define MS_LOCK_LOAD 1			/* an arm's load into the shared cache (shared_cache.c) */
#define MS_LOCK_RESTORE 2		/* settling restored rows, field2 0 (restore_order.c) */
#define MS_LOCK_ARMS 3			/* a selector's arm additions (selector_lock.c) */

struct LOCKTAG;
extern void selector_settings_tag(struct LOCKTAG *tag, int32 selector_id);
extern void selector_settings_lock(int32 selector_id, LOCKMODE mode);
extern bool selector_settings_lock_if_free(int32 selector_id, LOCKMODE mode);
extern void selector_write_lock(int32 selector_id, const char *name);
extern void selector_check_log_writer(int32 selector_id, const char *name);

#endif
