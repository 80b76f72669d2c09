/*
 * catalog.c — selectors and arms as stored in the extension's tables,
 * read through SPI (a reward insert's configuration through the index).
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "access/htup_details.h"
#include "access/xact.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "storage/proc.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "funcapi.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/hsearch.h"
#include "utils/jsonb.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"

#include "model/catalog.h"
#include "model/codebook.h"
#include "model/selector_lock.h"
#include "model/registry.h"
#include "model/settings.h"
#include "pg/index_read.h"
#include "pg/owner.h"


#define SELECTOR_HINT "Create it with model_select.create_selector()."

/*
 * Run a kept plan that looks a selector up by name ($1); the row, or the one
 * 42704 for an unknown selector.
 */
HeapTuple
selector_row(SPIPlanPtr plan, Datum *args, const char *name)
{
	return spi_fetch_one(plan, args, true, psprintf("selector \"%s\"", name), SELECTOR_HINT);
}

/* The 42704 of an unknown selector, as selector_row() raises it. */
void
selector_unknown(const char *name)
{
	ereport(ERROR,
			(errcode(ERRCODE_UNDEFINED_OBJECT),
			 errmsg("selector \"%s\" does not exist", name),
			 errhint(SELECTOR_HINT)));
}

static SPIPlanPtr id_by_name_plan = NULL;

static SPIPlanPtr
id_by_name(void)
{
	Oid			types[1] = {TEXTOID};

	return spi_plan(&id_by_name_plan, "SELECT selector_id FROM model_select.selectors WHERE name = $1",
					1, types);
}

/* A selector's id by name (42704 if unknown); the caller is connected to SPI. */
int32
selector_id_by_name(const char *name)
{
	Datum		args[1] = {CStringGetTextDatum(name)};
	HeapTuple	row = selector_row(id_by_name(), args, name);

	return spi_int32(row, SPI_tuptable->tupdesc, SPI_SOLE_COLUMN);
}

/* The same, or 0 for an unknown selector (one dropped since its name was kept). */
int32
selector_id_if_exists(const char *name)
{
	Datum		args[1] = {CStringGetTextDatum(name)};

	spi_execute(id_by_name(), args, NULL, true, 1, SPI_OK_SELECT, "look up selector \"%s\"", name);
	return SPI_processed == 0 ? 0 : spi_int32(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, SPI_SOLE_COLUMN);
}

/* A backend-local hash table in cxt whose entries start with an int32 id (an arm_id). */
HTAB *
id_hash_create(const char *name, Size entrysize, MemoryContext cxt)
{
	HASHCTL		ctl;

	ctl.keysize = sizeof(int32);
	ctl.entrysize = entrysize;
	ctl.hcxt = cxt;
	return hash_create(name, 64, &ctl, HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
}

/*
 * Configurations resolved from selectors rows, by selector id: every call
 * reads the row, but its settings are parsed once per backend for each
 * stored form.  An entry serves only a row whose configuration columns are
 * byte for byte those it was resolved from, so it needs no invalidation: a
 * changed row misses and replaces it.
 */
typedef struct ConfigCached
{
	SelectorConfig cfg;
	Size		stored_len;
	char		stored[FLEXIBLE_ARRAY_MEMBER];	/* the columns it was resolved from
												 * (config_stored_form) */
} ConfigCached;

/* The hash's entry points to it: dynahash allocates entries 32 at a time. */
typedef struct ConfigCacheEntry
{
	int32		selector_id;	/* hash key */
	ConfigCached *cached;		/* in config_cache_cxt */
} ConfigCacheEntry;

/* Beyond this many selectors the cache starts again (dropped selectors stay in it). */
#define CONFIG_CACHE_MAX 1024

static HTAB *config_cache = NULL;
static MemoryContext config_cache_cxt = NULL;

/* The CONFIG_COLUMNS of a selectors row, as read. */
typedef struct ConfigColumns
{
	int32		selector_id;
	int32		dim;
	const char *policy;
	const char *kernel;			/* NULL: none */
	Jsonb	   *settings;
	int64		seed;
	int32		settings_version;
} ConfigColumns;

/* The configuration columns given by value, in ConfigColumn order (only kernel may be NULL). */
static void
config_columns_of_values(const Datum *values, const bool *nulls, ConfigColumns *c)
{
	c->selector_id = DatumGetInt32(values[CONFIG_SELECTOR_ID]);
	c->dim = DatumGetInt32(values[CONFIG_DIM]);
	c->policy = TextDatumGetCString(values[CONFIG_POLICY]);
	c->kernel = nulls[CONFIG_KERNEL] ? NULL : TextDatumGetCString(values[CONFIG_KERNEL]);
	c->settings = DatumGetJsonbP(values[CONFIG_SETTINGS]);
	c->seed = DatumGetInt64(values[CONFIG_SEED]);
	c->settings_version = DatumGetInt32(values[CONFIG_SETTINGS_VERSION]);
}

/*
 * What a configuration is resolved from, flattened: dim, seed,
 * settings_version, then policy, kernel ("" when NULL, which no kernel name
 * is) and the settings jsonb, each with its length.
 */
static char *
config_stored_form(const ConfigColumns *c, Size *len)
{
	StringInfoData buf;
	int32		sizes[3];

	sizes[0] = (int32) strlen(c->policy);
	sizes[1] = c->kernel ? (int32) strlen(c->kernel) : 0;
	sizes[2] = (int32) VARSIZE(c->settings);
	initStringInfo(&buf);
	appendBinaryStringInfo(&buf, (const char *) &c->dim, sizeof(c->dim));
	appendBinaryStringInfo(&buf, (const char *) &c->seed, sizeof(c->seed));
	appendBinaryStringInfo(&buf, (const char *) &c->settings_version, sizeof(c->settings_version));
	appendBinaryStringInfo(&buf, (const char *) sizes, sizeof(sizes));
	appendBinaryStringInfo(&buf, c->policy, sizes[0]);
	if (c->kernel)
		appendBinaryStringInfo(&buf, c->kernel, sizes[1]);
	appendBinaryStringInfo(&buf, (const char *) c->settings, sizes[2]);
	*len = buf.len;
	return buf.data;
}

/* Resolve a configuration from its columns. */
static void
config_resolve(SelectorConfig *cfg, const ConfigColumns *c)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->selector_id = c->selector_id;
	cfg->policy = policy_from_name(c->policy);
	cfg->kernel = kernel_from_name(cfg->policy, c->kernel);
	settings_resolve(cfg, c->settings);
	config_set_dim(cfg, c->dim);
	cfg->seed = (uint64) c->seed;
	cfg->settings_version = c->settings_version;
	cfg->centroids = codebook_centroids(cfg);
}

/*
 * The configuration in the CONFIG_COLUMNS of a selectors row, starting at
 * first_col: from the cache when the row is the one resolved before.
 */
void
config_from_row(SelectorConfig *cfg, HeapTuple row, TupleDesc desc, int first_col)
{
	Datum		values[CONFIG_NCOLUMNS];
	bool		nulls[CONFIG_NCOLUMNS];

	for (int i = 0; i < CONFIG_NCOLUMNS; i++)
	{
		nulls[i] = false;
		if (i == CONFIG_KERNEL)
			values[i] = SPI_getbinval(row, desc, first_col + i, &nulls[i]);
		else
			values[i] = spi_datum(row, desc, first_col + i);
	}
	config_from_values(cfg, values, nulls);
}

/*
 * The configuration in the CONFIG_COLUMNS values (ConfigColumn order) of a
 * selectors row: from the cache when the row is the one resolved before.
 */
void
config_from_values(SelectorConfig *cfg, const Datum *values, const bool *nulls)
{
	ConfigColumns c;
	Size		len;
	char	   *stored;
	ConfigCached *cached;
	ConfigCacheEntry *entry;
	bool		found;

	config_columns_of_values(values, nulls, &c);
	stored = config_stored_form(&c, &len);
	if (config_cache != NULL &&
		(entry = hash_search(config_cache, &c.selector_id, HASH_FIND, NULL)) != NULL &&
		entry->cached->stored_len == len && memcmp(entry->cached->stored, stored, len) == 0)
	{
		*cfg = entry->cached->cfg;
		/* the centroids of a version may have been replaced since (codebook.c) */
		cfg->centroids = codebook_centroids(cfg);
		return;
	}
	/* errors (an invalid stored row) leave the cache as it was */
	config_resolve(cfg, &c);
	if (config_cache == NULL || hash_get_num_entries(config_cache) >= CONFIG_CACHE_MAX)
	{
		if (config_cache_cxt != NULL)
			MemoryContextDelete(config_cache_cxt);
		config_cache_cxt = AllocSetContextCreate(CacheMemoryContext, "model_select config cache",
												 ALLOCSET_SMALL_SIZES);
		config_cache = id_hash_create("model_select config cache", sizeof(ConfigCacheEntry),
									  config_cache_cxt);
	}
	cached = MemoryContextAlloc(config_cache_cxt, offsetof(ConfigCached, stored) + len);
	cached->cfg = *cfg;
	cached->stored_len = len;
	memcpy(cached->stored, stored, len);
	entry = hash_search(config_cache, &c.selector_id, HASH_ENTER, &found);
	if (found)
		pfree(entry->cached);
	entry->cached = cached;
}

/*
 * Load a selector's configuration with one of the queries below.  `name`
 * names it in the error when the row is gone (a drop_selector() committed
 * since the caller found it); NULL for "the selector".  missing_ok: false
 * instead, reading nothing.
 */
static bool
config_load_with(SPIPlanPtr *plan, const char *sql, bool read_only, int32 selector_id,
				 const char *name, bool missing_ok, SelectorConfig *cfg)
{
	Oid			argtypes[1] = {INT4OID};
	Datum		args[1] = {Int32GetDatum(selector_id)};
	HeapTuple	row;

	if (missing_ok)
	{
		if (spi_execute(spi_plan(plan, sql, 1, argtypes), args, NULL, read_only, 1, SPI_OK_SELECT,
						"look up selector %d", selector_id) == 0)
			return false;
		row = SPI_tuptable->vals[0];
	}
	else
		row = spi_fetch_one(spi_plan(plan, sql, 1, argtypes), args, read_only,
							name ? psprintf("selector \"%s\"", name) : "the selector", NULL);
	config_from_row(cfg, row, SPI_tuptable->tupdesc, CONFIG_FIRST_COLUMN);
	return true;
}

/* Load a selector's configuration by id; the caller is connected to SPI. */
void
config_load(int32 selector_id, SelectorConfig *cfg)
{
	static SPIPlanPtr plan = NULL;

	config_load_with(&plan, "SELECT " CONFIG_COLUMNS " FROM model_select.selectors"
					 " WHERE selector_id = $1", true, selector_id, NULL, false, cfg);
}

static bool config_read_locked(int32 selector_id, const char *name, bool missing_ok,
							   SelectorConfig *cfg);

/*
 * Load a selector's configuration by id for a reward insert: no settings
 * change can commit until the transaction ends.  Under READ COMMITTED the
 * settings lock, then a read under a new snapshot (the settings committed
 * by an alter_selector() waited for).  Under a transaction snapshot that
 * read would return the settings as of the snapshot, so the selector row
 * is share-locked instead: a change committed since fails with 40001.
 */
void
config_load_for_reward(int32 selector_id, const char *name, SelectorConfig *cfg)
{
	/*
	 * Every isolation level takes the lock: drop_selector() waits for it
	 * before it deletes any arm, so no writer holds an arm's row lock that
	 * the drop needs while waiting for the drop (selector_write_lock()).
	 */
	selector_settings_lock(selector_id, ShareLock);
	(void) config_read_locked(selector_id, name, false, cfg);
}

/*
 * config_load_for_reward() for the learner, maintain() and the checkpoints
 * of a committing transaction (checkpoint_due.c), which must not wait for
 * another transaction: false, reading nothing, when the settings lock is
 * not free at once (an alter_selector() or drop_selector() holds or awaits
 * it) or the selector is gone (dropped by the committing transaction).
 */
bool
config_try_load_for_reward(int32 selector_id, const char *name, SelectorConfig *cfg)
{
	return selector_settings_lock_if_free(selector_id, ShareLock) &&
		config_read_locked(selector_id, name, true, cfg);
}

/* The columns of CONFIG_COLUMNS by name, in ConfigColumn order. */
static const char *const config_column_names[CONFIG_NCOLUMNS] = {
	"selector_id", "dim", "policy", "kernel", "settings", "seed", "settings_version"
};

/*
 * The selector's configuration as a new snapshot sees it (READ COMMITTED:
 * with the settings of an alter_selector() the caller waited for), read
 * through the selectors' index rather than a planned query, whose executor
 * start-up cost every reward insert some 20 thousand instructions.
 */
static bool
config_read_fresh(int32 selector_id, const char *name, bool missing_ok, SelectorConfig *cfg)
{
	Datum		values[CONFIG_NCOLUMNS];
	bool		nulls[CONFIG_NCOLUMNS];

	if (!own_row_by_key_as_of("selectors", GetTransactionSnapshot(), "selector_id", F_INT4EQ,
							  Int32GetDatum(selector_id), CONFIG_NCOLUMNS, config_column_names,
							  values, nulls))
	{
		if (missing_ok)
			return false;
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("%s does not exist", name ? psprintf("selector \"%s\"", name) : "the selector")));
	}
	config_from_values(cfg, values, nulls);
	return true;
}

/* The configuration read under the settings lock (config_load_for_reward). */
static bool
config_read_locked(int32 selector_id, const char *name, bool missing_ok, SelectorConfig *cfg)
{
	static SPIPlanPtr share_plan = NULL;

	if (IsolationUsesXactSnapshot())
		return config_load_with(&share_plan, "SELECT " CONFIG_COLUMNS " FROM model_select.selectors"
								" WHERE selector_id = $1 FOR SHARE", false, selector_id, name, missing_ok, cfg);
	return config_read_fresh(selector_id, name, missing_ok, cfg);
}

/* Load a selector's configuration by name; the caller is connected to SPI. */
void
config_load_by_name(const char *name, SelectorConfig *cfg)
{
	static SPIPlanPtr plan = NULL;
	Oid			types[1] = {TEXTOID};
	Datum		args[1] = {CStringGetTextDatum(name)};
	HeapTuple	row;

	row = selector_row(spi_plan(&plan, "SELECT " CONFIG_COLUMNS " FROM model_select.selectors WHERE name = $1",
								1, types), args, name);
	config_from_row(cfg, row, SPI_tuptable->tupdesc, CONFIG_FIRST_COLUMN);
}

