/*
 * vecops.h — dot products, axpy and matrix-vector products in a summation
 * order fixed by this code (see vecops.c): the same bits for the same
 * operands on every CPU, whatever their alignment in memory.
 */
#ifndef MODEL_SELECT_VECOPS_H
#define MODEL_SELECT_VECOPS_H

extern double dot(int n, const double *x, const double *y);
extern void dot4(int n, const double *x, const double *const *y, double *out);
extern void dot4_head(int n, const double *x, const double *const *y, double *out);
extern double squared_distance(int n, const double *x, const double *y);
extern void axpy(int n, double alpha, const double *x, double *y);
extern void gemv_rows(int m, int n, const double *A, const double *x, double *y);
extern void gemv_rows_block(int m, int n, const double *A, int k, const double *X, double *Y, int ldy);
extern void gram_rows_add(int n, int p, const double *Z, double *G);
extern void gemv_cols(int n, int p, const double *A, const double *w, double beta, double *y);

#endif
