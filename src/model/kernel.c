/*
 * kernel.c — kernel vectors k'(X_i, y) for the rows of X, with the arm-level
 * intercept k' = k + intercept.
 *
 * rbf, poly, linear and matern are functions of the inner product and the
 * squared norms, so one matrix-vector product does the O(n·dim) work;
 * laplacian (an L1 distance) needs its own pass over the rows.
 */
#include "postgres.h"

#include <math.h>

#include "model/kernel.h"
#include "math/elementary.h"
#include "math/vecops.h"

void
row_sqnorms(int n, int dim, const double *X, double *out)
{
	for (int i = 0; i < n; i++)
		out[i] = dot(dim, X + (Size) i * dim, X + (Size) i * dim);
}

/* Matérn kernel of smoothness nu at scaled distance r = |x - y| / bandwidth. */
double
kernel_matern(double nu, double r)
{
	if (nu == 0.5)
		return portable_exp(-r);
	if (nu == 1.5)
		return (1.0 + sqrt(3.0) * r) * portable_exp(-sqrt(3.0) * r);
	return (1.0 + sqrt(5.0) * r + 5.0 * r * r / 3.0) * portable_exp(-sqrt(5.0) * r);
}

static double
kernel_of_inner(const SelectorConfig *cfg, double inner, double sq_x, double sq_y)
{
	double		dist2 = Max(sq_x + sq_y - 2.0 * inner, 0.0);

	switch (cfg->kernel)
	{
		case KERNEL_RBF:
			return portable_exp(-dist2 / (2.0 * cfg->bandwidth * cfg->bandwidth));
		case KERNEL_POLY:
			return portable_pow(cfg->gamma * inner + cfg->offset, cfg->degree);
		case KERNEL_LINEAR:
			return inner;
		case KERNEL_MATERN:
			return kernel_matern(cfg->nu, sqrt(dist2) / cfg->bandwidth);
		default:
			elog(ERROR, "kernel %d is not a kernel of inner products", (int) cfg->kernel);
	}
	pg_unreachable();
}

static double
laplacian(const SelectorConfig *cfg, const double *x, const double *y)
{
	double		l1 = 0.0;

	for (int j = 0; j < cfg->embed_dim; j++)
		l1 += fabs(x[j] - y[j]);
	return portable_exp(-l1 / cfg->bandwidth);
}

/*
 * k'(x, y) of contexts with tag buckets (model/tags.c): the kernel of the
 * embeddings, the intercept, and the inner product of the buckets (scaled
 * as the intercept: intercept × the tags x and y share), so that each tag is
 * an intercept of its own.  Row by row, in one order for every caller.
 */
static double
kernel_tagged(const SelectorConfig *cfg, const double *x, const double *y)
{
	int			e = cfg->embed_dim;
	double		k;

	if (cfg->kernel == KERNEL_LAPLACIAN)
		k = laplacian(cfg, x, y);
	else
		k = kernel_of_inner(cfg, dot(e, x, y), dot(e, x, x), dot(e, y, y));
	return k + cfg->intercept + dot(cfg->tag_buckets, x + e, y + e);
}

/*
 * out[i] = k'(X_i, y) for the n rows of X (n × dim, by rows).  sqnorms holds
 * the rows' squared norms (used by rbf and matern); NULL computes them.
 */
void
kernel_vector(const SelectorConfig *cfg, int n, const double *X,
			  const double *sqnorms, const double *y, double *out)
{
	double		sq_y;

	if (n == 0)
		return;
	if (cfg->tag_buckets > 0)
	{
		for (int i = 0; i < n; i++)
			out[i] = kernel_tagged(cfg, X + (Size) i * cfg->dim, y);
		return;
	}
	if (cfg->kernel == KERNEL_LAPLACIAN)
	{
		for (int i = 0; i < n; i++)
			out[i] = laplacian(cfg, X + (Size) i * cfg->dim, y) + cfg->intercept;
		return;
	}
	sq_y = dot(cfg->dim, y, y);
	gemv_rows(n, cfg->dim, X, y, out);
	for (int i = 0; i < n; i++)
	{
		const double *xi = X + (Size) i * cfg->dim;
		double		sq_x = sqnorms ? sqnorms[i] : dot(cfg->dim, xi, xi);

		out[i] = kernel_of_inner(cfg, out[i], sq_x, sq_y) + cfg->intercept;
	}
}

/*
 * kernel_vector() for the m rows of Y at once: row t of out (m × n) is
 * k'(X, y_t), with kernel_vector()'s bits.  The inner products of the block
 * come from gemv_rows_block() (vecops.c), not a BLAS GEMM, whose kernels sum
 * in an order chosen by CPU and block size: a score in a batch equals the
 * same context's score alone.
 */
void
kernel_block(const SelectorConfig *cfg, int n, const double *X, const double *sqnorms,
			 int m, const double *Y, double *out)
{
	if (n == 0 || m == 0)
		return;
	if (cfg->kernel == KERNEL_LAPLACIAN || cfg->tag_buckets > 0)
	{
		for (int t = 0; t < m; t++)
			kernel_vector(cfg, n, X, sqnorms, Y + (Size) t * cfg->dim, out + (Size) t * n);
		return;
	}
	gemv_rows_block(n, cfg->dim, X, m, Y, out, n);
	for (int t = 0; t < m; t++)
	{
		const double *yt = Y + (Size) t * cfg->dim;
		double		sq_y = dot(cfg->dim, yt, yt);
		double	   *row = out + (Size) t * n;

		for (int i = 0; i < n; i++)
		{
			const double *xi = X + (Size) i * cfg->dim;
			double		sq_x = sqnorms ? sqnorms[i] : dot(cfg->dim, xi, xi);

			row[i] = kernel_of_inner(cfg, row[i], sq_x, sq_y) + cfg->intercept;
		}
	}
}

double
kernel_self(const SelectorConfig *cfg, const double *y)
{
	double		sq_y;

	if (cfg->tag_buckets > 0)
		return kernel_tagged(cfg, y, y);
	if (cfg->kernel == KERNEL_LAPLACIAN)
		return 1.0 + cfg->intercept;
	sq_y = dot(cfg->dim, y, y);
	return kernel_of_inner(cfg, sq_y, sq_y, sq_y) + cfg->intercept;
}
