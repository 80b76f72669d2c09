/*
 * rotate.c — rank-1 updates and downdates of packed Cholesky factors
 * (chol_rank1_update(), chol_rank1_downdate(), linalg.h): the inner loop of
 * every lin_ucb and rff_ucb fold, so of the learner's work per reward.
 *
 * L Lᵀ ± x xᵀ = L' L'ᵀ in O(n²) by rotations (Givens for an update,
 * hyperbolic for a downdate); x is destroyed.  Row-oriented: row i applies
 * the rotations of columns k < i (fixed when their diagonals were reached)
 * in order, so the packed rows are read contiguously.
 *
 * Column k's rotation, with d its diagonal, ξ the entry being eliminated,
 * r = sqrt(d² ± ξ²), c = r/d, s = ξ/d (so c² ∓ s² = 1), maps an entry t of
 * a later row and that row's running ξ to t' = (t ± s ξ)/c and
 * ξ' = (ξ − s t)/c.  Carried as X = ξ/P with P the product of the 1/c so
 * far, a row is t' = t/c ± s P' X and X −= (s/P) t: one multiply-add on the
 * chain from column to column instead of a division, several times faster.
 * The products P stay within sqrt(1 ± xᵀ(LLᵀ)⁻¹x) of 1.
 *
 * The rows of a block go through the columns before it together, two rows
 * per vector.  Every entry sees the same products and sums in the same
 * order whatever its lane or block, and nothing is fused (-ffp-contract=off),
 * so the result has the bits of the rotation written out one row and one
 * column at a time (test/unit/rotate_bits.c checks it).
 */
#include "postgres.h"

#include <math.h>

#include "math/linalg.h"
#include "math/rotation.h"

/* Column k's rotation applied to entry t of a row whose running X is X. */
#define ROTATE(k, t, X) \
	do { \
		double		t_ = (t); \
		(t) = t_ * ci[k] + b[k] * (X); \
		(X) -= a[k] * t_; \
	} while (0)

#define ROTATE_BLOCK 8			/* rows of a block: four chains of pairs */

typedef double pair_t __attribute__((vector_size(16)));

/*
 * ROTATE of columns [0, kend) on a block's rows: the rows in pairs of
 * lanes, two columns per step (each row's two entries loaded together and
 * swapped into lanes): half the arithmetic instructions of ROTATE and four
 * independent chains, 1.5x faster at n = 257 and 385.  (Fours of lanes with
 * AVX2 were slower: the 4×4 transposes into lanes and back cost more than
 * the arithmetic they save, 55 against 34 µs per update at n = 385, EPYC.)
 */
static void
rotate_rows(double *const row[ROTATE_BLOCK], double X[ROTATE_BLOCK], const double *ci,
			const double *a, const double *b, int kend)
{
	pair_t		XP[ROTATE_BLOCK / 2];
	int			k = 0;

	for (int q = 0; q < ROTATE_BLOCK / 2; q++)
		XP[q] = (pair_t) {X[2 * q], X[2 * q + 1]};
	for (; k + 1 < kend; k += 2)
	{
		pair_t		c0 = {ci[k], ci[k]}, a0 = {a[k], a[k]}, b0 = {b[k], b[k]};
		pair_t		c1 = {ci[k + 1], ci[k + 1]}, a1 = {a[k + 1], a[k + 1]}, b1 = {b[k + 1], b[k + 1]};

#pragma GCC unroll 4
		for (int q = 0; q < ROTATE_BLOCK / 2; q++)
		{
			pair_t		r0, r1, t, u, nt, nu;

			memcpy(&r0, row[2 * q] + k, sizeof(r0));
			memcpy(&r1, row[2 * q + 1] + k, sizeof(r1));
			t = (pair_t) {r0[0], r1[0]};
			u = (pair_t) {r0[1], r1[1]};
			nt = t * c0 + b0 * XP[q];
			XP[q] -= a0 * t;
			nu = u * c1 + b1 * XP[q];
			XP[q] -= a1 * u;
			r0 = (pair_t) {nt[0], nu[0]};
			r1 = (pair_t) {nt[1], nu[1]};
			memcpy(row[2 * q] + k, &r0, sizeof(r0));
			memcpy(row[2 * q + 1] + k, &r1, sizeof(r1));
		}
	}
	for (int q = 0; q < ROTATE_BLOCK / 2; q++)
	{
		X[2 * q] = XP[q][0];
		X[2 * q + 1] = XP[q][1];
	}
	for (; k < kend; k++)
		for (int r = 0; r < ROTATE_BLOCK; r++)
			ROTATE(k, row[r][k], X[r]);
}

/*
 * Rows in blocks of ROTATE_BLOCK: the columns before the block are applied
 * to its rows in one pass (rotate_rows), then the block's own triangle row
 * by row.  Returns false, leaving lp unusable, when a downdate is not
 * numerically positive definite.
 */
static bool
chol_rank1(int n, double *lp, const double *x, double sign)
{
	double	   *ci = palloc(sizeof(double) * 3 * Max(n, 1));
	double	   *a = ci + n;
	double	   *b = a + n;
	double		p = 1.0;		/* P before column i */

	for (int i0 = 0; i0 < n; i0 += ROTATE_BLOCK)
	{
		int			nb = Min(ROTATE_BLOCK, n - i0);
		double	   *row[ROTATE_BLOCK];
		double		X[ROTATE_BLOCK] = {0};

		for (int r = 0; r < nb; r++)
		{
			row[r] = lp + PACKED_ROW(i0 + r);
			X[r] = x[i0 + r];
		}
		if (nb == ROTATE_BLOCK)
			rotate_rows(row, X, ci, a, b, i0);
		else
			for (int r = 0; r < nb; r++)
				for (int k = 0; k < i0; k++)
					ROTATE(k, row[r][k], X[r]);
		for (int r = 0; r < nb; r++)
		{
			int			i = i0 + r;

			for (int k = i0; k < i; k++)
				ROTATE(k, row[r][k], X[r]);
			if (!rotation_at_diagonal(&row[r][i], X[r], sign, &p, &ci[i], &a[i], &b[i]))
			{
				pfree(ci);
				return false;
			}
		}
	}
	pfree(ci);
	return true;
}

void
chol_rank1_update(int n, double *lp, double *x)
{
	(void) chol_rank1(n, lp, x, 1.0);
}

bool
chol_rank1_downdate(int n, double *lp, double *x)
{
	return chol_rank1(n, lp, x, -1.0);
}
