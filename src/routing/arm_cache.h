/*
 * arm_cache.h — the backend's cache of arm folds (model_cache.c), as used by
 * the selector loader (selector_load.c): one entry per arm with its base
 * (checkpoint + final rows: a prefix of the arm's log), overlay and decoded
 * model.
 */
#ifndef MODEL_SELECT_ARM_CACHE_H
#define MODEL_SELECT_ARM_CACHE_H

#include "executor/spi.h"
#include "utils/timestamp.h"

#include "model/settings.h"
#include "model/clock_ops.h"
#include "learning/fold.h"
#include "pg/index_read.h"
#include "routing/shared_cache.h"

typedef struct ModelCacheEntry
{
	int32		arm_id;			/* hash key */
	int64		version;		/* of the checkpoint row folded from ... */
	int64		xmin;			/* ... and its xmin (rolled back versions) */
	int32		settings_version;
	SelectorConfig cfg;
	MemoryContext cxt;			/* everything below */
	LogPosition ckpt_pos;		/* the checkpoint's position */
	StateFold	fold;			/* the base: checkpoint + final rows */
	int			shared_slot;	/* fold.st is the shared cache's base pinned
								 * in this slot (read only!), -1: ours */
	const double *shared_prepared;	/* and what its decode takes from it (NULL: none) */
	uint64		seen_generation;	/* the arm's publication counter when
									 * entry_take_newest last looked */
	TimestampTz grown_at;		/* when the base last grew (entry_share_when_quiet) */
	MemoryContext base_cxt;		/* child of cxt: base_model (NULL: not decoded) */
	ArmModel   *base_model;
	MemoryContext overlay_cxt;	/* child of cxt, NULL: no overlay kept */
	int			noverlay;		/* rows of the overlay and their positions */
	int			maxoverlay;
	LogPosition *overlay;
	StateFold	ofold;			/* the base + those rows */
	MemoryContext overlay_model_cxt;	/* child of overlay_cxt */
	ArmModel   *overlay_model;
	double		now;			/* clocked: the clock's now of the load */
	ClockKey	base_at;		/* clocked: what base_model was decoded at */
	ClockKey	overlay_at;		/* clocked: what overlay_model was decoded at */
	const ArmModel *model;		/* the model last handed out */
	uint64		base_serial;	/* entry_decode()'s serials of base_model, overlay_model */
	uint64		overlay_serial;
	uint64		model_serial;	/* and of model (0: none) */
	FoldTotals	totals;			/* and the totals of its fold */
	uint64		last_used;		/* load counter when last used (LRU) */
	Size		bytes;			/* memory held by cxt when last measured */
} ModelCacheEntry;

/*
 * How a load treats an arm (selector_load.c, model_cache_absorb):
 * LOAD_OWN, without a learner (and on standbys, and on a clock that ages),
 * scores the exact fold of the log the statement sees: the final rows
 * folded into this backend's base, the others onto a copy of it, the
 * overlay.  Under the learner's rule a decision scores a final prefix of
 * each arm's log plus its own transaction's rows, which alone go to the
 * overlay: LOAD_VERSIONS (the learner keeps up) takes the newest version the
 * learner published and reads only this transaction's rows; LOAD_FINAL (it
 * stopped or lags by more than model_select.learner_max_lag, or the arm is
 * not shared) folds the final rows itself and publishes that base.
 * LOAD_PUBLISH is the learner's: it folds the final rows into its base and
 * publishes it; LOAD_PUBLISH_FIXED publishes fixed-size states only (a
 * growing one, pak_ucb's or bkb's, is copied whole at every version: the
 * learner publishes those once a naptime).
 */
typedef enum LoadMode
{
	LOAD_OWN,
	LOAD_VERSIONS,
	LOAD_FINAL,
	LOAD_PUBLISH,
	LOAD_PUBLISH_FIXED
} LoadMode;

#define LOAD_PUBLISHES(mode) ((mode) == LOAD_PUBLISH || (mode) == LOAD_PUBLISH_FIXED)
#define LOAD_VERSIONED(mode) ((mode) == LOAD_VERSIONS || (mode) == LOAD_FINAL)

/* A stored checkpoint's identity and contents, from the arms query. */
typedef struct CheckpointRow
{
	int64		version;
	int64		xmin;
	bool		valid;			/* exists and matches the settings */
	LogPosition pos;
	FoldTotals	totals;
	Datum		state;			/* (Datum) 0: none */
	bool		state_unread;	/* state is arm_state's, not read yet */
} CheckpointRow;

extern ModelCacheEntry *model_cache_entry(const SelectorConfig *cfg, int32 arm_id,
										  const CheckpointRow *ck, FullTransactionId horizon,
										  LoadMode mode);
extern void model_cache_absorb(ModelCacheEntry *entry, SPITupleTable *tt, uint64 first,
							   uint64 last, FullTransactionId horizon, double now, LoadMode mode);
extern uint64 model_cache_next_load(void);
extern void model_cache_touch(ModelCacheEntry *entry, uint64 load);
extern void model_cache_fit(uint64 load);
extern void model_cache_remove(ModelCacheEntry *entry);
extern void entry_drop_overlay(ModelCacheEntry *entry);
extern void arm_log_rows_begin(IndexRead *r, Relation rewards, int32 arm_id, LogPosition after);

/* model_share.c */
extern void base_key(SharedBaseKey *key, int32 arm_id, int32 settings_version, int64 version,
					 int64 xmin);
extern bool publish_fold(const SelectorConfig *cfg, const SharedBaseKey *key,
						 const StateFold *fold, bool uncommitted, SharedBase *sb);
extern void entry_share(ModelCacheEntry *entry);
extern bool entry_shareable(const ModelCacheEntry *entry);
extern void entry_publish(ModelCacheEntry *entry);
extern bool entry_take_newest(ModelCacheEntry *entry);
extern void shared_load_lock(int32 arm_id);
extern bool shared_load_try_lock(int32 arm_id);
extern void shared_load_unlock(int32 arm_id);
extern void entry_base_grew(ModelCacheEntry *entry);
extern void entry_share_when_quiet(ModelCacheEntry *entry);
extern void entry_own_base(ModelCacheEntry *entry);
extern bool shared_base_newest_from(const SelectorConfig *cfg, int32 arm_id, const CheckpointRow *ck,
									SharedBase *sb);
extern uint64 entry_catch_up(ModelCacheEntry *entry, SPITupleTable *tt, uint64 first, uint64 last,
							 FullTransactionId horizon);

#endif
