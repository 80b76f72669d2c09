/*
 * codebook.h — a selector's codebook: the one-hot of a context's nearest
 * fitted centroid, which lin_ucb appends to its features.
 */
#ifndef MODEL_SELECT_CODEBOOK_H
#define MODEL_SELECT_CODEBOOK_H

#include "model/settings.h"

/* A fit reads at most this many rows of its source ... */
#define CODEBOOK_MAX_ROWS 20000
/* ... and fewer when one of Lloyd's iterations would cost more multiply-adds (rows × k × dim). */
#define CODEBOOK_MAX_WORK 4e8

extern int	codebook_max_rows(const SelectorConfig *cfg);
extern const double *codebook_centroids(const SelectorConfig *cfg);
extern double *codebook_fit(const SelectorConfig *cfg, int n, const double *contexts);
extern void codebook_features(const SelectorConfig *cfg, const double *x, double *onehot);

#endif
