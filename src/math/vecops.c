/*
 * vecops.c — the level-1 and level-2 operations that scoring and folding
 * use, in a summation order fixed here rather than by a BLAS library.
 *
 * Why not CBLAS: OpenBLAS chooses its kernels by CPU and, inside a kernel,
 * peels leading elements until the operands are aligned, so the same dot
 * product is summed in a different order when its vectors sit at another
 * address mod 64.  A score computed from a state in shared memory then
 * differed in the last bit from the same score computed from a backend's
 * own copy (seen on Xeons with AVX-512).  Here every reduction has one
 * order, fixed below, whatever the CPU and the addresses.
 *
 * Dot products are chains of fused multiply-adds: IEEE 754 defines
 * fma(a, b, c) as a·b + c rounded once, so C's fma() returns the same double
 * on every CPU, computed by the hardware's instruction or, without one, by
 * the C library in software; a fixed order of fma() steps is as portable,
 * bit for bit, as one of separate multiplies and adds, and one rounding
 * fewer per element.  Where the CPU has AVX2 and FMA, the four-lane bodies
 * below run (runtime dispatch); elsewhere the portable ones, one fma() per
 * element in the same order: only the speed differs.  Elsewhere (axpy, the
 * element-wise steps) the Makefile's -ffp-contract=off keeps the compiler
 * from fusing on its own, which would round differently by CPU.
 *
 * Blocks of contexts (route_batch()) go through dot4(): four of these dot
 * products sharing one operand, so a block costs a fraction of the memory
 * traffic of its rows and still has a single score's bits.  Factorisations
 * and Gram matrices are written over these too (linalg.c); only confidence
 * cmm's eigendecomposition is LAPACK's (spectral.c).
 */
#include "postgres.h"

#include <math.h>

#include "math/lanes.h"
#include "math/vecops.h"

/*
 * The order of a dot product: element i goes to partial sum i mod 16, as
 * p = fma(x_i, y_i, p); the sixteen are added pairwise, p_j + p_{j+8}, then
 * those j + 4, j + 2, j + 1 apart; the elements past the last full sixteen
 * are then fused in one by one, s = fma(x_i, y_i, s).  Two bodies give
 * exactly these operations: a portable one calling fma() (every CPU), and
 * one with four lanes of AVX2 and FMA instructions where the CPU has both.
 */
#define DOT_BLOCK 16
#define DOT_FULL(n) ((long) (n) / DOT_BLOCK * DOT_BLOCK)	/* the elements in full sixteens */


/* The pairwise sum of the sixteen partial sums p[0..15]. */
static inline double
partials_sum(const double *p)
{
	double		q[8];

	for (int j = 0; j < 8; j++)
		q[j] = p[j] + p[j + 8];
	for (int j = 0; j < 4; j++)
		q[j] = q[j] + q[j + 4];
	return (q[0] + q[2]) + (q[1] + q[3]);
}

/* The elements past the full sixteens: s = fma(x_i, y_i, s) from element `from` on. */
static double
dot_tail_portable(long from, long n, const double *x, const double *y, double s)
{
	for (long i = from; i < n; i++)
		s = fma(x[i], y[i], s);
	return s;
}

/* The pairwise sum of the sixteen partial sums of x·y over its full sixteens. */
static double
dot_head_portable(int n, const double *x, const double *y)
{
	double		p[DOT_BLOCK] = {0};

	for (long i = 0; i + DOT_BLOCK <= n; i += DOT_BLOCK)
		for (int k = 0; k < DOT_BLOCK; k++)
			p[k] = fma(x[i + k], y[i + k], p[k]);
	return partials_sum(p);
}

static double
dot_portable(int n, const double *x, const double *y)
{
	return dot_tail_portable(DOT_FULL(n), n, x, y, dot_head_portable(n, x, y));
}

/* acc = x[at..]·y[at..] + acc, lane by lane, fused (inside an avx2,fma body) */
#define FMADD4(acc, x, y, at) \
	do { \
		vec4		a_, b_; \
		LOADV(a_, (x) + (at)); \
		LOADV(b_, (y) + (at)); \
		(acc) = (vec4) __builtin_ia32_vfmaddpd256(a_, b_, (acc)); \
	} while (0)

/* acc = u·y[at..] + acc, lane by lane, fused, u loaded already */
#define FMA_X(acc, u, y, at) \
	do { \
		vec4		b_; \
		LOADV(b_, (y) + (at)); \
		(acc) = (vec4) __builtin_ia32_vfmaddpd256((u), b_, (acc)); \
	} while (0)

/* The four accumulators' lanes (accumulator k holds partial sums 4k .. 4k + 3), summed. */
__attribute__((target("avx2,fma")))
static inline double
lanes_sum(vec4 p0, vec4 p1, vec4 p2, vec4 p3)
{
	double		p[DOT_BLOCK];

	STOREV(p, p0);
	STOREV(p + 4, p1);
	STOREV(p + 8, p2);
	STOREV(p + 12, p3);
	return partials_sum(p);
}

__attribute__((target("avx2,fma")))
static double
dot_tail_fma(long from, long n, const double *x, const double *y, double s)
{
	for (long i = from; i < n; i++)
		s = __builtin_fma(x[i], y[i], s);
	return s;
}

__attribute__((target("avx2,fma")))
static double
dot_fma(int n, const double *x, const double *y)
{
	vec4		p0 = {0, 0, 0, 0}, p1 = p0, p2 = p0, p3 = p0;
	long		i = 0;

	for (; i + DOT_BLOCK <= n; i += DOT_BLOCK)
	{
		FMADD4(p0, x, y, i);
		FMADD4(p1, x, y, i + 4);
		FMADD4(p2, x, y, i + 8);
		FMADD4(p3, x, y, i + 12);
	}
	return dot_tail_fma(i, n, x, y, lanes_sum(p0, p1, p2, p3));
}

/* Does this CPU run the AVX2 and FMA bodies? */
static bool
cpu_has_fma(void)
{
	return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}

/* x·y; n may be 0 */
double
dot(int n, const double *x, const double *y)
{
	return cpu_has_fma() ? dot_fma(n, x, y) : dot_portable(n, x, y);
}

/*
 * dot4_head()'s four heads in one pass over x: each block of x is loaded
 * once for the four, into sixteen accumulators (with the loads, more than
 * the CPU's registers: the compiler keeps some on the stack, which the
 * cache serves; x, a row of a factor read from memory, is what a block must
 * read once).
 */
__attribute__((target("avx2,fma")))
static void
dot4_head_fma(int n, const double *x, const double *const *y, double *out)
{
	vec4		a0 = {0, 0, 0, 0}, a1 = a0, a2 = a0, a3 = a0;
	vec4		b0 = a0, b1 = a0, b2 = a0, b3 = a0;
	vec4		c0 = a0, c1 = a0, c2 = a0, c3 = a0;
	vec4		d0 = a0, d1 = a0, d2 = a0, d3 = a0;
	const double *y0 = y[0], *y1 = y[1], *y2 = y[2], *y3 = y[3];
	long		i = 0;

	for (; i + DOT_BLOCK <= n; i += DOT_BLOCK)
	{
		vec4		u;

		LOADV(u, x + i);
		FMA_X(a0, u, y0, i); FMA_X(b0, u, y1, i); FMA_X(c0, u, y2, i); FMA_X(d0, u, y3, i);
		LOADV(u, x + i + 4);
		FMA_X(a1, u, y0, i + 4); FMA_X(b1, u, y1, i + 4); FMA_X(c1, u, y2, i + 4); FMA_X(d1, u, y3, i + 4);
		LOADV(u, x + i + 8);
		FMA_X(a2, u, y0, i + 8); FMA_X(b2, u, y1, i + 8); FMA_X(c2, u, y2, i + 8); FMA_X(d2, u, y3, i + 8);
		LOADV(u, x + i + 12);
		FMA_X(a3, u, y0, i + 12); FMA_X(b3, u, y1, i + 12); FMA_X(c3, u, y2, i + 12); FMA_X(d3, u, y3, i + 12);
	}
	out[0] = lanes_sum(a0, a1, a2, a3);
	out[1] = lanes_sum(b0, b1, b2, b3);
	out[2] = lanes_sum(c0, c1, c2, c3);
	out[3] = lanes_sum(d0, d1, d2, d3);
}

/*
 * out[r] = the part of x·y_r before its tail, for four vectors y_r: the
 * pairwise sum of its sixteen partial sums over the first DOT_FULL(n)
 * elements, which a tail of fused steps continues (to n or, with the same
 * DOT_FULL, further: a forward solve's rows of lengths i to i + 3).  x is
 * read once for the four, which is what makes a block of triangular solves
 * or feature rows cheaper than its rows one by one (x is a row of a factor
 * or of the frequencies, read from memory; the y_r stay in cache).
 */
void
dot4_head(int n, const double *x, const double *const *y, double *out)
{
	if (cpu_has_fma())
		dot4_head_fma(n, x, y, out);
	else
		for (int r = 0; r < 4; r++)
			out[r] = dot_head_portable(n, x, y[r]);
}

/*
 * The four tails of dot4(): out[r] continued with the elements past the
 * full sixteens of x·y_r, one fused step each, as dot() ends; the four
 * chains interleaved, so that each step waits on its own chain only (one
 * after another, each step waited on the one before: a tail of up to 15
 * steps cost as much as a head of a few hundred elements).
 */
#define DOT4_TAIL_FUNCTION(name, FMA) \
static void \
name(int n, const double *x, const double *const *y, double *out) \
{ \
	const double *y0 = y[0], *y1 = y[1], *y2 = y[2], *y3 = y[3]; \
	double		s0 = out[0], s1 = out[1], s2 = out[2], s3 = out[3]; \
	for (long i = DOT_FULL(n); i < n; i++) \
	{ \
		double		u = x[i]; \
		s0 = FMA(u, y0[i], s0); \
		s1 = FMA(u, y1[i], s1); \
		s2 = FMA(u, y2[i], s2); \
		s3 = FMA(u, y3[i], s3); \
	} \
	out[0] = s0; out[1] = s1; out[2] = s2; out[3] = s3; \
}

DOT4_TAIL_FUNCTION(dot4_tail_portable, fma)
__attribute__((target("avx2,fma")))
DOT4_TAIL_FUNCTION(dot4_tail_fma, __builtin_fma)

/*
 * out[r] = x·y_r for four vectors y_r, each summed in dot()'s order (the
 * same bits as four dot() calls).
 */
void
dot4(int n, const double *x, const double *const *y, double *out)
{
	if (cpu_has_fma())
	{
		dot4_head_fma(n, x, y, out);
		dot4_tail_fma(n, x, y, out);
	}
	else
	{
		for (int r = 0; r < 4; r++)
			out[r] = dot_head_portable(n, x, y[r]);
		dot4_tail_portable(n, x, y, out);
	}
}

/* |x − y|², summed element by element in order (off the hot paths: no lanes) */
double
squared_distance(int n, const double *x, const double *y)
{
	double		s = 0.0;

	for (int i = 0; i < n; i++)
	{
		double		diff = x[i] - y[i];

		s += diff * diff;
	}
	return s;
}

/*
 * y += alpha·x, element by element (no reduction: any width gives these
 * bits), with vectors of type V of W lanes, then the rest one by one.
 */
#define AXPY_BODY(V, W) \
	do { \
		V			a_; \
		long		i_ = 0; \
		for (int k_ = 0; k_ < (W); k_++) \
			a_[k_] = alpha; \
		for (; i_ + (W) <= n; i_ += (W)) \
		{ \
			V			x_, y_; \
			LOADV(x_, x + i_); \
			LOADV(y_, y + i_); \
			y_ += a_ * x_; \
			STOREV(y + i_, y_); \
		} \
		for (; i_ < n; i_++) \
			y[i_] += alpha * x[i_]; \
	} while (0)

static void
axpy_sse2(int n, double alpha, const double *x, double *y)
{
	/* cppcheck-suppress uninitvar ; a_ is set lane by lane, which cppcheck does not follow */
	AXPY_BODY(vec2, 2);
}

__attribute__((target("avx2")))
static void
axpy_avx2(int n, double alpha, const double *x, double *y)
{
	/* cppcheck-suppress uninitvar ; a_ is set lane by lane, which cppcheck does not follow */
	AXPY_BODY(vec4, 4);
}

void
axpy(int n, double alpha, const double *x, double *y)
{
	if (__builtin_cpu_supports("avx2"))
		axpy_avx2(n, alpha, x, y);
	else
		axpy_sse2(n, alpha, x, y);
}

/*
 * y (m) = A x for A m × n by rows: one dot product per row, in dot()'s
 * order, four rows at a time through dot4() (x loaded once for the four).
 */
void
gemv_rows(int m, int n, const double *A, const double *x, double *y)
{
	int			r = 0;

	for (; r + 4 <= m; r += 4)
	{
		const double *rows[4] = {A + (Size) r * n, A + (Size) (r + 1) * n,
		A + (Size) (r + 2) * n, A + (Size) (r + 3) * n};

		dot4(n, x, rows, y + r);
	}
	for (; r < m; r++)
		y[r] = dot(n, A + (Size) r * n, x);
}

/*
 * Y[t][r] = A_r·x_t (row t of Y, stride ldy) for the k vectors x_t (rows of
 * X, k × n): gemv_rows() for each, with the same bits, four at a time.
 */
void
gemv_rows_block(int m, int n, const double *A, int k, const double *X, double *Y, int ldy)
{
	int			t = 0;

	for (; t + 4 <= k; t += 4)
	{
		const double *x[4] = {X + (Size) t * n, X + (Size) (t + 1) * n,
		X + (Size) (t + 2) * n, X + (Size) (t + 3) * n};

		for (int r = 0; r < m; r++)
		{
			double		out[4];

			dot4(n, A + (Size) r * n, x, out);
			for (int j = 0; j < 4; j++)
				Y[(Size) (t + j) * ldy + r] = out[j];
		}
	}
	for (; t < k; t++)
		gemv_rows(m, n, A, X + (Size) t * n, Y + (Size) t * ldy);
}

/*
 * G += Σ_t z_t z_tᵀ over the rows t = 0 .. n−1 of Z (n × p, by rows), for G
 * p × p packed lower by rows: each entry is one chain of fused multiply-adds
 * over t in order, rows four at a time (the same chains, G read once per
 * four rows), entries four lanes at a time where the CPU has AVX2 and FMA
 * (each lane its entry's chain), so the bits depend on neither the CPU nor
 * the lanes.  Not a BLAS syrk: its kernels, chosen by CPU, sum in other
 * orders (a Gram matrix and its factor differed between OpenBLAS's SkylakeX
 * and Haswell kernels on the same Xeon).
 */
#define GRAM_ROWS_FUNCTION(name, FMA) \
static void \
name(int n, int p, const double *Z, double *G) \
{ \
	int			t = 0; \
	for (; t + 4 <= n; t += 4) \
	{ \
		const double *z0 = Z + (Size) t * p, *z1 = z0 + p, *z2 = z1 + p, *z3 = z2 + p; \
		for (int i = 0; i < p; i++) \
		{ \
			double	   *g = G + (Size) i * (i + 1) / 2; \
			int			j = GRAM_LANES(z0[i], z1[i], z2[i], z3[i], z0, z1, z2, z3, g, i + 1); \
			for (; j <= i; j++) \
				g[j] = FMA(z3[i], z3[j], FMA(z2[i], z2[j], FMA(z1[i], z1[j], FMA(z0[i], z0[j], g[j])))); \
		} \
	} \
	for (; t < n; t++) \
	{ \
		const double *z0 = Z + (Size) t * p; \
		for (int i = 0; i < p; i++) \
		{ \
			double	   *g = G + (Size) i * (i + 1) / 2; \
			for (int j = 0; j <= i; j++) \
				g[j] = FMA(z0[i], z0[j], g[j]); \
		} \
	} \
}

/* the portable body: every entry by the scalar steps */
#define GRAM_LANES(a0, a1, a2, a3, z0, z1, z2, z3, g, count) 0
GRAM_ROWS_FUNCTION(gram_rows_portable, fma)
#undef GRAM_LANES

/*
 * g[0 .. count) by four lanes at a time, each lane an entry's chain of the
 * same four fused steps; returns where the scalar steps go on.
 */
__attribute__((target("avx2,fma")))
static inline int
gram_lanes(double a0, double a1, double a2, double a3, const double *z0, const double *z1,
		   const double *z2, const double *z3, double *g, int count)
{
	vec4		b0 = {a0, a0, a0, a0},
				b1 = {a1, a1, a1, a1},
				b2 = {a2, a2, a2, a2},
				b3 = {a3, a3, a3, a3};
	int			j = 0;

	for (; j + 4 <= count; j += 4)
	{
		vec4		acc;

		LOADV(acc, g + j);
		FMA_X(acc, b0, z0, j);
		FMA_X(acc, b1, z1, j);
		FMA_X(acc, b2, z2, j);
		FMA_X(acc, b3, z3, j);
		STOREV(g + j, acc);
	}
	return j;
}

#define GRAM_LANES(a0, a1, a2, a3, z0, z1, z2, z3, g, count) \
	gram_lanes(a0, a1, a2, a3, z0, z1, z2, z3, g, count)
__attribute__((target("avx2,fma")))
GRAM_ROWS_FUNCTION(gram_rows_fma, __builtin_fma)
#undef GRAM_LANES

void
gram_rows_add(int n, int p, const double *Z, double *G)
{
	if (cpu_has_fma())
		gram_rows_fma(n, p, Z, G);
	else
		gram_rows_portable(n, p, Z, G);
}

/*
 * y (p) = beta·y + Aᵀw for A n × p by rows: the rows scaled and added in
 * order, so each y[j] is summed over the rows in one fixed order.
 */
void
gemv_cols(int n, int p, const double *A, const double *w, double beta, double *y)
{
	if (beta == 0.0)
		memset(y, 0, sizeof(double) * p);
	else if (beta != 1.0)
		for (int j = 0; j < p; j++)
			y[j] *= beta;
	for (int t = 0; t < n; t++)
		axpy(p, w[t], A + (Size) t * p, y);
}
