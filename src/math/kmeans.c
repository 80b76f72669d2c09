/*
 * kmeans.c — Lloyd's k-means with k-means++ seeding (Arthur & Vassilvitskii
 * 2007) from the in-tree PRNG.  Distances and means are summed in the order
 * of this code, so every machine fits the same centroids from the same rows
 * and seed, and assigns a context to the same centroid.
 */
#include "postgres.h"

#include "miscadmin.h"

#include "math/kmeans.h"
#include "math/prng.h"
#include "math/vecops.h"

/* The index of the centroid nearest to x (the lowest of equally near ones). */
int
kmeans_nearest(int k, int d, const double *centroids, const double *x)
{
	int			best = 0;
	double		best_dist = squared_distance(d, x, centroids);

	for (int j = 1; j < k; j++)
	{
		double		dist = squared_distance(d, x, centroids + (Size) j * d);

		if (dist < best_dist)
		{
			best = j;
			best_dist = dist;
		}
	}
	return best;
}

/*
 * k-means++: the first centroid a uniformly drawn row, each next one a row
 * drawn with probability proportional to its squared distance to the nearest
 * centroid so far (the first row when every row is on a centroid already).
 */
static void
kmeans_seed(int n, int d, const double *X, int k, uint64_t seed, double *centroids)
{
	double	   *nearest = palloc(sizeof(double) * n);
	Prng		prng;
	int			pick;

	prng_seed(&prng, seed);
	pick = (int) (prng_uniform(&prng) * n);
	memcpy(centroids, X + (Size) pick * d, sizeof(double) * d);
	for (int i = 0; i < n; i++)
		nearest[i] = squared_distance(d, X + (Size) i * d, centroids);
	for (int j = 1; j < k; j++)
	{
		double		total = 0.0;
		double		target;
		double	   *c = centroids + (Size) j * d;

		CHECK_FOR_INTERRUPTS();
		for (int i = 0; i < n; i++)
			total += nearest[i];
		target = prng_uniform(&prng) * total;
		pick = 0;
		for (int i = 0; i < n; i++)
		{
			target -= nearest[i];
			if (nearest[i] > 0 && target < 0)
			{
				pick = i;
				break;
			}
		}
		memcpy(c, X + (Size) pick * d, sizeof(double) * d);
		for (int i = 0; i < n; i++)
			nearest[i] = Min(nearest[i], squared_distance(d, X + (Size) i * d, c));
	}
	pfree(nearest);
}

/*
 * Fit k centroids (k × d, row-major) to the n rows of X (n ≥ k ≥ 1): seed,
 * then alternate assigning every row to its nearest centroid and moving each
 * centroid to the mean of its rows (a centroid without rows stays), until
 * the assignment no longer changes.  Returns the iterations run.
 */
int
kmeans_fit(int n, int d, const double *X, int k, uint64_t seed, double *centroids)
{
	int		   *label = palloc(sizeof(int) * n);
	int		   *count = palloc(sizeof(int) * k);
	double	   *sum = palloc(sizeof(double) * (Size) k * d);
	int			iter;

	Assert(n >= k && k >= 1);
	kmeans_seed(n, d, X, k, seed, centroids);
	for (int i = 0; i < n; i++)
		label[i] = -1;
	for (iter = 1; iter <= KMEANS_MAX_ITERATIONS; iter++)
	{
		bool		changed = false;

		CHECK_FOR_INTERRUPTS();
		for (int i = 0; i < n; i++)
		{
			int			j = kmeans_nearest(k, d, centroids, X + (Size) i * d);

			changed |= (j != label[i]);
			label[i] = j;
		}
		if (!changed)
			break;
		memset(count, 0, sizeof(int) * k);
		memset(sum, 0, sizeof(double) * (Size) k * d);
		for (int i = 0; i < n; i++)
		{
			double	   *s = sum + (Size) label[i] * d;
			const double *x = X + (Size) i * d;

			count[label[i]]++;
			for (int c = 0; c < d; c++)
				s[c] += x[c];
		}
		for (int j = 0; j < k; j++)
			if (count[j] > 0)
				for (int c = 0; c < d; c++)
					centroids[(Size) j * d + c] = sum[(Size) j * d + c] / count[j];
	}
	pfree(label);
	pfree(count);
	pfree(sum);
	return Min(iter, KMEANS_MAX_ITERATIONS);
}
