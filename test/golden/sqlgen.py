"""
sqlgen.py — SQL literals and an output buffer shared by the golden-value
generators (golden.py, confidence.py), which import it from this folder.
"""
import json
import math


def f8(x):
    """A float8 literal that parses to exactly the same double."""
    if math.isinf(x):
        return "'Infinity'::float8" if x > 0 else "'-Infinity'::float8"
    r = repr(float(x))
    assert float(r) == x
    return "'%s'::float8" % r


def arr(v):
    return 'ARRAY[%s]::float8[]' % ', '.join(repr(float(t)) for t in v)


def q(s):
    return "'" + s.replace("'", "''") + "'"


def jsonb(settings):
    return q(json.dumps(settings, separators=(', ', ': '))) + '::jsonb'


class Out:
    def __init__(self):
        self.lines = []
        self.ntests = 0

    def sql(self, text, ntests=0):
        self.lines.append(text)
        self.ntests += ntests

    def comment(self, text):
        self.lines.append('')
        for t in text.splitlines():
            self.lines.append('-- ' + t)
