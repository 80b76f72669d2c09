/*
 * change_point.h — a GLR scan for one shift in the mean of a sequence
 * (change_point.c).
 */
#ifndef MODEL_SELECT_CHANGE_POINT_H
#define MODEL_SELECT_CHANGE_POINT_H

extern int	change_point_scan(int n, const double *e, int burn, int min_seg, double threshold,
							  double *statistic);

#endif
