/*
 * forward.c — forward substitution with packed Cholesky factors, x <- L⁻¹x
 * (linalg.h): the solve every lin_ucb, pak_ucb and bkb score does, once per
 * arm and decision, so most of a decision's arithmetic.
 *
 * Row i of L is contiguous, and x_i = (x_i − L_i,<i · x_<i) / L_ii, the dot
 * product in dot()'s order (vecops.c).  Rows go four at a time: rows i to
 * i + 3 with i a multiple of four have the same full sixteens (i mod 16 is
 * at most 12), all before x_i, so dot4_head() sums that part of the four
 * dots in one pass over x; each row then fuses in its own tail, x_i to
 * x_i+2 included as they are solved, element by element as dot() ends (the
 * fma instruction where the CPU has it, as vecops.c dispatches; fma()
 * elsewhere).  These are the operations of the rows one by one (fma is
 * exactly rounded, so its two factors commute): the same bits, with x read
 * once for four rows (test/unit/forward_bits.c checks it).
 */
#include "postgres.h"

#include <math.h>

#include "math/linalg.h"
#include "math/vecops.h"

/*
 * A function returning the first row left after the rows before the last
 * n mod 4, solved four at a time: the four heads in one pass over x; then
 * the four tails fused element by element with FMA (fma(), or the
 * instruction itself inside an avx2,fma body), as four interleaved chains
 * up to x_i-1, and each row's elements from x_i on as they are solved.
 */
#define FORWARD_BLOCKS_FUNCTION(name, FMA) \
static int \
name(int n, const double *lp, double *x) \
{ \
	int			i = 0; \
	for (; i + 4 <= n; i += 4) \
	{ \
		const double *row[4] = {lp + PACKED_ROW(i), lp + PACKED_ROW(i + 1), \
		lp + PACKED_ROW(i + 2), lp + PACKED_ROW(i + 3)}; \
		double		s[4]; \
		dot4_head(i, x, row, s); \
		/* the tails from the last full sixteen: i mod 16 elements before x_i */ \
		for (int k = i / 16 * 16; k < i; k++) \
		{ \
			s[0] = FMA(row[0][k], x[k], s[0]); \
			s[1] = FMA(row[1][k], x[k], s[1]); \
			s[2] = FMA(row[2][k], x[k], s[2]); \
			s[3] = FMA(row[3][k], x[k], s[3]); \
		} \
		x[i] = (x[i] - s[0]) / row[0][i]; \
		s[1] = FMA(row[1][i], x[i], s[1]); \
		x[i + 1] = (x[i + 1] - s[1]) / row[1][i + 1]; \
		s[2] = FMA(row[2][i + 1], x[i + 1], FMA(row[2][i], x[i], s[2])); \
		x[i + 2] = (x[i + 2] - s[2]) / row[2][i + 2]; \
		s[3] = FMA(row[3][i + 2], x[i + 2], FMA(row[3][i + 1], x[i + 1], FMA(row[3][i], x[i], s[3]))); \
		x[i + 3] = (x[i + 3] - s[3]) / row[3][i + 3]; \
	} \
	return i; \
}

FORWARD_BLOCKS_FUNCTION(forward_blocks_portable, fma)
__attribute__((target("avx2,fma")))
FORWARD_BLOCKS_FUNCTION(forward_blocks_fma, __builtin_fma)

void
chol_forward(int n, const double *lp, double *x)
{
	int			i = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") ?
		forward_blocks_fma(n, lp, x) : forward_blocks_portable(n, lp, x);

	for (; i < n; i++)
	{
		const double *row = lp + PACKED_ROW(i);

		x[i] = (x[i] - dot(i, row, x)) / row[i];
	}
}

/*
 * L⁻¹b in a new allocation: what a decoded model keeps of its right-hand
 * side, so that a mean is (L⁻¹x)·(L⁻¹b) = xᵀ(LLᵀ)⁻¹b from the forward
 * solve scoring does anyway (one pass over the factor at decode, not two).
 */
double *
chol_forward_copy(int n, const double *lp, const double *b)
{
	double	   *x = palloc(sizeof(double) * Max(n, 1));

	memcpy(x, b, sizeof(double) * n);
	chol_forward(n, lp, x);
	return x;
}

/*
 * The m rows of B (m × n) each solved in place, b_t <- L⁻¹b_t, with
 * chol_forward()'s bits on each row (what a single score computes), four
 * rows at a time: each row of L is read once for the four.  Not a BLAS
 * TRSM: its kernels, chosen by CPU, would round a logged score differently
 * on another machine.
 */
void
chol_forward_rows(int n, const double *lp, int m, double *B)
{
	int			t = 0;

	for (; t + 4 <= m; t += 4)
	{
		double	   *b[4] = {B + (Size) t * n, B + (Size) (t + 1) * n,
		B + (Size) (t + 2) * n, B + (Size) (t + 3) * n};

		for (int i = 0; i < n; i++)
		{
			const double *row = lp + PACKED_ROW(i);
			double		s[4];

			dot4(i, row, (const double *const *) b, s);
			for (int r = 0; r < 4; r++)
				b[r][i] = (b[r][i] - s[r]) / row[i];
		}
	}
	for (; t < m; t++)
		chol_forward(n, lp, B + (Size) t * n);
}

/*
 * For m vectors (rows of K, m × n) and a packed factor L of order n:
 * means[t] = (L⁻¹k_t)·u and sqnorms[t] = |L⁻¹k_t|², with the bits of
 * chol_forward() and dot() on each row.  Scratch: m·n.
 */
void
chol_forward_block(int n, const double *lp, const double *u, int m, const double *K,
				   double *means, double *sqnorms)
{
	double	   *B = palloc(sizeof(double) * (Size) Max(m, 1) * Max(n, 1));

	memcpy(B, K, sizeof(double) * (Size) m * n);
	chol_forward_rows(n, lp, m, B);
	for (int t = 0; t < m; t++)
	{
		means[t] = dot(n, B + (Size) t * n, u);
		sqnorms[t] = dot(n, B + (Size) t * n, B + (Size) t * n);
	}
	pfree(B);
}

