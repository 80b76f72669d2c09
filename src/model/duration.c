/*
 * duration.c — a duration given as text ("7 days", "90 minutes", "PT1H"),
 * read with PostgreSQL's own interval input and measured in seconds as
 * extract(epoch from interval) does: a month is 30 days and a year 365.25
 * days.  Bad text is reported to the caller rather than raised, so that a
 * setting can say which key was wrong (22023).
 */
#include "postgres.h"

#include <math.h>

#include "utils/builtins.h"
#include "utils/datetime.h"
#include "utils/fmgrprotos.h"
#include "utils/numeric.h"
#include "utils/timestamp.h"

#include "model/duration.h"
#include "model/settings.h"

/* Seconds of the interval written in str; false when str is no interval. */
static bool
duration_parse(const char *str, double *seconds)
{
	char		workbuf[256];
	char	   *field[MAXDATEFIELDS];
	int			ftype[MAXDATEFIELDS];
	int			nf;
	int			dtype = DTK_DELTA;
	struct pg_itm_in itm;
	Interval	span;
	int			err;

	err = ParseDateTime(str, workbuf, sizeof(workbuf), field, ftype, MAXDATEFIELDS, &nf);
	if (err == 0)
		err = DecodeInterval(field, ftype, nf, INTERVAL_FULL_RANGE, &dtype, &itm);
	/* as interval_in: what is no PostgreSQL interval may be ISO 8601's */
	if (err == DTERR_BAD_FORMAT)
		err = DecodeISO8601Interval(unconstify(char *, str), &dtype, &itm);
	if (err != 0 || dtype != DTK_DELTA || itmin2interval(&itm, &span) != 0)
		return false;
	*seconds = DatumGetFloat8(DirectFunctionCall2(interval_part, CStringGetTextDatum("epoch"),
												  IntervalPGetDatum(&span)));
	return true;
}

/*
 * Whether a JSON number is whole, checked on the number itself: as a float8
 * 1e-400 would read as a whole 0.
 */
bool
json_number_is_whole(Numeric num)
{
	Datum		d = NumericGetDatum(num);

	return DatumGetBool(DirectFunctionCall2(numeric_eq, d,
											DirectFunctionCall2(numeric_trunc, d, Int32GetDatum(0))));
}

/*
 * A duration setting's value: an interval's text or a number of seconds,
 * whole and positive (a number may be 0: off), up to MAX_DURATION; false
 * for anything else.
 */
bool
duration_from_json(const JsonbValue *v, double *seconds)
{
	bool		ok = false;

	*seconds = 0;
	if (v->type == jbvString)
		ok = duration_parse(pnstrdup(v->val.string.val, v->val.string.len), seconds) && *seconds > 0;
	else if (v->type == jbvNumeric)
	{
		*seconds = DatumGetFloat8(DirectFunctionCall1(numeric_float8_no_overflow,
													  NumericGetDatum(v->val.numeric)));
		ok = *seconds >= 0 && json_number_is_whole(v->val.numeric);
	}
	return ok && *seconds == floor(*seconds) && *seconds <= MAX_DURATION;
}
