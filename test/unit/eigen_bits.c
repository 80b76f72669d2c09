/*
 * eigen_bits.c — src/math/eigen.c's eigendecomposition, checked two ways.
 * Against a definition: matrices built as R diag(λ) Rᵀ with R a product of
 * reflections (random, decaying like a kernel's, repeated and zero
 * eigenvalues, diagonal, order 1 to 150), and Gaussian kernel matrices,
 * give λ, ascending, and orthonormal rows of U with A u = w u, to 1e-12
 * relative to the matrix.  Bit for bit: the same w and U with the buffers
 * 0 to 7 doubles off a 64-byte boundary, and with vecops.c sent to its
 * portable bodies instead of its AVX2 and FMA ones (LAPACK's dsyevd gives
 * other bits between offsets of one double, and between CPU kinds).  The
 * sources are included, so that this program needs no server.  Built and
 * run by test/session/unit_bits.sh.
 */
#include "postgres.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

/* their scratch space and can't-happen errors, without the server */
#define palloc(size) malloc(size)
#define palloc0(size) calloc(1, (size))
#define pfree(ptr) free(ptr)
#undef elog
#define elog(level, ...) abort()

/* every CPU dispatch of vecops.c can be sent to its portable bodies */
static bool portable_only = false;

#define __builtin_cpu_supports(feature) (!portable_only && __builtin_cpu_supports(feature))
#include "../../src/math/vecops.c"
#undef __builtin_cpu_supports
#include "../../src/math/eigen.c"
#include "dot_order.h"
#include "test_inputs.h"

/* postgres.h maps these to libpgport's, which this program does not link */
#undef printf
#undef qsort

#define MAXM 150
#define TOLERANCE 1e-12

static int
ascending(const void *a, const void *b)
{
	double		x = *(const double *) a,
				y = *(const double *) b;

	return (x > y) - (x < y);
}

/* A ← (I − 2hhᵀ/hᵀh) A (I − 2hhᵀ/hᵀh) for a random h, in plain arithmetic */
static void
reflect_randomly(int m, double *A, uint64_t *s)
{
	double		h[MAXM],
				Ah[MAXM];
	double		hh = 0.0,
				hAh = 0.0;

	for (int i = 0; i < m; i++)
	{
		h[i] = draw(s);
		hh += h[i] * h[i];
	}
	for (int i = 0; i < m; i++)
	{
		Ah[i] = 0.0;
		for (int j = 0; j < m; j++)
			Ah[i] += A[i * m + j] * h[j];
		hAh += h[i] * Ah[i];
	}
	/* HAH = A − 2(Ah hᵀ + h hᵀA)/hh + 4 hAh h hᵀ/hh² */
	for (int i = 0; i < m; i++)
		for (int j = 0; j < m; j++)
			A[i * m + j] += -2.0 * (Ah[i] * h[j] + h[i] * Ah[j]) / hh
				+ 4.0 * hAh * h[i] * h[j] / (hh * hh);
}

/* The spectrum of case `kind`, and A = R diag(λ) Rᵀ (kind 5: a Gaussian kernel matrix, λ unknown) */
static bool
build(int kind, int m, double *A, double *lambda, uint64_t *s)
{
	memset(A, 0, sizeof(double) * m * m);
	if (kind == 5)
	{
		double		X[MAXM * 3];

		for (int i = 0; i < m * 3; i++)
			X[i] = draw(s);
		for (int i = 0; i < m; i++)
			for (int j = 0; j < m; j++)
			{
				double		d2 = 0.0;

				for (int k = 0; k < 3; k++)
					d2 += (X[i * 3 + k] - X[j * 3 + k]) * (X[i * 3 + k] - X[j * 3 + k]);
				A[i * m + j] = exp(-d2 / 0.1);
			}
		return false;
	}
	for (int i = 0; i < m; i++)
		lambda[i] = kind == 0 ? 2.0 * draw(s)	/* random, both signs */
			: kind == 1 ? ldexp(1.0, -i)	/* decaying, as a kernel's */
			: kind == 2 ? (double) (i % 3)	/* each repeated */
			: kind == 3 ? 0.0	/* the zero matrix */
			: 3.0 * draw(s);	/* kind 4: diagonal, left unreflected */
	for (int i = 0; i < m; i++)
		A[i * m + i] = lambda[i];
	if (kind != 4)
		for (int r = 0; r < 3; r++)
			reflect_randomly(m, A, s);
	qsort(lambda, m, sizeof(double), ascending);
	return true;
}

/* Is (w, U) an eigendecomposition of A, with λ if known? Prints why not. */
static bool
check_definition(int kind, int m, const double *A, const double *lambda, bool known,
				 const double *w, const double *U)
{
	double		norm = 1.0;

	for (int i = 0; i < m * m; i++)
		norm = Max(norm, fabs(A[i]));
	for (int j = 0; j < m; j++)
	{
		const double *u = U + j * m;

		if (j > 0 && w[j] < w[j - 1])
			return printf("kind %d, m %d: eigenvalue %d below its predecessor\n", kind, m, j), false;
		if (known && fabs(w[j] - lambda[j]) > TOLERANCE * norm)
			return printf("kind %d, m %d: eigenvalue %d is %.17g, not %.17g\n",
						  kind, m, j, w[j], lambda[j]), false;
		for (int i = 0; i < m; i++)
		{
			double		au = 0.0;

			for (int k = 0; k < m; k++)
				au += A[i * m + k] * u[k];
			if (fabs(au - w[j] * u[i]) > TOLERANCE * norm)
				return printf("kind %d, m %d: (Au - wu)[%d] of vector %d is %g\n",
							  kind, m, i, j, au - w[j] * u[i]), false;
		}
		for (int k = 0; k <= j; k++)
		{
			double		uu = 0.0;

			for (int i = 0; i < m; i++)
				uu += u[i] * U[k * m + i];
			if (fabs(uu - (k == j)) > TOLERANCE)
				return printf("kind %d, m %d: u%d.u%d = %g\n", kind, m, j, k, uu), false;
		}
	}
	return true;
}

/* The same bits at 8 offsets and through the portable bodies as the first run. */
static bool
check_bits(int kind, int m, const double *A, const double *w0, const double *U0)
{
	static double ablock[MAXM * MAXM + 16],
				ublock[MAXM * MAXM + 16],
				wblock[MAXM + 16];

	for (int run = 0; run < 16; run++)
	{
		double	   *a = at_offset(ablock, run % 8);
		double	   *u = at_offset(ublock, (run * 3) % 8);
		double	   *w = at_offset(wblock, (run * 5) % 8);

		portable_only = run >= 8;
		memcpy(a, A, sizeof(double) * m * m);
		sym_eigen(m, a, w, u);
		for (int i = 0; i < m; i++)
			if (!same(w[i], w0[i]))
				return printf("kind %d, m %d: eigenvalue %d's bits differ in run %d\n", kind, m, i, run), false;
		for (int i = 0; i < m * m; i++)
			if (!same(u[i], U0[i]))
				return printf("kind %d, m %d: U[%d]'s bits differ in run %d\n", kind, m, i, run), false;
	}
	portable_only = false;
	return true;
}

int
main(void)
{
	static double A[MAXM * MAXM],
				work[MAXM * MAXM],
				U[MAXM * MAXM];
	double		lambda[MAXM],
				w[MAXM];
	int			orders[] = {1, 2, 3, 4, 5, 7, 16, 17, 33, 100, MAXM};
	uint64_t	s = UINT64_C(0x9E3779B97F4A7C15);
	int			checked = 0;

	for (int kind = 0; kind <= 5; kind++)
		for (int o = 0; o < (int) lengthof(orders); o++, checked++)
		{
			int			m = orders[o];
			bool		known = build(kind, m, A, lambda, &s);

			memcpy(work, A, sizeof(double) * m * m);
			sym_eigen(m, work, w, U);
			if (!check_definition(kind, m, A, lambda, known, w, U) ||
				!check_bits(kind, m, A, w, U))
				return 1;
		}
	printf("%d matrices: eigenpairs to %g, the same bits at 8 offsets and without AVX2\n",
		   checked, TOLERANCE);
	return 0;
}
