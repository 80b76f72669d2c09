/*
 * eigen.h — the eigendecomposition of a symmetric matrix, in an order of
 * operations fixed by this code (see eigen.c): the same bits on every CPU.
 */
#ifndef MODEL_SELECT_EIGEN_H
#define MODEL_SELECT_EIGEN_H

extern void sym_eigen(int m, double *A, double *w, double *U);

#endif
