/*
 * learner.c — the learner process, and maintain().
 *
 * With model_select in shared_preload_libraries and the setting
 * model_select.learner_databases naming databases, the postmaster starts
 * model_select.learner_workers background workers, "model_select learner",
 * per database, connected to it; each takes a share of the arms
 * (learner_state.c).  A worker loops: a reward's commit, or its
 * model_select.learner_naptime passing, starts a pass over the selectors
 * with work (learner_pass.c): it publishes every arm's fold of its final
 * rows as a version (selector_publish(), through learner_publish_hook), the
 * prefix of the log that decisions score (routing/arm_cache.h, LoadMode),
 * records the pass's lag, and once a naptime checkpoints every arm that is
 * due, by the rule reward inserts use (checkpoint_due_arms()).  While it
 * serves a database, reward inserts there do not checkpoint
 * (checkpoint_note_rewards()), so that work leaves the application's transaction.
 * It serves while its last pass ended within LEARNER_STALE_PASSES naptimes
 * (and at least LEARNER_STALE_MIN): a learner that crashed, was killed or
 * hangs hands the work back to the inserts.  It folds rows exactly as any
 * checkpoint does; its memory is one arm's checkpoint at a time.  The
 * postmaster restarts it LEARNER_RESTART_SECONDS after it exits with an
 * error (a SIGKILL makes the postmaster restart the whole server, as for
 * any backend).
 *
 * maintain(selector) does one selector's checkpoints and retention now, in
 * the caller's transaction, over one selector or every selector the caller
 * administers: with pg_cron, the learner's work without preloading.
 *
 * Shared state: learner_state.c, one slot per worker; a worker writes only
 * its own (`me`).  Its settings and registration at server start:
 * learner_setup.c.
 */
#include "postgres.h"

#include <math.h>

#include "funcapi.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/lwlock.h"
#include "tcop/tcopprot.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"

#include "learning/learner.h"
#include "learning/learner_pass.h"
#include "learning/learner_state.h"
#include "pg/owner.h"

PG_FUNCTION_INFO_V1(model_select_maintain);
PG_FUNCTION_INFO_V1(model_select_learner_status);

/* In a learner process: its slot in the shared state. */
static LearnerSlot *me = NULL;

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
	learner_passes_start(me, &sets);

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
