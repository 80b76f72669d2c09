/*
 * share_cache.c — the priors of "share" (lin_ucb.c, lin_share_priors), kept
 * per set of decoded models.
 *
 * The priors are a function of every arm's decoded model: a factorisation
 * of the pooled ridge, O(p³), and a solve per arm, which at dim 128 cost as
 * much again as scoring seven arms and at 384 several times that.  A
 * backend's models change only when a load decodes a new one (a version,
 * this transaction's rows, a clock's key), so the priors of the last few
 * sets of models are kept, named by the models' serials (model_absorb.c):
 * a serial names one decoded model for the backend's lifetime, so a kept
 * set matches only the very models it was computed from, and the scores are
 * those computed afresh, bit for bit.  Models without a serial (replay(),
 * decision_scores()) are not kept.  A cache: per backend, bounded, nothing
 * to invalidate (stale sets no longer match and are overwritten in turn).
 */
#include "postgres.h"

#include "utils/memutils.h"

#include "model/registry.h"
#include "routing/share_cache.h"

/* Sets of models kept: one per selector with share that a backend routes. */
#define SHARE_CACHE_SLOTS 8

typedef struct ShareSlot
{
	MemoryContext cxt;			/* NULL: empty; holds the arrays below */
	int			narms;
	uint64	   *serials;
	double		share;
	double		alpha;
	double	  **priors;
} ShareSlot;

static ShareSlot slots[SHARE_CACHE_SLOTS];
static int	next_slot = 0;

/* Can sel's priors be kept: has every arm with a model a serial? */
static bool
share_keepable(const Selector *sel)
{
	for (int i = 0; i < sel->narms; i++)
		if (sel->arms[i].model != NULL && sel->arms[i].model_serial == 0)
			return false;
	return true;
}

static bool
slot_matches(const ShareSlot *slot, const Selector *sel)
{
	if (slot->cxt == NULL || slot->narms != sel->narms || slot->share != sel->cfg.share ||
		slot->alpha != sel->cfg.alpha)
		return false;
	for (int i = 0; i < sel->narms; i++)
		if (slot->serials[i] != (sel->arms[i].model ? sel->arms[i].model_serial : 0))
			return false;
	return true;
}

static double **
share_compute(const Selector *sel)
{
	const PolicyOps *ops = policy_ops(sel->cfg.policy);
	const ArmModel **models = palloc(sizeof(ArmModel *) * Max(sel->narms, 1));
	double	  **priors;

	for (int i = 0; i < sel->narms; i++)
		models[i] = sel->arms[i].model;
	priors = ops->share_priors(&sel->cfg, sel->narms, models);
	pfree(models);
	return priors;
}

/*
 * The priors of sel's models computed into a slot of their own (the oldest
 * slot's set goes; on an error the slot stays empty).
 */
static double **
share_keep(const Selector *sel)
{
	ShareSlot  *slot = &slots[next_slot];
	MemoryContext cxt;
	MemoryContext old;

	next_slot = (next_slot + 1) % SHARE_CACHE_SLOTS;
	if (slot->cxt != NULL)
		MemoryContextDelete(slot->cxt);
	slot->cxt = NULL;
	cxt = AllocSetContextCreate(CacheMemoryContext, "model_select share priors", ALLOCSET_SMALL_SIZES);
	old = MemoryContextSwitchTo(cxt);
	PG_TRY();
	{
		slot->priors = share_compute(sel);
	}
	PG_CATCH();
	{
		MemoryContextSwitchTo(old);
		MemoryContextDelete(cxt);
		PG_RE_THROW();
	}
	PG_END_TRY();
	slot->serials = palloc(sizeof(uint64) * Max(sel->narms, 1));
	for (int i = 0; i < sel->narms; i++)
		slot->serials[i] = sel->arms[i].model ? sel->arms[i].model_serial : 0;
	MemoryContextSwitchTo(old);
	slot->cxt = cxt;
	slot->narms = sel->narms;
	slot->share = sel->cfg.share;
	slot->alpha = sel->cfg.alpha;
	return slot->priors;
}

/*
 * With "share": every arm's prior term for the scores of one decision or
 * block (NULL without share).  *kept: the cache owns them.
 */
double **
share_priors_begin(const Selector *sel, bool *kept)
{
	const PolicyOps *ops = policy_ops(sel->cfg.policy);

	*kept = false;
	if (sel->cfg.share <= 0 || ops->share_priors == NULL)
		return NULL;
	if (!share_keepable(sel))
		return share_compute(sel);
	*kept = true;
	for (int s = 0; s < SHARE_CACHE_SLOTS; s++)
		if (slot_matches(&slots[s], sel))
			return slots[s].priors;
	return share_keep(sel);
}

void
share_priors_end(const Selector *sel, double **priors, bool kept)
{
	if (priors == NULL || kept)
		return;
	for (int i = 0; i < sel->narms; i++)
		if (priors[i] != NULL)
			pfree(priors[i]);
	pfree(priors);
}
