/*
 * reservation.h — Weitzman reservation indices (Belloni, Chen & Wei 2026): the σ
 * that solves E[(V − σ)⁺] = c for a box whose value V has a known law.
 *
 * The solvers take validated input (finite values, c >= 0) and never
 * ereport; the SQL wrapper in reservation.c does the checking.
 */
#ifndef MODEL_SELECT_RESERVATION_H
#define MODEL_SELECT_RESERVATION_H

/*
 * V = v[i] with weight w[i] >= 0 (weights need not sum to 1: they are
 * normalised by their sum, which must be > 0).  Overwrites v and w: the
 * atoms of positive weight, sorted by ascending v, come first.  Exact
 * piecewise-linear inversion.
 */
extern double reservation_discrete(double *v, double *w, int n, double cost);

/* V ~ Uniform[a, b], a < b: closed form. */
extern double reservation_uniform(double a, double b, double cost);

/* V ~ N(mean, sd²), sd > 0: safeguarded Newton; +Infinity when cost = 0. */
extern double reservation_gaussian(double mean, double sd, double cost);

#endif
