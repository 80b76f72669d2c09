/*
 * context.h — prompt embeddings: validation and conversion of arrays of numbers.
 */
#ifndef MODEL_SELECT_CONTEXT_H
#define MODEL_SELECT_CONTEXT_H

#include "utils/array.h"

#include "model/settings.h"

extern bool context_elemtype_ok(Oid elemtype);
extern bool context_array_type_ok(Oid arraytype);
extern double *float_array(ArrayType *arr, int *n, const char *what, bool **nulls);
extern double *context_from_array(ArrayType *arr, int32 dim);
extern void context_prepare(const SelectorConfig *cfg, double *x);
extern uint64 context_hash(const double *x, int32 dim, uint64 seed);
extern ArrayType *float8_array(const double *x, const bool *missing, int n);
extern bool context_is_real(const double *x, int n);
extern ArrayType *float4_array(const double *x, int n);

#endif
