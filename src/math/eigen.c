/*
 * eigen.c — the eigendecomposition A = U diag(w) Uᵀ of a symmetric matrix
 * (confidence cmm's, spectral.c), in an order of operations fixed here.
 *
 * Why not LAPACK's dsyevd: its kernels are chosen by CPU and sum in an
 * order that also depends on the operands' addresses, so a standby on
 * another CPU kind scored other last bits than its primary.  Here every
 * reduction is vecops.c's dot(), and everything else is element-wise
 * (the Makefile's -ffp-contract=off keeps the compiler from fusing), so the
 * bits are the same on every CPU and at every address.
 *
 * The method is the textbook one (Golub & Van Loan, 8.3; EISPACK's tred2
 * and tql2): Householder reflections reduce A to a tridiagonal T = QᵀAQ,
 * the implicit QL iteration with Wilkinson's shift diagonalises T by plane
 * rotations, and the reflections and rotations, applied to the identity,
 * give the eigenvectors.  Rows are kept contiguous throughout: the matrix in
 * full storage (the rank-2 updates keep it exactly symmetric), and the
 * eigenvectors as rows of U, each rotation acting on two of them.
 */
#include "postgres.h"

#include <float.h>
#include <math.h>

#include "math/eigen.h"
#include "math/lanes.h"
#include "math/vecops.h"

/* QL iterations allowed per eigenvalue; two or three suffice in practice */
#define QL_MAX_ITERATIONS 60

#define ROW(A, m, i) ((A) + (Size) (i) * (m))

/* √(a² + b²) without overflow or underflow of the squares, fixed rounding */
static double
pythag(double a, double b)
{
	double		big = Max(fabs(a), fabs(b));
	double		small = Min(fabs(a), fabs(b));
	double		r;

	if (big == 0.0)
		return 0.0;
	r = small / big;
	return big * sqrt(fma(r, r, 1.0));
}

/*
 * The reflection H = I − τvvᵀ (v[0] = 1) that maps x (n ≥ 2) to βe₁: v
 * replaces x, β is returned, τ = 0 (H = I) where x is already a multiple
 * of e₁.
 */
static double
reflector(int n, double *x, double *tau)
{
	double		alpha = x[0];
	double		sigma = dot(n - 1, x + 1, x + 1);
	double		beta;
	double		scale;

	if (sigma == 0.0)
	{
		*tau = 0.0;
		return alpha;
	}
	beta = -copysign(sqrt(fma(alpha, alpha, sigma)), alpha);
	*tau = (beta - alpha) / beta;
	scale = 1.0 / (alpha - beta);
	for (int i = 1; i < n; i++)
		x[i] *= scale;
	x[0] = 1.0;
	return beta;
}

/*
 * b_j ← b_j − (a v_j + c w_j) for j < n, `lanes` at a time: element-wise,
 * so the same bits with vectors of any width.
 */
#define RANK2_BODY(type, lanes) \
	do { \
		int			j_ = 0; \
		for (; j_ + (lanes) <= n; j_ += (lanes)) \
		{ \
			type		b_, v_, w_; \
			LOADV(b_, b + j_); \
			LOADV(v_, v + j_); \
			LOADV(w_, w + j_); \
			b_ = b_ - (a * v_ + c * w_); \
			STOREV(b + j_, b_); \
		} \
		for (; j_ < n; j_++) \
			b[j_] = b[j_] - (a * v[j_] + c * w[j_]); \
	} while (0)

static void
rank2_row_sse2(int n, double *b, double a, const double *v, double c, const double *w)
{
	RANK2_BODY(vec2, 2);
}

__attribute__((target("avx2")))
static void
rank2_row_avx2(int n, double *b, double a, const double *v, double c, const double *w)
{
	RANK2_BODY(vec4, 4);
}

/* A row's share of a symmetric rank-2 update: b − (a v + c w) */
static void
rank2_row(int n, double *b, double a, const double *v, double c, const double *w)
{
	if (__builtin_cpu_supports("avx2"))
		rank2_row_avx2(n, b, a, v, c, w);
	else
		rank2_row_sse2(n, b, a, v, c, w);
}

/*
 * Reflection k from row k of A, which is up to date: d[k], e[k] = β,
 * tau[k], v in place of the row from column k + 1 on.  When first, also
 * p = τBv over the trailing block B below it (later steps form their p in
 * the pass of the step before).
 */
static void
reflect_row(int m, double *A, int k, bool first, double *d, double *e, double *tau, double *p)
{
	double	   *v = ROW(A, m, k) + k + 1;
	int			n = m - k - 1;

	d[k] = ROW(A, m, k)[k];
	e[k] = reflector(n, v, &tau[k]);
	if (first && tau[k] != 0.0)
		for (int i = 0; i < n; i++)
			p[i] = tau[k] * dot(n, ROW(A, m, k + 1 + i) + k + 1, v);
}

/*
 * B ← HBH for reflection k (H = I − τvvᵀ) and the trailing n × n block B:
 * B − vwᵀ − wvᵀ with p = τBv (given) and w = p − (τ/2)(pᵀv)v.  The same
 * pass takes reflection k + 1 from the block's first row as soon as it is
 * updated, and each row after it, while in cache, gives reflection k + 1's
 * p (in next): one pass over the block per reflection, not two.
 */
static void
reflect_block(int m, double *A, int k, double *d, double *e, double *tau, double *p,
			  double *next)
{
	const double *v = ROW(A, m, k) + k + 1;
	const double *v1 = ROW(A, m, k + 1) + k + 2;
	int			n = m - k - 1;
	bool		more = k + 3 < m;	/* is there a reflection k + 1? */

	if (tau[k] != 0.0)
	{
		double		half = 0.5 * tau[k] * dot(n, p, v);

		for (int i = 0; i < n; i++)
			p[i] = p[i] - half * v[i];
	}
	for (int i = 0; i < n; i++)
	{
		double	   *b = ROW(A, m, k + 1 + i) + k + 1;

		/* v_i w_j + w_i v_j is w_j v_i + v_j w_i: entries (i, j) and (j, i) stay equal */
		if (tau[k] != 0.0)
			rank2_row(n, b, v[i], p, p[i], v);
		if (!more)
			continue;
		if (i == 0)
			reflect_row(m, A, k + 1, false, d, e, tau, NULL);
		else if (tau[k + 1] != 0.0)
			next[i - 1] = tau[k + 1] * dot(n - 1, b + 1, v1);
	}
}

/*
 * A (full storage, symmetric) to its tridiagonal T: diagonal d, subdiagonal
 * e (e[i] = T[i+1][i], e[m−1] = 0).  Reflection k's v is left in row k of A
 * from column k + 1 on, its τ in tau[k].
 */
static void
tridiagonalise(int m, double *A, double *d, double *e, double *tau)
{
	double	   *p = palloc(sizeof(double) * Max(m, 1));
	double	   *next = palloc(sizeof(double) * Max(m, 1));

	for (int k = 0; k + 2 < m; k++)
	{
		double	   *swap = p;

		if (k == 0)
			reflect_row(m, A, 0, true, d, e, tau, p);
		reflect_block(m, A, k, d, e, tau, p, next);
		p = next;
		next = swap;
	}
	if (m >= 2)
	{
		d[m - 2] = ROW(A, m, m - 2)[m - 2];
		e[m - 2] = ROW(A, m, m - 1)[m - 2];
	}
	d[m - 1] = ROW(A, m, m - 1)[m - 1];
	e[m - 1] = 0.0;
	pfree(p);
	pfree(next);
}

/*
 * U = Qᵀ = H_{m−3} ⋯ H_0, row by row: U ← U H_k for k from the last
 * reflection down, which acts only on rows and columns k + 1 on.  A row's
 * updates depend on that row alone, so each row takes a block of
 * REFLECTIONS reflections while it is in cache, in the same order.
 */
#define REFLECTIONS 16

static void
reflections_transposed(int m, const double *A, const double *tau, double *U)
{
	memset(U, 0, sizeof(double) * m * m);
	for (int i = 0; i < m; i++)
		ROW(U, m, i)[i] = 1.0;
	for (int last = m - 3; last >= 0; last -= REFLECTIONS)
	{
		int			first = Max(last - REFLECTIONS + 1, 0);

		for (int i = first + 1; i < m; i++)
			for (int k = Min(last, i - 1); k >= first; k--)
			{
				const double *v = ROW(A, m, k) + k + 1;
				double	   *u = ROW(U, m, i) + k + 1;
				int			n = m - k - 1;

				if (tau[k] != 0.0)
					axpy(n, -tau[k] * dot(n, u, v), v, u);
			}
	}
}

/*
 * The rotations of up to SWEEPS QL sweeps, kept to be applied to U's rows
 * together: sweep b rotates rows i and i + 1 by (c, s)[b·m + i] for i from
 * hi[b] − 1 down to lo[b].  The sweeps' arithmetic on the tridiagonal does
 * not read U, so their rotations can wait.
 */
#define SWEEPS 8

typedef struct Sweeps
{
	int			count;
	int			lo[SWEEPS];
	int			hi[SWEEPS];
	double	   *c;				/* SWEEPS × m */
	double	   *s;
} Sweeps;

/*
 * The kept sweeps applied to U, in strips of STRIP columns, each strip by a
 * wavefront: every round, each sweep takes its next rotation if no earlier
 * sweep still has to rotate one of its two rows (all of them are past index
 * i − 1), so that the rows of a strip that the sweeps are working on stay
 * in cache from the first sweep to the last (as in Van Zee, van de Geijn
 * and Quintana-Ortí's restructured QR).  Every row gets the rotations that
 * touch it in the order of the sweeps one after the other, each element the
 * same operations, so the bits depend on neither the strips nor the
 * wavefront.
 */
#define STRIP 256

/* Rows x and y (width_ columns of a strip) rotated by (c, s): y ← s·x + c·y, x ← c·x − s·y. */
#define ROTATE_PAIR(type, lanes, x, y, c, s) \
	do { \
		double	   *x_ = (x); \
		double	   *y_ = (y); \
		double		c_ = (c); \
		double		s_ = (s); \
		int			k_ = 0; \
		for (; k_ < vectors_; k_ += (lanes)) \
		{ \
			type		xv_, yv_, nv_; \
			LOADV(xv_, x_ + k_); \
			LOADV(yv_, y_ + k_); \
			nv_ = s_ * xv_ + c_ * yv_; \
			STOREV(y_ + k_, nv_); \
			xv_ = c_ * xv_ - s_ * yv_; \
			STOREV(x_ + k_, xv_); \
		} \
		for (; k_ < width_; k_++) \
		{ \
			double		xs_ = x_[k_]; \
			double		ys_ = y_[k_]; \
			y_[k_] = s_ * xs_ + c_ * ys_; \
			x_[k_] = c_ * xs_ - s_ * ys_; \
		} \
	} while (0)

#define ROTATE_SWEEPS(type, lanes) \
	do { \
		for (int from_ = 0; from_ < m; from_ += STRIP) \
		{ \
			int			width_ = Min(STRIP, m - from_); \
			int			vectors_ = width_ / (lanes) * (lanes); \
			int			next_[SWEEPS]; \
			bool		left_ = true; \
			for (int b_ = 0; b_ < w->count; b_++) \
				next_[b_] = w->hi[b_] - 1; \
			while (left_) \
			{ \
				/* the highest rotation an earlier sweep still has to make */ \
				int			blocking_ = PG_INT32_MIN; \
				left_ = false; \
				for (int b_ = 0; b_ < w->count; b_++) \
				{ \
					int			i_ = next_[b_]; \
					if (i_ >= w->lo[b_] && i_ - 1 > blocking_) \
					{ \
						ROTATE_PAIR(type, lanes, ROW(U, m, i_) + from_, ROW(U, m, i_ + 1) + from_, \
									w->c[(Size) b_ * m + i_], w->s[(Size) b_ * m + i_]); \
						next_[b_] = --i_; \
					} \
					if (i_ >= w->lo[b_]) \
					{ \
						left_ = true; \
						blocking_ = Max(blocking_, i_); \
					} \
				} \
			} \
		} \
		w->count = 0; \
	} while (0)

static void
rotate_sweeps_sse2(int m, double *U, Sweeps *w)
{
	ROTATE_SWEEPS(vec2, 2);
}

__attribute__((target("avx2")))
static void
rotate_sweeps_avx2(int m, double *U, Sweeps *w)
{
	ROTATE_SWEEPS(vec4, 4);
}

static void
rotate_sweeps(int m, double *U, Sweeps *w)
{
	if (__builtin_cpu_supports("avx2"))
		rotate_sweeps_avx2(m, U, w);
	else
		rotate_sweeps_sse2(m, U, w);
}

/*
 * One implicit QL sweep with Wilkinson's shift over the block l..hi of the
 * tridiagonal (d, e) (EISPACK's tql2), its rotations kept in w for U's rows,
 * which take every SWEEPS of them at once (rotate_sweeps()).  Returns the
 * shift, which the caller accumulates.
 */
static double
ql_sweep(int m, double *d, double *e, double *U, int l, int hi, Sweeps *w)
{
	double	   *cs = w->c + (Size) w->count * m;
	double	   *sn = w->s + (Size) w->count * m;
	double		g = d[l];
	double		p = (d[l + 1] - g) / (2.0 * e[l]);
	double		r = copysign(pythag(p, 1.0), p);
	double		dl1;
	double		el1 = e[l + 1];
	double		shift;
	double		c = 1.0,
				c2 = 1.0,
				c3 = 1.0,
				s = 0.0,
				s2 = 0.0;

	d[l] = e[l] / (p + r);
	d[l + 1] = e[l] * (p + r);
	dl1 = d[l + 1];
	shift = g - d[l];
	for (int i = l + 2; i < m; i++)
		d[i] -= shift;
	p = d[hi];
	for (int i = hi - 1; i >= l; i--)
	{
		double		h;

		c3 = c2;
		c2 = c;
		s2 = s;
		g = c * e[i];
		h = c * p;
		r = pythag(p, e[i]);
		e[i + 1] = s * r;
		s = e[i] / r;
		c = p / r;
		p = c * d[i] - s * g;
		d[i + 1] = h + s * (c * g + s * d[i]);
		cs[i] = c;
		sn[i] = s;
	}
	w->lo[w->count] = l;
	w->hi[w->count] = hi;
	if (++w->count == SWEEPS)
		rotate_sweeps(m, U, w);
	p = -s * s2 * c3 * el1 * e[l] / dl1;
	e[l] = s * p;
	d[l] = c * p;
	return shift;
}

/* The tridiagonal (d, e) to diagonal d, its rotations applied to U's rows. */
static void
ql_implicit(int m, double *d, double *e, double *U)
{
	Sweeps		w = {0, {0}, {0}, palloc(sizeof(double) * SWEEPS * m), palloc(sizeof(double) * SWEEPS * m)};
	double		shift = 0.0;
	double		tst1 = 0.0;
	const double eps = DBL_EPSILON;

	for (int l = 0; l < m; l++)
	{
		int			hi = l;
		int			iterations = 0;

		tst1 = Max(tst1, fabs(d[l]) + fabs(e[l]));
		while (fabs(e[hi]) > eps * tst1)
			hi++;				/* e[m − 1] = 0 stops it */
		if (hi > l)
		{
			do
			{
				if (++iterations > QL_MAX_ITERATIONS)
					elog(ERROR, "eigendecomposition did not converge (order %d)", m);
				shift += ql_sweep(m, d, e, U, l, hi, &w);
			} while (fabs(e[l]) > eps * tst1);
		}
		d[l] += shift;
		e[l] = 0.0;
	}
	rotate_sweeps(m, U, &w);
	pfree(w.c);
	pfree(w.s);
}

/* Eigenvalues ascending, U's rows with them (the first of equal ones stays first). */
static void
sort_ascending(int m, double *w, double *U)
{
	double	   *row = palloc(sizeof(double) * m);

	for (int i = 0; i < m; i++)
	{
		int			k = i;
		double		least;

		for (int j = i + 1; j < m; j++)
			if (w[j] < w[k])
				k = j;
		if (k == i)
			continue;
		least = w[k];
		w[k] = w[i];
		w[i] = least;
		memcpy(row, ROW(U, m, i), sizeof(double) * m);
		memcpy(ROW(U, m, i), ROW(U, m, k), sizeof(double) * m);
		memcpy(ROW(U, m, k), row, sizeof(double) * m);
	}
	pfree(row);
}

/*
 * The eigenvalues w (ascending) and unit eigenvectors (row j of U: w[j]'s)
 * of the m × m symmetric A, given by rows, of which the lower triangle
 * A[i][j], j ≤ i, is read.  A is overwritten (scratch); U is m × m.  An
 * entry that is not finite is an error (the callers' matrices are built
 * from validated contexts, so it cannot happen).
 */
void
sym_eigen(int m, double *A, double *w, double *U)
{
	double	   *e;
	double	   *tau;

	if (m <= 0)
		return;
	for (int i = 0; i < m; i++)
		for (int j = 0; j <= i; j++)
		{
			if (!isfinite(ROW(A, m, i)[j]))
				elog(ERROR, "eigendecomposition of a matrix with an entry that is not finite");
			ROW(A, m, j)[i] = ROW(A, m, i)[j];
		}
	e = palloc(sizeof(double) * m);
	tau = palloc0(sizeof(double) * m);
	tridiagonalise(m, A, w, e, tau);
	reflections_transposed(m, A, tau, U);
	ql_implicit(m, w, e, U);
	for (int i = 0; i < m; i++)
		if (!isfinite(w[i]))
			elog(ERROR, "eigendecomposition gave an eigenvalue that is not finite (order %d)", m);
	sort_ascending(m, w, U);
	pfree(e);
	pfree(tau);
}
