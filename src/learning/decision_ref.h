/*
 * decision_ref.h — a reward's reference to its decision, kept without a
 * foreign key (decision_ref.c).
 */
#ifndef MODEL_SELECT_DECISION_REF_H
#define MODEL_SELECT_DECISION_REF_H

#include "utils/rel.h"

extern bool decision_read_locked(Relation decisions, int64 decision_id, int ncols,
								 const char *const *names, Datum *values, bool *nulls);

#endif
