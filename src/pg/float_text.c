/*
 * float_text.c — doubles in messages.
 */
#include "postgres.h"

#include "common/shortest_dec.h"

#include "pg/float_text.h"

/*
 * A double in a message: the shortest text that reads back as the same
 * value (as float8 output does), so that 1.0000000000000002 is not shown as
 * the 1 it was refused for being above.  Palloc'd.
 */
char *
exact_text(double value)
{
	return double_to_shortest_decimal(value);
}
