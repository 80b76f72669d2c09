/*
 * prng.h — in-tree pseudo-random numbers (splitmix64 seeding, xoshiro256**,
 * Box–Muller normals).  Every backend and replica derives the same stream
 * from the same seed, unlike random().
 */
#ifndef MODEL_SELECT_PRNG_H
#define MODEL_SELECT_PRNG_H

#include <math.h>
#include <stdint.h>

#include "math/elementary.h"

typedef struct Prng
{
	uint64_t	s[4];
	double		spare_normal;
	int			has_spare;
} Prng;

static inline uint64_t
splitmix64(uint64_t *x)
{
	uint64_t	z = (*x += UINT64_C(0x9E3779B97F4A7C15));

	z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
	return z ^ (z >> 31);
}

/* A stateless 64-bit mix of one value: for hashing and tie-breaking. */
static inline uint64_t
mix64(uint64_t x)
{
	return splitmix64(&x);
}

static inline void
prng_seed(Prng *p, uint64_t seed)
{
	uint64_t	x = seed;

	for (int i = 0; i < 4; i++)
		p->s[i] = splitmix64(&x);
	p->has_spare = 0;
	p->spare_normal = 0.0;
}

static inline uint64_t
prng_next(Prng *p)
{
	uint64_t   *s = p->s;
	uint64_t	result = ((s[1] * 5) << 7 | (s[1] * 5) >> 57) * 9;
	uint64_t	t = s[1] << 17;

	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = (s[3] << 45) | (s[3] >> 19);
	return result;
}

/* Uniform on [0, 1) with 53 random bits. */
static inline double
prng_uniform(Prng *p)
{
	return (double) (prng_next(p) >> 11) * 0x1.0p-53;
}

/* Standard normal by the Box–Muller transform (both values used). */
static inline double
prng_normal(Prng *p)
{
	double		u1,
				u2,
				r,
				sine,
				cosine;

	if (p->has_spare)
	{
		p->has_spare = 0;
		return p->spare_normal;
	}
	do
		u1 = prng_uniform(p);
	while (u1 <= 0.0);
	u2 = prng_uniform(p);
	r = sqrt(-2.0 * portable_log(u1));
	portable_sincos(2.0 * M_PI * u2, &sine, &cosine);
	p->spare_normal = r * sine;
	p->has_spare = 1;
	return r * cosine;
}

#endif
