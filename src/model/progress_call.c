/*
 * progress_call.c — _progress_begin(command, target) and _progress_end(), the
 * SQL entries of pg/progress.c for commands written in PL/pgSQL (warm_start),
 * which run with the caller's rights: only a command of the extension that
 * reports through them, on a selector on which the caller holds the right
 * the command needs, so that no role shows a made-up row in view progress.
 */
#include "postgres.h"

#include "fmgr.h"
#include "utils/builtins.h"

#include "model/privilege.h"
#include "pg/progress.h"

PG_FUNCTION_INFO_V1(model_select_progress_begin);
PG_FUNCTION_INFO_V1(model_select_progress_end);

/* The PL/pgSQL commands that report their progress, with the right each needs. */
static const struct
{
	const char *command;
	int			mask;
}			plpgsql_commands[] =
{
	{"warm_start", SELECTOR_REWARD},
};

Datum
model_select_progress_begin(PG_FUNCTION_ARGS)
{
	const char *command;
	const char *target;

	if (PG_ARGISNULL(0) || PG_ARGISNULL(1))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("_progress_begin: command and target must not be NULL")));
	command = text_to_cstring(PG_GETARG_TEXT_PP(0));
	target = text_to_cstring(PG_GETARG_TEXT_PP(1));
	for (int i = 0; i < lengthof(plpgsql_commands); i++)
	{
		if (strcmp(command, plpgsql_commands[i].command) != 0)
			continue;
		selector_check_privilege_by_name(target, plpgsql_commands[i].mask);
		progress_begin(command, target, -1, "rows");
		PG_RETURN_VOID();
	}
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("_progress_begin: \"%s\" is not a command that reports its progress through it", command),
			 errhint("Only warm_start() calls it.")));
}

Datum
model_select_progress_end(PG_FUNCTION_ARGS)
{
	progress_end();
	PG_RETURN_VOID();
}
