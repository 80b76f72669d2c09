/*
 * test_inputs.h — the inputs of the bit-for-bit checks of test/unit/: a
 * seeded uniform stream, and arrays placed at a chosen offset from a 64-byte
 * boundary (the kernels must give the same bits at every one).
 */
#ifndef MODEL_SELECT_TEST_INPUTS_H
#define MODEL_SELECT_TEST_INPUTS_H

#include <stdint.h>

static double
draw(uint64_t *s)
{
	/* xorshift64*, uniform in [-0.5, 0.5) */
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return (double) (*s * UINT64_C(2685821657736338717) >> 11) / 9007199254740992.0 - 0.5;
}

/* 8 doubles of slack: an array placed `offset` doubles past a 64-byte boundary */
static double *
at_offset(double *block, int offset)
{
	return (double *) TYPEALIGN(64, block) + offset;
}

#endif
