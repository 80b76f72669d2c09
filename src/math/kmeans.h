/*
 * kmeans.h — Lloyd's k-means with k-means++ seeding from the in-tree PRNG
 * (the codebook of model/codebook.c).
 */
#ifndef MODEL_SELECT_KMEANS_H
#define MODEL_SELECT_KMEANS_H

#include <stdint.h>

/* Lloyd's iterations stop at this many if the assignment still changes. */
#define KMEANS_MAX_ITERATIONS 100

extern int	kmeans_nearest(int k, int d, const double *centroids, const double *x);
extern int	kmeans_fit(int n, int d, const double *X, int k, uint64_t seed, double *centroids);

#endif
