/*
 * rotate_many_bits.c — the promise of src/math/rotate_many.c, checked bit
 * for bit: chol_rank_updates() on m vectors gives the same factor as
 * chol_rank1_update() on each in turn (rotate.c, itself checked against its
 * definition by rotate_bits.c), for n = 1 to 70, 129, 257 and 385 and m = 1
 * to 19 (groups of 8 and a remainder).  Both files are included, so that no
 * server allocator is linked.  Built and run by test/session/unit_bits.sh;
 * on a CPU without AVX2 both sides take the same path and agree trivially,
 * which the output says.
 */
#include "postgres.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#define palloc(size) malloc(size)
#define pfree(ptr) free(ptr)
#include "../../src/math/rotate.c"
/* rotate_many.c's can't-happen error: this program does not link the server's */
#undef elog
#define elog(level, ...) abort()
#include "../../src/math/rotate_many.c"
#include "test_inputs.h"

#undef printf

/* m updates of a random factor of order n, together and one by one; false on a differing bit. */
static bool
check(int n, int m, uint64_t *s)
{
	Size		size = PACKED_SIZE(n);
	double	   *got = malloc(sizeof(double) * size);
	double	   *want = malloc(sizeof(double) * size);
	double	   *x = malloc(sizeof(double) * n * m);
	double	   *y = malloc(sizeof(double) * n * m);
	bool		same;

	for (int i = 0; i < n; i++)
		for (int k = 0; k <= i; k++)
			want[PACKED_ROW(i) + k] = k == i ? 1.0 + fabs(draw(s)) : 0.3 * draw(s);
	memcpy(got, want, sizeof(double) * size);
	for (int i = 0; i < n * m; i++)
		x[i] = draw(s);
	memcpy(y, x, sizeof(double) * n * m);
	chol_rank_updates(n, got, y, m);
	for (int j = 0; j < m; j++)
		chol_rank1_update(n, want, x + j * n);
	same = memcmp(got, want, sizeof(double) * size) == 0;
	free(got);
	free(want);
	free(x);
	free(y);
	return same;
}

int
main(void)
{
	uint64_t	s = UINT64_C(0x2545F4914F6CDD1D);
	int			orders[] = {129, 257, 385};
	int			checked = 0;

	for (int n = 1; n <= 70 + (int) lengthof(orders); n++)
	{
		int			order = n <= 70 ? n : orders[n - 71];

		for (int m = 1; m <= 19; m++, checked++)
			if (!check(order, m, &s))
			{
				printf("%d updates together differ from one by one at n = %d\n", m, order);
				return 1;
			}
	}
	printf("%d cases, the same bits (%s)\n", checked,
		   __builtin_cpu_supports("avx2") ? "AVX2 tiles" : "no AVX2: one by one on both sides");
	return 0;
}
