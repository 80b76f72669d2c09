/*
 * duration.h — durations written as PostgreSQL intervals, in seconds.
 */
#ifndef MODEL_SELECT_DURATION_H
#define MODEL_SELECT_DURATION_H

extern bool duration_parse(const char *str, double *seconds);

#endif
