/*
 * clock_ops.h — what the forgetting settings count, behind one interface:
 * a ClockOps per clock ("clock": "arm", "selector" or "time"), so that
 * states, folds, checkpoints, the caches and replay() ask the selector's
 * clock instead of telling the clocks apart (model/clock_state.c has the
 * three; learning/clock.c reads the rows of a clock whose ticks are counted
 * from the log).
 *
 * On the arm's clock (the default) a state is the policy's own (state.h).
 * On the selector's and the time clock window, discount and restart_every
 * count the rewards of every arm of the selector, or seconds, so an arm
 * that is not chosen still ages: its state (layout variant FORGET_CLOCK) is
 * the rows that may still count, body = [Q (tx, seq), C, ticks[n], r[n],
 * X[n][dim]], and its model at a now is built from them (clock_state.c).
 */
#ifndef MODEL_SELECT_CLOCK_OPS_H
#define MODEL_SELECT_CLOCK_OPS_H

#include "model/state_layout.h"

/* A clocked state's body: Q (tx and seq, their bits in two float8 slots), C, then the rows. */
#define CLOCK_Q_TX 0
#define CLOCK_Q_SEQ 1
#define CLOCK_C 2
#define CLOCK_HEAD 3
#define CLOCK_TICKS(st) (STATE_BODY(st) + CLOCK_HEAD)
#define CLOCK_REWARDS(st) (CLOCK_TICKS(st) + (st)->n)
#define CLOCK_X(st) (CLOCK_REWARDS(st) + (st)->n)

/*
 * What an arm's model at some now depends on besides its rows: the first
 * row that counts and, under a discount, the time of the weights (0: none).
 * Two nows with equal keys have the same model (on the arm's clock every
 * now has the same key).
 */
typedef struct ClockKey
{
	int			first;
	double		at;
} ClockKey;

typedef struct ClockOps
{
	ClockKind	kind;
	/*
	 * An arm's model depends on the clock's now, not only on its rows: its
	 * state is its rows that may still count, with their ticks, and a model
	 * is built from them at each now.  Such a base holds more than the
	 * policy's fold of the arm's rows: it is not shared between backends
	 * nor reused by a checkpoint, never built at once and never stored by
	 * rows (state_store.c).
	 */
	bool		ages;
	/*
	 * A row's tick is its place among the rows of every arm of the selector:
	 * readers count them (learning/clock.c), the arms' checkpoints move on
	 * together, a kept overlay is refolded, and a checkpoint waits for every
	 * writer (final_horizon()).
	 */
	bool		ticks_across_arms;
	/* The reward log's column that gives a row its tick (NULL: none, or counted). */
	const char *tick_column;

	/* The layout variant of cfg's states (FORGET_*, state_layout.h). */
	int32		(*forgetting) (const SelectorConfig *cfg);
	/* float8 values in the body of a state of n rows (PolicyOps.body_size). */
	Size		(*body_size) (const SelectorConfig *cfg, int n);
	/* The most rows a state holds. */
	int32		(*max_rows) (const SelectorConfig *cfg);
	/* Further checks of a stored body of a fitting size (XX001). */
	void		(*check) (const SelectorConfig *cfg, const StateHeader *st);
	/*
	 * old (NULL: empty) with one more row (x, r) of this tick, as
	 * PolicyOps.append: in place, or a new state in the current memory
	 * context.
	 */
	StateHeader *(*append) (const SelectorConfig *cfg, const StateHeader *old,
							const double *x, double r, double tick);
	/* The key of st's model at now (st has rows). */
	void		(*key) (const SelectorConfig *cfg, const StateHeader *st, double now,
						ClockKey *key);
	/* st's model at its key, in the current memory context (NULL: no row counts). */
	ArmModel   *(*decode_at) (const SelectorConfig *cfg, const StateHeader *st,
							  const ClockKey *key);
	/* The now of a reader whose snapshot alone does not give it (0: it does). */
	double		(*now) (void);
	/* A tick_column value (or a counted tick, float8) as a tick: NULL without ticks. */
	double		(*tick) (Datum value);
} ClockOps;

extern const ClockOps *clock_ops(ClockKind clock);
extern bool clock_key_equal(const ClockKey *a, const ClockKey *b);
extern ArmModel *clock_decode(const SelectorConfig *cfg, const StateHeader *st, double now);

#endif
