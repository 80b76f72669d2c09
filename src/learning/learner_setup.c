/*
 * learner_setup.c — the learner processes' settings and their registration
 * while shared_preload_libraries are loaded: model_select.learner_workers
 * background workers per database of model_select.learner_databases (the
 * worker itself: learner.c).
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

/* A learner for the database of slot `slot`, its worker-th. */
static void
register_learner(int slot, const char *database, int nth)
{
	BackgroundWorker worker;

	memset(&worker, 0, sizeof(worker));
	worker.bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
	worker.bgw_start_time = BgWorkerStart_RecoveryFinished;
	worker.bgw_restart_time = LEARNER_RESTART_SECONDS;
	worker.bgw_main_arg = Int32GetDatum(slot);
	snprintf(worker.bgw_library_name, BGW_MAXLEN, "model_select");
	snprintf(worker.bgw_function_name, BGW_MAXLEN, "model_select_learner_main");
	if (learner_workers > 1)
		snprintf(worker.bgw_name, BGW_MAXLEN, "model_select learner %d of %d for %s",
				 nth + 1, learner_workers, database);
	else
		snprintf(worker.bgw_name, BGW_MAXLEN, "model_select learner for %s", database);
	snprintf(worker.bgw_type, BGW_MAXLEN, "model_select learner");
	RegisterBackgroundWorker(&worker);
}

/*
 * The databases from the (slots / learner_workers)-th on get no workers:
 * max_worker_processes leaves slots after the workers registered before
 * (RegisterBackgroundWorker() would only LOG its refusal), and a database
 * is served only by all of its workers.  A WARNING names them.
 */
static int
learners_within_slots(char **databases, int n)
{
	slist_iter	iter;
	int			slots = max_worker_processes;
	int			served;
	StringInfoData left;

	slist_foreach(iter, &BackgroundWorkerList)
		slots--;
	served = Max(slots, 0) / learner_workers;
	if (n <= served)
		return n;
	initStringInfo(&left);
	for (int i = served; i < n; i++)
		appendStringInfo(&left, "%s\"%s\"", i > served ? ", " : "", databases[i]);
	ereport(WARNING,
			(errmsg("model_select.learner_databases names %d databases and model_select.learner_workers is %d, but the worker slots max_worker_processes leaves serve %d of them",
					n, learner_workers, served),
			 errdetail("No learner serves %s: there, reward inserts checkpoint due arms themselves.", left.data),
			 errhint("Raise max_worker_processes, or name fewer databases or learner_workers.")));
	pfree(left.data);
	return served;
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
	DefineCustomIntVariable("model_select.learner_workers",
							"Learner processes per database of model_select.learner_databases, each folding and publishing a share of the arms.",
							"Two by default: where busy backends outnumber the cores, one learner gets too small a share of the CPU and falls behind (see the learner's lag).",
							&learner_workers, 2, 1, LEARNER_MAX_WORKERS, PGC_POSTMASTER, 0,
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
	n = learners_within_slots(databases, n);
	for (int i = 0; i < n; i++)
		for (int w = 0; w < learner_workers; w++)
			register_learner(i * learner_workers + w, databases[i], w);
}
