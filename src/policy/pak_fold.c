/*
 * pak_fold.c — the folds of pak_ucb's state (policy/pak_state.h): from
 * scratch (build: the kernel matrix factorised row by row), one reward at a
 * time (append: one factor row, in place; a window's rank-1 drop; a
 * discount's or a compaction's rebuild), and the rows' storage (row_spans),
 * with each row's cost columns beside its context under a cost model.
 */
#include "postgres.h"

#include <math.h>

#include "math/elementary.h"
#include "model/kernel.h"
#include "policy/pak_state.h"

/*
 * Rows a state of n rows has room for: a function of n (and of the most rows
 * cfg lets an arm hold, which the body never exceeds), so that every copy of
 * a state agrees on its layout.  Rounding n up by a sixteenth to an eighth
 * lets the fold append rows in place (pak_append) and move the body only
 * once every such step: O(n) copying per reward amortised, not O(n²).
 */
int
pak_capacity(const SelectorConfig *cfg, int n)
{
	int			limit = Min(cfg->cap, discount_horizon(cfg));
	int			step = 16;

	if (cfg->window > 0)
		limit = Min(limit, cfg->window);
	if (cfg->restart_every > 0)
		limit = Min(limit, cfg->restart_every);
	if (n >= limit)
		return n;
	while (step <= n / 16)
		step *= 2;
	return Min(limit, (n + step - 1) / step * step);
}

Size
pak_body(const SelectorConfig *cfg, int n)
{
	return PAK_BODY(pak_capacity(cfg, n), cfg->dim, pak_factor_count(cfg), pak_cost_columns(cfg));
}

/*
 * PolicyOps.row_spans: where rows [first, last) of st are: a run of X, of v,
 * of each factor (a packed factor's rows are consecutive) and of the cost
 * columns.
 */
int
pak_row_spans(const SelectorConfig *cfg, const StateHeader *st, int first, int last,
			  RowSpan *spans)
{
	int			c = pak_capacity(cfg, st->n);
	int			nf = pak_factor_count(cfg);
	int			cc = pak_cost_columns(cfg);
	Size		v = (Size) c * st->dim;

	StaticAssertStmt(MAX_GRID + 4 <= MAX_ROW_SPANS, "pak_ucb states have up to MAX_GRID + 4 spans");
	spans[0].offset = (Size) first * st->dim;
	spans[0].count = (Size) (last - first) * st->dim;
	spans[1].offset = v + first;
	spans[1].count = last - first;
	for (int f = 0; f < nf; f++)
	{
		spans[2 + f].offset = v + c + f * PACKED_SIZE(c) + PACKED_ROW(first);
		spans[2 + f].count = PACKED_ROW(last) - PACKED_ROW(first);
	}
	if (cc == 0)
		return 2 + nf;
	spans[2 + nf].offset = v + c + nf * PACKED_SIZE(c) + (Size) first * cc;
	spans[2 + nf].count = (Size) (last - first) * cc;
	return 3 + nf;
}

/*
 * Rows [0, n) of X (n × row_dim: the context, then the cost columns) into
 * st's rows [at, at + n).
 */
static void
pak_put_rows(const SelectorConfig *cfg, StateHeader *st, int at, int n, const double *X)
{
	int			c = pak_capacity(cfg, st->n);
	int			cc = pak_cost_columns(cfg);
	double	   *costs = PAK_C(st, c, pak_factor_count(cfg));

	for (int i = 0; i < n; i++)
	{
		const double *row = X + (Size) i * cfg->row_dim;

		memcpy(PAK_X(st) + (Size) (at + i) * cfg->dim, row, sizeof(double) * cfg->dim);
		memcpy(costs + (Size) (at + i) * cc, row + cfg->dim, sizeof(double) * cc);
	}
}

/* Row i of st as the fold passed it (row_dim values) into out. */
static void
pak_get_row(const SelectorConfig *cfg, const StateHeader *st, int i, double *out)
{
	int			cc = pak_cost_columns(cfg);
	const double *costs = PAK_C(st, pak_capacity(cfg, st->n), pak_factor_count(cfg));

	memcpy(out, PAK_X(st) + (Size) i * cfg->dim, sizeof(double) * cfg->dim);
	memcpy(out + cfg->dim, costs + (Size) i * cc, sizeof(double) * cc);
}

/* Copy rows [0, nrows) of from into to (each laid out for its own n). */
static void
pak_copy_rows(const SelectorConfig *cfg, const StateHeader *from, StateHeader *to, int nrows)
{
	RowSpan		src[MAX_ROW_SPANS],
				dst[MAX_ROW_SPANS];
	int			count = pak_row_spans(cfg, from, 0, nrows, src);

	pak_row_spans(cfg, to, 0, nrows, dst);
	for (int i = 0; i < count; i++)
		memcpy(STATE_BODY(to) + dst[i].offset, STATE_BODY(from) + src[i].offset,
			   sizeof(double) * src[i].count);
}

/*
 * The ridge term of row i of n: α, or with a discount α·γ^-(age) where the
 * newest row has age 0 (weighted GP-UCB: a row of weight w is noise α/w).
 */
static double
pak_ridge(const SelectorConfig *cfg, int i, int n)
{
	double		alpha = confidence_base_alpha(cfg);

	return cfg->discount < 1 ? alpha * portable_pow(cfg->discount, -(double) (n - 1 - i)) : alpha;
}

/*
 * PolicyOps.kept_rows: how many of an arm's n newest rewards (since its last
 * restart) it keeps.  A window, or a discount's horizon, no longer than cap
 * slides: the newest W.  Otherwise the arm compacts at cap
 * (compacted_rows): a sliding cap would change every row of the factor at
 * every reward, and so rewrite all of it at every checkpoint.  restart_every
 * is at most cap (state_check_limits), so n never passes it then.
 */
int
pak_kept_rows(const SelectorConfig *cfg, int n)
{
	int			slide = cfg->window > 0 ? cfg->window : discount_horizon(cfg);

	if (slide <= cfg->cap)
		return Min(n, slide);
	return compacted_rows(cfg->cap, n);
}

/*
 * PolicyOps.slides: do n appends onto an empty arm drop rows off a window
 * (pak_drop_oldest)?  Not under a discount, whose appends rebuild, nor past
 * the cap, where an arm compacts by a rebuild.
 */
bool
pak_slides(const SelectorConfig *cfg, int n)
{
	int			slide = cfg->window > 0 ? cfg->window : discount_horizon(cfg);

	return cfg->discount >= 1 && slide <= cfg->cap && n > slide;
}

/*
 * The ridge on row i's diagonal (of n) in factor f: α_f, as pak_append adds
 * it; with weights w, or a discount's by position, α₀/w_i, and in a factor
 * f > 0 that shifted by α_f − α₀.
 */
static double
pak_row_ridge(const SelectorConfig *cfg, const FactorSet *fs, int f, int i, int n,
			  const double *w)
{
	double		base;

	if (w == NULL && cfg->discount >= 1)
		return fs->alpha[f];
	base = w ? fs->alpha[0] / w[i] : pak_ridge(cfg, i, n);
	return f == 0 ? base : base + (fs->alpha[f] - fs->alpha[0]);
}

/*
 * With weights w (NULL: γ^age by position under a discount): ridge α/w.
 * Each factor is factorised row by row (chol_factor_rows), each diagonal
 * the kernel's plus the ridge as pak_append adds them: without weights or
 * a discount, the bits of the rows appended one at a time, so that a fold
 * gives the same state however its rows were batched (fold_some()).
 */
StateHeader *
pak_build_weighted(const SelectorConfig *cfg, int n, const double *X, const double *r,
				   const double *w)
{
	StateHeader *st;
	FactorSet	fs;
	int			skip = n - Min(n, Min(discount_horizon(cfg), cfg->cap));
	int			c;

	/*
	 * rows too old to matter under a discount, and past the cap, are dropped
	 * (none when called through state_build, which keeps pak_kept_rows; a
	 * clocked state keeps its newest cap, model/clock_state.c)
	 */
	X += (Size) skip * cfg->row_dim;
	r += skip;
	if (w != NULL)
		w += skip;
	n -= skip;
	confidence_factors(cfg, &fs);
	st = state_alloc(cfg, n, pak_body(cfg, n));
	c = pak_capacity(cfg, n);
	pak_put_rows(cfg, st, 0, n, X);
	memcpy(PAK_V(st, c), r, sizeof(double) * n);
	for (int i = 0; i < n; i++)
		kernel_vector(cfg, i + 1, PAK_X(st), NULL, PAK_X(st) + (Size) i * cfg->dim,
					  PAK_L(st, c, 0) + PACKED_ROW(i));
	/* the kernel matrix is copied into the other factors before the first is factorised */
	for (int f = fs.count - 1; f >= 0; f--)
	{
		double	   *L = PAK_L(st, c, f);

		if (f > 0)
			memcpy(L, PAK_L(st, c, 0), sizeof(double) * PACKED_SIZE(n));
		for (int i = 0; i < n; i++)
			L[PACKED_ROW(i) + i] += pak_row_ridge(cfg, &fs, f, i, n, w);
		chol_factor_rows(n, L, fs.alpha[f]);
	}
	return st;
}

StateHeader *
pak_build(const SelectorConfig *cfg, int n, const double *X, const double *r)
{
	return pak_build_weighted(cfg, n, X, r, NULL);
}

/*
 * PolicyOps.innovations: L⁻¹v for the factor L of K' + αI built in row
 * order, whose entry i is (r_i − μ_{<i}(x_i)) / L_ii, L_ii² = α(1 + s²_{<i}(x_i)):
 * each row's residual under the kernel regression on the rows before it,
 * scaled by its predictive deviation (a forward solve, O(n²)).
 */
int
pak_innovations(const SelectorConfig *cfg, const StateHeader *built, int n, const double *X,
				const double *r, double *e)
{
	int			c = pak_capacity(cfg, built->n);
	double	   *t = chol_forward_copy(built->n, PAK_L(built, c, 0), PAK_V(built, c));

	memcpy(e, t, sizeof(double) * built->n);
	pfree(t);
	return built->n;
}

/* The state without its oldest row: a rank-1 update of the trailing factor. */
static StateHeader *
pak_drop_oldest(const SelectorConfig *cfg, const StateHeader *old)
{
	int			n = old->n;
	int			nf = pak_factor_count(cfg);
	int			c = pak_capacity(cfg, n);
	StateHeader *st = state_alloc(cfg, n - 1, pak_body(cfg, n - 1));
	int			c1 = pak_capacity(cfg, n - 1);
	int			cc = pak_cost_columns(cfg);

	memcpy(PAK_X(st), PAK_X(old) + cfg->dim, sizeof(double) * (n - 1) * cfg->dim);
	memcpy(PAK_V(st, c1), PAK_V(old, c) + 1, sizeof(double) * (n - 1));
	memcpy(PAK_C(st, c1, nf), PAK_C(old, c, nf) + cc, sizeof(double) * (n - 1) * cc);
	for (int f = 0; f < nf; f++)
		chol_drop_first(n, PAK_L(old, c, f), PAK_L(st, c1, f));
	return st;
}

/*
 * A state of the newest keep - 1 rows of old (NULL: empty) and (x, r),
 * factorised from scratch: how a discounted arm appends (every weight
 * changes) and how an arm compacts.
 */
static StateHeader *
pak_rebuild_newest(const SelectorConfig *cfg, const StateHeader *old, int keep,
				   const double *x, double r)
{
	int			n = keep - 1;
	int			from = old ? old->n - n : 0;
	double	   *X = palloc(sizeof(double) * (Size) keep * cfg->row_dim);
	double	   *v = palloc(sizeof(double) * keep);
	StateHeader *st;

	for (int i = 0; i < n; i++)
		pak_get_row(cfg, old, from + i, X + (Size) i * cfg->row_dim);
	if (n > 0)
		memcpy(v, PAK_V(old, pak_capacity(cfg, old->n)) + from, sizeof(double) * n);
	memcpy(X + (Size) n * cfg->row_dim, x, sizeof(double) * cfg->row_dim);
	v[n] = r;
	st = pak_build(cfg, keep, X, v);
	pfree(X);
	pfree(v);
	return st;
}

/*
 * old (NULL: empty) with room for one more row, and that row counted in n:
 * old itself when its body has room (its capacity is also that of n + 1
 * rows), else a copy laid out for n + 1 rows.
 */
static StateHeader *
pak_grow(const SelectorConfig *cfg, StateHeader *old)
{
	int			n = old ? old->n : 0;
	StateHeader *st;

	if (old != NULL && pak_capacity(cfg, n) == pak_capacity(cfg, n + 1))
	{
		old->n = n + 1;
		return old;
	}
	st = state_alloc(cfg, n + 1, pak_body(cfg, n + 1));
	if (n > 0)
		pak_copy_rows(cfg, old, st, n);
	return st;
}

/*
 * Append (x, r): in place when the body has room (the fold owns old), so a
 * reward costs the O(n² + n·dim) of its factor row, not a copy of the state.
 */
StateHeader *
pak_append(const SelectorConfig *cfg, const StateHeader *old, const double *x, double r)
{
	int			n,
				c;
	StateHeader *st;
	FactorSet	fs;
	double	   *b;
	double		kself;

	int			held = old ? old->n : 0;
	int			keep = pak_kept_rows(cfg, held + 1);

	/* with a discount every weight changes; an arm at its cap compacts */
	if (cfg->discount < 1 || keep < held)
		return pak_rebuild_newest(cfg, old, keep, x, r);
	/* a full window first forgets its oldest row (SW-GP-UCB, Iwazaki & Takeno (R-PERP)) */
	if (keep == held)
		old = pak_drop_oldest(cfg, old);
	st = pak_grow(cfg, unconstify(StateHeader *, old));
	n = st->n - 1;
	c = pak_capacity(cfg, n + 1);
	confidence_factors(cfg, &fs);
	pak_put_rows(cfg, st, n, 1, x);
	PAK_V(st, c)[n] = r;

	b = palloc(sizeof(double) * Max(n, 1));
	kernel_vector(cfg, n, PAK_X(st), NULL, x, b);
	kself = kernel_self(cfg, x);
	for (int f = 0; f < fs.count; f++)
		chol_append_row(n, PAK_L(st, c, f), b, kself + fs.alpha[f], fs.alpha[f]);
	pfree(b);
	return st;
}
