/*
 * duration.h — the time clock's durations (window, half_life, restart_every):
 * PostgreSQL intervals or numbers, in seconds.
 */
#ifndef MODEL_SELECT_DURATION_H
#define MODEL_SELECT_DURATION_H

#include "utils/jsonb.h"

extern bool json_number_is_whole(Numeric num);
extern bool duration_from_json(const JsonbValue *v, double *seconds);

#endif
