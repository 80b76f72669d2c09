/*
 * learner_pass.c — a learner worker's pass over its database's selectors
 * (the process and its loop: learner.c), and one selector's checkpoints and
 * retention, which maintain() runs too.
 *
 * A pass visits the selectors with work (PassSets, learner_pass.h): it
 * publishes their models, each selector in a transaction of its own, and
 * once a naptime checkpoints their due arms and publishes again.  It never
 * waits for an application: a selector whose settings lock is held or
 * awaited is skipped until the next pass.  An error is logged and counted,
 * and the pass goes on.
 */
#include "postgres.h"

#include "access/xact.h"
#include "commands/extension.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "storage/lwlock.h"
#include "tcop/tcopprot.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"

#include "learning/checkpoint.h"
#include "learning/learner_pass.h"
#include "learning/learner_state.h"
#include "learning/retention.h"
#include "model/catalog.h"
#include "model/privilege.h"
#include "pg/owner.h"
#include "pg/spi_util.h"

LearnerPublishHook learner_publish_hook = NULL;

/* In a learner process: its slot in the shared state (learner_passes_start). */
static LearnerSlot *me = NULL;

/*
 * One selector's checkpoints of its due arms and, in worker 0 or
 * maintain(), its log's retention (PassCall arg); run as the owner.
 */
void
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


/* The columns of selector_list()'s query. */
enum
{
	LIST_SELECTOR_ID = 1,
	LIST_NAME
};

/* Fills the SelectorList arg, in the caller's memory context; run as the owner. */
void
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

/* ---- the worker's pass --------------------------------------------------- */

/* The worker of slot starts passing: every bit of its sets set, since it does not know what changed before. */
void
learner_passes_start(LearnerSlot *slot, PassSets *sets)
{
	me = slot;
	memset(&sets->publish, 0xff, sizeof(sets->publish));
	memset(&sets->checkpoint, 0xff, sizeof(sets->checkpoint));
	sets->slice = 0;
}

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
bool
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
