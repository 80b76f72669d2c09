/*
 * elementary.c — exp, expm1, log, log1p, pow and tanh in a fixed order of
 * IEEE operations, so that a kernel value, a discount weight or a radius
 * has the same bits on every CPU.
 *
 * Why not the C library's: glibc picks each of these by CPU feature
 * (ifunc), and its FMA and SSE2 variants differ in the last bit for about
 * one argument in 1,500 (exp, sin, cos; measured on Debian 12's glibc
 * 2.36): a standby on a CPU or VM without FMA scored other bits than its
 * primary.  Here there are only +, −, × and ÷, each rounded once as
 * IEEE 754 defines (the Makefile's -ffp-contract=off keeps the compiler
 * from fusing), exact operations on exponents, and fma() (exact too) only
 * off the hot paths: without -mfma each fma() is a call into the C
 * library, and with them in its series exp took 8 times glibc's time
 * (now as fast; sin and cos together too).
 *
 * The methods are the textbook ones: exp by x = (32k + j)·ln2/32 + r,
 * |r| ≤ ln2/64, a table of 2^(j/32) in two parts and r's Taylor series to
 * degree 6 (Tang's method; remainder below 2⁻⁵⁸); expm1 by x = k ln2 + r,
 * |r| ≤ ln2/2, and r's series to degree 13; log by
 * x = 2ᵉ m, √½ ≤ m < √2, and the series of 2 atanh(s), s = f/(2 + f),
 * f = m − 1, to s²⁵ (below 2⁻⁶³).  Accuracy: exp and log within 1 unit in
 * the last place of the C library's (exp within 0.6 of the true value),
 * the others within 4, pow within about |y·ln x|
 * (test/unit/elementary_bits.c), which is all a score needs; what
 * it cannot have is a last bit that depends on the CPU.
 */
#include "postgres.h"

#include <float.h>
#include <math.h>

#include "math/elementary.h"

/* ln 2 = LN2_HI + LN2_LO, LN2_HI with 32 significant bits (k·LN2_HI exact for |k| < 2²¹) */
#define LN2_HI 0x1.62e42ff000000p-1
#define LN2_LO (-0x1.718432a1b0e26p-35)
#define INV_LN2 0x1.71547652b82fep+0

/* the same for ln2/32 */
#define LN2_32_HI (LN2_HI / 32)
#define LN2_32_LO (LN2_LO / 32)
#define INV_LN2_32 0x1.71547652b82fep+5

/* exp overflows above, and is below the least subnormal under, these */
#define EXP_OVERFLOW 709.782712893383973096
#define EXP_UNDERFLOW (-745.13321910194110842)

/* 1/n! for n = 2 .. 13 */
static const double inverse_factorial[] = {
	0x1.0000000000000p-1, 0x1.5555555555555p-3, 0x1.5555555555555p-5, 0x1.1111111111111p-7,
	0x1.6c16c16c16c17p-10, 0x1.a01a01a01a01ap-13, 0x1.a01a01a01a01ap-16, 0x1.71de3a556c734p-19,
	0x1.27e4fb7789f5cp-22, 0x1.ae64567f544e4p-26, 0x1.1eed8eff8d898p-29, 0x1.6124613a86d09p-33,
};

/* 2/(2k + 1) for k = 1 .. 12 */
static const double atanh_coefficient[] = {
	0x1.5555555555555p-1, 0x1.999999999999ap-2, 0x1.2492492492492p-2, 0x1.c71c71c71c71cp-3,
	0x1.745d1745d1746p-3, 0x1.3b13b13b13b14p-3, 0x1.1111111111111p-3, 0x1.e1e1e1e1e1e1ep-4,
	0x1.af286bca1af28p-4, 0x1.8618618618618p-4, 0x1.642c8590b2164p-4, 0x1.47ae147ae147bp-4,
};

/* e^r − 1 for |r| ≤ ln2/2 + ε: r + r²·(1/2! + r/3! + … + r¹¹/13!) */
static double
expm1_reduced(double r)
{
	int			last = lengthof(inverse_factorial) - 1;
	double		q = inverse_factorial[last];

	for (int i = last - 1; i >= 0; i--)
		q = q * r + inverse_factorial[i];
	return q * (r * r) + r;
}

/* x = k·ln2 + r, |r| ≤ ln2/2 (a little more after rounding); returns r */
static double
reduce_ln2(double x, double *k)
{
	*k = nearest_integer(x * INV_LN2);
	/* x − k·LN2_HI is exact: k·LN2_HI is, and it lies within a factor 2 of x */
	return (x - *k * LN2_HI) - *k * LN2_LO;
}

/* y·2ᵏ, rounded once (as ldexp, without the call where 2ᵏ is a normal double) */
static double
times_power_of_two(double y, int k)
{
	uint64		bits = (uint64) (k + 1023) << 52;
	double		scale;

	if (k < -1022 || k > 1023)
		return ldexp(y, k);
	memcpy(&scale, &bits, sizeof(scale));
	return y * scale;
}

/*
 * 2^(j/32) = exp2_table[j][0] + exp2_table[j][1], j = 0 .. 31, as the
 * nearest double and the nearest double to the rest (to 2⁻¹⁰⁷ relative).
 */
static const double exp2_table[32][2] = {
	{0x1.0000000000000p+0, 0.0},
	{0x1.059b0d3158574p+0, 0x1.d73e2a475b465p-55},
	{0x1.0b5586cf9890fp+0, 0x1.8a62e4adc610bp-54},
	{0x1.11301d0125b51p+0, -0x1.6c51039449b3ap-54},
	{0x1.172b83c7d517bp+0, -0x1.19041b9d78a76p-55},
	{0x1.1d4873168b9aap+0, 0x1.e016e00a2643cp-54},
	{0x1.2387a6e756238p+0, 0x1.9b07eb6c70573p-54},
	{0x1.29e9df51fdee1p+0, 0x1.612e8afad1255p-55},
	{0x1.306fe0a31b715p+0, 0x1.6f46ad23182e4p-55},
	{0x1.371a7373aa9cbp+0, -0x1.63aeabf42eae2p-54},
	{0x1.3dea64c123422p+0, 0x1.ada0911f09ebcp-55},
	{0x1.44e086061892dp+0, 0x1.89b7a04ef80d0p-59},
	{0x1.4bfdad5362a27p+0, 0x1.d4397afec42e2p-56},
	{0x1.5342b569d4f82p+0, -0x1.07abe1db13cadp-55},
	{0x1.5ab07dd485429p+0, 0x1.6324c054647adp-54},
	{0x1.6247eb03a5585p+0, -0x1.383c17e40b497p-54},
	{0x1.6a09e667f3bcdp+0, -0x1.bdd3413b26456p-54},
	{0x1.71f75e8ec5f74p+0, -0x1.16e4786887a99p-55},
	{0x1.7a11473eb0187p+0, -0x1.41577ee04992fp-55},
	{0x1.82589994cce13p+0, -0x1.d4c1dd41532d8p-54},
	{0x1.8ace5422aa0dbp+0, 0x1.6e9f156864b27p-54},
	{0x1.93737b0cdc5e5p+0, -0x1.75fc781b57ebcp-57},
	{0x1.9c49182a3f090p+0, 0x1.c7c46b071f2bep-56},
	{0x1.a5503b23e255dp+0, -0x1.d2f6edb8d41e1p-54},
	{0x1.ae89f995ad3adp+0, 0x1.7a1cd345dcc81p-54},
	{0x1.b7f76f2fb5e47p+0, -0x1.5584f7e54ac3bp-56},
	{0x1.c199bdd85529cp+0, 0x1.11065895048ddp-55},
	{0x1.cb720dcef9069p+0, 0x1.503cbd1e949dbp-56},
	{0x1.d5818dcfba487p+0, 0x1.2ed02d75b3707p-55},
	{0x1.dfc97337b9b5fp+0, -0x1.1a5cd4f184b5cp-54},
	{0x1.ea4afa2a490dap+0, -0x1.e9c23179c2893p-54},
	{0x1.f50765b6e4540p+0, 0x1.9d3e12dd8a18bp-54},
};

/*
 * eˣ = 2ᵏ·2^(j/32)·eʳ with x = (32k + j)·ln2/32 + r, |r| ≤ ln2/64 (a little
 * more after rounding): the table's two parts times 1 + p, p = eʳ − 1 by its
 * Taylor series to degree 6 (remainder below 2⁻⁵⁸), so the one rounding that
 * counts is the last addition.
 */
double
portable_exp(double x)
{
	double		n;
	double		r;
	double		q;
	double		p;
	int			i;
	const double *t;

	if (isnan(x))
		return x;
	if (x > EXP_OVERFLOW)
		return HUGE_VAL;
	if (x < EXP_UNDERFLOW)
		return 0.0;
	n = nearest_integer(x * INV_LN2_32);
	/* exact as in reduce_ln2(): LN2_32_HI is LN2_HI/32 */
	r = (x - n * LN2_32_HI) - n * LN2_32_LO;
	q = inverse_factorial[4] * r + inverse_factorial[3];
	q = q * r + inverse_factorial[2];
	q = q * r + inverse_factorial[1];
	q = q * r + inverse_factorial[0];
	p = q * (r * r) + r;
	i = (int) n;
	t = exp2_table[i & 31];
	/* k = (i − j)/32 exactly, for negative i too */
	return times_power_of_two(t[0] + (t[1] + t[0] * p), (i - (i & 31)) / 32);
}

/* eˣ − 1 = 2ᵏ(eʳ − 1) + (2ᵏ − 1), both terms exact but for eʳ − 1's rounding */
double
portable_expm1(double x)
{
	double		k;
	double		r;

	if (fabs(x) <= 0.5 * LN2_HI)
		return expm1_reduced(x);
	if (isnan(x) || x > 40.0 || x < -40.0)	/* e⁴⁰ ≫ 2⁵³: the 1 does not count */
		return portable_exp(x) - 1.0;
	r = reduce_ln2(x, &k);
	return times_power_of_two(expm1_reduced(r), (int) k) + (times_power_of_two(1.0, (int) k) - 1.0);
}

/* x = m·2ᵉ with m in [1/2, 1), for x > 0 finite (frexp, without the call) */
static double
split_exponent(double x, int *e)
{
	uint64		bits;
	int			shift = 0;
	double		m;

	if (x < DBL_MIN)			/* subnormal: made normal first */
	{
		x *= 0x1p54;
		shift = 54;
	}
	memcpy(&bits, &x, sizeof(bits));
	*e = (int) (bits >> 52) - 1022 - shift;
	bits = (bits & ((UINT64CONST(1) << 52) - 1)) | (UINT64CONST(0x3fe) << 52);
	memcpy(&m, &bits, sizeof(m));
	return m;
}

double
portable_log(double x)
{
	int			e;
	double		m;
	double		f;
	double		s;
	double		z;
	double		R;
	int			last = lengthof(atanh_coefficient) - 1;

	if (isnan(x) || x < 0.0)
		return NAN;
	if (x == 0.0)
		return -HUGE_VAL;
	if (isinf(x))
		return x;
	m = split_exponent(x, &e);
	if (m < M_SQRT1_2)
	{
		m *= 2.0;
		e--;
	}
	f = m - 1.0;				/* exact */
	s = f / (2.0 + f);
	z = s * s;
	/* log(1 + f) = 2s + s·R, R = Σ 2z^k/(2k + 1), and 2s = f − s·f */
	R = atanh_coefficient[last];
	for (int i = last - 1; i >= 0; i--)
		R = R * z + atanh_coefficient[i];
	R *= z;
	return e * LN2_HI + ((f - s * (f - R)) + e * LN2_LO);
}

/* log(1 + x), accurate for small x (Goldberg: log(u)·x/(u − 1), u = 1 + x rounded) */
double
portable_log1p(double x)
{
	double		u = 1.0 + x;

	if (isnan(x) || isinf(u))
		return portable_log(u);
	if (u == 1.0)
		return x;
	return portable_log(u) * (x / (u - 1.0));
}

/* xⁿ for an integer n, |n| ≤ 16, by binary powering */
static double
integer_power(double x, double n)
{
	uint32		k = (uint32) fabs(n);
	double		result = 1.0;
	double		square = x;

	while (k > 0)
	{
		if (k & 1)
			result *= square;
		k >>= 1;
		if (k > 0)
			square *= square;
	}
	return n < 0 ? 1.0 / result : result;
}

/*
 * xʸ: by binary powering for an integer |y| ≤ 16 (a polynomial kernel's
 * degree), else exp(y·log x), whose relative error is about |y·ln x| units
 * in the last place (powering's grows with |y| instead, which is worse for
 * the discounts γᵏ, γ near 1, that are this function's other use).
 */
double
portable_pow(double x, double y)
{
	if (y == 0.0)
		return 1.0;
	if (isnan(x) || isnan(y))
		return NAN;
	if (y == floor(y) && fabs(y) <= 16.0)
		return integer_power(x, y);
	if (x < 0.0)
		return NAN;
	if (x == 0.0)
		return y > 0.0 ? 0.0 : HUGE_VAL;
	return portable_exp(y * portable_log(x));
}

/* atanh x = ½·log1p(2|x|/(1 − |x|)), signed; ±∞ at ±1, NaN beyond */
double
portable_atanh(double x)
{
	double		ax = fabs(x);

	if (isnan(x) || ax > 1.0)
		return NAN;
	if (ax == 1.0)
		return copysign(HUGE_VAL, x);
	return copysign(0.5 * portable_log1p(2.0 * ax / (1.0 - ax)), x);
}

double
portable_tanh(double x)
{
	double		t;

	if (isnan(x))
		return x;
	if (fabs(x) > 22.0)			/* 1 − tanh(22) < 2⁻⁵⁴ */
		return copysign(1.0, x);
	t = portable_expm1(2.0 * fabs(x));
	return copysign(t / (t + 2.0), x);
}

/* 2/√π, and the terms and depth that erfc sums */
#define TWO_OVER_SQRT_PI 0x1.20dd750429b6dp+0
#define ERF_SERIES_TERMS 60
#define ERFC_FRACTION_DEPTH 200

/* e^(−x²), with x²'s rounding error put back */
static double
exp_minus_square(double x)
{
	double		x2 = x * x;

	return portable_exp(-x2) * (1.0 - fma(x, x, -x2));
}

/*
 * erfc x.  Below 1, 1 − erf x with erf x = (2/√π)·e^(−x²)·Σ 2ⁿx^(2n+1)/(2n+1)!!,
 * a series of positive terms; from 1 on, Laplace's continued fraction
 * erfc x = (e^(−x²)/√π)/(x + (1/2)/(x + 1/(x + (3/2)/(x + …)))), evaluated
 * from depth 200 up (at 1 it has converged to the last bit).  Relative
 * error about 1e-15.
 */
double
portable_erfc(double x)
{
	double		t = 0.0;

	if (isnan(x))
		return x;
	if (x < 0.0)
		return 2.0 - portable_erfc(-x);
	if (x > 27.5)				/* erfc 27.5 < 2⁻¹⁰⁷⁴ */
		return 0.0;
	if (x < 1.0)
	{
		double		term = x;
		double		sum = x;

		for (int n = 1; n <= ERF_SERIES_TERMS; n++)
		{
			term *= 2.0 * x * x / (2 * n + 1);
			sum += term;
		}
		return 1.0 - TWO_OVER_SQRT_PI * exp_minus_square(x) * sum;
	}
	for (int k = ERFC_FRACTION_DEPTH; k >= 1; k--)
		t = (0.5 * k) / (x + t);
	return 0.5 * TWO_OVER_SQRT_PI * exp_minus_square(x) / (x + t);
}
