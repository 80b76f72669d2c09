/*
 * lanes.h — the vector types of the element-wise and fixed-order loops
 * (vecops.c, eigen.c), and their unaligned loads and stores.  Lane-wise
 * arithmetic rounds each lane as the scalar operation would, so a loop
 * gives the same bits with vectors of any width.
 */
#ifndef MODEL_SELECT_LANES_H
#define MODEL_SELECT_LANES_H

#include <string.h>

typedef double vec2 __attribute__((vector_size(16)));
typedef double vec4 __attribute__((vector_size(32)));

/* unaligned loads and stores (macros: a 32-byte vector is not passed by value) */
#define LOADV(v, p) memcpy(&(v), (p), sizeof(v))
#define STOREV(p, v) memcpy((p), &(v), sizeof(v))

#endif
