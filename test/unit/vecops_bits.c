/*
 * vecops_bits.c — the promise of src/math/vecops.c, checked bit for bit:
 * the SSE2 and the AVX2 bodies of dot() and axpy() give the same bits, and
 * so does every alignment of the operands (each vector copied to offsets 0
 * to 7 doubles from a 64-byte boundary), for lengths 0 to 300.  Built and
 * run by test/session/vecops_bits.sh; vecops.c is included, so that its
 * static per-CPU bodies can be called directly.  Without AVX2 only the
 * alignments are checked.
 */
#include "postgres.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "../../src/math/vecops.c"

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

static bool
same(double a, double b)
{
	return memcmp(&a, &b, sizeof(double)) == 0;
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
	bool		avx2 = __builtin_cpu_supports("avx2");
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
		ref = dot_sse2(n, x, y);
		if (avx2)
		{
			checks++;
			bad += !same(ref, dot_avx2(n, x, y));
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
	printf("%ld checks (%s), %ld differ\n", checks, avx2 ? "SSE2 and AVX2 bodies, alignments" : "alignments",
		   bad);
	return bad == 0 ? 0 : 1;
}
