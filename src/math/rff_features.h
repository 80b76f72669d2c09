/*
 * rff_features.h — random Fourier features of shift-invariant kernels (rff_ucb).
 */
#ifndef MODEL_SELECT_RFF_FEATURES_H
#define MODEL_SELECT_RFF_FEATURES_H

#include "core/settings.h"

extern void rff_features(const SelectorConfig *cfg, const double *x, double *phi);

#endif
