/*
 * forward_bits.c — the promise of src/math/forward.c, checked bit for bit:
 * chol_forward(), rows four at a time, and its portable body (fma() tails)
 * give the bits of the forward solve written out here one row at a time
 * with dot_definition()'s order (sixteen fma() chains, a pairwise sum, an
 * fma() tail), for n = 0 to 140, 257 and 385, on factors and right-hand
 * sides at alignment offsets 0 to 3 doubles; chol_forward_rows() on 0 to 9
 * right-hand sides at once, each with the same bits; and dot4_head() with
 * a tail of fused steps gives dot()'s bits for rows of lengths i to i + 3.
 * forward.c and vecops.c are included, so that this program needs no
 * server.  Built and run by test/session/unit_bits.sh.
 */
#include "postgres.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

/* forward.c's scratch space; this program does not link the server's allocator */
#define palloc(size) malloc(size)
#define pfree(ptr) free(ptr)
#include "../../src/math/vecops.c"
#include "../../src/math/forward.c"
#include "dot_order.h"
#include "test_inputs.h"

/* postgres.h maps printf to libpgport's, which this program does not link */
#undef printf

#define MAXN 385

/* x <- L⁻¹x one row at a time. */
static void
forward_definition(int n, const double *lp, double *x)
{
	for (int i = 0; i < n; i++)
		x[i] = (x[i] - dot_definition(i, lp + PACKED_ROW(i), x)) / lp[PACKED_ROW(i) + i];
}

/* A well-conditioned lower factor: diagonal in [1, 2), the rest small. */
static void
draw_factor(int n, double *lp, uint64_t *seed)
{
	for (int i = 0; i < n; i++)
	{
		for (int j = 0; j < i; j++)
			lp[PACKED_ROW(i) + j] = draw(seed) / sqrt((double) n);
		lp[PACKED_ROW(i) + i] = 1.5 + draw(seed);
	}
}

/* One size: every alignment offset of the factor and of x; returns the checks that differ. */
static long
check_size(int n, double *lbuf, double *xbuf, double *ref, uint64_t *seed, long *checks)
{
	long		bad = 0;
	double	   *rhs = malloc(sizeof(double) * (n + 1));

	for (int i = 0; i < n; i++)
		rhs[i] = draw(seed);
	for (int off = 0; off < 4; off++)
	{
		double	   *lp = lbuf + off;
		double	   *x = xbuf + (3 - off);

		draw_factor(n, lp, seed);
		memcpy(ref, rhs, sizeof(double) * n);
		forward_definition(n, lp, ref);
		memcpy(x, rhs, sizeof(double) * n);
		chol_forward(n, lp, x);
		(*checks)++;
		bad += memcmp(ref, x, sizeof(double) * n) != 0;
		memcpy(x, rhs, sizeof(double) * n);
		for (int i = forward_blocks_portable(n, lp, x); i < n; i++)
			x[i] = (x[i] - dot(i, lp + PACKED_ROW(i), x)) / lp[PACKED_ROW(i) + i];
		(*checks)++;
		bad += memcmp(ref, x, sizeof(double) * n) != 0;
	}
	free(rhs);
	return bad;
}

/*
 * chol_forward_rows() on m = 0 to 9 right-hand sides (blocks of four and the
 * rest) against forward_definition() on each: route_batch()'s solve has a
 * single score's bits.  The factor is the last check_size() drew.
 */
static long
check_rows(int n, const double *lp, uint64_t *seed, long *checks)
{
	long		bad = 0;
	double	   *B = malloc(sizeof(double) * 9 * (n + 1));
	double	   *R = malloc(sizeof(double) * 9 * (n + 1));

	for (int m = 0; m <= 9; m++)
	{
		for (int k = 0; k < m * n; k++)
			B[k] = draw(seed);
		memcpy(R, B, sizeof(double) * m * n);
		for (int t = 0; t < m; t++)
			forward_definition(n, lp, R + (Size) t * n);
		chol_forward_rows(n, lp, m, B);
		(*checks)++;
		bad += memcmp(R, B, sizeof(double) * m * n) != 0;
	}
	free(B);
	free(R);
	return bad;
}

int
main(void)
{
	static double lbuf[PACKED_SIZE(MAXN) + 8] __attribute__((aligned(64)));
	static double xbuf[MAXN + 8] __attribute__((aligned(64)));
	static double ref[MAXN + 8];
	static const int large[] = {257, 385};
	uint64_t	seed = 88172645463325252ULL;
	long		checks = 0,
				bad = 0;

	for (int n = 0; n <= 140; n++)
	{
		bad += check_size(n, lbuf, xbuf, ref, &seed, &checks);
		bad += check_rows(n, lbuf + 3, &seed, &checks);
	}
	for (int k = 0; k < 2; k++)
		bad += check_size(large[k], lbuf, xbuf, ref, &seed, &checks);

	/* the head and tail of four dots of lengths i .. i + 3, against dot() */
	for (int i = 0; i + 4 <= MAXN; i += 4)
	{
		const double *rows[4] = {lbuf + PACKED_ROW(i), lbuf + PACKED_ROW(i + 1),
		lbuf + PACKED_ROW(i + 2), lbuf + PACKED_ROW(i + 3)};
		double		head[4];

		for (int j = 0; j < i + 3; j++)
			xbuf[j] = draw(&seed);
		dot4_head(i, xbuf, rows, head);
		for (int r = 0; r < 4; r++)
		{
			checks++;
			bad += !same(cpu_has_fma() ? dot_tail_fma(i / 16 * 16, i + r, rows[r], xbuf, head[r])
						 : dot_tail_portable(i / 16 * 16, i + r, rows[r], xbuf, head[r]),
						 dot_definition(i + r, rows[r], xbuf));
		}
	}
	printf("%ld checks (%s), %ld differ\n", checks,
		   cpu_has_fma() ? "AVX2+FMA bodies" : "portable bodies", bad);
	return bad == 0 ? 0 : 1;
}
