/*
 * linalg.c — Cholesky factorisation, row append and the backward solve on
 * packed factors (see linalg.h; the forward solve is in forward.c, rank-1
 * updates in rotate.c).  Factorisations and blocks go through LAPACKE and
 * BLAS-3, but for the factor of a state that is also appended row by row
 * (chol_factor_rows); what scoring and folding do one vector at a time is
 * written over vecops.c, in a fixed order, so that it gives the same bits
 * wherever its operands sit (vecops.c says why).  No explicit inverses.
 */
#include "postgres.h"

#include <float.h>
#include <math.h>

#include <cblas.h>
#include <lapacke.h>

#include "math/linalg.h"
#include "math/vecops.h"

/*
 * Factorise a packed symmetric matrix in place row by row, as
 * chol_append_row() does for one reward: each Schur complement is clamped
 * to floor.  So the factor has, on every CPU, the bits of appending its rows
 * one at a time: how a state that is also appended (pak_ucb) is built, and
 * the fallback of the LAPACK factorisations below.  The same O(n³/3) flops
 * as LAPACK's packed dpptrf, itself level 2.
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
 * Replace a packed symmetric matrix (lower, by rows) by its Cholesky factor.
 * Callers factorise K + ridge terms of at least floor > 0, positive definite
 * in exact arithmetic; when rounding still gives LAPACK a non-positive pivot
 * (e.g. repeated contexts, a tiny alpha and a large intercept), the matrix is
 * factorised with the live path's clamping instead (chol_factor_rows): the
 * factor a reward at a time would have built, never an error.
 */
void
chol_factor_packed(int n, double *ap, double floor)
{
	double	   *orig;

	if (n == 0)
		return;
	orig = palloc(sizeof(double) * PACKED_SIZE(n));
	memcpy(orig, ap, sizeof(double) * PACKED_SIZE(n));
	if (LAPACKE_dpptrf(LAPACK_COL_MAJOR, 'U', n, ap) != 0)
	{
		memcpy(ap, orig, sizeof(double) * PACKED_SIZE(n));
		chol_factor_rows(n, ap, floor);
	}
	pfree(orig);
}

/*
 * out = the Cholesky factor of ap + shift·I, for a packed symmetric ap
 * (ap itself is left as it is); floor as for chol_factor_packed.
 */
void
chol_factor_shifted(int n, const double *ap, double shift, double floor, double *out)
{
	memcpy(out, ap, sizeof(double) * PACKED_SIZE(n));
	for (int i = 0; i < n; i++)
		out[PACKED_ROW(i) + i] += shift;
	chol_factor_packed(n, out, floor);
}

/* ln det(L Lᵀ / scale) for a packed factor L: 2·Σ ln(L_ii / √scale). */
double
chol_log_det_scaled(int n, const double *lp, double scale)
{
	double		sum = 0.0;

	for (int i = 0; i < n; i++)
		sum += 2.0 * log(lp[PACKED_ROW(i) + i] / sqrt(scale));
	return sum;
}

/*
 * A (q × q, lower part, by columns) = ridge·I + ZᵀZ (q = p), or with `rows`
 * ridge·I + ZZᵀ (q = n), for Z n × p by rows.
 */
static void
gram_full(int n, int p, const double *Z, double ridge, bool rows, double *A)
{
	int			q = rows ? n : p;

	memset(A, 0, sizeof(double) * (Size) q * q);
	for (int i = 0; i < q; i++)
		A[(Size) i * q + i] = ridge;
	/* Z by rows is Zᵀ by columns: A (lower, by columns) += Zᵀ Z, or (Zᵀ)ᵀ Zᵀ */
	if (n > 0 && p > 0)
		cblas_dsyrk(CblasColMajor, CblasLower, rows ? CblasTrans : CblasNoTrans, q, rows ? p : n, 1.0, Z, p,
					1.0, A, q);
}

/* gram_packed() of ZᵀZ, or with `rows` of ZZᵀ (q × q, q = n). */
static void
gram_pack(int n, int p, const double *Z, double ridge, bool factor, bool rows, double *lp)
{
	int			q = rows ? n : p;
	double	   *A = palloc(sizeof(double) * Max((Size) q * q, 1));
	bool		failed;

	gram_full(n, p, Z, ridge, rows, A);
	failed = factor && q > 0 && LAPACKE_dpotrf(LAPACK_COL_MAJOR, 'L', q, A, q) != 0;
	/* as chol_factor_packed: rounding gave a non-positive pivot */
	if (failed)
		gram_full(n, p, Z, ridge, rows, A);
	for (int i = 0; i < q; i++)
		for (int j = 0; j <= i; j++)
			lp[PACKED_ROW(i) + j] = A[(Size) j * q + i];
	pfree(A);
	if (failed)
		chol_factor_rows(q, lp, ridge);
}

/*
 * lp (packed by rows, PACKED_SIZE(p)) = ridge·I + ZᵀZ for the n × p matrix
 * Z (by rows), or with `factor` its lower Cholesky factor: one BLAS-3
 * product and a blocked LAPACK factorisation in full storage, then packed.
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
