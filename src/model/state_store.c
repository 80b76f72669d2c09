/*
 * state_store.c — an arm's checkpointed state as stored: one bytea in
 * arm_state.state, or, for a policy whose rows a reward only appends to
 * (PolicyOps.row_spans: pak_ucb), its header there and its rows in
 * model_select.arm_state_rows.
 *
 * Why rows: pak_ucb's state is O(n²) (a packed Cholesky factor), but a
 * reward adds O(n) to it, a row that later rewards leave as it is.  A
 * checkpoint that rewrote the whole state would cost the factor's size in
 * WAL every checkpoint_threshold rewards; stored by rows, it writes only
 * the rows added since the last one.  A chunk holds rows [first_row,
 * first_row + nrows): the policy's row spans for those rows, concatenated.
 * A checkpoint whose fold only appended (the stored rows are, bit for bit,
 * the first rows of the new state) inserts a chunk of the new rows; any
 * other fold (a window or cap forgetting its oldest row, a discount, a
 * restart, a rebuild, new settings) deletes the arm's chunks and writes all
 * its rows.  Chunks are written only by checkpoint_write(), under the
 * arm_state row lock and in the same transaction as the row, so a snapshot
 * sees the chunks of the arm_state row version it sees.  They must tile
 * [0, n) exactly, or the state is damaged (XX001): no bytes in the table can
 * make a reader touch memory outside the state.
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "fmgr.h"

#include "pg/spi_util.h"
#include "model/state_store.h"
#include "model/clock_ops.h"
#include "model/registry.h"

/*
 * The most bytes of rows one chunk holds: a whole state is written in
 * pieces, so that writing it needs little more memory than the state.
 */
#define ROWS_CHUNK_BYTES (8 * 1024 * 1024)

static void
rows_damaged(int32 arm_id, const char *detail)
{
	ereport(ERROR,
			(errcode(ERRCODE_DATA_CORRUPTED),
			 errmsg("the stored rows of arm %d do not make its state", arm_id),
			 errdetail_internal("%s", detail),
			 errhint("Run model_select.rebuild_state() to recompute it from the reward log.")));
}

/* Float8 values of rows [first, last) of st; spans gets where they are. */
static Size
rows_values(const SelectorConfig *cfg, const StateHeader *st, int first, int last,
			RowSpan *spans, int *count)
{
	Size		total = 0;

	*count = policy_ops(cfg->policy)->row_spans(cfg, st, first, last, spans);
	for (int i = 0; i < *count; i++)
		total += spans[i].count;
	return total;
}

/* Copy a chunk's rows [first, last) into st, which has room for them. */
static void
rows_scatter(const SelectorConfig *cfg, int32 arm_id, StateHeader *st, int first, int last,
			 bytea *rows)
{
	RowSpan		spans[MAX_ROW_SPANS];
	int			count;
	Size		values = rows_values(cfg, st, first, last, spans, &count);
	const char *src = VARDATA_ANY(rows);

	if (VARSIZE_ANY_EXHDR(rows) != values * sizeof(double))
		rows_damaged(arm_id, psprintf("rows %d to %d take %zu bytes, not %zu", first, last - 1,
									  (Size) VARSIZE_ANY_EXHDR(rows), values * sizeof(double)));
	for (int i = 0; i < count; i++)
	{
		memcpy(STATE_BODY(st) + spans[i].offset, src, sizeof(double) * spans[i].count);
		src += sizeof(double) * spans[i].count;
	}
}

/* The columns of rows_read()'s query. */
enum
{
	CHUNK_FIRST_ROW = 1,
	CHUNK_NROWS,
	CHUNK_ROWS
};

/*
 * Fill st's rows from the arm's chunks, read under the current snapshot
 * (read_only: the one the caller read arm_state with) or a new one (a
 * checkpoint that has just locked the arm_state row: its newest version).
 */
static void
rows_read(const SelectorConfig *cfg, int32 arm_id, StateHeader *st, bool read_only)
{
	static SPIPlanPtr plan = NULL;
	Oid			types[1] = {INT4OID};
	Datum		args[1] = {Int32GetDatum(arm_id)};
	SPITupleTable *tt;
	uint64		nchunks;
	int			next = 0;

	spi_execute(spi_plan(&plan, "SELECT first_row, nrows, rows FROM model_select.arm_state_rows"
						 " WHERE arm_id = $1 ORDER BY first_row", 1, types),
				args, NULL, read_only, 0, SPI_OK_SELECT, "read the stored rows of arm %d", arm_id);
	tt = SPI_tuptable;
	nchunks = SPI_processed;
	for (uint64 i = 0; i < nchunks; i++)
	{
		int32		first = spi_int32(tt->vals[i], tt->tupdesc, CHUNK_FIRST_ROW);
		int32		nrows = spi_int32(tt->vals[i], tt->tupdesc, CHUNK_NROWS);
		Datum		raw = spi_datum(tt->vals[i], tt->tupdesc, CHUNK_ROWS);
		bytea	   *rows;

		if (first != next || nrows < 1 || nrows > st->n - first)
			rows_damaged(arm_id, psprintf("a chunk of %d rows at row %d, expected one at row %d of %d",
										  nrows, first, next, st->n));
		rows = DatumGetByteaPP(raw);
		rows_scatter(cfg, arm_id, st, first, first + nrows, rows);
		if ((Pointer) rows != DatumGetPointer(raw))
			pfree(rows);
		next = first + nrows;
	}
	if (next != st->n)
		rows_damaged(arm_id, psprintf("the chunks hold %d rows of %d", next, st->n));
	SPI_freetuptable(tt);
}

/*
 * Is cfg's state stored by rows?  A policy's own layout with row_spans is;
 * a clocked state (clock_ops.h) is one value.
 */
static bool
stored_by_rows(const SelectorConfig *cfg)
{
	return policy_ops(cfg->policy)->row_spans != NULL && !clock_ops(cfg->clock)->ages;
}

/*
 * The state stored as `stored` (arm_state.state of arm_id, or its base's
 * arm_base.state; not NULL), checked against cfg, in the current memory
 * context.  A base is stored whole even where a checkpoint is stored by
 * rows (it is written once per retention pass, learning/retention.c): more
 * than a header is a whole state.  The caller is connected to SPI.
 */
StateHeader *
state_store_read(const SelectorConfig *cfg, int32 arm_id, Datum stored, bool read_only)
{
	const PolicyOps *ops = policy_ops(cfg->policy);
	bytea	   *raw = (bytea *) PG_DETOAST_DATUM_COPY(stored);
	StateHeader *head;
	StateHeader *st;

	if (!stored_by_rows(cfg) || VARSIZE(raw) > STATE_HEADER_SIZE)
		return state_check(cfg, raw);
	head = state_check_head(cfg, raw);
	st = state_alloc(cfg, head->n, ops->body_size(cfg, head->n));
	pfree(raw);
	rows_read(cfg, arm_id, st, read_only);
	return state_check(cfg, (bytea *) st);
}

/* How many of st's first rows are stored's, bit for bit (0: stored is not its prefix). */
static int
rows_kept(const SelectorConfig *cfg, const StateHeader *stored, const StateHeader *st)
{
	RowSpan		a[MAX_ROW_SPANS],
				b[MAX_ROW_SPANS];
	int			count;

	if (stored == NULL || stored->n > st->n)
		return 0;
	rows_values(cfg, stored, 0, stored->n, a, &count);
	rows_values(cfg, st, 0, stored->n, b, &count);
	for (int i = 0; i < count; i++)
		if (memcmp(STATE_BODY(stored) + a[i].offset, STATE_BODY(st) + b[i].offset,
				   sizeof(double) * a[i].count) != 0)
			return 0;
	return stored->n;
}

static void
rows_delete(int32 arm_id)
{
	static SPIPlanPtr plan = NULL;
	Oid			types[1] = {INT4OID};
	Datum		args[1] = {Int32GetDatum(arm_id)};

	spi_execute(spi_plan(&plan, "DELETE FROM model_select.arm_state_rows WHERE arm_id = $1",
						 1, types), args, NULL, false, 0, SPI_OK_DELETE,
				"delete the stored rows of arm %d", arm_id);
}

/* Insert rows [first, last) of st as one chunk. */
static void
rows_insert_chunk(const SelectorConfig *cfg, int32 arm_id, const StateHeader *st, int first,
				  int last)
{
	static SPIPlanPtr plan = NULL;
	Oid			types[5] = {INT4OID, INT4OID, INT4OID, INT4OID, BYTEAOID};
	Datum		args[5];
	RowSpan		spans[MAX_ROW_SPANS];
	int			count;
	Size		values = rows_values(cfg, st, first, last, spans, &count);
	bytea	   *rows = palloc(VARHDRSZ + values * sizeof(double));
	char	   *dst = VARDATA(rows);

	SET_VARSIZE(rows, VARHDRSZ + values * sizeof(double));
	for (int i = 0; i < count; i++)
	{
		memcpy(dst, STATE_BODY(st) + spans[i].offset, sizeof(double) * spans[i].count);
		dst += sizeof(double) * spans[i].count;
	}
	args[0] = Int32GetDatum(arm_id);
	args[1] = Int32GetDatum(cfg->selector_id);
	args[2] = Int32GetDatum(first);
	args[3] = Int32GetDatum(last - first);
	args[4] = PointerGetDatum(rows);
	spi_execute(spi_plan(&plan, "INSERT INTO model_select.arm_state_rows"
						 "(arm_id, selector_id, first_row, nrows, rows) VALUES ($1, $2, $3, $4, $5)",
						 5, types), args, NULL, false, 0, SPI_OK_INSERT,
				"store rows of arm %d", arm_id);
	pfree(rows);
}

/* Insert rows [first, st->n) of st, in chunks of at most ROWS_CHUNK_BYTES (or one row). */
static void
rows_insert(const SelectorConfig *cfg, int32 arm_id, const StateHeader *st, int first)
{
	RowSpan		spans[MAX_ROW_SPANS];
	int			count;

	while (first < st->n)
	{
		int			last = first + 1;
		Size		bytes = sizeof(double) * rows_values(cfg, st, first, last, spans, &count);

		while (last < st->n)
		{
			Size		row = sizeof(double) * rows_values(cfg, st, last, last + 1, spans, &count);

			if (bytes + row > ROWS_CHUNK_BYTES)
				break;
			bytes += row;
			last++;
		}
		rows_insert_chunk(cfg, arm_id, st, first, last);
		first = last;
	}
}

/*
 * Store st (NULL: none) as arm_id's checkpoint, replacing stored (what the
 * arm's checkpoint holds now, as read; NULL: unknown or nothing): returns
 * the bytes for arm_state.state (NULL: none), after writing the rows of a
 * state kept by rows.  The caller is connected to SPI and holds the
 * arm_state row lock.
 */
bytea *
state_store_write(const SelectorConfig *cfg, int32 arm_id, const StateHeader *stored,
				  const StateHeader *st)
{
	int			first;
	bytea	   *head;

	if (!stored_by_rows(cfg))
	{
		/* rows of a state stored by rows under other settings go */
		if (policy_ops(cfg->policy)->row_spans != NULL)
			rows_delete(arm_id);
		return (bytea *) unconstify(StateHeader *, st);
	}
	first = st != NULL ? rows_kept(cfg, stored, st) : 0;
	if (first == 0)
		rows_delete(arm_id);
	if (st == NULL)
		return NULL;
	rows_insert(cfg, arm_id, st, first);
	head = palloc(STATE_HEADER_SIZE);
	memcpy(head, st, STATE_HEADER_SIZE);
	SET_VARSIZE(head, STATE_HEADER_SIZE);
	return head;
}
