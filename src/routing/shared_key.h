/*
 * shared_key.h — what names a base in the shared cache, and how many the
 * server holds: shared by shared_cache.h (its callers) and
 * shared_cache_internal.h (its slots).
 */
#ifndef MODEL_SELECT_SHARED_KEY_H
#define MODEL_SELECT_SHARED_KEY_H

/*
 * What a base is the fold of, besides its position: two bases with equal
 * keys and positions hold the same state (every row up to a base's position
 * was final when it was folded, and the rows up to a final position never
 * change): a version of the arm, a prefix of its log.
 */
typedef struct SharedBaseKey
{
	Oid			database;
	int32		arm_id;
	int32		settings_version;
	int64		ckpt_version;	/* the arm_state row folded from (0: none) */
	int64		ckpt_xmin;		/* and its xmin (a rolled back version) */
} SharedBaseKey;

/*
 * Versions the server can hold at once: a slot per SHARED_KB_PER_SLOT of
 * model_select.shared_cache_size, within [SHARED_SLOTS_MIN, SHARED_SLOTS_MAX]
 * (each slot costs about 160 bytes of shared memory; 16,384 by default).
 * Under the learner every arm on its own clock has versions, however small:
 * with a fixed 1,024, 400 selectors of 3 arms thrashed the table.
 */
#define SHARED_KB_PER_SLOT 16
#define SHARED_SLOTS_MIN 1024
#define SHARED_SLOTS_MAX 65536

#endif
