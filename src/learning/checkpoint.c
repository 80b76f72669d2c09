/*
 * checkpoint.c — checkpoints: folding the final prefix of an arm's reward
 * log into its stored state (model_select.arm_state), and rebuild_state().
 *
 * An arm's state is by definition the fold of its base (the rewards
 * retention absorbed, retention.c; none: empty) and then its whole log, in
 * canonical order (tx, seq), under the selector's current settings (see
 * fold.h).
 * A checkpoint stores that fold up to a position below which the log can no
 * longer change: rows of transactions older than the snapshot's xmin.  Rows
 * after it are pending; every reader folds them in memory (model_cache.c),
 * so a checkpoint changes no score, only how much readers fold.
 *
 * Who checkpoints: the reward INSERT whose statement leaves an arm with at
 * least checkpoint_threshold final pending rewards (READ COMMITTED only; it
 * skips an arm whose row another transaction holds, so it never waits),
 * checkpoint(selector), rebuild_state(selector) and alter_selector().  All
 * run as the extension's owner: clients need no right on arm_state.
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "utils/builtins.h"
#include "utils/hsearch.h"
#include "utils/memutils.h"
#include "utils/xid8.h"

#include "model/catalog.h"
#include "pg/owner.h"
#include "model/privilege.h"
#include "model/state_store.h"
#include "pg/progress.h"
#include "learning/checkpoint.h"
#include "learning/learner_state.h"
#include "learning/clock.h"
#include "learning/fold.h"
#include "learning/arm_base.h"
#include "model/registry.h"

PG_FUNCTION_INFO_V1(model_select_checkpoint);
PG_FUNCTION_INFO_V1(model_select_rebuild_state);

int			checkpoint_threshold = 128;

/* set at load by model_select.c (checkpoint.h) */
CheckpointBaseLookup checkpoint_base_lookup = NULL;
CheckpointPublish checkpoint_publish_hook = NULL;


/* A stored checkpoint as read from arm_state. */
typedef struct Checkpoint
{
	bool		valid;			/* taken under the current settings */
	int64		version;		/* the row's version and xmin */
	int64		xmin;
	LogPosition pos;
	FoldTotals	totals;
	StateHeader *state;			/* NULL: nothing kept */
} Checkpoint;

#define CHECKPOINT_COLUMNS "settings_version, " CHECKPOINT_POSITION_COLUMNS ", state, version, xmin::text::bigint"
/* Their attribute numbers in a row of a query that selects them. */
enum
{
	CK_ATT_SETTINGS_VERSION = 1,
	CK_ATT_POSITION,
	CK_ATT_STATE = CK_ATT_POSITION + CHECKPOINT_POSITION_NCOLUMNS,
	CK_ATT_VERSION,
	CK_ATT_XMIN
};

/*
 * The checkpoint in row (arm_state of arm_id, just locked); its state is not
 * read when from_scratch (a rebuild needs none).
 */
static void
checkpoint_from_row(const SelectorConfig *cfg, int32 arm_id, HeapTuple row, TupleDesc desc,
					bool from_scratch, Checkpoint *ck)
{
	bool		isnull;
	Datum		state;

	ck->valid = DatumGetInt32(SPI_getbinval(row, desc, CK_ATT_SETTINGS_VERSION, &isnull)) == cfg->settings_version;
	ck->version = DatumGetInt64(SPI_getbinval(row, desc, CK_ATT_VERSION, &isnull));
	ck->xmin = DatumGetInt64(SPI_getbinval(row, desc, CK_ATT_XMIN, &isnull));
	ck->pos = LOG_START;
	memset(&ck->totals, 0, sizeof(ck->totals));
	ck->state = NULL;
	if (!ck->valid || from_scratch)
		return;
	checkpoint_position_from_row(row, desc, CK_ATT_POSITION, &ck->pos, &ck->totals);
	state = SPI_getbinval(row, desc, CK_ATT_STATE, &isnull);
	if (!isnull)
		ck->state = state_store_read(cfg, arm_id, state, false);
}

/*
 * Lock an arm's checkpoint row and read it (not its state when
 * from_scratch: rebuild_state() must work whatever bytes it holds).  With
 * skip_locked, returns false when another transaction holds the row.  A
 * missing row (arm_state is dumped empty) is created.  SKIP LOCKED finds no
 * row both when it is missing and when it is held: a held one must not be
 * "created", as the insert's unique check would wait for its holder.
 */
static bool
checkpoint_lock(const SelectorConfig *cfg, int32 arm_id, bool skip_locked, bool from_scratch,
				Checkpoint *ck)
{
	static SPIPlanPtr wait_plan = NULL;
	static SPIPlanPtr skip_plan = NULL;
	static SPIPlanPtr create_plan = NULL;
	static SPIPlanPtr exists_plan = NULL;
	Oid			types[2] = {INT4OID, INT4OID};
	Datum		args[2] = {Int32GetDatum(arm_id), Int32GetDatum(cfg->selector_id)};
	SPIPlanPtr	plan;

	plan = skip_locked
		? spi_plan(&skip_plan, "SELECT " CHECKPOINT_COLUMNS " FROM model_select.arm_state"
				   " WHERE arm_id = $1 FOR UPDATE SKIP LOCKED", 1, types)
		: spi_plan(&wait_plan, "SELECT " CHECKPOINT_COLUMNS " FROM model_select.arm_state"
				   " WHERE arm_id = $1 FOR UPDATE", 1, types);
	spi_execute(plan, args, NULL, false, 1, SPI_OK_SELECT, "lock the checkpoint of arm %d", arm_id);
	if (SPI_processed == 0 && skip_locked)
	{
		spi_execute(spi_plan(&exists_plan, "SELECT FROM model_select.arm_state WHERE arm_id = $1", 1, types),
					args, NULL, false, 1, SPI_OK_SELECT, "look up the checkpoint of arm %d", arm_id);
		if (SPI_processed > 0)
			return false;		/* someone holds it */
	}
	if (SPI_processed == 0)
	{
		spi_execute(spi_plan(&create_plan,
							 "INSERT INTO model_select.arm_state(arm_id, selector_id) VALUES ($1, $2)"
							 " ON CONFLICT (arm_id) DO NOTHING",
							 2, types), args, NULL, false, 0, SPI_OK_INSERT, "create the checkpoint row of arm %d", arm_id);
		if (SPI_processed == 0 && skip_locked)
			return false;		/* it exists: someone holds it */
		spi_execute(plan, args, NULL, false, 1, SPI_OK_SELECT, "lock the checkpoint of arm %d", arm_id);
		if (SPI_processed == 0)
			return false;
	}
	checkpoint_from_row(cfg, arm_id, SPI_tuptable->vals[0], SPI_tuptable->tupdesc, from_scratch, ck);
	return true;
}

/*
 * The one writer of arm_state (and of arm_state_rows, through
 * state_store_write): the fold f as the arm's checkpoint, replacing ck.
 * Returns the row's new version.
 */
static int64
checkpoint_write(const SelectorConfig *cfg, int32 arm_id, const Checkpoint *ck, const StateFold *f)
{
	static SPIPlanPtr plan = NULL;
	Oid			types[11] = {INT4OID, BYTEAOID, INT4OID, XID8OID, INT8OID, INT8OID,
	FLOAT8OID, FLOAT8OID, INT8OID, FLOAT8OID, INT8OID};
	Datum		args[11];
	char		nulls[11] = "           ";
	bytea	   *stored = state_store_write(cfg, arm_id, ck->state, f->st);

	args[0] = Int32GetDatum(arm_id);
	args[1] = PointerGetDatum(stored);
	nulls[1] = stored ? ' ' : 'n';
	args[2] = Int32GetDatum(cfg->settings_version);
	args[3] = FullTransactionIdGetDatum(f->pos.tx);
	args[4] = Int64GetDatum(f->pos.seq);
	fold_totals_args(&f->totals, args + 5);
	spi_execute(spi_plan(&plan,
						 "UPDATE model_select.arm_state SET state = $2, settings_version = $3,"
						 " ckpt_tx = $4, ckpt_seq = $5, n = $6, reward_sum = $7,"
						 " cost_sum = $8, cost_n = $9, spend_sum = $10, spend_n = $11,"
						 " version = version + 1, updated_at = pg_catalog.now() WHERE arm_id = $1"
						 " RETURNING version",
						 11, types), args, nulls, false, 1, SPI_OK_UPDATE_RETURNING,
				"write the checkpoint of arm %d", arm_id);
	return spi_int64(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, SPI_SOLE_COLUMN);
}

/*
 * May a checkpoint of the selector's arms start from a cached fold?  Fixed-
 * size states on the arm's own clock only: a growing state is stored by
 * appending to the one read (state_store.c).
 */
bool
checkpoint_reuses_folds(const SelectorConfig *cfg)
{
	return !clock_ops(cfg->clock)->ages && !policy_ops(cfg->policy)->keeps_rows &&
		checkpoint_base_lookup != NULL;
}

/*
 * The base this backend's arm cache folded from checkpoint (version, xmin),
 * if it holds one: the fold of the log up to a later position, made by the
 * same fold from the same state, so a checkpoint can start from it instead
 * of folding those rows again (the commit of reward inserts that make an arm
 * due folds hundreds of rows otherwise).
 */
const StateFold *
checkpoint_cached_base(const SelectorConfig *cfg, int32 arm_id, int64 version, int64 xmin,
					   const StateTransform *transform)
{
	if (transform != NULL || !checkpoint_reuses_folds(cfg))
		return NULL;
	return checkpoint_base_lookup(arm_id, cfg->settings_version, version, xmin);
}

/*
 * Checkpoint one arm: fold its final pending rows onto the stored checkpoint
 * (or, from_scratch or after a settings change, its whole final log), apply
 * transform (if any) to a state with rewards, and store the result.  Returns
 * the rows folded (0 when skip_locked found the arm busy).  The caller is
 * connected to SPI and runs as the owner.
 */
int64
checkpoint_arm(const SelectorConfig *cfg, int32 arm_id, bool skip_locked, bool from_scratch,
			   StateTransform *transform)
{
	bool		transformed = false;
	bool		moved = false;	/* a clocked state's Q moved */
	const StateFold *cached;
	int64		cached_rows = 0;	/* rows the cache folded after ck */
	Checkpoint	ck;
	StateFold	f;
	int64		folded;
	MemoryContext work = AllocSetContextCreate(CurrentMemoryContext, "model_select checkpoint",
											   ALLOCSET_DEFAULT_SIZES);
	MemoryContext old = MemoryContextSwitchTo(work);

	if (!checkpoint_lock(cfg, arm_id, skip_locked, from_scratch, &ck))
	{
		MemoryContextSwitchTo(old);
		MemoryContextDelete(work);
		return 0;
	}
	if (from_scratch || !ck.valid)
		fold_begin_base(&f, cfg, arm_id);	/* the base, then the whole retained log */
	else if ((cached = checkpoint_cached_base(cfg, arm_id, ck.version, ck.xmin, transform)) != NULL)
	{
		fold_begin(&f, cfg, cached->st, cached->pos, &cached->totals);
		cached_rows = cached->totals.n - ck.totals.n;
	}
	else
		fold_begin(&f, cfg, ck.state, ck.pos, &ck.totals);
	folded = clock_fold_log(&f, arm_id, final_horizon_for(cfg), from_scratch, &moved) + cached_rows;
	if (transform != NULL && f.st != NULL && f.st->n > 0)
	{
		f.st = transform->fn(cfg, f.st);
		transform->applied++;
		transformed = true;
	}
	if (folded > 0 || from_scratch || !ck.valid || transformed || moved)
	{
		int64		version = checkpoint_write(cfg, arm_id, &ck, &f);

		/* the fold under unchanged settings that any reader would make (not a transform's) */
		if (ck.valid && !transformed && checkpoint_publish_hook != NULL)
			checkpoint_publish_hook(cfg, arm_id, version, (int64) GetCurrentTransactionId(), &f);
	}
	MemoryContextSwitchTo(old);
	MemoryContextDelete(work);
	return folded;
}

/* The ids of a selector's arms, in arm_id order (the lock order of every writer). */
int
selector_arm_ids(const SelectorConfig *cfg, int32 **ids)
{
	static SPIPlanPtr plan = NULL;
	Oid			types[1] = {INT4OID};
	Datum		args[1] = {Int32GetDatum(cfg->selector_id)};
	int			narms;

	spi_execute(spi_plan(&plan, "SELECT arm_id FROM model_select.arms WHERE selector_id = $1"
						 " ORDER BY arm_id", 1, types), args, NULL, true, 0, SPI_OK_SELECT, "read the arms of selector %d", cfg->selector_id);
	narms = (int) SPI_processed;
	*ids = palloc(sizeof(int32) * Max(narms, 1));
	for (int i = 0; i < narms; i++)
		(*ids)[i] = spi_int32(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, SPI_SOLE_COLUMN);
	return narms;
}

/*
 * Checkpoint every arm of a selector, in arm_id order (the lock order of
 * every writer); from_scratch rebuilds them.  The caller is connected to SPI
 * and runs as the owner.
 */
int64
checkpoint_selector_arms(const SelectorConfig *cfg, bool from_scratch, StateTransform *transform)
{
	return checkpoint_arms(cfg, false, from_scratch, transform);
}

/*
 * checkpoint_selector_arms, skipping arms another transaction holds with
 * skip_locked.  A clocked selector's due arm checkpoints every arm this
 * way (checkpoint_note_rewards): then every arm's horizon moves on together, and
 * readers count the selector's rows only from the oldest (clock.c).
 */
int64
checkpoint_arms(const SelectorConfig *cfg, bool skip_locked, bool from_scratch,
				StateTransform *transform)
{
	int32	   *ids;
	int			narms = selector_arm_ids(cfg, &ids);
	int64		folded = 0;

	/* a named checkpoint's progress; not an automatic one inside a reward insert */
	if (!skip_locked)
		progress_total(narms, "arms");
	for (int i = 0; i < narms; i++)
	{
		folded += checkpoint_arm(cfg, ids[i], skip_locked, from_scratch, transform);
		if (!skip_locked)
			progress_update(i + 1);
	}
	return folded;
}

typedef struct CheckpointCall
{
	const char *name;
	bool		from_scratch;
	StateTransform *transform;
	int64		folded;
} CheckpointCall;

static void
checkpoint_selector(void *arg)
{
	int			spi_level;
	CheckpointCall *call = arg;
	SelectorConfig cfg;
	int32		selector_id;

	spi_level = spi_connect();
	selector_id = selector_id_by_name(call->name);
	selector_check_privilege(selector_id, call->name, SELECTOR_ADMIN);
	/*
	 * Read under the settings lock, as a reward insert does: otherwise a
	 * transaction that checkpoints and then inserts a reward would hold arm
	 * rows that an alter_selector() holding the lock exclusively waits for,
	 * while it waits for the lock (40P01).
	 */
	config_load_for_reward(selector_id, call->name, &cfg);
	if (call->transform != NULL && call->transform->check != NULL)
		call->transform->check(call->name, &cfg);
	call->folded = checkpoint_selector_arms(&cfg, call->from_scratch, call->transform);
	spi_finish(spi_level);
}

/*
 * Checkpoint every arm of the named selector (from scratch, and applying
 * transform, when asked), as the extension owner, for a caller with the
 * admin right; returns the rewards folded.  checkpoint(), rebuild_state()
 * and resample().
 */
int64
checkpoint_named_selector(const char *name, bool from_scratch, StateTransform *transform)
{
	CheckpointCall call = {name, from_scratch, transform, 0};

	progress_begin(from_scratch ? "rebuild_state" : "checkpoint", name, -1, "arms");
	run_as_extension_owner(checkpoint_selector, &call);
	progress_end();
	return call.folded;
}

/* SQL: checkpoint(selector) → rewards folded into the stored checkpoints. */
Datum
model_select_checkpoint(PG_FUNCTION_ARGS)
{
	PG_RETURN_INT64(checkpoint_named_selector(text_to_cstring(PG_GETARG_TEXT_PP(0)), false, NULL));
}

/*
 * SQL: rebuild_state(selector) → every arm's checkpoint recomputed from
 * scratch from its log (the definition of the state); returns the rewards
 * folded.  Waits for arms that a writer is checkpointing.
 */
Datum
model_select_rebuild_state(PG_FUNCTION_ARGS)
{
	PG_RETURN_INT64(checkpoint_named_selector(text_to_cstring(PG_GETARG_TEXT_PP(0)), true, NULL));
}
