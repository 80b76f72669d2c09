/*
 * blas_bound.c — the bare BLAS-3 work of route_batch at the benchmark's
 * shapes, without SQL: per block of B contexts, the features (GEMM) or the
 * kernel block (GEMM), then per arm one GEMV for the means and one TRSM for
 * the widths.  Prints rows/s per shape: the bound that bench/batch.sql
 * compares route_batch() with.
 *
 *   blas_bound ROWS BLOCK DIM ARMS FEATURES PAK_N
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cblas.h>

static double
now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static double *
randoms(size_t n, unsigned *seed)
{
	double	   *x = malloc(sizeof(double) * n);

	for (size_t i = 0; i < n; i++)
		x[i] = rand_r(seed) / (double) RAND_MAX - 0.5;
	return x;
}

/* A well-conditioned lower-triangular factor of order p, full storage. */
static double *
factor(int p, unsigned *seed)
{
	double	   *L = calloc((size_t) p * p, sizeof(double));

	for (int i = 0; i < p; i++)
	{
		for (int j = 0; j < i; j++)
			L[(size_t) i * p + j] = 0.01 * (rand_r(seed) / (double) RAND_MAX - 0.5);
		L[(size_t) i * p + i] = 1.0 + rand_r(seed) / (double) RAND_MAX;
	}
	return L;
}

enum Shape
{
	RFF,						/* shared: angles by GEMM (B × dim by dim × q), cos and sin */
	LIN,						/* shared: the contexts themselves (a copy) */
	PAK							/* per arm: the kernel block by GEMM against its q contexts */
};

/* rows/s of: the shape's block work, then per arm GEMV + TRSM of order p. */
static double
run(long rows, int B, int dim, int arms, int q, int p, enum Shape shape)
{
	unsigned	seed = 7;
	double	   *X = randoms((size_t) B * dim, &seed);
	double	   *W = randoms((size_t) q * dim, &seed);
	double	   *Z = malloc(sizeof(double) * (size_t) B * p);
	double	   *Y = malloc(sizeof(double) * (size_t) B * p);
	double	   *means = malloc(sizeof(double) * B);
	double	  **L = malloc(sizeof(double *) * arms);
	double	  **w = malloc(sizeof(double *) * arms);
	double		sink = 0,
				t0;

	for (int a = 0; a < arms; a++)
	{
		L[a] = factor(p, &seed);
		w[a] = randoms(p, &seed);
	}
	t0 = now();
	for (long done = 0; done < rows; done += B)
	{
		if (shape == LIN)
			for (int t = 0; t < B; t++)
				memcpy(Z + (size_t) t * p, X + (size_t) t * dim, sizeof(double) * dim);
		else if (shape == RFF)
			cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, B, q, dim, 1.0, X, dim, W, dim, 0.0, Z, p);
		if (shape == RFF)
			for (int t = 0; t < B; t++)
				for (int j = 0; j < q; j++)
				{
					double		angle = Z[(size_t) t * p + j];

					Z[(size_t) t * p + j] = cos(angle);
					Z[(size_t) t * p + q + j] = sin(angle);
				}
		for (int a = 0; a < arms; a++)
		{
			if (shape == PAK)
			{
				cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, B, q, dim, 1.0, X, dim, W, dim, 0.0, Z, p);
				for (size_t i = 0; i < (size_t) B * p; i++)
					Z[i] = exp(-Z[i]);
			}
			cblas_dgemv(CblasRowMajor, CblasNoTrans, B, p, 1.0, Z, p, w[a], 1, 0.0, means, 1);
			memcpy(Y, Z, sizeof(double) * (size_t) B * p);
			cblas_dtrsm(CblasRowMajor, CblasRight, CblasLower, CblasTrans, CblasNonUnit,
						B, p, 1.0, L[a], p, Y, p);
			for (int t = 0; t < B; t++)
				sink += cblas_ddot(p, Y + (size_t) t * p, 1, Y + (size_t) t * p, 1) + means[t];
		}
	}
	if (sink == 42.0)
		puts("");
	return rows / (now() - t0);
}

int
main(int argc, char **argv)
{
	long		rows = argc > 1 ? atol(argv[1]) : 100000;
	int			B = argc > 2 ? atoi(argv[2]) : 256;
	int			dim = argc > 3 ? atoi(argv[3]) : 384;
	int			arms = argc > 4 ? atoi(argv[4]) : 5;
	int			features = argc > 5 ? atoi(argv[5]) : 128;
	int			pak_n = argc > 6 ? atoi(argv[6]) : 500;

	/* rff: angles by GEMM, cos/sin, p = 2·features + intercept */
	printf("rff_ucb\t%.0f\n", run(rows, B, dim, arms, features, 2 * features + 1, RFF));
	/* lin: the context and the intercept, p = dim + 1 */
	printf("lin_ucb\t%.0f\n", run(rows, B, dim, arms, dim, dim + 1, LIN));
	/* pak: per arm the kernel block against its n rewarded contexts, order n */
	printf("pak_ucb\t%.0f\n", run(rows, B, dim, arms, pak_n, pak_n, PAK));
	return 0;
}
