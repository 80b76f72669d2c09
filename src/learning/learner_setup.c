/*
 * learner_setup.c — the learner processes' settings and their registration
 * while shared_preload_libraries are loaded: one background worker per
 * database of model_select.learner_databases (the worker itself: learner.c).
 */
#include "postgres.h"

#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "postmaster/bgworker.h"
#include "postmaster/bgworker_internals.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/varlena.h"

#include "learning/learner.h"
#include "learning/learner_state.h"

/* The postmaster restarts a learner that exited with an error after this. */
#define LEARNER_RESTART_SECONDS 5

/* GUC model_select.learner_databases (set only when preloaded) */
static char *learner_databases = NULL;

/*
 * model_select.learner_databases: a list of database names, each at most
 * once (one learner per database), and not a template that CREATE DATABASE
 * copies (template0 takes no connections; a learner connected to template1
 * would make every CREATE DATABASE fail, "source database is being accessed").
 */
static bool
check_learner_databases(char **newval, void **extra, GucSource source)
{
	char	   *raw = pstrdup(*newval);
	List	   *names;
	ListCell   *lc;
	bool		ok = SplitGUCList(raw, ',', &names);

	if (!ok)
		GUC_check_errdetail("List syntax is invalid.");
	foreach(lc, names)
	{
		if (!ok)
			break;
		if (strlen(lfirst(lc)) >= NAMEDATALEN)
		{
			GUC_check_errdetail("Database name \"%s\" is too long.", (char *) lfirst(lc));
			ok = false;
		}
		if (ok && (strcmp(lfirst(lc), "template0") == 0 || strcmp(lfirst(lc), "template1") == 0))
		{
			GUC_check_errdetail("Database \"%s\" is a template: a learner connected to it would make CREATE DATABASE fail.",
								(char *) lfirst(lc));
			ok = false;
		}
		for (ListCell *other = list_head(names); ok && other != lc; other = lnext(names, other))
			if (strcmp(lfirst(other), lfirst(lc)) == 0)
			{
				GUC_check_errdetail("Database \"%s\" is named twice.", (char *) lfirst(lc));
				ok = false;
			}
	}
	list_free(names);
	pfree(raw);
	return ok;
}

/* A learner for the database of slot `slot`. */
static void
register_learner(int slot, const char *database)
{
	BackgroundWorker worker;

	memset(&worker, 0, sizeof(worker));
	worker.bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
	worker.bgw_start_time = BgWorkerStart_RecoveryFinished;
	worker.bgw_restart_time = LEARNER_RESTART_SECONDS;
	worker.bgw_main_arg = Int32GetDatum(slot);
	snprintf(worker.bgw_library_name, BGW_MAXLEN, "model_select");
	snprintf(worker.bgw_function_name, BGW_MAXLEN, "model_select_learner_main");
	snprintf(worker.bgw_name, BGW_MAXLEN, "model_select learner for %s", database);
	snprintf(worker.bgw_type, BGW_MAXLEN, "model_select learner");
	RegisterBackgroundWorker(&worker);
}

/*
 * The databases from the slots-th on get no worker: max_worker_processes
 * leaves slots after the workers registered before (RegisterBackgroundWorker()
 * would only LOG its refusal).  A WARNING names them.
 */
static void
warn_learners_past_slots(char **databases, int n)
{
	slist_iter	iter;
	int			slots = max_worker_processes;
	StringInfoData left;

	slist_foreach(iter, &BackgroundWorkerList)
		slots--;
	if (n <= Max(slots, 0))
		return;
	initStringInfo(&left);
	for (int i = Max(slots, 0); i < n; i++)
		appendStringInfo(&left, "%s\"%s\"", i > Max(slots, 0) ? ", " : "", databases[i]);
	ereport(WARNING,
			(errmsg("model_select.learner_databases names %d databases, but the worker slots max_worker_processes leaves serve %d of them",
					n, Max(slots, 0)),
			 errdetail("No learner serves %s: there, reward inserts checkpoint due arms themselves.", left.data),
			 errhint("Raise max_worker_processes, or name fewer databases.")));
	pfree(left.data);
}

/*
 * From _PG_init while shared_preload_libraries are loaded: the settings, the
 * shared state and a worker per database named.
 */
void
learner_preload(void)
{
	List	   *names = NIL;
	char	  **databases;
	int			n;
	MemoryContext old;

	DefineCustomStringVariable("model_select.learner_databases",
							   "The databases whose selectors learner processes keep checkpointed and published, one learner each.",
							   "Empty: no learner; reward inserts checkpoint due arms themselves.",
							   &learner_databases, "", PGC_POSTMASTER, GUC_LIST_INPUT,
							   check_learner_databases, NULL, NULL);
	DefineCustomIntVariable("model_select.learner_naptime",
							"Pause between two passes of a learner over its database's selectors.",
							NULL, &learner_naptime_ms, 200, 10, 60000, PGC_SIGHUP, GUC_UNIT_MS,
							NULL, NULL, NULL);
	DefineCustomIntVariable("model_select.learner_max_lag",
							"How long a committed reward may wait for the learner's next version before backends fold for themselves.",
							"Decisions score the learner's newest versions while no reward has waited longer; "
							"0: backends always fold the final rewards themselves.",
							&learner_max_lag_ms, 1000, 0, 3600000, PGC_SIGHUP, GUC_UNIT_MS,
							NULL, NULL, NULL);
	/* kept for the postmaster's life: shared memory is set up again after a crash */
	old = MemoryContextSwitchTo(TopMemoryContext);
	if (learner_databases != NULL)
		(void) SplitGUCList(pstrdup(learner_databases), ',', &names);	/* checked above */
	n = list_length(names);
	databases = palloc(sizeof(char *) * Max(n, 1));
	for (int i = 0; i < n; i++)
		databases[i] = list_nth(names, i);
	MemoryContextSwitchTo(old);
	learner_shmem_preload(n, databases);
	warn_learners_past_slots(databases, n);
	for (int i = 0; i < n; i++)
		register_learner(i, databases[i]);
}
