/*
 * rff_features.c — random Fourier features (Hu et al. (PAK-UCB), Eq. 1):
 *
 *   φ(x) = [cos(Wx); sin(Wx)] / √D,   |φ(x)| = 1,   φ(x)ᵀφ(y) ≈ k(x, y)
 *
 * The D rows of W are drawn from the kernel's spectral density with the
 * in-tree PRNG, seeded by the selector's seed, so every backend and replica
 * computes the same features:
 *   rbf        N(0, I / bandwidth²)
 *   laplacian  Cauchy(0, 1 / bandwidth) per coordinate, for exp(-|x-y|₁ / bandwidth)
 *   matern ν   multivariate Student-t with 2ν degrees of freedom, scale 1 / bandwidth
 * W is computed once per backend and selector configuration (a few cached).
 * The last φ(x) computed is kept too: scoring a context computes it once per
 * arm, with the same W.
 */
#include "postgres.h"

#include <math.h>

#include "utils/memutils.h"

#include "policy/rff_features.h"
#include "math/elementary.h"
#include "math/prng.h"
#include "math/vecops.h"

#define FREQUENCY_CACHE_SIZE 4

typedef struct FrequencyCache
{
	bool		valid;
	uint64		draw;			/* which drawing of W this is (LastFeatures) */
	SelectorConfig cfg;			/* seed, dim, features, kernel, bandwidth, nu */
	double	   *W;				/* features × dim, by rows */
} FrequencyCache;

static FrequencyCache frequency_cache[FREQUENCY_CACHE_SIZE];
static int	frequency_cache_next = 0;
static uint64 frequency_draws = 0;

/* The last φ(x) computed, and the drawing of W it was computed with. */
typedef struct LastFeatures
{
	uint64		draw;			/* 0: none */
	int			dim;
	int			features;
	double	   *x;				/* dim values */
	double	   *phi;			/* 2·features values */
} LastFeatures;

static LastFeatures last_features;

static void
draw_frequencies(const SelectorConfig *cfg, double *W)
{
	Prng		rng;
	int			dof = (int) (2 * cfg->nu);

	prng_seed(&rng, mix64(cfg->seed ^ UINT64_C(0x7266665f66726571)));
	for (int j = 0; j < cfg->features; j++)
	{
		double	   *w = W + (Size) j * cfg->embed_dim;
		double		scale = 1.0 / cfg->bandwidth;

		if (cfg->kernel == KERNEL_MATERN)
		{
			double		chi2 = 0.0;

			for (int k = 0; k < dof; k++)
			{
				double		z = prng_normal(&rng);

				chi2 += z * z;
			}
			scale *= sqrt(dof / chi2);
		}
		for (int i = 0; i < cfg->embed_dim; i++)
			w[i] = cfg->kernel == KERNEL_LAPLACIAN
				? portable_tan(M_PI * (prng_uniform(&rng) - 0.5)) * scale
				: prng_normal(&rng) * scale;
	}
}

static bool
cache_matches(const FrequencyCache *c, const SelectorConfig *cfg)
{
	return c->valid && c->cfg.seed == cfg->seed && c->cfg.embed_dim == cfg->embed_dim &&
		c->cfg.features == cfg->features && c->cfg.kernel == cfg->kernel &&
		c->cfg.bandwidth == cfg->bandwidth && (cfg->kernel != KERNEL_MATERN || c->cfg.nu == cfg->nu);
}

static const FrequencyCache *
frequencies(const SelectorConfig *cfg)
{
	FrequencyCache *c;

	for (int i = 0; i < FREQUENCY_CACHE_SIZE; i++)
		if (cache_matches(&frequency_cache[i], cfg))
			return &frequency_cache[i];

	c = &frequency_cache[frequency_cache_next];
	frequency_cache_next = (frequency_cache_next + 1) % FREQUENCY_CACHE_SIZE;
	if (c->W != NULL)
		pfree(c->W);
	c->valid = false;
	c->W = MemoryContextAlloc(TopMemoryContext,
							  sizeof(double) * (Size) cfg->features * cfg->embed_dim);
	draw_frequencies(cfg, c->W);
	c->cfg = *cfg;
	c->draw = ++frequency_draws;
	c->valid = true;
	return c;
}

static Size
frequency_bytes(const FrequencyCache *c)
{
	return c->valid ? sizeof(double) * (Size) c->cfg.features * c->cfg.embed_dim : 0;
}

/* Memory held by the frequency matrices and the last features kept. */
Size
rff_cache_bytes(void)
{
	Size		total = last_features.x
		? sizeof(double) * (Size) (last_features.dim + 2 * last_features.features) : 0;

	for (int i = 0; i < FREQUENCY_CACHE_SIZE; i++)
		total += frequency_bytes(&frequency_cache[i]);
	return total;
}

/*
 * Free kept frequency matrices, oldest first, until at most keep bytes
 * remain (the model cache's byte bound covers them).  Nobody holds one
 * across calls: each is looked up (or drawn again) per use.
 */
void
rff_cache_trim(Size keep)
{
	for (int k = 0; k < FREQUENCY_CACHE_SIZE && rff_cache_bytes() > keep; k++)
	{
		FrequencyCache *c = &frequency_cache[(frequency_cache_next + k) % FREQUENCY_CACHE_SIZE];

		if (c->valid)
		{
			pfree(c->W);
			c->W = NULL;
			c->valid = false;
		}
	}
}

/* phi (2·features values) = φ(x) from the D angles Wx held in phi[0, D). */
static void
features_from_angles(int D, double *phi)
{
	double		scale = 1.0 / sqrt((double) D);

	for (int j = 0; j < D; j++)
	{
		double		sine,
					cosine;

		portable_sincos(phi[j], &sine, &cosine);
		phi[j] = cosine * scale;
		phi[D + j] = sine * scale;
	}
}

/* Keep phi = φ(x) as computed with drawing `draw` of W. */
static void
remember_features(uint64 draw, const SelectorConfig *cfg, const double *x, const double *phi)
{
	LastFeatures *last = &last_features;

	if (last->x == NULL || last->dim != cfg->embed_dim || last->features != cfg->features)
	{
		if (last->x != NULL)
			pfree(last->x);
		last->x = NULL;			/* until allocated again, should that fail */
		last->draw = 0;
		last->x = MemoryContextAlloc(TopMemoryContext,
									 sizeof(double) * (Size) (cfg->embed_dim + 2 * cfg->features));
		last->phi = last->x + cfg->embed_dim;
		last->dim = cfg->embed_dim;
		last->features = cfg->features;
	}
	memcpy(last->x, x, sizeof(double) * cfg->embed_dim);
	memcpy(last->phi, phi, sizeof(double) * 2 * cfg->features);
	last->draw = draw;
}

/* phi (2·features values) = φ(x). */
void
rff_features(const SelectorConfig *cfg, const double *x, double *phi)
{
	const FrequencyCache *c = frequencies(cfg);
	const LastFeatures *last = &last_features;

	if (last->draw == c->draw && memcmp(last->x, x, sizeof(double) * cfg->embed_dim) == 0)
	{
		memcpy(phi, last->phi, sizeof(double) * 2 * cfg->features);
		return;
	}
	gemv_rows(cfg->features, cfg->embed_dim, c->W, x, phi);
	features_from_angles(cfg->features, phi);
	remember_features(c->draw, cfg, x, phi);
}

/*
 * Rows t of Phi (stride ldphi ≥ 2·features) = φ(x_t) for the m rows of X
 * (contexts of cfg->dim values, of which φ reads the embedding):
 * the angles of four contexts at a time, each row of W read once for the
 * four, with rff_features()'s bits (not a BLAS GEMM, whose kernels round by
 * CPU).
 */
void
rff_features_block(const SelectorConfig *cfg, int m, const double *X, double *Phi, int ldphi)
{
	double	   *E = (double *) X;

	/* the embeddings alone, where tag buckets follow them (model/tags.c) */
	if (cfg->dim != cfg->embed_dim)
	{
		E = palloc(sizeof(double) * (Size) Max(m, 1) * cfg->embed_dim);
		for (int t = 0; t < m; t++)
			memcpy(E + (Size) t * cfg->embed_dim, X + (Size) t * cfg->dim, sizeof(double) * cfg->embed_dim);
	}
	gemv_rows_block(cfg->features, cfg->embed_dim, frequencies(cfg)->W, m, E, Phi, ldphi);
	for (int t = 0; t < m; t++)
		features_from_angles(cfg->features, Phi + (Size) t * ldphi);
	if (E != X)
		pfree(E);
}
