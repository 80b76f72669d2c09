/*
 * kernel.h — the kernels of kernelised policies, with the arm-level
 * intercept: k'(x, y) = k(x, y) + intercept.
 */
#ifndef MODEL_SELECT_KERNEL_H
#define MODEL_SELECT_KERNEL_H

#include "model/settings.h"

extern void kernel_vector(const SelectorConfig *cfg, int n, const double *X,
						  const double *sqnorms, const double *y, double *out);
extern void kernel_block(const SelectorConfig *cfg, int n, const double *X, const double *sqnorms,
						 int m, const double *Y, double *out);
extern double kernel_self(const SelectorConfig *cfg, const double *y);
extern void row_sqnorms(int n, int dim, const double *X, double *out);
extern double kernel_matern(double nu, double r);

#endif
