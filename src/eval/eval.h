/*
 * eval.h — helpers shared by the offline-evaluation functions (replay and
 * the synthetic environments).
 */
#ifndef MODEL_SELECT_EVAL_H
#define MODEL_SELECT_EVAL_H

extern void eval_check_arg(bool ok, const char *function, const char *problem);

#endif
