/*
 * features.h — random Fourier features of shift-invariant kernels (rff_ucb).
 */
#ifndef MODEL_SELECT_FEATURES_H
#define MODEL_SELECT_FEATURES_H

#include "settings.h"

extern void rff_features(const SelectorConfig *cfg, const double *x, double *phi);

#endif
