/*
 * bkb.c — bkb: budgeted kernelized bandit with adaptive Nyström
 * sketching (BKB, Calandriello et al. 2019 (BKB)), one independent BKB per arm (§5.1) over the
 * selector's kernel with the intercept, k' = k + intercept.
 *
 * Model (§2.1, §5.4).  S is a dictionary of m distinct points of the arm's
 * history, λ = alpha, and σ̃² is the λ-normalised variance of §1.4:
 *
 *   K'_SS = L_S L_Sᵀ,  z(x) = L_S⁻¹ k'_S(x)                 (Nyström embedding)
 *   V = Σ_i z(x_i) z(x_i)ᵀ + αI = R Rᵀ,  b = Σ_i r_i z(x_i)   (over all n rewards)
 *   mean  = z(x)ᵀ V⁻¹ b
 *   σ̃²(x) = max(0, k'(x,x) − |z(x)|²)/α + |R⁻¹ z(x)|²,  width = σ̃(x)
 *
 * With a budget and "cost_model" each arm also learns its cost as lin_ucb
 * does, by the same regression in the embedding: cost(x) = max(0, c̄ +
 * z(x)ᵀV⁻¹(Σ c z − c̄ Σ z)) over the rewards that logged a cost c (c̄ their
 * mean; a reward without one counts at c̄), from sums kept beside b and
 * recomputed with it at a resample.
 *
 * With S = every rewarded point this is exactly pak_ucb's posterior: the
 * width is α^(-1/2) sqrt(k'(x,x) − k'ᵀ(K' + αI)⁻¹k') (test/bkb.sql checks it).
 *
 * Schedule.  The n-th reward of an arm (n counted from 1) resamples the
 * dictionary from scratch when n is a power of two (1, 2, 4, 8, ...); any
 * other reward keeps S fixed and folds in exactly: b += r z, V += z zᵀ by a
 * rank-1 update of R, O(m·dim + m²) plus the copy of the state.  A resample
 * (§2.3) draws, for every point i of the history including the new one,
 * q_i ~ Bernoulli(min(1, qbar·σ̃²(x_i))) with σ̃² under the model before the
 * reward (Algorithm 1's σ̃_t); it keeps at least one point (the one of largest
 * σ̃², §2.3 [design]), then recomputes L_S, every z(x_i), R and b in
 * O(n·m² + n·m·dim).  The draws come from the in-tree PRNG seeded by
 * (selector seed, n, the arm's first context), so live, replay and
 * rebuild_state() agree; build() is n appends.  model_select.resample()
 * (bkb_resample) forces a resample under the current model with another
 * salt (so it is a deterministic function of the state); rebuild_state()
 * replays the schedule only, so it does not reproduce forced resamples.
 *
 * Deviations from the design notes, and why:
 * - No stored σ̃² per point: σ̃² of every point is recomputed under the current
 *   model at each resample (§2.3 asks for σ̃_t, not stale values; with S
 *   fixed σ̃² only decreases as data arrive, so stale values inflate m).  The
 *   cost is the O(n·m²) pass §5.4 step 4 would spend after the resample.
 * - No jitter on K'_SS: L_S is built point by point and a candidate whose
 *   Schur complement is below BKB_DEPENDENT·k'(x,x) is dropped, as it lies
 *   numerically in the span of the earlier ones (duplicate contexts, §2.3
 *   "Duplicates"; a pivoted Cholesky, §2.1).  Jitter would change the model.
 * - D̃ of the adaptive beta is exact under the current model, from
 *   Σ_i σ̃²(x_i) = (Σ_i k'(x_i,x_i) − tr V + αm)/α + m − α·tr(V⁻¹).
 *
 * State body (float8 values, after the 24-byte header):
 *   m                       dictionary size
 *   X[n][dim]               contexts as used (normalised)
 *   y[n]                    rewards, in log order
 *   S[m]                    history indices of the dictionary, increasing
 *   L_S[m(m+1)/2]           Cholesky factor of K'_SS, packed by rows
 *   R[m(m+1)/2]             Cholesky factor of V, packed by rows
 *   b[m]                    Zᵀy
 * so VARSIZE = 24 + 8·(1 + n·(dim + 1) + m² + 3m), i.e. octet_length(state)
 * (= VARSIZE − 4) = 20 + 8·(1 + n·(dim + 1) + m² + 3m), and conversely
 * m = (sqrt(9 + 4·((octet_length − 20)/8 − 1 − n·(dim + 1))) − 3)/2.
 * With a cost model each row also keeps its reward's COST_COLUMNS after y,
 * C[n][2], and the body ends with the cost sums Σ c z (m), Σ z (m), Σ c and
 * their count: 2n + 2m + 2 more values.
 * O(n·dim + m²): linear in n (capped by `cap`), quadratic only in m.
 */
#include "postgres.h"

#include <math.h>

#include "model/kernel.h"
#include "math/elementary.h"
#include "math/linalg.h"
#include "policy/bkb.h"
#include "policy/bkb_view.h"
#include "math/vecops.h"
#include "model/state.h"
#include "model/registry.h"

#define BKB_SALT_SCHEDULED UINT64_C(0x626b622d73636864)	/* "bkb-schd" */
#define BKB_SALT_FORCED UINT64_C(0x626b622d666f7263)	/* "bkb-forc" */

struct ArmModel
{
	int			m;
	const double *XS;			/* dictionary contexts, m × dim */
	const double *sqS;
	const double *Ls;
	const double *R;
	const double *rb;			/* R⁻¹b: the mean is (R⁻¹z)·(R⁻¹b) = zᵀV⁻¹b */
	double		multiplier;
	const double *cost_weights;	/* with a cost model: V⁻¹(Σ c z − c̄ Σ z) */
	double		cost_level;		/* and c̄ */
	double	   *z;				/* scratch */
	double	   *t;
};

/* The cost columns a row keeps: COST_COLUMNS with a cost model, else none. */
static int
cost_columns(const SelectorConfig *cfg)
{
	return cfg->learns_cost ? COST_COLUMNS : 0;
}

static void
bkb_view(const SelectorConfig *cfg, const StateHeader *st, BkbView *v)
{
	double	   *body = (double *) STATE_BODY(st);

	v->n = st->n;
	v->m = (int) body[0];
	v->cc = cost_columns(cfg);
	v->X = body + 1;
	v->y = v->X + (Size) v->n * cfg->dim;
	v->C = v->y + v->n;
	v->S = v->C + (Size) v->n * v->cc;
	v->Ls = v->S + v->m;
	v->R = v->Ls + PACKED_SIZE(v->m);
	v->b = v->R + PACKED_SIZE(v->m);
	v->cost_sums = v->b + v->m;
}

/* The largest body for n rows: a dictionary of every row (bkb_check checks m). */
static Size
bkb_body(const SelectorConfig *cfg, int n)
{
	return BKB_BODY(n, n, cfg->dim, cost_columns(cfg));
}

static StateHeader *
bkb_alloc(const SelectorConfig *cfg, int n, int m, BkbView *v)
{
	StateHeader *st = state_alloc(cfg, n, BKB_BODY(n, m, cfg->dim, cost_columns(cfg)));

	STATE_BODY(st)[0] = m;
	bkb_view(cfg, st, v);
	return st;
}

/*
 * How many of an arm's n newest rewards its state keeps.  bkb keeps every
 * context to resample from, so an arm that reaches `cap` rewards compacts
 * (compacted_rows, model/state.c): a pure function of n, so the live state
 * and rebuild_state() agree.
 */
int
bkb_kept_rows(const SelectorConfig *cfg, int n)
{
	return compacted_rows(cfg->cap, n);
}

/* Validate a stored state's size and dictionary, and view it. */
static void
bkb_check(const SelectorConfig *cfg, const StateHeader *st, BkbView *v)
{
	Size		body = state_body_doubles(st);
	double		m = body >= 1 ? STATE_BODY(st)[0] : -1;
	bool		ok = m >= 0 && m <= st->n && m == floor(m) &&
		body == BKB_BODY(st->n, (int) m, cfg->dim, cost_columns(cfg));

	if (ok)
	{
		bkb_view(cfg, st, v);
		for (int j = 0; j < v->m && ok; j++)
			ok = v->S[j] >= 0 && v->S[j] < v->n && v->S[j] == floor(v->S[j]) &&
				(j == 0 || v->S[j] > v->S[j - 1]);
	}
	if (!ok)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("bkb state has the wrong size or an invalid dictionary for n = %d", st->n),
				 errhint("Run model_select.rebuild_state() to recompute it from the reward log.")));
}

/* PolicyOps.check: the dictionary of a stored state. */
static void
bkb_check_stored(const SelectorConfig *cfg, const StateHeader *st)
{
	BkbView		v;

	bkb_check(cfg, st, &v);
}

/* Add a row's cost (costs: its cost columns) with its embedding z to v's cost sums. */
static void
add_cost(BkbView *v, const double *z, const double *costs)
{
	if (v->cc == 0 || costs[0] == 0)
		return;
	if (v->m > 0)
	{
		axpy(v->m, costs[1], z, v->cost_sums);
		axpy(v->m, 1.0, z, v->cost_sums + v->m);
	}
	v->cost_sums[2 * v->m] += costs[1];
	v->cost_sums[2 * v->m + 1] += 1.0;
}

/* R, b and the cost sums of v from its history and dictionary (X, y, C, S, L_S set). */
static void
fit_factors(const SelectorConfig *cfg, BkbView *v)
{
	double	   *Z = NULL;

	if (v->m > 0)
	{
		Z = bkb_embed_rows(cfg, v, v->n, v->X);
		gram_packed(v->n, v->m, Z, cfg->alpha, true, v->R);
		gemv_cols(v->n, v->m, Z, v->y, 0.0, v->b);
	}
	for (int i = 0; i < v->n; i++)
		add_cost(v, Z ? Z + (Size) i * v->m : NULL, v->C + (Size) i * v->cc);
	if (Z)
		pfree(Z);
}

/*
 * Rows [from, from + count) of v's history as the fold passes rows (row_dim
 * values: the context, then the cost columns) and their rewards (*y), then
 * (x, r) if x is given.
 */
static double *
history_rows(const SelectorConfig *cfg, const BkbView *v, int from, int count,
			 const double *x, double r, double **y)
{
	int			total = count + (x ? 1 : 0);
	double	   *rows = palloc(sizeof(double) * Max((Size) total * cfg->row_dim, 1));

	*y = palloc(sizeof(double) * Max(total, 1));
	for (int i = 0; i < count; i++)
	{
		memcpy(rows + (Size) i * cfg->row_dim, v->X + (Size) (from + i) * cfg->dim, sizeof(double) * cfg->dim);
		memcpy(rows + (Size) i * cfg->row_dim + cfg->dim, v->C + (Size) (from + i) * v->cc,
			   sizeof(double) * v->cc);
		(*y)[i] = v->y[from + i];
	}
	if (x)
	{
		memcpy(rows + (Size) count * cfg->row_dim, x, sizeof(double) * cfg->row_dim);
		(*y)[count] = r;
	}
	return rows;
}

/*
 * A state for the history (n rows of row_dim values, y) with a dictionary
 * resampled from scratch, the draws using σ̃² under `model` (m = 0: the
 * prior, k'/α).
 */
static StateHeader *
resample_history(const SelectorConfig *cfg, const BkbView *model, int n,
				 const double *rows, const double *y, uint64 salt)
{
	double	   *X = palloc(sizeof(double) * (Size) n * cfg->dim);
	double	   *S = palloc(sizeof(double) * n);
	double	   *Ls;
	int			m;
	StateHeader *st;
	BkbView		v;

	for (int i = 0; i < n; i++)
		memcpy(X + (Size) i * cfg->dim, rows + (Size) i * cfg->row_dim, sizeof(double) * cfg->dim);
	m = bkb_sample_dictionary(cfg, model, n, X, salt, S, &Ls);
	st = bkb_alloc(cfg, n, m, &v);
	memcpy(v.X, X, sizeof(double) * n * cfg->dim);
	memcpy(v.y, y, sizeof(double) * n);
	for (int i = 0; i < n; i++)
		memcpy(v.C + (Size) i * v.cc, rows + (Size) i * cfg->row_dim + cfg->dim, sizeof(double) * v.cc);
	memcpy(v.S, S, sizeof(double) * m);
	memcpy(v.Ls, Ls, sizeof(double) * PACKED_SIZE(m));
	fit_factors(cfg, &v);
	pfree(X);
	pfree(S);
	pfree(Ls);
	return st;
}

static StateHeader *bkb_build(const SelectorConfig *cfg, int n, const double *X, const double *r);

/* A full arm plus (x, r): rebuilt from its newest bkb_kept_rows(cap + 1) rows. */
static StateHeader *
bkb_compact(const SelectorConfig *cfg, const BkbView *ov, const double *x, double r)
{
	int			keep = bkb_kept_rows(cfg, cfg->cap + 1);
	double	   *y;
	double	   *X = history_rows(cfg, ov, cfg->cap - (keep - 1), keep - 1, x, r, &y);
	StateHeader *st;

	st = bkb_build(cfg, keep, X, y);
	pfree(X);
	pfree(y);
	return st;
}

static StateHeader *
bkb_append(const SelectorConfig *cfg, const StateHeader *old, const double *x, double r)
{
	int			n = old ? old->n : 0;
	int			dim = cfg->dim;
	BkbView		ov = {0},
				v;
	StateHeader *st;

	if (old)
		bkb_check(cfg, old, &ov);
	if (n >= cfg->cap)
		return bkb_compact(cfg, &ov, x, r);
	if (((n + 1) & n) == 0)
	{
		/* n + 1 is a power of two: resample under the model before x */
		double	   *y;
		double	   *X = history_rows(cfg, &ov, 0, n, x, r, &y);

		st = resample_history(cfg, &ov, n + 1, X, y, BKB_SALT_SCHEDULED);
		pfree(X);
		pfree(y);
		return st;
	}

	/* fixed dictionary: the exact DTC update of V and b */
	st = bkb_alloc(cfg, n + 1, ov.m, &v);
	memcpy(v.X, ov.X, sizeof(double) * n * dim);
	memcpy(v.X + (Size) n * dim, x, sizeof(double) * dim);
	memcpy(v.y, ov.y, sizeof(double) * n);
	v.y[n] = r;
	memcpy(v.C, ov.C, sizeof(double) * n * v.cc);
	memcpy(v.C + (Size) n * v.cc, x + dim, sizeof(double) * v.cc);
	/* S, L_S, R, b and the cost sums are contiguous in both states */
	memcpy(v.S, ov.S, sizeof(double) * (2 * PACKED_SIZE(ov.m) + 2 * (Size) ov.m +
										(v.cc > 0 ? BKB_COST_SUMS(ov.m) : 0)));
	if (v.m > 0)
	{
		double	   *z = bkb_embed_rows(cfg, &v, 1, x);

		for (int j = 0; j < v.m; j++)
			v.b[j] += r * z[j];
		chol_rank1_update(v.m, v.R, z);
		add_cost(&v, z, x + dim);
		pfree(z);
	}
	else
		add_cost(&v, NULL, x + dim);
	return st;
}

/* n successive appends, so that rebuild_state() equals the live state. */
static StateHeader *
bkb_build(const SelectorConfig *cfg, int n, const double *X, const double *r)
{
	StateHeader *st = NULL;
	BkbView		v;

	if (n == 0)
		return bkb_alloc(cfg, 0, 0, &v);
	for (int i = 0; i < n; i++)
	{
		StateHeader *next = bkb_append(cfg, st, X + (Size) i * cfg->row_dim, r[i]);

		if (st)
			pfree(st);
		st = next;
	}
	return st;
}

StateHeader *
bkb_resample(const SelectorConfig *cfg, const StateHeader *st)
{
	BkbView		v;
	double	   *rows;
	double	   *y;
	StateHeader *resampled;

	bkb_check(cfg, st, &v);
	if (v.n == 0)
		return bkb_alloc(cfg, 0, 0, &v);
	rows = history_rows(cfg, &v, 0, v.n, NULL, 0.0, &y);
	resampled = resample_history(cfg, &v, v.n, rows, y, BKB_SALT_FORCED);
	pfree(rows);
	pfree(y);
	return resampled;
}

/*
 * The practical beta of Calandriello et al. 2019 (BKB) [ref-code]:
 *   sqrt(α)·F + sqrt(ξ² (log(max(e, n))·D̃ + log(1/δ))),  D̃ = Σ_i σ̃²(x_i),
 * with D̃ from traces (see the header): O(n·dim + m³), not O(n·m²).
 */
static double
adaptive_beta(const SelectorConfig *cfg, const BkbView *v)
{
	double		sum_k = 0.0,
				tr_v = 0.0,
				tr_vinv,
				d;

	for (int i = 0; i < v->n; i++)
		sum_k += kernel_self(cfg, v->X + (Size) i * cfg->dim);
	for (Size j = 0; j < PACKED_SIZE(v->m); j++)
		tr_v += v->R[j] * v->R[j];
	tr_vinv = chol_inverse_sqnorm(v->m, v->R);
	d = (sum_k - (tr_v - cfg->alpha * v->m)) / cfg->alpha + v->m - cfg->alpha * tr_vinv;
	d = Max(d, 0.0);
	return sqrt(cfg->alpha) * cfg->rkhs_bound +
		sqrt(cfg->noise * cfg->noise * (portable_log(Max(M_E, (double) v->n)) * d - portable_log(cfg->delta)));
}

/* The cost model's level and weights w (m) from v's sums (none logged a cost: free). */
static void
bkb_cost_model(const BkbView *v, double *level, double *w)
{
	int			m = v->m;
	const double *sums = v->cost_sums;

	*level = sums[2 * m + 1] > 0 ? sums[2 * m] / sums[2 * m + 1] : 0.0;
	for (int j = 0; j < m; j++)
		w[j] = sums[j] - *level * sums[m + j];
	if (m > 0 && sums[2 * m + 1] > 0)
		chol_solve(m, v->R, w);
}

/*
 * What a decode computes from the state alone (PolicyOps.prepare), in this
 * order: the radius multiplier (the adaptive beta's O(n·dim + m³), or eta),
 * the cost model's c̄, R⁻¹b (m), the cost model's weights (m, with a cost
 * model), the dictionary's squared norms (m) and its contexts (m × dim,
 * gathered from the history).  A published version carries it, computed
 * once by its publisher for every backend that decodes it (which then
 * scores from the shared copy instead of gathering one of its own); decode
 * computes it into a buffer of its own with the same code (the same bits).
 */
typedef struct BkbPrepared
{
	double	   *multiplier;
	double	   *cost_level;
	double	   *rb;
	double	   *cost_weights;	/* NULL: no cost model */
	double	   *sqS;
	double	   *XS;
} BkbPrepared;

static Size
bkb_prepared_doubles(const SelectorConfig *cfg, int m)
{
	return 2 + (Size) m * (2 + (cfg->learns_cost ? 1 : 0) + cfg->dim);
}

/* A version's prepared part (none for an empty dictionary). */
static Size
bkb_prepared_size(const SelectorConfig *cfg, const StateHeader *st)
{
	BkbView		v;

	bkb_check(cfg, st, &v);
	return v.m > 0 ? bkb_prepared_doubles(cfg, v.m) : 0;
}

/* Where each part lies in the prepared doubles at `at` (the one place that knows the layout). */
static void
bkb_prepared_parts(const SelectorConfig *cfg, int m, double *at, BkbPrepared *out)
{
	out->multiplier = at;
	out->cost_level = at + 1;
	out->rb = at + 2;
	at += 2 + m;
	out->cost_weights = cfg->learns_cost ? at : NULL;
	if (cfg->learns_cost)
		at += m;
	out->sqS = at;
	out->XS = at + m;
}

static void
bkb_prepare(const SelectorConfig *cfg, const StateHeader *st, double *out)
{
	BkbView		v;
	BkbPrepared pp;

	bkb_check(cfg, st, &v);
	bkb_prepared_parts(cfg, v.m, out, &pp);
	*pp.multiplier = cfg->adaptive_beta ? adaptive_beta(cfg, &v) : cfg->eta;
	*pp.cost_level = 0.0;
	memcpy(pp.rb, v.b, sizeof(double) * v.m);
	chol_forward(v.m, v.R, pp.rb);
	if (cfg->learns_cost)
		bkb_cost_model(&v, pp.cost_level, pp.cost_weights);
	bkb_gather_into(cfg, &v, pp.XS, pp.sqS);
}

/* Decoded, with what bkb_prepare() computed (NULL: computed here). */
static ArmModel *
bkb_decode_prepared(const SelectorConfig *cfg, const StateHeader *st, const double *prepared)
{
	ArmModel   *model = palloc(sizeof(ArmModel));
	BkbView		v;
	BkbPrepared pp;

	bkb_check(cfg, st, &v);
	if (prepared == NULL)
	{
		double	   *own = palloc(sizeof(double) * bkb_prepared_doubles(cfg, v.m));

		bkb_prepare(cfg, st, own);
		prepared = own;
	}
	bkb_prepared_parts(cfg, v.m, unconstify(double *, prepared), &pp);
	model->m = v.m;
	model->XS = pp.XS;
	model->sqS = pp.sqS;
	model->Ls = v.Ls;
	model->R = v.R;
	model->rb = pp.rb;
	model->multiplier = *pp.multiplier;
	model->cost_level = *pp.cost_level;
	model->cost_weights = pp.cost_weights;
	model->z = palloc(sizeof(double) * Max(v.m, 1));
	model->t = palloc(sizeof(double) * Max(v.m, 1));
	return model;
}

static ArmModel *
bkb_decode(const SelectorConfig *cfg, const StateHeader *st)
{
	return bkb_decode_prepared(cfg, st, NULL);
}

/* The score of a context x from its embedding z = L_S⁻¹k'_S(x) and t = R⁻¹z. */
static void
bkb_score_at(const SelectorConfig *cfg, const ArmModel *model, const double *x, const double *z,
			 const double *t, ArmScore *out)
{
	int			m = model->m;
	double		resid = kernel_self(cfg, x) - dot(m, z, z);

	out->mean = dot(m, t, model->rb);
	out->width = sqrt(Max(resid, 0.0) / cfg->alpha + dot(m, t, t));
	out->radius = model->multiplier;
	out->alpha = cfg->alpha;
	if (model->cost_weights != NULL)
		out->cost = Max(0.0, model->cost_level + dot(m, z, model->cost_weights));
}

static void
bkb_score(const SelectorConfig *cfg, const ArmModel *model, const double *x, ArmScore *out)
{
	int			m = model->m;

	kernel_vector(cfg, m, model->XS, model->sqS, x, model->z);
	chol_forward(m, model->Ls, model->z);
	memcpy(model->t, model->z, sizeof(double) * m);
	chol_forward(m, model->R, model->t);
	bkb_score_at(cfg, model, x, model->z, model->t, out);
}

/*
 * bkb_score for a block of nrows contexts: the kernel block against the
 * dictionary (kernel_block) and both solves four contexts at a time
 * (chol_forward_rows), with a single score's bits.
 */
static void
bkb_score_block(const SelectorConfig *cfg, const ArmModel *model, int nrows, const double *X,
				void **shared, ArmScore *out)
{
	int			m = model->m;
	Size		size = (Size) nrows * m;
	double	   *Z = palloc(sizeof(double) * Max(size, 1));
	double	   *T = palloc(sizeof(double) * Max(size, 1));

	kernel_block(cfg, m, model->XS, model->sqS, nrows, X, Z);
	chol_forward_rows(m, model->Ls, nrows, Z);
	memcpy(T, Z, sizeof(double) * size);
	chol_forward_rows(m, model->R, nrows, T);
	for (int i = 0; i < nrows; i++)
		bkb_score_at(cfg, model, X + (Size) i * cfg->dim, Z + (Size) i * m, T + (Size) i * m, &out[i]);
	pfree(Z);
	pfree(T);
}

/* bkb's own settings: the dictionary's oversampling and its adaptive radius. */
static const char *const bkb_settings[] = {"qbar", "adaptive_beta", NULL};

/*
 * bkb approximates pak_ucb's posterior: its defaults, so that the two stay
 * comparable, and a dictionary as large as at the table's scale: σ̃² scales
 * as 1/alpha, so qbar 40 at alpha 20 keeps a point as often as qbar 2 (the
 * table's) at alpha 1 (with qbar 2, a dictionary 20 times sparser).
 */
static const PolicyDefault bkb_defaults[] = {UCB_SCALE_DEFAULTS, {"qbar", 40}, {NULL, 0}};

const PolicyOps bkb_ops = {
	.name = "bkb", .kind = POLICY_BKB,
	.uses_context = true, .kernels = KERNELS_ALL, .bounds = BOUNDS_BETA,
	.keeps_rows = true, .dictionary = true, .learns_cost = true, .settings = bkb_settings,
	.defaults = bkb_defaults,
	POLICY_FUNCTIONS(bkb), .score_block = bkb_score_block, .kept_rows = bkb_kept_rows,
	.prepared_size = bkb_prepared_size, .prepare = bkb_prepare, .decode_prepared = bkb_decode_prepared,
	.check = bkb_check_stored,
};
