/*
 * eval.h — helpers shared by the offline-evaluation functions (replay, the
 * synthetic environments and warm starts from outcome tables).
 */
#ifndef MODEL_SELECT_EVAL_H
#define MODEL_SELECT_EVAL_H

/* An outcome table in memory: per row a context and each arm's outcome. */
typedef struct ReplayData
{
	const char *label;			/* names the source in error messages */
	int			nrows;
	int			dim;
	int			narms;
	double	   *contexts;		/* nrows × dim, as given */
	double	   *rewards;		/* nrows × narms */
	double	   *costs;			/* nrows × narms, 0 where absent */
	bool	   *row_has_costs;	/* nrows: the row gave costs */
	double	   *expected;		/* nrows × narms, or NULL: judge by rewards */
	bool	   *available;		/* nrows × narms: reward not NULL */
} ReplayData;

extern void eval_check_arg(bool ok, const char *function, const char *problem);
extern void source_load(const char *source, const char *label, bool with_expected,
						ReplayData *data);

#endif
