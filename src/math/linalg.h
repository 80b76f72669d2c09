/*
 * linalg.h — Cholesky factors in packed storage and their updates.
 *
 * A symmetric positive definite n×n matrix A = L Lᵀ is kept as its lower
 * factor L, packed by rows: L[i][j] (j <= i) at index i(i+1)/2 + j.  Growing
 * n by one appends one row, so a factor grows in place.
 */
#ifndef MODEL_SELECT_LINALG_H
#define MODEL_SELECT_LINALG_H


#define PACKED_SIZE(n) ((Size) (n) * ((n) + 1) / 2)
#define PACKED_ROW(i) ((Size) (i) * ((i) + 1) / 2)

extern void chol_factor_rows(int n, double *lp, double floor);
extern void chol_factor_shifted(int n, const double *ap, double shift, double floor, double *out);
extern double chol_inverse_sqnorm(int n, const double *lp);
extern double chol_log_det_scaled(int n, const double *lp, double scale);
extern void gram_packed(int n, int p, const double *Z, double ridge, bool factor, double *lp);
extern void row_gram_packed(int n, int p, const double *Z, double ridge, bool factor, double *lp);
extern double chol_append_row(int n, double *lp, const double *b, double c, double floor);
extern void chol_rank1_update(int n, double *lp, double *x);
extern bool chol_rank1_downdate(int n, double *lp, double *x);
extern void chol_rank_updates(int n, double *lp, double *x, int m);
extern void chol_drop_first(int n, const double *lp, double *out);
extern void chol_forward(int n, const double *lp, double *x);
extern void chol_forward_rows(int n, const double *lp, int m, double *B);
extern double *chol_forward_copy(int n, const double *lp, const double *b);
extern void chol_forward_block(int n, const double *lp, const double *u, int m, const double *K,
							   double *means, double *sqnorms);
extern void chol_solve(int n, const double *lp, double *x);
extern void chol_product(int n, const double *lp, double shift, double *out);

#endif
