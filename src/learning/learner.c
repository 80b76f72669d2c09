/*
 * learner.c — the learner process: checkpoints outside the application's
 * transactions, and maintain().
 *
 * With model_select in shared_preload_libraries and the setting
 * model_select.learner_databases naming databases, the postmaster starts one
 * background worker, "model_select learner", per database, connected to it.
 * (model_select.learner_workers of them per database: each takes a share
 * of the arms, learner_state.c).
 * Every model_select.learner_naptime each passes over its database's selectors
 * with work (PassSets: those whose rewards' transactions ended since, and a
 * tenth of the others in turn), each in a transaction of its own: it takes
 * the selector's settings lock
 * without waiting (a selector whose alter_selector() or drop_selector() holds
 * or awaits it is skipped until the next pass) and checkpoints every arm that
 * is due, by the rule reward inserts use (checkpoint_due_arms()), skipping
 * arms another transaction is checkpointing: it never waits for an
 * application.  While it serves a database, reward inserts there do not
 * checkpoint (checkpoint_if_due()), so that work leaves the application's
 * transaction.  It serves while its last pass ended within
 * LEARNER_STALE_PASSES naptimes (and at least LEARNER_STALE_MIN): a learner
 * that crashed, was killed or hangs hands the work back to the inserts.
 *
 * A reward's commit wakes it (learner_state.c): it then publishes every
 * arm's fold of its final rows as a version (selector_publish(), through
 * learner_publish_hook), the prefix of the log that decisions score
 * (routing/arm_cache.h, LoadMode), and records the pass's lag.  It folds
 * rows exactly as any checkpoint does.  Its memory is one arm's checkpoint
 * at a time.  The postmaster
 * restarts it LEARNER_RESTART_SECONDS after it exits with an error (a SIGKILL
 * makes the postmaster restart the whole server, as for any backend).
 *
 * maintain(selector) does one pass now, in the caller's transaction, over
 * one selector or every selector the caller administers: with pg_cron, the
 * learner's work without preloading.
 *
 * Shared state: learner_state.c, one slot per database; a worker writes only
 * its own (`me`).  Its settings and registration at server start:
 * learner_setup.c.
 */
#include "postgres.h"

#include <math.h>

#include "access/htup_details.h"
#include "access/xact.h"
#include "catalog/pg_type.h"
#include "commands/extension.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "tcop/tcopprot.h"
#include "utils/builtins.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"

#include "learning/checkpoint.h"
#include "learning/learner.h"
#include "learning/learner_state.h"
#include "learning/retention.h"
#include "model/catalog.h"
#include "model/privilege.h"
#include "pg/owner.h"
#include "pg/spi_util.h"

PG_FUNCTION_INFO_V1(model_select_maintain);
PG_FUNCTION_INFO_V1(model_select_learner_status);

/* Set in _PG_init: the routing layer's selector_publish() (learning cannot include routing). */
LearnerPublishHook learner_publish_hook = NULL;

/* In a learner process: its slot in the shared state. */
static LearnerSlot *me = NULL;

/* One selector's pass (run as the extension owner). */
typedef struct PassCall
{
	int32		selector_id;	/* 0: look it up by name */
	const char *name;
	bool		check_privilege;	/* maintain(selector): the caller's admin right, or 42501 */
	bool		if_admin;		/* maintain(): skip unless the caller administers it */
	bool		background;		/* the learner's pass: absorbs in batches only */
	bool		skipped;
	int			arms;
	int64		folded;
} PassCall;

static void
learn_selector(void *arg)
{
	PassCall   *call = arg;
	SelectorConfig cfg;
	int			spi_level = spi_connect();

	if (call->selector_id == 0)
		call->selector_id = selector_id_by_name(call->name);
	if (call->check_privilege)
		selector_check_privilege(call->selector_id, call->name, SELECTOR_ADMIN);
	if (call->if_admin)
	{
		bool		exists;

		if (!role_has_selector_privilege(calling_user(), call->selector_id, SELECTOR_ADMIN, &exists) ||
			!exists)
		{
			spi_finish(spi_level);
			return;
		}
	}
	call->skipped = !config_try_load_for_reward(call->selector_id, call->name, &cfg);
	if (!call->skipped)
	{
		call->folded = checkpoint_due_arms(&cfg, &call->arms);
		if (learner_owns_selectors())
			retention_pass(&cfg, call->background);	/* the log's horizon (retention.c) */
	}
	spi_finish(spi_level);
}

/* The selectors of this database in id order (selector_list()). */
typedef struct SelectorList
{
	int			n;
	int32	   *ids;
	char	  **names;
} SelectorList;

/* The columns of selector_list()'s query. */
enum
{
	LIST_SELECTOR_ID = 1,
	LIST_NAME
};

/* Fills the SelectorList arg, in the caller's memory context; run as the owner. */
static void
selector_list(void *arg)
{
	static SPIPlanPtr plan = NULL;
	SelectorList *list = arg;
	MemoryContext caller = CurrentMemoryContext;
	int			spi_level = spi_connect();

	spi_execute(spi_plan(&plan, "SELECT selector_id, name FROM model_select.selectors ORDER BY selector_id",
						 0, NULL), NULL, NULL, true, 0, SPI_OK_SELECT, "list the selectors");
	list->n = (int) SPI_processed;
	list->ids = MemoryContextAlloc(caller, sizeof(int32) * Max(list->n, 1));
	list->names = MemoryContextAlloc(caller, sizeof(char *) * Max(list->n, 1));
	for (int i = 0; i < list->n; i++)
	{
		list->ids[i] = spi_int32(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, LIST_SELECTOR_ID);
		list->names[i] = MemoryContextStrdup(caller, spi_text(SPI_tuptable->vals[i], SPI_tuptable->tupdesc,
															  LIST_NAME));
	}
	spi_finish(spi_level);
}

/* ---- the worker ---------------------------------------------------------- */

static void
learner_count(int arms, int64 folded, bool skipped, int64 published, bool failed)
{
	LWLockAcquire(learner->lock, LW_EXCLUSIVE);
	me->arms_checkpointed += arms;
	me->rewards_folded += folded;
	me->selectors_skipped += skipped;
	me->versions_published += published;
	me->errors += failed;
	LWLockRelease(learner->lock);
}

/* fn(arg) in a transaction of its own, shown as activity. */
static void
learner_step(const char *activity, void (*fn) (void *arg), void *arg)
{
	StartTransactionCommand();
	PushActiveSnapshot(GetTransactionSnapshot());
	pgstat_report_activity(STATE_RUNNING, activity);
	fn(arg);
	PopActiveSnapshot();
	CommitTransactionCommand();
}

/* After an error in a learner_step: logged, counted, its transaction rolled back. */
static void
learner_step_failed(MemoryContext cxt)
{
	MemoryContextSwitchTo(cxt);
	EmitErrorReport();
	FlushErrorState();
	AbortCurrentTransaction();
	learner_count(0, 0, false, 0, true);
}

static void
checkpoint_step(void *arg)
{
	run_as_extension_owner(learn_selector, arg);
}

/* A selector's models to publish; growing states (copied whole) only if growing. */
typedef struct PublishCall
{
	const char *name;
	bool		growing;
	int64		published;
	bool		complete;
} PublishCall;

static void
publish_step(void *arg)
{
	PublishCall *call = arg;

	call->published = learner_publish_hook(call->name, call->growing, &call->complete);
}

/*
 * One selector's step of a pass: its fixed-size models published; or, with
 * `checkpoints`, its due checkpoints, then (after they commit: backends
 * look versions up by them) all its models, growing states too; each in a
 * transaction of its own.  An error (a damaged state, a selector dropped
 * meanwhile) is logged and counted, and the pass goes on.  Returns whether
 * its versions are all published: not after an error, a busy settings lock
 * or a version the shared cache had no room for (then backends fold for
 * themselves: learner_fresh()).  *again: the selector is worth another
 * visit at the next pass (it published, or did not complete).
 */
static bool
learner_selector(int32 selector_id, const char *name, bool checkpoints, bool *again)
{
	MemoryContext cxt = CurrentMemoryContext;
	PassCall	call = {.selector_id = selector_id, .name = name, .background = true};
	PublishCall publish = {.name = name, .growing = checkpoints, .complete = true};
	volatile bool complete = true;

	PG_TRY();
	{
		if (checkpoints)
		{
			learner_step("model_select learner: checkpointing due arms", checkpoint_step, &call);
			learner_count(call.arms, call.folded, call.skipped, 0, false);
		}
		if (learner_publish_hook != NULL && !call.skipped)
		{
			learner_step("model_select learner: publishing arm models", publish_step, &publish);
			learner_count(0, 0, false, publish.published, false);
		}
		complete = !call.skipped && publish.complete;
	}
	PG_CATCH();
	{
		learner_step_failed(cxt);
		complete = false;
	}
	PG_END_TRY();
	*again = !complete || publish.published > 0;
	return complete;
}

/* The selectors to pass over, in the pass's memory (none while the extension is not installed). */
typedef struct ListCall
{
	MemoryContext cxt;
	SelectorList list;
} ListCall;

static void
list_step(void *arg)
{
	ListCall   *call = arg;

	if (OidIsValid(get_extension_oid("model_select", true)))
	{
		MemoryContext old = MemoryContextSwitchTo(call->cxt);

		run_as_extension_owner(selector_list, &call->list);
		MemoryContextSwitchTo(old);
	}
}

/*
 * The selectors a worker visits (learner_state.h): in its publishing passes
 * the marked ones and those of `publish` (their last visit published or
 * did not complete), in its checkpointing passes those marked since the
 * last and a tenth of the others in turn, so every selector once in
 * LEARNER_SLICES checkpointing passes (the log's horizon, the work that
 * spans a selector's arms).  A mark stays, and its selector is visited at
 * every pass, until every transaction up to it has ended: rows that an
 * older transaction held back, even one that logged nothing there, are
 * published as soon as they are final.  Every bit
 * set at the start: a worker starting does not know what changed before.
 * At 1,000 selectors of 3 arms and 8 clients, passes over every selector
 * made the learner's lag p99 848 ms.
 */
typedef struct PassSets
{
	LearnerDirty publish;
	LearnerDirty checkpoint;
	int			slice;			/* the next checkpointing pass's share of the others */
	uint64		seen[LEARNER_DIRTY_BITS];	/* the marks a pass read (learner_marks_read) */
} PassSets;

#define LEARNER_SLICES 10

/*
 * A checkpointing pass visits at least this many selectors, then leaves the
 * rest to the next while rewards wait to be published: at 1,000 selectors
 * with rewards, a checkpointing pass over all of them held the next
 * versions back for 300 ms.
 */
#define LEARNER_CHECKPOINT_STEPS_MIN 16

/*
 * One step over the selectors of `visit`, and those of the list's slice
 * `slice` of LEARNER_SLICES (-1: none): publishing, or with `checkpoints`
 * checkpointing and publishing; those worth another visit go into *again,
 * with those a checkpointing pass left to the next.  Returns whether every
 * step completed.
 */
static bool
learner_steps(const SelectorList *list, const LearnerDirty *visit, int slice, bool checkpoints,
			  LearnerDirty *again)
{
	MemoryContext pass = CurrentMemoryContext;
	bool		complete = true;
	int			steps = 0;

	memset(again, 0, sizeof(*again));
	for (int i = 0; i < list->n; i++)
	{
		bool		more = false;

		if (!learner_dirty_test(visit, list->ids[i]) && i % LEARNER_SLICES != slice)
			continue;
		if (checkpoints && steps >= LEARNER_CHECKPOINT_STEPS_MIN && learner_rewards_waiting())
		{
			learner_dirty_set(again, list->ids[i]);
			continue;
		}
		steps++;
		CHECK_FOR_INTERRUPTS();
		complete &= learner_selector(list->ids[i], list->names[i], checkpoints, &more);
		MemoryContextSwitchTo(pass);
		if (more)
			learner_dirty_set(again, list->ids[i]);
	}
	return complete;
}

/*
 * A pass over the database's selectors with work (PassSets): their
 * fixed-size models published, which ends the lag of the rewards it was
 * woken for; then, once a naptime (`checkpoints`), their due checkpoints,
 * each followed by their models published again (the growing ones too), so
 * that a checkpoint, which rewrites a whole state, never delays a version
 * and backends find versions of the new checkpoints at once.  Listing the
 * selectors fails when the extension is dropped meanwhile: logged and
 * counted, and the learner goes on to its next pass.  Returns whether
 * rewards had committed since the last pass.
 */
static bool
learner_pass(bool checkpoints, PassSets *sets)
{
	MemoryContext pass = AllocSetContextCreate(TopMemoryContext, "model_select learner pass",
											   ALLOCSET_DEFAULT_SIZES);
	MemoryContext old = MemoryContextSwitchTo(pass);
	ListCall	call = {.cxt = pass};
	int64		rewards;
	TimestampTz pending = learner_take_pending(me, &rewards);
	bool		complete = true;
	LearnerDirty marked = {{0}};
	LearnerDirty again;
	uint64		horizon = learner_marks_read(me, &marked, sets->seen);

	for (int k = 0; k < LEARNER_DIRTY_WORDS; k++)
	{
		sets->publish.w[k] |= marked.w[k];
		sets->checkpoint.w[k] |= marked.w[k];
	}

	PG_TRY();
	{
		learner_step("model_select learner: listing selectors", list_step, &call);
	}
	PG_CATCH();
	{
		learner_step_failed(pass);
		call.list.n = -1;
	}
	PG_END_TRY();
	MemoryContextSwitchTo(pass);
	complete = call.list.n >= 0;
	if (complete)
	{
		complete = learner_steps(&call.list, &sets->publish, -1, false, &again);
		sets->publish = again;
		learner_marks_clear(me, sets->seen, horizon);
	}
	if (pending != 0)
	{
		LWLockAcquire(learner->lock, LW_EXCLUSIVE);
		learner_record_lag(me, pending, rewards);
		LWLockRelease(learner->lock);
	}
	if (checkpoints && call.list.n >= 0)
	{
		complete &= learner_steps(&call.list, &sets->checkpoint, sets->slice, true, &again);
		sets->checkpoint = again;
		sets->slice = (sets->slice + 1) % LEARNER_SLICES;
	}
	pgstat_report_activity(STATE_IDLE, NULL);
	LWLockAcquire(learner->lock, LW_EXCLUSIVE);
	me->passes++;
	me->last_pass = GetCurrentTimestamp();
	me->last_pass_complete = complete;
	LWLockRelease(learner->lock);
	MemoryContextSwitchTo(old);
	MemoryContextDelete(pass);
	return pending != 0;
}

/*
 * Under a stream of rewards a worker starts a pass at most every
 * LEARNER_PASS_GAP_MS.  A pass costs a few hundred microseconds of CPU
 * whatever it folds (a transaction to list the selectors and one per
 * selector, a load of each, a copy of every grown arm's state into the
 * shared cache), and woken by every commit it folded 2 to 3 rewards a pass
 * at any rate: at 1,000 rewards/s (4 clients, lin_ucb, d = 384) the fold
 * was a quarter of its CPU.  Commits meanwhile set the latch and the next
 * pass folds them together; a first reward after a quiet spell is not held,
 * and the gap adds at most its length to the lag.
 */
#define LEARNER_PASS_GAP_MS 10

static void
learner_pass_gap(TimestampTz started)
{
	long		elapsed_ms = (long) ((GetCurrentTimestamp() - started) / 1000);

	if (elapsed_ms >= 0 && elapsed_ms < LEARNER_PASS_GAP_MS)
		(void) WaitLatch(MyLatch, WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 LEARNER_PASS_GAP_MS - elapsed_ms, PG_WAIT_EXTENSION);
}

static void
learner_detach(int code, Datum arg)
{
	LWLockAcquire(learner->lock, LW_EXCLUSIVE);
	if (me->pid == MyProcPid)
	{
		me->pid = 0;
		me->latch = NULL;
	}
	LWLockRelease(learner->lock);
}

void
model_select_learner_main(Datum arg)
{
	TimestampTz last_checkpoints = 0;
	int			slot = DatumGetInt32(arg);
	PassSets	sets;

	if (learner == NULL || slot < 0 || slot >= learner->nslots)
		elog(ERROR, "model_select learner: no slot %d", slot);
	me = &learner->slots[slot];
	learner_worker_attach(me);
	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	pqsignal(SIGTERM, die);
	BackgroundWorkerUnblockSignals();
	BackgroundWorkerInitializeConnection(NameStr(me->dbname), NULL, 0);
	pgstat_report_appname("model_select learner");

	LWLockAcquire(learner->lock, LW_EXCLUSIVE);
	me->pid = MyProcPid;
	me->latch = MyLatch;
	me->database = MyDatabaseId;
	me->started = GetCurrentTimestamp();
	me->last_pass = 0;
	LWLockRelease(learner->lock);
	before_shmem_exit(learner_detach, 0);
	memset(&sets.publish, 0xff, sizeof(sets.publish));
	memset(&sets.checkpoint, 0xff, sizeof(sets.checkpoint));
	sets.slice = 0;

	/*
	 * A reward's commit sets the latch: the models are published then; the
	 * checkpoints, whose due check costs a query per arm, once a naptime.
	 */
	for (;;)
	{
		TimestampTz now;
		bool		checkpoints;
		bool		busy;

		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
		}
		now = GetCurrentTimestamp();
		checkpoints = TimestampDifferenceExceeds(last_checkpoints, now, learner_naptime_ms);
		busy = learner_pass(checkpoints, &sets);
		if (checkpoints)
			last_checkpoints = now;
		/* its statistics (transactions, rows read) reach the views, as a backend's between queries */
		(void) pgstat_report_stat(false);
		if (busy)
			learner_pass_gap(now);
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 learner_naptime_ms, PG_WAIT_EXTENSION);
	}
}

/* ---- SQL ----------------------------------------------------------------- */

/*
 * SQL: maintain(selector DEFAULT NULL) → rewards folded: the learner's pass
 * now, in this transaction, over the named selector (admin right needed) or
 * over every selector the caller administers.
 */
Datum
model_select_maintain(PG_FUNCTION_ARGS)
{
	int64		folded = 0;

	if (!PG_ARGISNULL(0))
	{
		char	   *name = text_to_cstring(PG_GETARG_TEXT_PP(0));
		PassCall	call = {.name = name, .check_privilege = true};

		run_as_extension_owner(learn_selector, &call);
		PG_RETURN_INT64(call.folded);
	}
	{
		SelectorList list = {0};

		run_as_extension_owner(selector_list, &list);
		for (int i = 0; i < list.n; i++)
		{
			PassCall	call = {.selector_id = list.ids[i], .name = list.names[i], .if_admin = true};

			run_as_extension_owner(learn_selector, &call);
			folded += call.folded;
		}
	}
	PG_RETURN_INT64(folded);
}

/* SQL: learner_status() → per learner process (learner_workers per database), counters and lag. */
Datum
model_select_learner_status(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	int			nslots = learner != NULL ? learner->nslots : 0;

	InitMaterializedSRF(fcinfo, 0);
	for (int i = 0; i < nslots; i++)
	{
		Datum		values[16];
		bool		nulls[16] = {false};
		LearnerSlot copy;
		double		ms[2],
					rewards[2];

		LWLockAcquire(learner->lock, LW_SHARED);
		copy = learner->slots[i];
		LWLockRelease(learner->lock);
		values[0] = BoolGetDatum(copy.pid != 0);
		values[1] = Int32GetDatum(copy.pid);
		nulls[1] = copy.pid == 0;
		values[2] = CStringGetTextDatum(NameStr(copy.dbname));
		values[3] = TimestampTzGetDatum(copy.started);
		nulls[3] = copy.started == 0;
		values[4] = TimestampTzGetDatum(copy.last_pass);
		nulls[4] = copy.last_pass == 0;
		values[5] = Int64GetDatum(copy.passes);
		values[6] = Int64GetDatum(copy.arms_checkpointed);
		values[7] = Int64GetDatum(copy.rewards_folded);
		values[8] = Int64GetDatum(copy.selectors_skipped);
		values[9] = Int64GetDatum(copy.errors);
		values[10] = Int64GetDatum(copy.versions_published);
		learner_lag_percentiles(&copy, ms, rewards);
		for (int k = 0; k < 2; k++)
		{
			values[11 + k] = Float8GetDatum(ms[k]);
			values[13 + k] = Float8GetDatum(rewards[k]);
			nulls[11 + k] = nulls[13 + k] = isnan(ms[k]);
		}
		values[15] = Int32GetDatum(copy.worker);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}
