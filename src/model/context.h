/*
 * context.h — prompt embeddings: validation and conversion of real[]/float8[].
 */
#ifndef MODEL_SELECT_CONTEXT_H
#define MODEL_SELECT_CONTEXT_H

#include "utils/array.h"

#include "model/settings.h"

extern double *float_array(ArrayType *arr, int *n, const char *what, bool **nulls);
extern double *context_from_array(ArrayType *arr, int32 dim);
extern void context_prepare(const SelectorConfig *cfg, double *x);
extern uint64 context_hash(const double *x, int32 dim, uint64 seed);
extern ArrayType *float8_array(const double *x, const bool *missing, int n);

#endif
