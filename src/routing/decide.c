/*
 * decide.c — the decision rule shared by the live entry points and replay.
 *
 * An arm without rewards scores +Infinity, so every arm is tried once.  Ties
 * are broken by a hash of (selector seed, context, arm ordinal): reproducible
 * on every backend and replica, and uniform over contexts.  The `random`
 * policy picks by that hash alone.
 */
#include "postgres.h"

#include <math.h>

#include "access/xact.h"
#include "utils/float.h"

#include "model/context.h"
#include "model/tags.h"
#include "routing/decide.h"
#include "routing/share_cache.h"
#include "math/prng.h"
#include "model/registry.h"
#include "pg/float_text.h"

/* The score of an arm without rewards: +Infinity, so that it is tried. */
static void
score_unlearned(ArmScore *s)
{
	s->mean = s->width = s->ucb = get_float8_infinity();
	s->radius = s->alpha = get_float8_nan();
	s->cost = 0.0;
}

static void
score_set_ucb(const PolicyOps *ops, ArmScore *s)
{
	s->ucb = ops->uses_context ? s->mean + s->radius * s->width : s->mean;
}

/* A learned arm i's score of prepared context x (not its ucb). */
static void
score_learned(const Selector *sel, int i, double **priors, const double *x, ArmScore *out)
{
	const PolicyOps *ops = policy_ops(sel->cfg.policy);

	if (priors != NULL && priors[i] != NULL)
		ops->score_shared(&sel->cfg, sel->arms[i].model, priors[i], x, out);
	else
		ops->score(&sel->cfg, sel->arms[i].model, x, out);
}

static void
score_prepared(const Selector *sel, const double *x, ArmScore *out)
{
	const PolicyOps *ops = policy_ops(sel->cfg.policy);
	bool		kept;
	double	  **priors = share_priors_begin(sel, &kept);

	for (int i = 0; i < sel->narms; i++)
	{
		if (sel->arms[i].model == NULL)
		{
			score_unlearned(&out[i]);
			continue;
		}
		score_learned(sel, i, priors, x, &out[i]);
		score_set_ucb(ops, &out[i]);
	}
	share_priors_end(sel, priors, kept);
}

/*
 * Arm i's scores of the m prepared contexts X into column i of scores (m ×
 * narms); row by row with shared priors.
 */
static void
score_arm_block(const Selector *sel, int i, int m, const double *X, void **shared,
				double **priors, ArmScore *column, ArmScore *scores)
{
	const PolicyOps *ops = policy_ops(sel->cfg.policy);
	const ArmModel *model = sel->arms[i].model;
	bool		by_block = ops->score_block != NULL && priors == NULL;

	for (int t = 0; t < m; t++)
	{
		if (model == NULL)
			score_unlearned(&column[t]);
		else if (!by_block)
			score_learned(sel, i, priors, X + (Size) t * sel->cfg.dim, &column[t]);
	}
	if (model != NULL && by_block)
		ops->score_block(&sel->cfg, model, m, X, shared, column);
	for (int t = 0; t < m; t++)
	{
		if (model != NULL)
			score_set_ucb(ops, &column[t]);
		scores[(Size) t * sel->narms + i] = column[t];
	}
}

/*
 * exploration thompson: each learned arm's ucb becomes a draw from its
 * posterior at this context, mean + eta·width·ξ.  For one context that is
 * Thompson sampling exactly (the arms are independent and the choice
 * depends only on each arm's value there).  ξ is a hash of (seed, context,
 * arm ordinal, the arm's reward count): every backend and replica draws the
 * same, and an arm's draw changes as it learns.
 */
static void
sample_scores(const Selector *sel, const double *raw_x, ArmScore *scores)
{
	uint64		h;

	if (sel->cfg.exploration != EXPLORE_THOMPSON)
		return;
	h = context_key_hash(&sel->cfg, raw_x);
	for (int i = 0; i < sel->narms; i++)
	{
		ArmScore   *s = &scores[i];
		Prng		rng;

		if (sel->arms[i].model == NULL)
			continue;
		prng_seed(&rng, h ^ mix64((uint64) sel->arms[i].ordinal * UINT64_C(0x9E3779B97F4A7C15) +
								  (uint64) sel->arms[i].n));
		s->ucb = s->mean + s->radius * s->width * prng_normal(&rng);
	}
}

/*
 * The arms warned about in the current statement, so that a route_batch()
 * of 30,000 rows logs one WARNING per unusable arm, not one per row.  A
 * statement is told apart by its start time (a backend starts one at a
 * time); the list is a cache of what was said, reset by the next statement.
 */
#define WARNED_ARMS_MAX 64

static TimestampTz warned_statement;
static int	warned_count;
static int32 warned_arms[WARNED_ARMS_MAX];

static bool
warned_this_statement(int32 arm_id)
{
	TimestampTz now = GetCurrentStatementStartTimestamp();

	if (now != warned_statement)
	{
		warned_statement = now;
		warned_count = 0;
	}
	for (int k = 0; k < warned_count; k++)
		if (warned_arms[k] == arm_id)
			return true;
	if (warned_count < WARNED_ARMS_MAX)
		warned_arms[warned_count++] = arm_id;
	return false;
}

/*
 * Can arm i's score be chosen?  A finite score can, and +Infinity for an arm
 * without rewards; a NaN or infinite score of a learned arm (a numerical
 * failure) never becomes a decision: the arm is skipped with a WARNING, once
 * per statement.
 */
static bool
score_usable(const Selector *sel, int i, const ArmScore *s)
{
	if (sel->arms[i].model == NULL || isfinite(s->ucb))
		return true;
	if (!warned_this_statement(sel->arms[i].arm_id))
		ereport(WARNING,
				(errmsg("arm \"%s\" of selector \"%s\" has score %s and is skipped",
						sel->arms[i].name, sel->name, exact_text(s->ucb)),
				 errdetail("This statement skips the arm wherever its score is not a number, with this one warning."),
				 errhint("Check the selector's settings; model_select.rebuild_state() recomputes its state.")));
	return false;
}

/* Arm i's tie-break key for the context's hash h. */
static uint64
tie_key(const Selector *sel, int i, uint64 h)
{
	return mix64(h ^ ((uint64) sel->arms[i].ordinal * UINT64_C(0x9E3779B97F4A7C15)));
}

/*
 * Index of the chosen active arm; raw_x is the context as given.  The
 * active, usable arm with the highest ucb; among equal ones (or among all,
 * for a policy that picks at random) the one with the largest key, a hash
 * of (seed, context, ordinal) -- computed only when there is a choice to
 * break, as hashing the context is a chain over all its elements.
 */
static int
choose_arm(const Selector *sel, const ArmScore *scores, const double *raw_x)
{
	bool		at_random = policy_ops(sel->cfg.policy)->picks_at_random;
	bool		any_active = false;
	/* the usable arms with the highest ucb so far (all of them, at random) */
	int		   *tied = palloc(sizeof(int) * Max(sel->narms, 1));
	int			ntied = 0;
	int			best;

	for (int i = 0; i < sel->narms; i++)
	{
		if (!sel->arms[i].active)
			continue;
		any_active = true;
		if (!score_usable(sel, i, &scores[i]))
			continue;
		if (!at_random && ntied > 0 && scores[i].ucb != scores[tied[0]].ucb)
		{
			if (scores[i].ucb < scores[tied[0]].ucb)
				continue;
			ntied = 0;			/* a higher ucb */
		}
		tied[ntied++] = i;
	}
	if (ntied == 0 && any_active)
		ereport(ERROR,
				(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
				 errmsg("no active arm of selector \"%s\" has a usable score", sel->name),
				 errhint("Check the selector's settings; model_select.rebuild_state() recomputes its state.")));
	if (ntied == 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("selector \"%s\" has no active arm", sel->name),
				 errhint("Add one with model_select.add_arm().")));
	best = tied[0];
	if (ntied > 1)
	{
		uint64		h = context_key_hash(&sel->cfg, raw_x);
		uint64		best_key = tie_key(sel, best, h);

		for (int k = 1; k < ntied; k++)
		{
			uint64		key = tie_key(sel, tied[k], h);

			if (key > best_key)
			{
				best = tied[k];
				best_key = key;
			}
		}
	}
	pfree(tied);
	return best;
}

/*
 * Score every arm for a validated context as given (raw_x) and choose an
 * active one: returns the arm index; scores[] gets every arm's score.
 */
int
decide(const Selector *sel, const double *raw_x, ArmScore *scores)
{
	score_arms(sel, raw_x, scores);
	return choose_arm(sel, scores, raw_x);
}

/*
 * The distinct rows of a block: rows equal to the row before them (bit for
 * bit, as a table of prompts repeated in order has them) are scored once.
 * Fills first[t], the index among the kept rows of row t's first copy, and
 * keptX with the kept rows; returns their number.
 */
static int
block_distinct_rows(int m, int dim, const double *rawX, int *first, double *keptX)
{
	int			kept = 0;

	for (int t = 0; t < m; t++)
	{
		const double *x = rawX + (Size) t * dim;

		if (t > 0 && memcmp(x, x - dim, sizeof(double) * dim) == 0)
		{
			first[t] = first[t - 1];
			continue;
		}
		memcpy(keptX + (Size) kept * dim, x, sizeof(double) * dim);
		first[t] = kept++;
	}
	return kept;
}

/*
 * decide() for a block of m validated contexts as given (rawX, m × dim):
 * chosen[t] and row t of scores (m × narms) for context t.  Policies with a
 * score_block score the block at once, with the arithmetic of a single
 * score (four rows at a time): the numbers are decide()'s, bit for bit, and
 * ties are broken the same way.  A row
 * equal to the one before it gets that row's scores and choice (every step
 * is a function of the context, and the block has one state and one λ), as
 * the row path reuses the features of a repeated context.
 */
void
decide_block(const Selector *sel, int m, const double *rawX, ArmScore *scores, int *chosen)
{
	int			dim = sel->cfg.dim;
	int			narms = sel->narms;
	double	   *X = palloc(sizeof(double) * (Size) Max(m, 1) * dim);
	int		   *first = palloc(sizeof(int) * Max(m, 1));
	int			kept = block_distinct_rows(m, dim, rawX, first, X);
	ArmScore   *kept_scores = palloc(sizeof(ArmScore) * (Size) Max(kept, 1) * Max(narms, 1));
	int		   *kept_chosen = palloc(sizeof(int) * Max(kept, 1));
	ArmScore   *column = palloc(sizeof(ArmScore) * Max(kept, 1));
	void	   *shared = NULL;
	double		lambda = pacer_lambda(sel);
	double	  **priors;
	bool		priors_kept;

	for (int k = 0; k < kept; k++)
		context_prepare(&sel->cfg, X + (Size) k * dim);
	priors = share_priors_begin(sel, &priors_kept);
	for (int i = 0; i < narms; i++)
		score_arm_block(sel, i, kept, X, &shared, priors, column, kept_scores);
	share_priors_end(sel, priors, priors_kept);
	for (int t = 0; t < m; t++)
	{
		const double *raw_x = rawX + (Size) t * dim;
		ArmScore   *row = kept_scores + (Size) first[t] * narms;

		if (t > 0 && first[t] == first[t - 1])
			continue;
		awaited_apply(sel, row);
		sample_scores(sel, raw_x, row);
		pacer_apply(sel, lambda, row);
		kept_chosen[first[t]] = choose_arm(sel, row, raw_x);
	}
	for (int t = 0; t < m; t++)
	{
		memcpy(scores + (Size) t * narms, kept_scores + (Size) first[t] * narms, sizeof(ArmScore) * narms);
		chosen[t] = kept_chosen[first[t]];
	}
	pfree(X);
	pfree(first);
	pfree(kept_scores);
	pfree(kept_chosen);
	pfree(column);
}

/* Score every arm (active or not) for a validated context as given. */
void
score_arms(const Selector *sel, const double *raw_x, ArmScore *scores)
{
	double	   *x = palloc(sizeof(double) * sel->cfg.dim);

	memcpy(x, raw_x, sizeof(double) * sel->cfg.dim);
	context_prepare(&sel->cfg, x);
	score_prepared(sel, x, scores);
	awaited_apply(sel, scores);
	sample_scores(sel, raw_x, scores);
	pacer_apply(sel, pacer_lambda(sel), scores);
	pfree(x);
}

