/*
 * bkb_dictionary.c — a bkb arm's dictionary: the Nyström embedding z(x) =
 * L_S⁻¹ k'_S(x) of rows, and a dictionary sampled from scratch by §2.3's
 * draws (Calandriello et al. 2019 (BKB); the model: policy/bkb.c).
 */
#include "postgres.h"

#include <math.h>

#include "model/kernel.h"
#include "math/linalg.h"
#include "math/prng.h"
#include "math/vecops.h"
#include "policy/bkb_view.h"

/* a candidate whose Schur complement is below this times k'(x,x) lies in the span of the others */
#define BKB_DEPENDENT 1e-10

/* The dictionary's contexts into XS (m × dim), and their squared norms into sq (NULL: not). */
void
bkb_gather_into(const SelectorConfig *cfg, const BkbView *v, double *XS, double *sq)
{
	for (int j = 0; j < v->m; j++)
		memcpy(XS + (Size) j * cfg->dim, v->X + (Size) v->S[j] * cfg->dim, sizeof(double) * cfg->dim);
	if (sq)
		row_sqnorms(v->m, cfg->dim, XS, sq);
}

/* The dictionary's contexts, m × dim, and optionally their squared norms, in new allocations. */
double *
bkb_gather(const SelectorConfig *cfg, const BkbView *v, double **sq)
{
	double	   *XS = palloc(sizeof(double) * Max((Size) v->m * cfg->dim, 1));

	if (sq)
		*sq = palloc(sizeof(double) * Max(v->m, 1));
	bkb_gather_into(cfg, v, XS, sq ? *sq : NULL);
	return XS;
}

/*
 * Z (n × m) = the embeddings z(x_i) of the n rows of X for dictionary v:
 * the kernel block against the dictionary, then Z ← Z L_S⁻ᵀ by forward
 * solves four rows at a time, each with chol_forward()'s bits (not a BLAS
 * TRSM, whose kernels sum by CPU: an append embeds its row here in every
 * backend that folds it).
 */
double *
bkb_embed_rows(const SelectorConfig *cfg, const BkbView *v, int n, const double *X)
{
	double	   *sqS;
	double	   *XS = bkb_gather(cfg, v, &sqS);
	double	   *Z = palloc(sizeof(double) * Max((Size) n * v->m, 1));

	kernel_block(cfg, v->m, XS, sqS, n, X, Z);
	chol_forward_rows(v->m, v->Ls, n, Z);
	pfree(XS);
	pfree(sqS);
	return Z;
}

/* s2[i] = σ̃²(x_i) under the model v (dictionary, R) for the n rows of X. */
static void
row_variances(const SelectorConfig *cfg, const BkbView *v, int n, const double *X, double *s2)
{
	int			m = v->m;
	double	   *Z = bkb_embed_rows(cfg, v, n, X);
	double	   *T = palloc(sizeof(double) * Max((Size) n * m, 1));

	memcpy(T, Z, sizeof(double) * n * m);
	chol_forward_rows(m, v->R, n, T);
	for (int i = 0; i < n; i++)
	{
		const double *zi = Z + (Size) i * m;
		const double *ti = T + (Size) i * m;
		double		resid = kernel_self(cfg, X + (Size) i * cfg->dim) - dot(m, zi, zi);

		s2[i] = Max(resid, 0.0) / cfg->alpha + dot(m, ti, ti);
	}
	pfree(Z);
	pfree(T);
}

/*
 * The resample draws of §2.3: cand[] gets the indices i with
 * uniform < min(1, qbar·s2[i]), increasing; at least the point of largest s2.
 */
static int
draw_candidates(const SelectorConfig *cfg, int n, const double *X, const double *s2,
				uint64 salt, int *cand)
{
	Prng		rng;
	uint64		h = mix64(cfg->seed ^ salt);
	int			ncand = 0,
				best = 0;

	for (int j = 0; j < cfg->dim; j++)
	{
		uint64		bits;

		memcpy(&bits, &X[j], sizeof(bits));
		h = mix64(h ^ bits);
	}
	prng_seed(&rng, mix64(h ^ (uint64) n));
	for (int i = 0; i < n; i++)
	{
		/* one draw per point, also when p >= 1: the stream stays aligned */
		if (prng_uniform(&rng) < Min(1.0, cfg->qbar * s2[i]))
			cand[ncand++] = i;
		if (s2[i] > s2[best])
			best = i;
	}
	if (ncand == 0)
		cand[ncand++] = best;
	return ncand;
}

/*
 * Dictionary from the candidates, in order, by appending rows to L_S; a
 * candidate numerically in the span of the earlier ones is dropped.  S and
 * Ls need room for ncand entries and PACKED_SIZE(ncand); returns m.
 */
static int
build_dictionary(const SelectorConfig *cfg, const double *X, const int *cand, int ncand,
				 double *S, double *Ls)
{
	double	   *XS = palloc(sizeof(double) * (Size) ncand * cfg->dim);
	double	   *k = palloc(sizeof(double) * ncand);
	int			m = 0;

	for (int c = 0; c < ncand; c++)
	{
		const double *x = X + (Size) cand[c] * cfg->dim;
		double		kxx = kernel_self(cfg, x);

		kernel_vector(cfg, m, XS, NULL, x, k);
		if (chol_append_row(m, Ls, k, kxx, 0.0) > BKB_DEPENDENT * fabs(kxx))
		{
			memcpy(XS + (Size) m * cfg->dim, x, sizeof(double) * cfg->dim);
			S[m++] = cand[c];
		}
	}
	pfree(XS);
	pfree(k);
	return m;
}

/*
 * A dictionary for the n rows of X (n × dim), drawn with σ̃² under `model`
 * (m = 0: the prior, k'/α) and the salt: its history indices into S (room
 * for n) and its factor L_S into *Ls (palloc'd); returns its size m.
 */
int
bkb_sample_dictionary(const SelectorConfig *cfg, const BkbView *model, int n, const double *X,
					  uint64 salt, double *S, double **Ls)
{
	double	   *s2 = palloc(sizeof(double) * n);
	int		   *cand = palloc(sizeof(int) * n);
	int			ncand;
	int			m;

	row_variances(cfg, model, n, X, s2);
	ncand = draw_candidates(cfg, n, X, s2, salt, cand);
	*Ls = palloc(sizeof(double) * PACKED_SIZE(ncand));
	m = build_dictionary(cfg, X, cand, ncand, S, *Ls);
	pfree(s2);
	pfree(cand);
	return m;
}
