/*
 * change_point.c — a GLR scan for one shift in the mean of a sequence of
 * residuals e[0..n) (a Gaussian mean change of unknown common variance).
 *
 * The first `burn` residuals are left out (an arm's first residuals are
 * under a model of almost no rows, its prior).  For every split of the
 * rest into a head of j and a tail of m − j residuals, both at least
 * min_seg long, the statistic is the two-sample t²
 *
 *   G(j) = j(m − j)/m · (ē_head − ē_tail)² / v(j),
 *
 * v(j) the pooled variance within the two parts, (SS_head + SS_tail)/(m − 2):
 * the residuals' scale drops out, so they need only be standardised
 * relative to each other.  The change is at the split of the largest G if
 * that reaches threshold.  Sums are taken in index order, once, as
 * prefix sums: O(n), the same bits everywhere.
 */
#include "postgres.h"

#include "math/change_point.h"

/*
 * The number of leading residuals before the change (0: none found), and
 * in *statistic the largest G (0 if no split is long enough).
 */
int
change_point_scan(int n, const double *e, int burn, int min_seg, double threshold,
				  double *statistic)
{
	int			m = n - burn;
	double	   *s1;
	double	   *s2;
	double		best = 0.0;
	int			at = 0;

	*statistic = 0.0;
	if (burn < 0 || min_seg < 2 || m < 2 * min_seg)
		return 0;
	s1 = palloc(sizeof(double) * (m + 1));
	s2 = palloc(sizeof(double) * (m + 1));
	s1[0] = s2[0] = 0.0;
	for (int i = 0; i < m; i++)
	{
		s1[i + 1] = s1[i] + e[burn + i];
		s2[i + 1] = s2[i] + e[burn + i] * e[burn + i];
	}
	for (int j = min_seg; j <= m - min_seg; j++)
	{
		double		head = s1[j] / j;
		double		tail = (s1[m] - s1[j]) / (m - j);
		double		ss = (s2[j] - s1[j] * head) + ((s2[m] - s2[j]) - (s1[m] - s1[j]) * tail);
		double		v = ss / (m - 2);
		double		g;

		if (v <= 0.0)
			continue;
		g = (double) j * (m - j) / m * (head - tail) * (head - tail) / v;
		if (g > best)
		{
			best = g;
			at = j;
		}
	}
	pfree(s1);
	pfree(s2);
	*statistic = best;
	return best >= threshold ? burn + at : 0;
}
