/*
 * stream_bound.c — how long one core takes to read a decision's arm
 * versions once, from the last-level cache: the floor under a decision's
 * scoring, which must read each arm's factor whole (a forward solve with
 * it), whatever its arithmetic.  bench/pgbench.sh prints it beside the
 * single select_model() calls.
 *
 *   stream_bound BYTES_PER_ARM ARMS
 *
 * Prints the microseconds per read of the ARMS buffers in turn (median of
 * 9 runs of 2,000): buffers larger than the core's L2 together, as a
 * decision's versions in the shared cache are, each read whole once per
 * decision.  The read is an integer XOR over 64-bit words, which the
 * compiler vectorises: no arithmetic slows it.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double
now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int
by_value(const void *a, const void *b)
{
	double		x = *(const double *) a,
				y = *(const double *) b;

	return (x > y) - (x < y);
}

int
main(int argc, char **argv)
{
	size_t		bytes = argc > 1 ? strtoull(argv[1], NULL, 10) : 0;
	int			arms = argc > 2 ? atoi(argv[2]) : 0;
	size_t		words = bytes / sizeof(uint64_t);
	uint64_t  **buf;
	uint64_t	acc = 0;
	double		runs[9];
	const int	reps = 2000;

	if (words == 0 || arms <= 0)
	{
		fprintf(stderr, "usage: stream_bound BYTES_PER_ARM ARMS\n");
		return 2;
	}
	buf = malloc(sizeof(*buf) * arms);
	for (int a = 0; a < arms; a++)
	{
		buf[a] = malloc(words * sizeof(uint64_t));
		for (size_t i = 0; i < words; i++)
			buf[a][i] = i * 2654435761u + a;
	}
	for (int r = 0; r < 9; r++)
	{
		double		t0 = now();

		for (int k = 0; k < reps; k++)
			for (int a = 0; a < arms; a++)
			{
				const uint64_t *p = buf[a];

				for (size_t i = 0; i < words; i++)
					acc ^= p[i];
			}
		runs[r] = (now() - t0) / reps * 1e6;
	}
	qsort(runs, 9, sizeof(double), by_value);
	printf("%.1f\n", runs[4]);
	return acc == 42;			/* keeps the reads */
}
