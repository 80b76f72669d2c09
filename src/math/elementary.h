/*
 * elementary.h — exp, log, pow, tanh, atanh, log1p, erfc, sin, cos and tan computed by this
 * code, in a fixed order of IEEE operations (elementary.c, trig.c): the
 * same bits on every CPU, where the C library's differ by CPU feature.
 */
#ifndef MODEL_SELECT_ELEMENTARY_H
#define MODEL_SELECT_ELEMENTARY_H

/*
 * x rounded to the nearest integer (ties to even), for |x| < 2⁵¹: adding
 * and subtracting 1.5·2⁵² leaves no bits below the point.  Inline, where
 * round() is a call into the C library.
 */
static inline double
nearest_integer(double x)
{
	return (x + 0x1.8p52) - 0x1.8p52;
}

extern double portable_exp(double x);
extern double portable_expm1(double x);
extern double portable_log(double x);
extern double portable_log1p(double x);
extern double portable_pow(double x, double y);
extern double portable_tanh(double x);
extern double portable_atanh(double x);
extern double portable_erfc(double x);
extern void portable_sincos(double x, double *sine, double *cosine);
extern double portable_tan(double x);

#endif
