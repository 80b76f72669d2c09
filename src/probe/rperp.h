/*
 * rperp.h — shared state of the R-PERP probing runs (rperp.c plans batches,
 * rperp_fit.c fits a batch and eliminates).
 */
#ifndef MODEL_SELECT_RPERP_H
#define MODEL_SELECT_RPERP_H

#include "model/settings.h"

#define PROBE_MAX_POOL 100000
/* Inconsistent probe tables (edited by hand): the hint of their XX001 errors. */
#define PROBE_DAMAGED_HINT "The probe run's tables were changed by hand: drop the run and create it again."
#define PROBE_MAX_DIM 16000

/* A run's parameters and its position in the state machine. */
typedef struct ProbeRun
{
	int32		run_id;
	int32		reset_every;	/* H */
	int32		interval;		/* i */
	int32		interval_len;	/* T_i */
	int32		used;			/* queries of interval i before batch j */
	int32		batch;			/* j */
	int32		prev_batch_size;	/* N_{j-1} */
	int32		pool_size;
	double		beta;			/* beta_T^{1/2} */
	SelectorConfig cfg;			/* kernel, alpha (lambda), dim, seed */
} ProbeRun;

/* The active items, grouped by model into contiguous blocks. */
typedef struct ProbeItems
{
	int			n;
	int			nblocks;
	int32	   *item_id;
	int		   *block;			/* block of each item */
	int		   *block_start;	/* nblocks + 1 offsets */
	double	   *X;				/* n × dim prepared prompts */
	double	   *sqnorms;
	double	   *kself;			/* k'(x, x) */
} ProbeItems;

extern Datum probe_datum_array(Datum *elems, int n, Oid type);
extern void probe_load_run(int32 run_id, ProbeRun *run);
extern void probe_load_items(const ProbeRun *run, ProbeItems *it);

#endif
