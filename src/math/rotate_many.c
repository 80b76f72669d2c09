/*
 * rotate_many.c — several rank-1 updates of a packed Cholesky factor applied
 * together (chol_rank_updates(), linalg.h): how the learner folds the
 * rewards an arm gathered since its last version, with the bits of
 * chol_rank1_update() applied to them one after the other (rotate.c).
 *
 * Update j's rotation of column k is fixed once row k has been through
 * updates 1 … j (rotate.c's comment has the rotation).  An entry of row i
 * goes through update 1's rotation of its column, then update 2's, and
 * so on, and each update's running X of row i goes through the columns in
 * order, seeing the entries as the updates before it left them: the same
 * operations in the same order as one update after the other, so the same
 * bits, whichever way the loops are nested around them.  Here rows go four
 * at a time, one to a lane of an AVX2 vector: a 4×4 tile of the rows is
 * transposed into lanes once, goes through every update's rotations of its
 * four columns, and is transposed back; the transposes that made four lanes
 * slower than two for one update (rotate.c) are shared by up to eight.
 * Nothing is fused (multiplies and adds are separate instructions), so
 * each lane computes what the scalar rotation computes; CPUs without AVX2
 * apply the updates one after the other.  test/unit/rotate_bits.c checks
 * the bits against that.
 */
#include "postgres.h"

#include <math.h>

#include "math/linalg.h"
#include "math/rotation.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define ROTATE_MANY_AVX2 1
#endif

/* Updates applied together: their X, four lanes each, stay in registers. */
#define UPDATE_GROUP 8

/* Update j's rotations: ci, a and b of column k at [j][k]. */
typedef struct Rotations
{
	int			n;
	double	   *ci;
	double	   *a;
	double	   *b;
} Rotations;

#define ROT(r, arr, j, k) ((r)->arr[(Size) (j) * (r)->n + (k)])

/* Update j's rotation of column k applied to entry t of a row whose running X is X (rotate.c's ROTATE). */
#define ROTATE_J(r, j, k, t, X) \
	do { \
		double		t_ = (t); \
		(t) = t_ * ROT(r, ci, j, k) + ROT(r, b, j, k) * (X); \
		(X) -= ROT(r, a, j, k) * t_; \
	} while (0)

#ifdef ROTATE_MANY_AVX2

/* Rows r[0..3] at columns [k, k + 4), transposed: out[c] holds column k + c, lane q row q. */
__attribute__((target("avx2"), always_inline)) static inline void
tile_load(double *const row[4], int k, __m256d out[4])
{
	__m256d		r0 = _mm256_loadu_pd(row[0] + k),
				r1 = _mm256_loadu_pd(row[1] + k),
				r2 = _mm256_loadu_pd(row[2] + k),
				r3 = _mm256_loadu_pd(row[3] + k);
	__m256d		lo01 = _mm256_unpacklo_pd(r0, r1),
				hi01 = _mm256_unpackhi_pd(r0, r1),
				lo23 = _mm256_unpacklo_pd(r2, r3),
				hi23 = _mm256_unpackhi_pd(r2, r3);

	out[0] = _mm256_permute2f128_pd(lo01, lo23, 0x20);
	out[1] = _mm256_permute2f128_pd(hi01, hi23, 0x20);
	out[2] = _mm256_permute2f128_pd(lo01, lo23, 0x31);
	out[3] = _mm256_permute2f128_pd(hi01, hi23, 0x31);
}

/* tile_load() undone: columns back into rows r[0..3] at [k, k + 4). */
__attribute__((target("avx2"), always_inline)) static inline void
tile_store(double *const row[4], int k, const __m256d in[4])
{
	__m256d		lo01 = _mm256_unpacklo_pd(in[0], in[1]),
				hi01 = _mm256_unpackhi_pd(in[0], in[1]),
				lo23 = _mm256_unpacklo_pd(in[2], in[3]),
				hi23 = _mm256_unpackhi_pd(in[2], in[3]);

	_mm256_storeu_pd(row[0] + k, _mm256_permute2f128_pd(lo01, lo23, 0x20));
	_mm256_storeu_pd(row[1] + k, _mm256_permute2f128_pd(hi01, hi23, 0x20));
	_mm256_storeu_pd(row[2] + k, _mm256_permute2f128_pd(lo01, lo23, 0x31));
	_mm256_storeu_pd(row[3] + k, _mm256_permute2f128_pd(hi01, hi23, 0x31));
}

/*
 * Updates [0, g) of the columns [0, kend) (kend a multiple of 4) on four
 * rows, X[j][q] the running X of update j on row q.  g is a constant at
 * each call (rotate_tiles()), so that the loops unroll and X stays in
 * registers.
 */
__attribute__((target("avx2"), always_inline)) static inline void
rotate_tiles_g(double *const row[4], double X[UPDATE_GROUP][4], const Rotations *rot,
			   int kend, const int g)
{
	__m256d		XV[UPDATE_GROUP];

#pragma GCC unroll 8
	for (int j = 0; j < g; j++)
		XV[j] = _mm256_loadu_pd(X[j]);
	for (int k = 0; k < kend; k += 4)
	{
		__m256d		T[4];

		tile_load(row, k, T);
#pragma GCC unroll 4
		for (int c = 0; c < 4; c++)
#pragma GCC unroll 8
			for (int j = 0; j < g; j++)
			{
				__m256d		t = T[c];

				T[c] = _mm256_add_pd(_mm256_mul_pd(t, _mm256_set1_pd(ROT(rot, ci, j, k + c))),
									 _mm256_mul_pd(_mm256_set1_pd(ROT(rot, b, j, k + c)), XV[j]));
				XV[j] = _mm256_sub_pd(XV[j], _mm256_mul_pd(_mm256_set1_pd(ROT(rot, a, j, k + c)), t));
			}
		tile_store(row, k, T);
	}
#pragma GCC unroll 8
	for (int j = 0; j < g; j++)
		_mm256_storeu_pd(X[j], XV[j]);
}

__attribute__((target("avx2"))) static void
rotate_tiles(double *const row[4], double X[UPDATE_GROUP][4], const Rotations *rot, int kend, int g)
{
	switch (g)
	{
#define TILES_CASE(G) case G: rotate_tiles_g(row, X, rot, kend, G); break;
			TILES_CASE(1) TILES_CASE(2) TILES_CASE(3) TILES_CASE(4)
			TILES_CASE(5) TILES_CASE(6) TILES_CASE(7) TILES_CASE(8)
#undef TILES_CASE
		default:
			elog(ERROR, "%d updates in a group of at most %d", g, UPDATE_GROUP);
	}
}

/*
 * Updates x[0, g) (rows of n, destroyed) of the factor, four rows at a
 * time: the columns before the block in tiles, then the block's own
 * triangle and diagonals update by update.
 */
__attribute__((target("avx2"))) static void
rank_group(int n, double *lp, double *x, int g, const Rotations *rot)
{
	double		p[UPDATE_GROUP];

	for (int j = 0; j < g; j++)
		p[j] = 1.0;
	for (int i0 = 0; i0 < n; i0 += 4)
	{
		int			nb = Min(4, n - i0);
		double	   *row[4];
		double		X[UPDATE_GROUP][4] = {{0}};

		for (int q = 0; q < 4; q++)
			row[q] = lp + PACKED_ROW(i0 + Min(q, nb - 1));
		for (int j = 0; j < g; j++)
			for (int q = 0; q < nb; q++)
				X[j][q] = x[(Size) j * n + i0 + q];
		if (nb == 4)
			rotate_tiles(row, X, rot, i0, g);
		else
			for (int q = 0; q < nb; q++)
				for (int k = 0; k < i0; k++)
					for (int j = 0; j < g; j++)
						ROTATE_J(rot, j, k, row[q][k], X[j][q]);
		for (int j = 0; j < g; j++)
			for (int q = 0; q < nb; q++)
			{
				int			i = i0 + q;

				for (int k = i0; k < i; k++)
					ROTATE_J(rot, j, k, row[q][k], X[j][q]);
				if (!rotation_at_diagonal(&row[q][i], X[j][q], 1.0, &p[j], &ROT(rot, ci, j, i),
										  &ROT(rot, a, j, i), &ROT(rot, b, j, i)))
					elog(ERROR, "a rank-1 update of a Cholesky factor met a non-positive pivot");
			}
	}
}
#endif

/*
 * L Lᵀ + Σ_j x_j x_jᵀ = L' L'ᵀ for the m rows x_j of x (m × n, destroyed):
 * the bits of chol_rank1_update() on x_1, then x_2, and so on.
 */
void
chol_rank_updates(int n, double *lp, double *x, int m)
{
#ifdef ROTATE_MANY_AVX2
	if (m > 1 && n >= 8 && __builtin_cpu_supports("avx2"))
	{
		Rotations	rot = {.n = n};

		rot.ci = palloc(sizeof(double) * 3 * (Size) n * UPDATE_GROUP);
		rot.a = rot.ci + (Size) n * UPDATE_GROUP;
		rot.b = rot.a + (Size) n * UPDATE_GROUP;
		for (int j = 0; j < m; j += UPDATE_GROUP)
			rank_group(n, lp, x + (Size) j * n, Min(UPDATE_GROUP, m - j), &rot);
		pfree(rot.ci);
		return;
	}
#endif
	for (int j = 0; j < m; j++)
		chol_rank1_update(n, lp, x + (Size) j * n);
}
