/*
 * linalg.c — Cholesky factorisation, row append and the backward solve on
 * packed factors (see linalg.h; the forward solve is in forward.c, rank-1
 * updates in rotate.c), and Gram matrices.  All of it is written over
 * vecops.c, in orders fixed here, not through BLAS or LAPACK, whose kernels
 * are chosen by CPU (and some by the operands' addresses): a factor built by
 * one backend, replica or CPU has the bits it has on any other.  No explicit
 * inverses.
 */
#include "postgres.h"

#include <float.h>
#include <math.h>

#include "math/elementary.h"
#include "math/linalg.h"
#include "math/vecops.h"

/*
 * Replace a packed symmetric matrix (lower, by rows) by its Cholesky factor,
 * row by row as chol_append_row() appends one reward, each Schur complement
 * clamped to floor.  Callers factorise K + ridge terms of at least floor > 0,
 * positive definite in exact arithmetic; rounding (repeated contexts, a tiny
 * alpha under a large intercept) gives a clamped pivot, never an error.
 * Not LAPACK's dpptrf: its kernels, chosen by CPU, sum in an order that also
 * depends on the buffer's address mod 16 (seen on a Xeon: 11,156 of 20,100
 * entries differ at n = 200 between offsets of one double), and factors made
 * per backend (a discounted lin_ucb's, the share setting's, a probe's) must
 * have the same bits everywhere.  The same O(n³/3) flops as dpptrf, itself
 * level 2, and as fast; and a state that is also appended (pak_ucb) is
 * built with its appends' bits.
 */
void
chol_factor_rows(int n, double *lp, double floor)
{
	double	   *b = palloc(sizeof(double) * Max(n, 1));

	for (int i = 0; i < n; i++)
	{
		memcpy(b, lp + PACKED_ROW(i), sizeof(double) * (i + 1));
		chol_append_row(i, lp, b, b[i], floor);
	}
	pfree(b);
}

/*
 * out = the Cholesky factor of ap + shift·I, for a packed symmetric ap
 * (ap itself is left as it is); floor as for chol_factor_rows.
 */
void
chol_factor_shifted(int n, const double *ap, double shift, double floor, double *out)
{
	memcpy(out, ap, sizeof(double) * PACKED_SIZE(n));
	for (int i = 0; i < n; i++)
		out[PACKED_ROW(i) + i] += shift;
	chol_factor_rows(n, out, floor);
}

/*
 * ‖L⁻¹‖²_F = tr((L Lᵀ)⁻¹) for a packed factor L: L⁻¹'s columns by forward
 * solves, each column's squares summed, the columns in order.
 */
double
chol_inverse_sqnorm(int n, const double *lp)
{
	double	   *e = palloc(sizeof(double) * Max(n, 1));
	double		sum = 0.0;

	for (int j = 0; j < n; j++)
	{
		memset(e, 0, sizeof(double) * n);
		e[j] = 1.0;
		chol_forward(n, lp, e);
		sum += dot(n, e, e);
	}
	pfree(e);
	return sum;
}

/* ln det(L Lᵀ / scale) for a packed factor L: 2·Σ ln(L_ii / √scale). */
double
chol_log_det_scaled(int n, const double *lp, double scale)
{
	double		sum = 0.0;

	for (int i = 0; i < n; i++)
		sum += 2.0 * portable_log(lp[PACKED_ROW(i) + i] / sqrt(scale));
	return sum;
}

/*
 * gram_packed() of ZᵀZ (q = p: each entry a chain over the rows,
 * gram_rows_add()), or with `rows` of ZZᵀ (q = n: each entry a dot product
 * of two rows, gemv_rows()), then ridge on the diagonal and, with factor,
 * factorised by chol_factor_rows(): in orders fixed here, so that a model
 * built per backend (a clocked state's, model/clock_state.c) has the same
 * bits on every CPU.
 */
static void
gram_pack(int n, int p, const double *Z, double ridge, bool factor, bool rows, double *lp)
{
	int			q = rows ? n : p;

	if (rows)
		for (int i = 0; i < n; i++)
			gemv_rows(i + 1, p, Z, Z + (Size) i * p, lp + PACKED_ROW(i));
	else
	{
		memset(lp, 0, sizeof(double) * PACKED_SIZE(p));
		gram_rows_add(n, p, Z, lp);
	}
	for (int i = 0; i < q; i++)
		lp[PACKED_ROW(i) + i] += ridge;
	if (factor)
		chol_factor_rows(q, lp, ridge);
}

/*
 * lp (packed by rows, PACKED_SIZE(p)) = ridge·I + ZᵀZ for the n × p matrix
 * Z (by rows), or with `factor` its lower Cholesky factor.
 */
void
gram_packed(int n, int p, const double *Z, double ridge, bool factor, double *lp)
{
	gram_pack(n, p, Z, ridge, factor, false, lp);
}

/*
 * The same for the n × n matrix ridge·I + ZZᵀ (PACKED_SIZE(n)): the linear
 * kernel matrix of Z's rows.
 */
void
row_gram_packed(int n, int p, const double *Z, double ridge, bool factor, double *lp)
{
	gram_pack(n, p, Z, ridge, factor, true, lp);
}

/*
 * Append row n to the factor of an n×n matrix, for a new last row/column
 * (b, c) of the matrix: lp must have room for PACKED_SIZE(n + 1) entries.
 * The new diagonal is sqrt(c - |L⁻¹b|²); in exact arithmetic the Schur
 * complement is at least the ridge term, so it is clamped to `floor` against
 * rounding, and to at least the rounding error of that difference, (n + 1)·ε·c:
 * a pivot below it (a tiny alpha under a large intercept, repeated contexts)
 * is noise, and the rows after it grew without bound, to ±Infinity and NaN in
 * the factor.  Returns the Schur complement used.
 */
double
chol_append_row(int n, double *lp, const double *b, double c, double floor)
{
	double	   *row = lp + PACKED_ROW(n);
	double		schur;

	memcpy(row, b, sizeof(double) * n);
	chol_forward(n, lp, row);
	schur = c - dot(n, row, row);
	schur = Max(schur, Max(floor, (n + 1) * DBL_EPSILON * fabs(c)));
	row[n] = sqrt(schur);
	return schur;
}

/*
 * out (PACKED_SIZE(n - 1)) = the factor of A without its first row and
 * column, from lp = the factor of A: for L = [l11 0; l21 L22] that is the
 * factor of L22 L22ᵀ + l21 l21ᵀ, a rank-1 update, O(n²).
 */
void
chol_drop_first(int n, const double *lp, double *out)
{
	double	   *l21 = palloc(sizeof(double) * Max(n - 1, 1));

	for (int i = 1; i < n; i++)
	{
		memcpy(out + PACKED_ROW(i - 1), lp + PACKED_ROW(i) + 1, sizeof(double) * i);
		l21[i - 1] = lp[PACKED_ROW(i)];
	}
	chol_rank1_update(n - 1, out, l21);
	pfree(l21);
}

/* x <- L⁻ᵀ x: from the last row up, x_i /= L_ii, then x_<i −= x_i · L_i,<i */
static void
chol_backward(int n, const double *lp, double *x)
{
	for (int i = n - 1; i >= 0; i--)
	{
		const double *row = lp + PACKED_ROW(i);

		x[i] /= row[i];
		axpy(i, -x[i], row, x);
	}
}

/* x <- (L Lᵀ)⁻¹ x by two triangular solves */
void
chol_solve(int n, const double *lp, double *x)
{
	chol_forward(n, lp, x);
	chol_backward(n, lp, x);
}

/* out = L Lᵀ − shift·I (packed), the matrix a packed factor L factors, less a shift. */
void
chol_product(int n, const double *lp, double shift, double *out)
{
	for (int i = 0; i < n; i++)
	{
		for (int j = 0; j <= i; j++)
			out[PACKED_ROW(i) + j] = dot(j + 1, lp + PACKED_ROW(i), lp + PACKED_ROW(j));
		out[PACKED_ROW(i) + i] -= shift;
	}
}
