/*
 * gram_bits.c — the promise of src/math/linalg.c's factorisations and Gram
 * matrices, checked bit for bit: gram_rows_add() (dispatched, and its
 * portable body) gives the entries of the definition written out here, one
 * fma() chain per entry over the rows in order, for n = 0 to 13, 37 and
 * 100 rows of p = 1 to 9 and 40 features; chol_factor_rows() gives the bits
 * of appending the rows one at a time to a factor of its own; and both give
 * the same bits with their operands 0 to 7 doubles off a 64-byte boundary
 * (LAPACK's dpptrf and dsyevd do not: their bits change between offsets of
 * one double).  The sources are included, so that this program needs no
 * server.  Built and run by test/session/unit_bits.sh.
 */
#include "postgres.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

/* their scratch space; this program does not link the server's allocator */
#define palloc(size) malloc(size)
#define pfree(ptr) free(ptr)
#include "../../src/math/vecops.c"
#include "../../src/math/forward.c"
#include "../../src/math/rotate.c"
#include "../../src/math/elementary.c"
#include "../../src/math/linalg.c"
#include "dot_order.h"
#include "test_inputs.h"

/* postgres.h maps printf to libpgport's, which this program does not link */
#undef printf

#define MAXP 40
#define MAXN 100
#define ORDER 90

static bool
same_array(Size n, const double *a, const double *b)
{
	for (Size i = 0; i < n; i++)
		if (!same(a[i], b[i]))
			return false;
	return true;
}

/* G += Σ_t z_t z_tᵀ written out: one fma() chain per entry, t ascending. */
static void
gram_definition(int n, int p, const double *Z, double *G)
{
	for (int i = 0; i < p; i++)
		for (int j = 0; j <= i; j++)
			for (int t = 0; t < n; t++)
				G[PACKED_ROW(i) + j] = fma(Z[t * p + i], Z[t * p + j], G[PACKED_ROW(i) + j]);
}

static bool
check_gram(int n, int p, int offset, uint64_t *s)
{
	static double zblock[MAXN * MAXP + 16],
				gblock[3][MAXP * (MAXP + 1) / 2 + 16];
	double	   *Z = at_offset(zblock, offset);
	double	   *G[3];

	for (int k = 0; k < 3; k++)
		G[k] = at_offset(gblock[k], (offset * 3 + k) % 8);
	for (int i = 0; i < n * p; i++)
		Z[i] = draw(s);
	for (Size e = 0; e < PACKED_SIZE(p); e++)
		G[0][e] = G[1][e] = G[2][e] = draw(s);
	gram_definition(n, p, Z, G[0]);
	gram_rows_add(n, p, Z, G[1]);
	gram_rows_portable(n, p, Z, G[2]);
	return same_array(PACKED_SIZE(p), G[0], G[1]) && same_array(PACKED_SIZE(p), G[0], G[2]);
}

/*
 * chol_factor_rows() of a Gram matrix + ridge at eight offsets, against
 * its rows appended one at a time to a factor of its own.
 */
static bool
check_factor(uint64_t *s)
{
	static double zblock[ORDER * 8 + 16],
				matrix[PACKED_SIZE(ORDER)],
				want[PACKED_SIZE(ORDER)],
				block[PACKED_SIZE(ORDER) + 16];
	double		b[ORDER];

	for (int i = 0; i < ORDER * 8; i++)
		zblock[i] = draw(s);
	/* a rank-8 Gram matrix of ORDER rows (the linear kernel's), ridge 1e-3 */
	for (int i = 0; i < ORDER; i++)
	{
		gemv_rows(i + 1, 8, zblock, zblock + i * 8, matrix + PACKED_ROW(i));
		matrix[PACKED_ROW(i) + i] += 1e-3;
	}
	for (int i = 0; i < ORDER; i++)
	{
		memcpy(b, matrix + PACKED_ROW(i), sizeof(double) * i);
		chol_append_row(i, want, b, matrix[PACKED_ROW(i) + i], 1e-3);
	}
	for (int offset = 0; offset < 8; offset++)
	{
		double	   *L = at_offset(block, offset);

		memcpy(L, matrix, sizeof(matrix));
		chol_factor_rows(ORDER, L, 1e-3);
		if (!same_array(PACKED_SIZE(ORDER), L, want))
		{
			printf("chol_factor_rows differs from the appended rows at offset %d\n", offset);
			return false;
		}
	}
	return true;
}

int
main(void)
{
	uint64_t	s = UINT64_C(0x2545F4914F6CDD1D);
	int			rows[] = {37, MAXN};
	int			checked = 0;

	for (int n = 0; n <= 13 + (int) lengthof(rows); n++)
		for (int p = 1; p <= 10; p++)
		{
			int			nn = n <= 13 ? n : rows[n - 14];
			int			pp = p <= 9 ? p : MAXP;

			for (int offset = 0; offset < 8; offset += 3, checked++)
				if (!check_gram(nn, pp, offset, &s))
				{
					printf("gram_rows_add differs from its definition at n = %d, p = %d, offset %d\n",
						   nn, pp, offset);
					return 1;
				}
		}
	if (!check_factor(&s))
		return 1;
	printf("%d Gram matrices and a factor at 8 offsets, the same bits\n", checked);
	return 0;
}
