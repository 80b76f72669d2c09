/*
 * kernel.c — kernel vectors k'(X_i, y) for i < n in one matrix-vector
 * product: every kernel here is a function of the inner product (and, for
 * rbf, the two squared norms).
 */
#include "postgres.h"

#include <math.h>

#include <cblas.h>

#include "kernel.h"
#include "linalg.h"

void
row_sqnorms(int n, int dim, const double *X, double *out)
{
	for (int i = 0; i < n; i++)
		out[i] = dot(dim, X + (Size) i * dim, X + (Size) i * dim);
}

static double
kernel_of_inner(const SelectorConfig *cfg, double inner, double sq_x, double sq_y)
{
	double		k;

	switch (cfg->kernel)
	{
		case KERNEL_RBF:
			{
				double		dist2 = Max(sq_x + sq_y - 2.0 * inner, 0.0);

				k = exp(-dist2 / (2.0 * cfg->bandwidth * cfg->bandwidth));
				break;
			}
		case KERNEL_POLY:
			k = pow(cfg->gamma * inner + cfg->offset, cfg->degree);
			break;
		case KERNEL_LINEAR:
			k = inner;
			break;
		default:
			elog(ERROR, "kernel %d is not a kernel of inner products", (int) cfg->kernel);
	}
	return k + cfg->intercept;
}

/*
 * out[i] = k'(X_i, y) for the n rows of X (n × dim, by rows).  sqnorms holds
 * the rows' squared norms (needed by rbf only); NULL computes them.
 */
void
kernel_vector(const SelectorConfig *cfg, int n, const double *X,
			  const double *sqnorms, const double *y, double *out)
{
	double		sq_y = dot(cfg->dim, y, y);

	if (n == 0)
		return;
	cblas_dgemv(CblasRowMajor, CblasNoTrans, n, cfg->dim, 1.0, X, cfg->dim, y, 1, 0.0, out, 1);
	for (int i = 0; i < n; i++)
	{
		double		sq_x = 0.0;

		if (cfg->kernel == KERNEL_RBF)
			sq_x = sqnorms ? sqnorms[i] : dot(cfg->dim, X + (Size) i * cfg->dim,
											  X + (Size) i * cfg->dim);
		out[i] = kernel_of_inner(cfg, out[i], sq_x, sq_y);
	}
}

double
kernel_self(const SelectorConfig *cfg, const double *y)
{
	double		sq_y = dot(cfg->dim, y, y);

	return kernel_of_inner(cfg, sq_y, sq_y, sq_y);
}
