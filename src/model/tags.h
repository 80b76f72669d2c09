/*
 * tags.h — what the caller knows about a request (an endpoint, a task
 * label): tags, hashed into a fixed number of buckets after the embedding.
 */
#ifndef MODEL_SELECT_TAGS_H
#define MODEL_SELECT_TAGS_H

#include "utils/array.h"

#include "model/config.h"

/* Most tags a context may carry, and the longest tag in bytes. */
#define MAX_TAGS 64
#define MAX_TAG_BYTES 256

extern SelectorConfig config_untagged(const SelectorConfig *cfg);
extern ArrayType *tags_checked(ArrayType *tags);
extern void tags_buckets(const SelectorConfig *cfg, ArrayType *tags, double *tail);
extern uint64 context_key_hash(const SelectorConfig *cfg, const double *x);
extern double *context_read(const SelectorConfig *cfg, ArrayType *context, ArrayType *tags);

#endif
