/*
 * progress.h — progress of long commands (replay, route_batch, warm_start,
 * rebuild_state, alter_selector): units done of total and elapsed time, in
 * shared memory when preloaded (view model_select.progress) and as NOTICEs
 * every model_select.progress_interval.
 */
#ifndef MODEL_SELECT_PROGRESS_H
#define MODEL_SELECT_PROGRESS_H

extern int	progress_interval_ms;

extern void progress_init(void);
extern void progress_preload(void);
extern void progress_begin(const char *command, const char *target, int64 total, const char *unit);
extern void progress_total(int64 total, const char *unit);
extern void progress_update(int64 done);
extern void progress_add(int64 n);
extern void progress_end(void);

#endif
