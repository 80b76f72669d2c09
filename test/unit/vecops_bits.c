/*
 * vecops_bits.c — the promise of src/math/vecops.c, checked bit for bit:
 * the portable (fma()) and the AVX2+FMA bodies of dot(), of dot4()
 * (its four tails interleaved) and of axpy() give the same bits, and so does every alignment of the
 * operands (each vector copied to offsets 0 to 7 doubles from a 64-byte
 * boundary), for lengths 0 to 300; gemv_rows() (rows four at a time)
 * gives each row dot()'s bits; dot() fuses (a product that a separate
 * multiply would round away counts); and both equal the definition of the
 * order, written out here with one fma() per element.  Built and run by
 * test/session/unit_bits.sh; vecops.c is included, so that its static
 * per-CPU bodies can be called directly.  Without AVX2 and FMA only the
 * portable body is checked.
 */
#include "postgres.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "../../src/math/vecops.c"
#include "dot_order.h"

/* postgres.h maps printf to libpgport's, which this program does not link */
#undef printf

#define MAXN 300

static double
draw(uint64_t *s)
{
	/* xorshift64*, a sign and eight decades of magnitude */
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return ((double) (*s * UINT64_C(2685821657736338717) >> 11) / 9007199254740992.0 - 0.5) *
		pow(10.0, (double) (*s % 9) - 4.0);
}

int
main(void)
{
	static double x[MAXN + 8] __attribute__((aligned(64)));
	static double y[MAXN + 8] __attribute__((aligned(64)));
	static double xs[MAXN + 8] __attribute__((aligned(64)));
	static double ys[MAXN + 8] __attribute__((aligned(64)));
	static double y1[MAXN + 8] __attribute__((aligned(64)));
	static double y2[MAXN + 8] __attribute__((aligned(64)));
	bool		avx2 = cpu_has_fma();
	/* (1 + 2^-30)(1 - 2^-30) - 1 = -2^-60 exactly, fused; 0 if the product is rounded first */
	static const double fx[2] = {-1.0, 1.0 + 0x1p-30};
	static const double fy[2] = {1.0, 1.0 - 0x1p-30};
	uint64_t	seed = 88172645463325252ULL;
	long		checks = 0,
				bad = 0;

	for (int n = 0; n <= MAXN; n++)
	{
		double		ref;

		for (int i = 0; i < n; i++)
		{
			x[i] = draw(&seed);
			y[i] = draw(&seed);
		}
		ref = dot_portable(n, x, y);
		checks++;
		bad += !same(ref, dot_definition(n, x, y));
		/* dot4()'s portable body: four heads, then the four tails interleaved */
		{
			double		four[4];
			const double *ys4[4] = {y, x, y, x};

			for (int r = 0; r < 4; r++)
				four[r] = dot_head_portable(n, x, ys4[r]);
			dot4_tail_portable(n, x, ys4, four);
			checks += 4;
			bad += !same(ref, four[0]) + !same(dot_portable(n, x, x), four[1]) +
				!same(ref, four[2]) + !same(dot_portable(n, x, x), four[3]);
		}
		if (avx2)
		{
			double		four[4];
			const double *ys4[4] = {y, x, y, x};

			checks++;
			bad += !same(ref, dot_fma(n, x, y));
			dot4_head_fma(n, x, ys4, four);
			dot4_tail_fma(n, x, ys4, four);
			checks += 4;
			bad += !same(ref, four[0]) + !same(dot_portable(n, x, x), four[1]) +
				!same(ref, four[2]) + !same(dot_portable(n, x, x), four[3]);
			memcpy(y1, y, sizeof(double) * n);
			memcpy(y2, y, sizeof(double) * n);
			axpy_sse2(n, 0.37, x, y1);
			axpy_avx2(n, 0.37, x, y2);
			checks++;
			bad += memcmp(y1, y2, sizeof(double) * n) != 0;
		}
		for (int off = 0; off < 8; off++)
			for (int off2 = 0; off2 < 8; off2 += 3)
			{
				memcpy(xs + off, x, sizeof(double) * n);
				memcpy(ys + off2, y, sizeof(double) * n);
				checks++;
				bad += !same(ref, dot(n, xs + off, ys + off2));
			}
	}
	/* gemv_rows(), four rows at a time through dot4(): each row has dot()'s bits */
	for (int m = 0; m <= 9; m++)
		for (int n = 0; n <= MAXN; n += 37)
		{
			static double A[9 * MAXN];
			double		out[9];

			for (int i = 0; i < m * n; i++)
				A[i] = draw(&seed);
			for (int i = 0; i < n; i++)
				x[i] = draw(&seed);
			gemv_rows(m, n, A, x, out);
			for (int r = 0; r < m; r++)
			{
				checks++;
				bad += !same(out[r], dot_definition(n, A + r * n, x));
			}
		}
	checks += 2;
	bad += !same(dot(2, fx, fy), -0x1p-60) + !same(dot_portable(2, fx, fy), -0x1p-60);
	printf("%ld checks (%s), %ld differ\n", checks,
		   avx2 ? "portable and AVX2+FMA bodies, alignments, fused" : "portable body, alignments, fused", bad);
	return bad == 0 ? 0 : 1;
}
