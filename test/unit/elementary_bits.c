/*
 * elementary_bits.c — src/math/elementary.c and trig.c, checked two ways.
 * Against the C library, over the ranges the extension uses and beyond:
 * exp within 1 unit in the last place, log, sin and cos within 2, expm1, log1p
 * and tanh within 4, pow within 8 per unit of |y·ln x| + 1, erfc within a
 * relative 4e-15, and the special values (0, ±∞, NaN, huge and
 * subnormal arguments).  Bit for bit: the program runs itself again with
 * glibc's FMA, AVX and AVX2 paths masked (GLIBC_TUNABLES), so that the C
 * library's exp, sin, cos and fma() take their SSE2 variants, and the two
 * runs' hashes of 1.6 million results must be equal; glibc's own exp and
 * sin, which differ between those variants, are printed beside them.  The
 * sources are included, so that this program needs no server.  Built and
 * run by test/session/unit_bits.sh.
 */
#include "postgres.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "../../src/math/elementary.c"
#include "../../src/math/trig.c"
#include "test_inputs.h"

/* postgres.h maps these to libpgport's, which this program does not link */
#undef printf
#undef snprintf

#define SAMPLES 200000
#define MASKED "glibc.cpu.hwcaps=-AVX2,-FMA,-FMA4,-AVX"

/* |a − b| in units in the last place of b (b finite, nonzero or a == b) */
static double
ulps(double a, double b)
{
	int			e;

	if (a == b || (isnan(a) && isnan(b)))
		return 0.0;
	if (!isfinite(a) || !isfinite(b))
		return INFINITY;
	frexp(b, &e);
	return fabs(a - b) / ldexp(1.0, Max(e - 53, -1074));
}

typedef struct Check
{
	const char *name;
	double		worst;
	double		at;
} Check;

static void
record(Check *c, double x, double u)
{
	if (u > c->worst)
	{
		c->worst = u;
		c->at = x;
	}
}

static void
compare(Check *c, double x, double ours, double libm)
{
	record(c, x, ulps(ours, libm));
}

static uint64
mix(uint64 h, double v)
{
	uint64		bits;

	memcpy(&bits, &v, sizeof(bits));
	return (h ^ bits) * UINT64CONST(0x100000001b3);
}

/*
 * Every function over its ranges: worst ulps against the C library in c[],
 * and hashes of ours (h[0]) and of the C library's exp and sin (h[1]).
 */
static void
run(Check *c, uint64 *h)
{
	uint64_t	s = UINT64_C(0x2545F4914F6CDD1D);

	h[0] = h[1] = UINT64CONST(0xcbf29ce484222325);
	for (int i = 0; i < SAMPLES; i++)
	{
		double		u = draw(&s) + 0.5;	/* [0, 1) */
		double		xe = -745.0 + 1455.0 * u;	/* exp's whole range */
		double		xl = ldexp(0.5 + u, (int) (2100.0 * draw(&s)));	/* 2^-1050 .. 2^1050 */
		double		xt = (draw(&s) < 0 ? 2e2 : ldexp(1.0, (int) (60.0 * draw(&s) + 30.0))) * draw(&s);
		double		xs = 3.0 * draw(&s);
		double		xb = 0.9 + 0.1 * u;	/* discounts */
		double		y = 2000.0 * draw(&s);
		double		sine,
					cosine;
		double		r[7];

		r[0] = portable_exp(xe);
		r[1] = portable_log(xl);
		portable_sincos(xt, &sine, &cosine);
		r[2] = sine;
		r[3] = cosine;
		r[4] = portable_expm1(xs);
		r[5] = portable_log1p(xs < -0.9 ? xs + 1.8 : xs);
		r[6] = portable_tanh(8.0 * draw(&s));
		compare(&c[0], xe, r[0], exp(xe));
		compare(&c[1], xl, r[1], log(xl));
		compare(&c[2], xt, r[2], sin(xt));
		compare(&c[3], xt, r[3], cos(xt));
		compare(&c[4], xs, r[4], expm1(xs));
		compare(&c[5], xs, r[5], log1p(xs < -0.9 ? xs + 1.8 : xs));
		/* pow: in ulps per unit of |y·ln x| (+ 1) */
		record(&c[7], xb, ulps(portable_pow(xb, y), pow(xb, y)) / (1.0 + fabs(y * log(xb))));
		record(&c[7], xb, ulps(portable_pow(xb, floor(y)), pow(xb, floor(y))) / (1.0 + fabs(floor(y) * log(xb))));
		for (int k = 0; k < 7; k++)
			h[0] = mix(h[0], r[k]);
		h[0] = mix(h[0], portable_pow(xb, y));
		h[1] = mix(mix(h[1], exp(xe)), sin(xt));
	}
	/* tanh and erfc on their own draws, compared with the C library's */
	for (int i = 0; i < SAMPLES; i++)
	{
		double		x = 30.0 * draw(&s);
		double		xc = 12.0 * draw(&s) + 1.0;	/* −5 .. 7 */
		double		xa = 1.999 * draw(&s);	/* atanh: (−1, 1) */
		double		xn = M_PI * draw(&s);	/* tan: (−π/2, π/2), as the Cauchy draws */

		compare(&c[6], x, portable_tanh(x), tanh(x));
		compare(&c[6], xa, portable_atanh(xa), atanh(xa));
		compare(&c[2], xn, portable_tan(xn), tan(xn));
		record(&c[8], xc, fabs(portable_erfc(xc) - erfc(xc)) / erfc(xc));
		h[0] = mix(mix(mix(mix(h[0], portable_tanh(x)), portable_erfc(xc)), portable_atanh(xa)), portable_tan(xn));
	}
}

/*
 * exp's table of 2^(j/32) in two parts, checked without the C library:
 * squaring entry j must give entry 2j (times 2 from 2j = 32 on), in
 * double-double arithmetic, to 2⁻¹⁰⁰.  With entry 0 exactly 1 the relations
 * pin every entry (t_j³² = 2ʲ).
 */
static bool
exp_table_exact(void)
{
	for (int j = 0; j < 32; j++)
	{
		double		hi = exp2_table[j][0];
		double		lo = exp2_table[j][1];
		double		square = hi * hi;
		double		error = fma(hi, hi, -square);
		int			target = (2 * j) % 32;
		double		scale = 2 * j >= 32 ? 2.0 : 1.0;
		double		difference;

		/* (hi + lo)² − target, its terms from the largest: exact but for the last two */
		difference = (square - scale * exp2_table[target][0]) + error;
		difference += 2.0 * hi * lo + lo * lo - scale * exp2_table[target][1];
		if (fabs(difference) > 0x1p-100)
		{
			printf("exp's table: entry %d squared is off by %g\n", j, difference);
			return false;
		}
	}
	return exp2_table[0][0] == 1.0 && exp2_table[0][1] == 0.0;
}

/* The values that are exact or special, as IEEE and C define them. */
static bool
special_values(void)
{
	double		sine,
				cosine;
	bool		ok = true;

	ok &= portable_exp(0.0) == 1.0 && portable_exp(-INFINITY) == 0.0 &&
		isinf(portable_exp(INFINITY)) && isinf(portable_exp(710.0)) && portable_exp(-746.0) == 0.0 &&
		isnan(portable_exp(NAN)) && portable_exp(-745.0) > 0.0;
	ok &= portable_log(1.0) == 0.0 && portable_log(0.0) == -INFINITY && isnan(portable_log(-1.0)) &&
		isinf(portable_log(INFINITY)) && isnan(portable_log(NAN)) &&
		fabs(portable_log(4.9406564584124654e-324) + 744.44007192138126) < 1e-12;
	ok &= portable_log1p(0.0) == 0.0 && portable_log1p(1e-300) == 1e-300 &&
		portable_log1p(-1.0) == -INFINITY && isnan(portable_log1p(-2.0));
	ok &= portable_pow(0.5, 0.0) == 1.0 && portable_pow(2.0, 10.0) == 1024.0 &&
		portable_pow(-2.0, 3.0) == -8.0 && isnan(portable_pow(-2.0, 0.5)) &&
		portable_pow(0.0, 2.5) == 0.0 && isinf(portable_pow(0.0, -1.0)) && portable_pow(4.0, 0.5) == 2.0;
	ok &= portable_tanh(0.0) == 0.0 && portable_tanh(INFINITY) == 1.0 && portable_tanh(-40.0) == -1.0;
	portable_sincos(0.0, &sine, &cosine);
	ok &= sine == 0.0 && cosine == 1.0;
	portable_sincos(INFINITY, &sine, &cosine);
	ok &= isnan(sine) && isnan(cosine);
	portable_sincos(1e300, &sine, &cosine);
	ok &= ulps(sine, sin(1e300)) <= 2 && ulps(cosine, cos(1e300)) <= 2;
	portable_sincos(-0x1.fffffffffffffp1023, &sine, &cosine);
	ok &= ulps(sine, sin(-0x1.fffffffffffffp1023)) <= 2 && fabs(sine * sine + cosine * cosine - 1) < 1e-15;
	return ok;
}

int
main(int argc, char **argv)
{
	Check		c[9] = {{"exp"}, {"log"}, {"sin, tan"}, {"cos"}, {"expm1"}, {"log1p"}, {"tanh, atanh"}, {"pow"}, {"erfc"}};
	double		bound[9] = {1, 2, 3, 2, 4, 4, 4, 8, 4e-15};	/* erfc: relative */
	uint64		h[2];
	char		command[4096];
	FILE	   *child;
	unsigned long long masked[2];

	run(c, h);
	if (argc > 1)
	{
		/* the masked run: print the hashes for the parent */
		printf("%016llx %016llx\n", (unsigned long long) h[0], (unsigned long long) h[1]);
		return 0;
	}
	for (int k = 0; k < 9; k++)
		if (c[k].worst > bound[k])
		{
			printf("%s is %.2f ulps from the C library's at %.17g (at most %g)\n",
				   c[k].name, c[k].worst, c[k].at, bound[k]);
			return 1;
		}
	if (!exp_table_exact())
		return 1;
	if (!special_values())
	{
		printf("a special value is wrong\n");
		return 1;
	}
	snprintf(command, sizeof(command), "GLIBC_TUNABLES=%s '%s' masked", MASKED, argv[0]);
	child = popen(command, "r");
	if (child == NULL || fscanf(child, "%llx %llx", &masked[0], &masked[1]) != 2 || pclose(child) != 0)
	{
		printf("the run with glibc's FMA paths masked failed\n");
		return 1;
	}
	if (masked[0] != h[0])
	{
		printf("with glibc's FMA paths masked the results differ: %016llx, not %016llx\n",
			   masked[0], (unsigned long long) h[0]);
		return 1;
	}
	printf("%d arguments each, worst against the C library:", SAMPLES);
	for (int k = 0; k < 9; k++)
		printf(" %s %.3g,", c[k].name, c[k].worst);
	printf(" the same bits with glibc's FMA paths masked (glibc's own exp and sin: %s)\n",
		   masked[1] == h[1] ? "the same" : "other bits");
	return 0;
}
