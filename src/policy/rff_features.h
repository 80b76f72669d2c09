/*
 * rff_features.h — random Fourier features of shift-invariant kernels (rff_ucb).
 */
#ifndef MODEL_SELECT_RFF_FEATURES_H
#define MODEL_SELECT_RFF_FEATURES_H

#include "model/settings.h"

extern void rff_features(const SelectorConfig *cfg, const double *x, double *phi);
extern Size rff_cache_bytes(void);
extern void rff_cache_trim(Size keep);
extern void rff_features_block(const SelectorConfig *cfg, int m, const double *X, double *Phi,
							   int ldphi);

#endif
