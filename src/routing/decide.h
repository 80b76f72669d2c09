/*
 * decide.h — scoring all arms of a selector and choosing one.
 */
#ifndef MODEL_SELECT_DECIDE_H
#define MODEL_SELECT_DECIDE_H

#include "fmgr.h"
#include "utils/array.h"

#include "model/catalog.h"

extern int	decide(const Selector *sel, const double *raw_x, ArmScore *scores);
extern void score_arms(const Selector *sel, const double *raw_x, ArmScore *scores);
extern void check_decisions_writable(const char *function);
extern void decision_version_args(const Selector *sel, Datum *args, char *nulls, int at);
extern void scores_rows(FunctionCallInfo fcinfo, const Selector *sel, const ArmScore *scores);
extern double pacer_lambda(const Selector *sel);
extern double pacer_level(const SelectorConfig *cfg, double cost_weight);
extern void pacer_apply(const Selector *sel, double lambda, ArmScore *scores);
extern void pacer_pending_load(Selector *sel, bool reuse);
extern void pacer_reload(Selector *sel);
extern void pacer_logged(const Selector *sel, int chosen, int64 decision_id, double cost_weight,
						 const double *expected_cost);
extern bool pacer_price(const Selector *sel, const ArmScore *score, int i, double *cost);
extern bool pacer_expected_cost(const Selector *sel, const ArmScore *scores, int chosen, double *cost);
extern void awaited_set(Selector *sel, int64 rewarded_new, int64 decided_old, int64 rewarded_old);
extern void awaited_apply(const Selector *sel, ArmScore *scores);
extern void awaited_arg(const Selector *sel, Datum *args, char *nulls, int at);
extern void awaited_logged(Selector *sel, ArrayType *logged);
extern void decide_block(const Selector *sel, int m, const double *rawX, ArmScore *scores,
						 int *chosen);

#endif
