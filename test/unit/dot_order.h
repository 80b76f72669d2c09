/*
 * dot_order.h — what the bit-for-bit checks of test/unit/ compare with:
 * equality of the bits, and the order of vecops.c's dot() written out with
 * one fma() per element.  Included by vecops_bits.c and forward_bits.c after
 * the code they check.
 */
#ifndef MODEL_SELECT_TEST_DOT_ORDER_H
#define MODEL_SELECT_TEST_DOT_ORDER_H

#include <math.h>
#include <string.h>

static bool
same(double a, double b)
{
	return memcmp(&a, &b, sizeof(double)) == 0;
}

/* The order of vecops.c, written out: sixteen fma() chains, a pairwise sum, an fma() tail. */
static double
dot_definition(int n, const double *x, const double *y)
{
	double		p[16] = {0};
	int			full = n / 16 * 16;
	double		s;

	for (int i = 0; i < full; i++)
		p[i % 16] = fma(x[i], y[i], p[i % 16]);
	s = (((p[0] + p[8]) + (p[4] + p[12])) + ((p[2] + p[10]) + (p[6] + p[14]))) +
		(((p[1] + p[9]) + (p[5] + p[13])) + ((p[3] + p[11]) + (p[7] + p[15])));
	for (int i = full; i < n; i++)
		s = fma(x[i], y[i], s);
	return s;
}

#endif
