/*
 * tags.c — tags: what the caller knows about a request.
 *
 * A context may carry tags (text[]: an endpoint, a product surface, a task
 * label).  A selector's state has a fixed dimension, so tags get a fixed
 * space: each tag is hashed (FNV-1a of its bytes, mixed with the selector's
 * seed) into TAG_HASHES distinct buckets of "tag_buckets", each given
 * 1/√TAG_HASHES (a tag's vector has norm 1), and the context the policies
 * see is the embedding followed by the sum of its tags' vectors.
 * context_prepare() normalises the embedding alone and scales the buckets
 * as the intercept feature (√intercept), so that a tag acts as an intercept
 * of its own: an offset per tag and arm, learnt from the rewards of that tag,
 * whatever the embedding's scale ("tag_scale" s multiplies the buckets: a
 * tag's offset then has s² times the intercept's prior variance; below 1 for
 * labels that rarely change the best arm, docs/settings.md#tags).  Three
 * buckets a tag rather than one: two tags rarely share all three, so that a
 * few tags in few buckets keep vectors of their own (8 tags in 16 buckets:
 * independent for 9 seeds of 10, against 7 of 10 with one bucket a tag;
 * docs/policies.md#tags).  An unseen tag has buckets no reward of its own
 * taught: at most the share of other tags' offsets its buckets hold.  No tags
 * (NULL or an empty array) leave every bucket 0: the scores of the embedding
 * alone.
 */
#include "postgres.h"

#include <math.h>

#include "catalog/pg_type.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/lsyscache.h"

#include "math/prng.h"
#include "model/context.h"
#include "model/tags.h"

/* A copy of cfg for its embeddings alone (codebooks, cascades, probes). */
SelectorConfig
config_untagged(const SelectorConfig *cfg)
{
	SelectorConfig c = *cfg;

	c.tag_buckets = 0;
	c.dim = c.embed_dim;
	c.learns_cost = false;
	c.row_dim = c.dim;
	return c;
}

/*
 * The tags checked (a one-dimensional text[] of at most MAX_TAGS non-empty
 * tags of at most MAX_TAG_BYTES bytes, no NULL), or NULL for none (NULL or
 * empty).  What is logged on a decision.
 */
ArrayType *
tags_checked(ArrayType *tags)
{
	Datum	   *elems;
	bool	   *nulls;
	int			n;

	if (tags == NULL || ArrayGetNItems(ARR_NDIM(tags), ARR_DIMS(tags)) == 0)
		return NULL;
	if (ARR_ELEMTYPE(tags) != TEXTOID)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("tags must be text[], not %s", format_type_be(get_array_type(ARR_ELEMTYPE(tags))))));
	if (ARR_NDIM(tags) != 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("tags must be a one-dimensional array, not %d-dimensional", ARR_NDIM(tags))));
	n = ArrayGetNItems(1, ARR_DIMS(tags));
	if (n > MAX_TAGS)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("a context may carry at most %d tags, not %d", MAX_TAGS, n)));
	deconstruct_array(tags, TEXTOID, -1, false, TYPALIGN_INT, &elems, &nulls, &n);
	for (int i = 0; i < n; i++)
	{
		if (nulls[i])
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("tag %d is NULL", i + 1),
					 errhint("Pass no tags as NULL or an empty array.")));
		if (VARSIZE_ANY_EXHDR(DatumGetPointer(elems[i])) == 0)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("tag %d is an empty string", i + 1)));
		if (VARSIZE_ANY_EXHDR(DatumGetPointer(elems[i])) > MAX_TAG_BYTES)
			ereport(ERROR,
					(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
					 errmsg("tag %d is %zu bytes long, more than %d", i + 1,
							(size_t) VARSIZE_ANY_EXHDR(DatumGetPointer(elems[i])), MAX_TAG_BYTES)));
	}
	pfree(elems);
	pfree(nulls);
	return tags;
}

/* Distinct buckets a tag is hashed into (fewer when there are fewer buckets). */
#define TAG_HASHES 3

/* tail += a tag's vector: 1/√k in each of its k buckets. */
static void
tag_add(const SelectorConfig *cfg, const text *tag, double *tail)
{
	const unsigned char *p = (const unsigned char *) VARDATA_ANY(tag);
	Size		len = VARSIZE_ANY_EXHDR(tag);
	uint64		h = UINT64_C(0xcbf29ce484222325);
	int			k = Min(TAG_HASHES, cfg->tag_buckets);
	int			chosen[TAG_HASHES] = {0};
	int			n = 0;

	for (Size i = 0; i < len; i++)
		h = (h ^ p[i]) * UINT64_C(0x100000001b3);
	for (h = mix64(h ^ cfg->seed); n < k; h = mix64(h))
	{
		int			b = (int) (h % (uint64) cfg->tag_buckets);
		bool		seen = false;

		for (int j = 0; j < n; j++)
			seen |= chosen[j] == b;
		if (!seen)
			chosen[n++] = b;
	}
	for (int j = 0; j < k; j++)
		tail[chosen[j]] += 1.0 / sqrt((double) k);
}

/* Whether elems[i] repeats one of elems[0..i). */
static bool
tag_repeated(Datum *elems, int i)
{
	for (int j = 0; j < i; j++)
		if (datumIsEqual(elems[i], elems[j], false, -1))
			return true;
	return false;
}

/*
 * tail (cfg->tag_buckets values) = the sum of the vectors of the distinct
 * tags (tags_checked(); NULL for none), in their order.
 */
void
tags_buckets(const SelectorConfig *cfg, ArrayType *tags, double *tail)
{
	Datum	   *elems;
	int			n;

	memset(tail, 0, sizeof(double) * cfg->tag_buckets);
	if (tags == NULL || cfg->tag_buckets == 0)
		return;
	deconstruct_array(tags, TEXTOID, -1, false, TYPALIGN_INT, &elems, NULL, &n);
	for (int i = 0; i < n; i++)
		if (!tag_repeated(elems, i))
			tag_add(cfg, DatumGetTextPP(elems[i]), tail);
	pfree(elems);
}

/*
 * A context as the policies read it before context_prepare() (palloc'd,
 * cfg->dim values): the embedding, validated against the selector's
 * dimension, then its tags' buckets (tags: NULL for none).
 */
double *
context_read(const SelectorConfig *cfg, ArrayType *context, ArrayType *tags)
{
	double	   *embedding = context_from_array(context, cfg->embed_dim);
	double	   *x;

	tags = tags_checked(tags);
	if (cfg->tag_buckets == 0)
		return embedding;
	x = palloc(sizeof(double) * cfg->dim);
	memcpy(x, embedding, sizeof(double) * cfg->embed_dim);
	pfree(embedding);
	tags_buckets(cfg, tags, x + cfg->embed_dim);
	return x;
}

/*
 * The hash of a context as the policies read it before context_prepare()
 * (x: cfg->dim values), for tie-breaking and `random`: its embedding's
 * (context_hash()), then, when it has tags, their buckets': a context
 * without tags hashes as it did before tags existed.
 */
uint64
context_key_hash(const SelectorConfig *cfg, const double *x)
{
	uint64		h = context_hash(x, cfg->embed_dim, cfg->seed);

	for (int j = cfg->embed_dim; j < cfg->dim; j++)
		if (x[j] != 0.0)
			return context_hash(x + cfg->embed_dim, cfg->tag_buckets, h);
	return h;
}
