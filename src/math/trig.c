/*
 * trig.c — sin and cos of one angle, and tan, in a fixed order of IEEE operations
 * and integer arithmetic: the same bits on every CPU (elementary.c says why
 * not the C library's).  Random Fourier features and the normal draws of
 * the in-tree PRNG use them.
 *
 * The angle is reduced to x = q·π/2 + r, |r| ≤ π/4 (a little more after
 * rounding), and sin r, cos r are their Taylor series to degree 19 and 18
 * (remainders below 2⁻⁶⁰ on that interval).  Up to 2²⁰·π/2 the reduction
 * subtracts q·π/2 in three parts of which the first two times q are exact
 * (Cody and Waite); beyond, it multiplies x's 53-bit significand by the
 * 192 bits of 2/π that matter at x's exponent, in integers (Payne and
 * Hanek), so that any finite double has its true sine to about an ulp.
 */
#include "postgres.h"

#include <math.h>

#include "math/elementary.h"

#define PI_OVER_4 0x1.921fb54442d18p-1
#define TWO_OVER_PI 0x1.45f306dc9c883p-1
/* π/2 = PIO2_1 + PIO2_2 + PIO2_3; PIO2_1 and PIO2_2 have 33 significant bits */
#define PIO2_1 0x1.921fb54400000p+0
#define PIO2_2 0x1.0b4611a600000p-34
#define PIO2_3 0x1.3198a2e037073p-69
/* π/2 = PIO2_HI + PIO2_LO to 107 bits */
#define PIO2_HI 0x1.921fb54442d18p+0
#define PIO2_LO 0x1.1a62633145c07p-54
/* where Cody and Waite's reduction stops being exact: q < 2²⁰ */
#define MEDIUM_LIMIT 0x1.921fb54442d18p+20

/* the first 1,280 bits of the fraction of 2/π, most significant first */
static const uint64 two_over_pi_bits[] = {
	UINT64CONST(0xa2f9836e4e441529), UINT64CONST(0xfc2757d1f534ddc0), UINT64CONST(0xdb6295993c439041),
	UINT64CONST(0xfe5163abdebbc561), UINT64CONST(0xb7246e3a424dd2e0), UINT64CONST(0x06492eea09d1921c),
	UINT64CONST(0xfe1deb1cb129a73e), UINT64CONST(0xe88235f52ebb4484), UINT64CONST(0xe99c7026b45f7e41),
	UINT64CONST(0x3991d639835339f4), UINT64CONST(0x9c845f8bbdf9283b), UINT64CONST(0x1ff897ffde05980f),
	UINT64CONST(0xef2f118b5a0a6d1f), UINT64CONST(0x6d367ecf27cb09b7), UINT64CONST(0x4f463f669e5fea2d),
	UINT64CONST(0x7527bac7ebe5f17b), UINT64CONST(0x3d0739f78a5292ea), UINT64CONST(0x6bfb5fb11f8d5d08),
	UINT64CONST(0x56033046fc7b6bab), UINT64CONST(0xf0cfbc209af4361d),
};

/* (−1)^(n+1)/n! for n = 3, 5, …, 19: sin r = r + r·z·P(z), z = r² */
static const double sin_coefficient[] = {
	-0x1.5555555555555p-3, 0x1.1111111111111p-7, -0x1.a01a01a01a01ap-13, 0x1.71de3a556c734p-19,
	-0x1.ae64567f544e4p-26, 0x1.6124613a86d09p-33, -0x1.ae7f3e733b81fp-41, 0x1.952c77030ad4ap-49,
	-0x1.2f49b46814157p-57,
};

/* (−1)^(n/2)/n! for n = 4, 6, …, 18: cos r = 1 − z/2 + z²·Q(z) */
static const double cos_coefficient[] = {
	0x1.5555555555555p-5, -0x1.6c16c16c16c17p-10, 0x1.a01a01a01a01ap-16, -0x1.27e4fb7789f5cp-22,
	0x1.1eed8eff8d898p-29, -0x1.93974a8c07c9dp-37, 0x1.ae7f3e733b81fp-45, -0x1.6827863b97d97p-53,
};

static double
series(const double *c, int n, double z)
{
	double		p = c[n - 1];

	for (int i = n - 2; i >= 0; i--)
		p = p * z + c[i];
	return p;
}

/* 64 bits of 2/π's fraction from bit `from` on (bit 0 weighs 2⁻¹; bits before it are 0) */
static uint64
bits_from(int from)
{
	int			word;
	int			shift;

	if (from <= -64)
		return 0;
	if (from < 0)
		return two_over_pi_bits[0] >> -from;
	word = from / 64;
	shift = from % 64;
	if (shift == 0)
		return two_over_pi_bits[word];
	return (two_over_pi_bits[word] << shift) | (two_over_pi_bits[word + 1] >> (64 - shift));
}

/*
 * |x| = q·π/2 + r for |x| ≥ MEDIUM_LIMIT (Payne and Hanek).  |x| = M·2^E
 * with M a 53-bit integer; the bits of 2/π weighing more than 2^(E+2)
 * only add multiples of 4 to |x|·2/π, and 192 bits from there give its
 * value mod 4 with more than 120 bits below the point.
 */
static double
reduce_large(double ax, int *q)
{
	int			e;
	uint64		M = (uint64) ldexp(frexp(ax, &e), 53);
	int			from = e - 53 - 2;	/* the bit weighing 2^(E − 1) of 2/π, E = e − 53 */
	uint64		w[3] = {bits_from(from), bits_from(from + 64), bits_from(from + 128)};
	uint64		p[3];
	uint128		t = 0;
	uint64		top;
	int			zeros = 0;
	bool		negative;
	double		f;

	/* P = M·W mod 2¹⁹² (limbs p[2] p[1] p[0]); M·W·2⁻¹⁹⁰ is |x|·2/π mod 4 */
	for (int i = 2; i >= 0; i--)
	{
		t = (uint128) M * w[i] + (t >> 64);
		p[2 - i] = (uint64) t;
	}
	*q = (int) (p[2] >> 62);
	p[2] &= (UINT64CONST(1) << 62) - 1;
	/* a fraction of 1/2 or more is the next quadrant's, negative */
	negative = (p[2] >> 61) != 0;
	if (negative)
	{
		/* 2¹⁹⁰ − F, limb by limb */
		p[0] = ~p[0] + 1;
		p[1] = ~p[1] + (p[0] == 0);
		p[2] = (~p[2] + (p[0] == 0 && p[1] == 0)) & ((UINT64CONST(1) << 62) - 1);
		*q = (*q + 1) & 3;
	}
	/* the top 64 bits of F below the point, and how far they were shifted up */
	top = (p[2] << 2) | (p[1] >> 62);
	while (top >> 63 == 0 && zeros < 128)
	{
		p[2] = (p[2] << 1) | (p[1] >> 63);
		p[1] = (p[1] << 1) | (p[0] >> 63);
		p[0] <<= 1;
		zeros++;
		top = (p[2] << 2) | (p[1] >> 62);
	}
	f = ldexp((double) (top >> 11) + ldexp((double) (top & 0x7FF), -11), -53 - zeros);
	f = fma(f, PIO2_HI, f * PIO2_LO);
	return negative ? -f : f;
}

/* sin x and cos x; NaN for an infinite or NaN x */
void
portable_sincos(double x, double *sine, double *cosine)
{
	double		ax = fabs(x);
	double		r;
	double		z;
	double		s;
	double		c;
	int			q;

	if (!isfinite(x))
	{
		*sine = *cosine = NAN;
		return;
	}
	if (ax <= PI_OVER_4)
	{
		r = ax;
		q = 0;
	}
	else if (ax < MEDIUM_LIMIT)
	{
		double		k = nearest_integer(ax * TWO_OVER_PI);

		/* ax − k·PIO2_1 is exact (Sterbenz), and so is k·PIO2_2 */
		r = ((ax - k * PIO2_1) - k * PIO2_2) - k * PIO2_3;
		q = (int) ((uint32) k & 3);
	}
	else
		r = reduce_large(ax, &q);
	z = r * r;
	s = r * z * series(sin_coefficient, lengthof(sin_coefficient), z) + r;
	c = z * z * series(cos_coefficient, lengthof(cos_coefficient), z) + (1.0 - 0.5 * z);
	switch (q)
	{
		case 0:
			*sine = s;
			*cosine = c;
			break;
		case 1:
			*sine = c;
			*cosine = -s;
			break;
		case 2:
			*sine = -s;
			*cosine = -c;
			break;
		default:
			*sine = -c;
			*cosine = s;
			break;
	}
	/* sin is odd, cos even */
	if (x < 0)
		*sine = -*sine;
}

/* tan x = sin x / cos x (finite at the doubles nearest ±π/2, as cos x is not 0 there) */
double
portable_tan(double x)
{
	double		sine,
				cosine;

	portable_sincos(x, &sine, &cosine);
	return sine / cosine;
}
