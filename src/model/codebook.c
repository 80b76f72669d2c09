/*
 * codebook.c — a selector's codebook: k centroids of its prepared contexts,
 * fitted by fit_codebook() (codebook_fit.c; warm_start() calls it first) and
 * kept in model_select.codebooks.  lin_ucb appends to a context's features the
 * one-hot of its nearest centroid, scaled as the intercept feature: an
 * intercept per region of the context space, which every reward in the
 * region teaches.  A linear model on the embedding alone cannot give a
 * family of prompts its own offset; on RouterDC a codebook fitted on 1,000
 * warm prompts, with the default codebook_shrink, lifts the warm-started
 * router from +0.0183 to +0.0243 over the best single model (orders 1–40;
 * docs/offline-evaluation.md#the-codebook).
 *
 * A configuration points to the centroids of its selector_id and
 * settings_version (a fit bumps the version: model_select._codebook_changed),
 * read once per backend and version (an entry filled by a transaction that
 * aborts or prepares is forgotten: its version may never commit).  Copies of a
 * configuration (caches keep some) may hold that pointer: the centroids of
 * a replaced version are freed only when the transaction ends, and
 * catalog.c renews the pointer of every configuration it gives out, so that
 * a copy kept across transactions is used only after a configuration of the
 * same version renewed it.
 */
#include "postgres.h"

#include <math.h>

#include "access/xact.h"
#include "catalog/pg_type.h"
#include "utils/array.h"
#include "utils/fmgroids.h"
#include "utils/hsearch.h"
#include "utils/memutils.h"

#include "math/kmeans.h"
#include "model/codebook.h"
#include "model/context.h"
#include "model/tags.h"
#include "pg/index_read.h"

/* The centroids this backend read of a selector, for one settings_version. */
typedef struct CodebookEntry
{
	int32		selector_id;	/* hash key */
	int32		settings_version;
	double	   *centroids;		/* NULL: none fitted of the configuration's size */
} CodebookEntry;

/* Beyond this many selectors the table starts again (dropped selectors stay in it). */
#define CODEBOOK_CACHE_MAX 1024

static HTAB *codebooks = NULL;
static MemoryContext codebook_cxt = NULL;
/* centroids replaced in this transaction: freed when it ends (copies of configurations point to them) */
static List *retired = NIL;
/* selectors whose entry this transaction (re)filled: forgotten if it (or a subtransaction) aborts, or it prepares */
static List *filled = NIL;

static void
codebook_retire(double *centroids)
{
	MemoryContext old;

	if (centroids == NULL)
		return;
	old = MemoryContextSwitchTo(codebook_cxt);
	retired = lappend(retired, centroids);
	MemoryContextSwitchTo(old);
}

/*
 * An entry filled in an aborted (sub)transaction may hold a version that
 * never committed: that transaction's own refit, whose settings_version a
 * later refit of another session commits with other centroids.  Only the
 * writer can read an uncommitted version, so forgetting what it filled is
 * enough; entries read from committed rows are merely read again.
 */
static void
codebook_forget_filled(void)
{
	ListCell   *lc;

	foreach(lc, filled)
	{
		int32		selector_id = lfirst_int(lc);
		CodebookEntry *entry = hash_search(codebooks, &selector_id, HASH_FIND, NULL);

		if (entry != NULL)
		{
			codebook_retire(entry->centroids);
			hash_search(codebooks, &selector_id, HASH_REMOVE, NULL);
		}
	}
	list_free(filled);
	filled = NIL;
}

static void
codebook_xact_end(XactEvent event, void *arg)
{
	/* a prepared transaction may yet be rolled back, by any session */
	if (event == XACT_EVENT_ABORT || event == XACT_EVENT_PARALLEL_ABORT || event == XACT_EVENT_PREPARE)
		codebook_forget_filled();
	else if (event != XACT_EVENT_COMMIT && event != XACT_EVENT_PARALLEL_COMMIT)
		return;
	list_free(filled);
	filled = NIL;
	while (retired != NIL)
	{
		pfree(linitial(retired));
		retired = list_delete_first(retired);
	}
}

static void
codebook_subxact_end(SubXactEvent event, SubTransactionId mySubid, SubTransactionId parentSubid,
					 void *arg)
{
	if (event == SUBXACT_EVENT_ABORT_SUB)
		codebook_forget_filled();
}

static void
codebook_cache_init(void)
{
	HASHCTL		ctl = {.keysize = sizeof(int32), .entrysize = sizeof(CodebookEntry)};

	codebook_cxt = AllocSetContextCreate(TopMemoryContext, "model_select codebooks", ALLOCSET_SMALL_SIZES);
	ctl.hcxt = codebook_cxt;
	codebooks = hash_create("model_select codebooks", 16, &ctl, HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	RegisterXactCallback(codebook_xact_end, NULL);
	RegisterSubXactCallback(codebook_subxact_end, NULL);
}

/*
 * The stored centroids of a selector if they are k × dim and were fitted
 * with the configuration's normalize (the space they live in), copied into
 * cxt; else NULL.
 */
static double *
codebook_read(const SelectorConfig *cfg, MemoryContext cxt)
{
	enum
	{
		CODEBOOK_CENTROIDS, CODEBOOK_NORMALIZED, CODEBOOK_NCOLUMNS
	};
	static const char *const columns[CODEBOOK_NCOLUMNS] = {
		[CODEBOOK_CENTROIDS] = "centroids", [CODEBOOK_NORMALIZED] = "normalized"
	};
	/* a database not yet updated to the version that has codebooks has none */
	Relation	table = own_table_open_if_exists("codebooks");
	Datum		values[CODEBOOK_NCOLUMNS];
	bool		isnull[CODEBOOK_NCOLUMNS];
	ArrayType  *arr;
	double	   *centroids = NULL;

	if (table == NULL)
		return NULL;
	if (own_row_by_key(table, "selector_id", F_INT4EQ, Int32GetDatum(cfg->selector_id), CODEBOOK_NCOLUMNS,
					   columns, values, isnull) &&
		!isnull[CODEBOOK_CENTROIDS] && !isnull[CODEBOOK_NORMALIZED] &&
		DatumGetBool(values[CODEBOOK_NORMALIZED]) == cfg->normalize)
	{
		arr = DatumGetArrayTypeP(values[CODEBOOK_CENTROIDS]);
		if (ARR_ELEMTYPE(arr) == FLOAT8OID && ARR_NDIM(arr) == 2 && !ARR_HASNULL(arr) &&
			ARR_DIMS(arr)[0] == cfg->codebook && ARR_DIMS(arr)[1] == cfg->embed_dim)
		{
			Size		bytes = sizeof(double) * (Size) cfg->codebook * cfg->embed_dim;

			centroids = MemoryContextAlloc(cxt, bytes);
			memcpy(centroids, ARR_DATA_PTR(arr), bytes);
		}
	}
	own_table_close(table);
	return centroids;
}

/*
 * The fitted centroids of the selector's configuration (codebook × dim), or
 * NULL while none of that size is fitted, under the caller's snapshot.
 * catalog.c calls it whenever it gives out a configuration resolved from a
 * selectors row.  One version per selector is kept; the centroids of a
 * version replaced stay valid until the transaction ends.
 */
const double *
codebook_centroids(const SelectorConfig *cfg)
{
	CodebookEntry *entry;
	bool		found;
	double	   *centroids;
	MemoryContext oldcxt;

	if (cfg->codebook == 0)
		return NULL;
	if (codebooks == NULL)
		codebook_cache_init();
	entry = hash_search(codebooks, &cfg->selector_id, HASH_FIND, NULL);
	if (entry != NULL && entry->settings_version == cfg->settings_version)
		return entry->centroids;
	/* read first: an error leaves the table as it was */
	centroids = codebook_read(cfg, codebook_cxt);
	if (entry == NULL && hash_get_num_entries(codebooks) >= CODEBOOK_CACHE_MAX)
	{
		HASH_SEQ_STATUS scan;
		CodebookEntry *old;

		hash_seq_init(&scan, codebooks);
		while ((old = hash_seq_search(&scan)) != NULL)
		{
			codebook_retire(old->centroids);
			hash_search(codebooks, &old->selector_id, HASH_REMOVE, NULL);
		}
	}
	entry = hash_search(codebooks, &cfg->selector_id, HASH_ENTER, &found);
	if (found)
		codebook_retire(entry->centroids);
	entry->settings_version = cfg->settings_version;
	entry->centroids = centroids;
	oldcxt = MemoryContextSwitchTo(codebook_cxt);
	filled = lappend_int(filled, cfg->selector_id);
	MemoryContextSwitchTo(oldcxt);
	return centroids;
}

/*
 * The one-hot (codebook values) of x's nearest centroid, scaled as the
 * intercept feature √intercept; zeros while none is fitted.  x is prepared.
 */
void
codebook_features(const SelectorConfig *cfg, const double *x, double *onehot)
{
	memset(onehot, 0, sizeof(double) * cfg->codebook);
	if (cfg->centroids != NULL)
		onehot[kmeans_nearest(cfg->codebook, cfg->embed_dim, cfg->centroids, x)] = sqrt(cfg->intercept);
}

/*
 * How many rows of a source a fit reads: CODEBOOK_MAX_ROWS, fewer for large
 * k × dim (a bounded cost per iteration and a block under MaxAllocSize),
 * never fewer than the centroids.
 */
int
codebook_max_rows(const SelectorConfig *cfg)
{
	double		rows = Min(CODEBOOK_MAX_WORK / ((double) cfg->codebook * cfg->embed_dim),
						   (double) (MaxAllocSize / 2) / (sizeof(double) * cfg->embed_dim));

	return (int) Max(Min(rows, CODEBOOK_MAX_ROWS), cfg->codebook);
}

/*
 * Centroids (codebook × dim, palloc'd) fitted to n embeddings as given (n ≥
 * codebook), prepared first as a route prepares them: the space the one-hot
 * is taken in.
 */
double *
codebook_fit(const SelectorConfig *cfg, int n, const double *contexts)
{
	Size		size = (Size) n * cfg->embed_dim;
	double	   *prepared = palloc(sizeof(double) * size);
	double	   *centroids = palloc(sizeof(double) * (Size) cfg->codebook * cfg->embed_dim);

	SelectorConfig embedding = config_untagged(cfg);

	memcpy(prepared, contexts, sizeof(double) * size);
	for (int i = 0; i < n; i++)
		context_prepare(&embedding, prepared + (Size) i * cfg->embed_dim);
	kmeans_fit(n, cfg->embed_dim, prepared, cfg->codebook, cfg->seed, centroids);
	pfree(prepared);
	return centroids;
}
