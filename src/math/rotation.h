/*
 * rotation.h — the one rotation of a rank-1 update or downdate that a
 * diagonal fixes, shared by rotate.c (one update) and rotate_many.c (several
 * together), so that both compute it with the same operations in the same
 * order (their bits are compared in test/unit/).
 */
#ifndef MODEL_SELECT_ROTATION_H
#define MODEL_SELECT_ROTATION_H

#include <math.h>

/*
 * Row i's diagonal *diag and its running X give column i's rotation: ci, a
 * and b (rotate.c's comment) and the product P (*p) for the columns after
 * it; *diag becomes the new diagonal.  sign 1 updates, -1 downdates.
 * false, leaving them, when the new diagonal would not be numerically
 * positive.
 */
static inline bool
rotation_at_diagonal(double *diag, double X, double sign, double *p, double *ci, double *a,
					 double *b)
{
	double		d = *diag;
	double		xi = X * *p;
	double		r2 = d * d + sign * xi * xi;

	if (!(r2 > 1e-12 * d * d))
		return false;
	*diag = sqrt(r2);
	*ci = d / *diag;
	*a = xi / d / *p;
	*p *= *ci;
	*b = sign * (xi / d) * *p;
	return true;
}

#endif
