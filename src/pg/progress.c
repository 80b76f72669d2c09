/*
 * progress.c — progress of long commands.
 *
 * A command (replay, route_batch, warm_start, rebuild_state, checkpoint,
 * alter_selector, ...) calls progress_begin(), then progress_update() or
 * progress_add() as units (rounds, rows, rewards, arms) are done, then
 * progress_end().  A command begun inside another (rebuild_state inside
 * alter_selector) only sets the total and unit of the outer one, which keeps
 * its name; the outermost end clears.  An error ends them all (transaction
 * and subtransaction abort callbacks), so nothing stale stays.
 *
 * Where it shows: with shared_preload_libraries, in one slot per backend in
 * shared memory, read by view model_select.progress from any session (a
 * slot is written only by its backend, and read with a change count as
 * PostgreSQL's pg_stat_activity does); and, when model_select.
 * progress_interval is set, as a NOTICE to the client at most that often.
 * With neither, an update costs a test and two stores.
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/pg_authid.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "port/atomics.h"
#include "storage/backendid.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/timestamp.h"

#include "pg/progress.h"

#define PROGRESS_NAME_LEN 64

typedef struct ProgressSlot
{
	uint32		changecount;	/* odd while being written */
	int32		pid;			/* 0: no command */
	Oid			userid;
	char		command[PROGRESS_NAME_LEN];
	char		target[PROGRESS_NAME_LEN];
	char		unit[16];
	int64		done;
	int64		total;			/* -1: not known */
	TimestampTz started;
} ProgressSlot;

int			progress_interval_ms = 0;

static ProgressSlot *slots = NULL;	/* MaxBackends of them, when preloaded */
static ProgressSlot local;		/* this backend's command */
static int	depth = 0;
static TimestampTz last_notice;

static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;

PG_FUNCTION_INFO_V1(model_select_progress);

/* This backend's slot in shared memory, or NULL. */
static ProgressSlot *
my_slot(void)
{
	if (slots == NULL || MyBackendId == InvalidBackendId || MyBackendId > MaxBackends)
		return NULL;
	return &slots[MyBackendId - 1];
}

/* Copy the local state into this backend's slot (readers see all or none). */
static void
publish(void)
{
	ProgressSlot *slot = my_slot();
	uint32		count;

	if (slot == NULL)
		return;
	count = slot->changecount;
	slot->changecount = count + 1;
	pg_write_barrier();
	memcpy((char *) slot + sizeof(uint32), (char *) &local + sizeof(uint32),
		   sizeof(ProgressSlot) - sizeof(uint32));
	pg_write_barrier();
	slot->changecount = count + 2;
}

/* A NOTICE when model_select.progress_interval has passed since the last. */
static void
maybe_notice(void)
{
	TimestampTz now;

	if (progress_interval_ms <= 0)
		return;
	now = GetCurrentTimestamp();
	if (!TimestampDifferenceExceeds(last_notice, now, progress_interval_ms))
		return;
	last_notice = now;
	if (local.total >= 0)
		ereport(NOTICE,
				(errmsg("%s%s%s: %lld of %lld %s (%.0f%%) in %.1f s", local.command,
						local.target[0] ? " " : "", local.target,
						(long long) local.done, (long long) local.total, local.unit,
						local.total > 0 ? 100.0 * local.done / local.total : 100.0,
						(now - local.started) / 1e6)));
	else
		ereport(NOTICE,
				(errmsg("%s%s%s: %lld %s in %.1f s", local.command,
						local.target[0] ? " " : "", local.target,
						(long long) local.done, local.unit, (now - local.started) / 1e6)));
}

void
progress_begin(const char *command, const char *target, int64 total, const char *unit)
{
	if (depth++ > 0)
	{
		progress_total(total, unit);
		return;
	}
	memset(&local, 0, sizeof(local));
	local.pid = MyProcPid;
	local.userid = GetUserId();
	strlcpy(local.command, command, sizeof(local.command));
	strlcpy(local.target, target ? target : "", sizeof(local.target));
	strlcpy(local.unit, unit, sizeof(local.unit));
	local.total = total;
	local.started = last_notice = GetCurrentTimestamp();
	publish();
}

/* What the units are and how many there will be, from inside the command. */
void
progress_total(int64 total, const char *unit)
{
	if (depth == 0)
		return;
	local.total = total;
	local.done = 0;
	strlcpy(local.unit, unit, sizeof(local.unit));
	publish();
}

void
progress_update(int64 done)
{
	if (depth == 0)
		return;
	local.done = done;
	publish();
	maybe_notice();
}

void
progress_add(int64 n)
{
	if (depth > 0)
		progress_update(local.done + n);
}

static void
progress_clear(void)
{
	depth = 0;
	if (local.pid != 0)
	{
		memset(&local, 0, sizeof(local));
		publish();
	}
}

void
progress_end(void)
{
	if (depth > 0 && --depth == 0)
		progress_clear();
}

static void
progress_xact(XactEvent event, void *arg)
{
	if (event == XACT_EVENT_ABORT || event == XACT_EVENT_PARALLEL_ABORT)
		progress_clear();
}

static void
progress_subxact(SubXactEvent event, SubTransactionId mySubid, SubTransactionId parentSubid,
				 void *arg)
{
	if (event == SUBXACT_EVENT_ABORT_SUB)
		progress_clear();
}

/* Every backend: the setting and the clean-up after errors. */
void
progress_init(void)
{
	DefineCustomIntVariable("model_select.progress_interval",
							"How often long commands report their progress as a NOTICE.",
							"replay, route_batch, warm_start, rebuild_state, checkpoint and "
							"alter_selector: units done of total and elapsed time.  0 sends none.",
							&progress_interval_ms, 0, 0, INT_MAX,
							PGC_USERSET, GUC_UNIT_MS, NULL, NULL, NULL);
	RegisterXactCallback(progress_xact, NULL);
	RegisterSubXactCallback(progress_subxact, NULL);
}

static Size
slots_size(void)
{
	return mul_size(MaxBackends, sizeof(ProgressSlot));
}

static void
progress_request(void)
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	RequestAddinShmemSpace(slots_size());
}

static void
progress_startup(void)
{
	bool		found;

	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();
	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	slots = ShmemInitStruct("model_select progress", slots_size(), &found);
	if (!found)
		memset(slots, 0, slots_size());
	LWLockRelease(AddinShmemInitLock);
}

/* From _PG_init under shared_preload_libraries: the slots. */
void
progress_preload(void)
{
	prev_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = progress_request;
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = progress_startup;
}

/* A consistent copy of slot i; false when it holds no command. */
static bool
read_slot(int i, ProgressSlot *copy)
{
	for (;;)
	{
		uint32		before = slots[i].changecount;

		pg_read_barrier();
		memcpy(copy, &slots[i], sizeof(ProgressSlot));
		pg_read_barrier();
		if (before == slots[i].changecount && (before & 1) == 0)
			return copy->pid != 0;
		CHECK_FOR_INTERRUPTS();
	}
}

/*
 * SQL: _progress() → the commands in progress, one row per backend (none
 * unless preloaded).  As in pg_stat_activity, another role's commands show
 * only their pid unless the caller has its privileges or pg_read_all_stats.
 */
Datum
model_select_progress(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	TimestampTz now = GetCurrentTimestamp();

	InitMaterializedSRF(fcinfo, 0);
	for (int i = 0; slots != NULL && i < MaxBackends; i++)
	{
		ProgressSlot s;
		Datum		values[8];
		bool		nulls[8] = {false};
		bool		visible;

		if (!read_slot(i, &s))
			continue;
		visible = has_privs_of_role(GetUserId(), s.userid) ||
			has_privs_of_role(GetUserId(), ROLE_PG_READ_ALL_STATS);
		values[0] = Int32GetDatum(s.pid);
		values[1] = CStringGetTextDatum(s.command);
		values[2] = CStringGetTextDatum(s.target);
		values[3] = Int64GetDatum(s.done);
		values[4] = Int64GetDatum(s.total);
		values[5] = CStringGetTextDatum(s.unit);
		values[6] = TimestampTzGetDatum(s.started);
		values[7] = Float8GetDatum((now - s.started) / 1e6);
		for (int c = 1; c < 8; c++)
			nulls[c] = !visible || (c == 4 && s.total < 0) || (c == 2 && s.target[0] == '\0');
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}
