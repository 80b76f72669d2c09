/*
 * rotate_bits.c — the promise of src/math/rotate.c, checked bit for bit:
 * chol_rank1_update() and chol_rank1_downdate() (blocks of rows in pairs of
 * vector lanes) give the same bits as the definition written out here, one
 * row and one column at a time, for n = 1 to 70, 129, 257 and 385; and the
 * block body gives the same bits as that rotation for 0 to 40
 * columns.  rotate.c is included, so that its static body can be called
 * directly.  Built and run by test/session/unit_bits.sh.
 */
#include "postgres.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

/* rotate.c's scratch space; this program does not link the server's allocator */
#define palloc(size) malloc(size)
#define pfree(ptr) free(ptr)
#include "../../src/math/rotate.c"
#include "test_inputs.h"

/* postgres.h maps printf to libpgport's, which this program does not link */
#undef printf

/* Column k's rotation of entry *t of a row whose running X is *X, written out (not rotate.c's macro). */
static void
rotation(double ck, double ak, double bk, double *t, double *X)
{
	double		old = *t;

	*t = old * ck + bk * *X;
	*X = *X - ak * old;
}

/* The definition: each row in turn through every earlier column's rotation. */
static bool
rank1_definition(int n, double *lp, const double *x, double sign)
{
	double	   *ci = malloc(sizeof(double) * 3 * (n + 1));
	double	   *a = ci + n;
	double	   *b = a + n;
	double		p = 1.0;
	bool		ok = true;

	for (int i = 0; i < n && ok; i++)
	{
		double	   *row = lp + PACKED_ROW(i);
		double		X = x[i],
					d,
					xi,
					r2;

		for (int k = 0; k < i; k++)
			rotation(ci[k], a[k], b[k], &row[k], &X);
		d = row[i];
		xi = X * p;
		r2 = d * d + sign * xi * xi;
		ok = r2 > 1e-12 * d * d;
		if (!ok)
			break;
		row[i] = sqrt(r2);
		ci[i] = d / row[i];
		a[i] = xi / d / p;
		p *= ci[i];
		b[i] = sign * (xi / d) * p;
	}
	free(ci);
	return ok;
}

/* A well-conditioned factor: a unit-ish diagonal and small entries below it. */
static void
random_factor(int n, double *lp, uint64_t *s)
{
	for (int i = 0; i < n; i++)
		for (int k = 0; k <= i; k++)
			lp[PACKED_ROW(i) + k] = k == i ? 1.0 + fabs(draw(s)) : 0.3 * draw(s);
}

/* Update and downdate of a random factor of order n; false on a differing bit. */
static bool
check_order(int n, uint64_t *s)
{
	Size		size = PACKED_SIZE(n);
	double	   *got = malloc(sizeof(double) * size);
	double	   *want = malloc(sizeof(double) * size);
	double	   *x = malloc(sizeof(double) * n);
	double	   *y = malloc(sizeof(double) * n);
	bool		same = true;

	random_factor(n, want, s);
	memcpy(got, want, sizeof(double) * size);
	for (int i = 0; i < n; i++)
		x[i] = draw(s);
	memcpy(y, x, sizeof(double) * n);
	chol_rank1_update(n, got, y);
	(void) rank1_definition(n, want, x, 1.0);
	same &= memcmp(got, want, sizeof(double) * size) == 0;
	/* a small downdate stays positive definite */
	for (int i = 0; i < n; i++)
		x[i] = 0.1 * draw(s) / sqrt(n);
	memcpy(y, x, sizeof(double) * n);
	same &= chol_rank1_downdate(n, got, y) == rank1_definition(n, want, x, -1.0);
	same &= memcmp(got, want, sizeof(double) * size) == 0;
	free(got);
	free(want);
	free(x);
	free(y);
	return same;
}

/* The block body over kend columns of ROTATE_BLOCK random rows; false on a differing bit. */
static bool
check_body(int kend, uint64_t *s)
{
	double		rows[2][ROTATE_BLOCK][48];
	double		X[2][ROTATE_BLOCK];
	double		ci[48],
				a[48],
				b[48];
	double	   *row[ROTATE_BLOCK];

	for (int k = 0; k < kend; k++)
	{
		ci[k] = 1.0 + draw(s);
		a[k] = draw(s);
		b[k] = draw(s);
	}
	for (int r = 0; r < ROTATE_BLOCK; r++)
	{
		X[0][r] = draw(s);
		for (int k = 0; k < kend; k++)
			rows[0][r][k] = draw(s);
	}
	memcpy(rows[1], rows[0], sizeof(rows[0]));
	memcpy(X[1], X[0], sizeof(X[0]));
	for (int r = 0; r < ROTATE_BLOCK; r++)
	{
		row[r] = rows[1][r];
		for (int k = 0; k < kend; k++)
			rotation(ci[k], a[k], b[k], &rows[0][r][k], &X[0][r]);
	}
	rotate_rows(row, X[1], ci, a, b, kend);
	return memcmp(rows[0], rows[1], sizeof(rows[0])) == 0 && memcmp(X[0], X[1], sizeof(X[0])) == 0;
}

int
main(void)
{
	uint64_t	s = UINT64_C(0x9E3779B97F4A7C15);
	int			orders[] = {129, 257, 385};
	int			checked = 0;

	for (int kend = 0; kend <= 40; kend++, checked++)
		if (!check_body(kend, &s))
		{
			printf("the block body differs from the scalar rotation at %d columns\n", kend);
			return 1;
		}
	for (int n = 1; n <= 70 + (int) lengthof(orders); n++, checked++)
	{
		int			order = n <= 70 ? n : orders[n - 71];

		if (!check_order(order, &s))
		{
			printf("chol_rank1 differs from its definition at n = %d\n", order);
			return 1;
		}
	}
	printf("%d cases, the same bits\n", checked);
	return 0;
}
