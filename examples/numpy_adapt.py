"""numpy embeddings as PostgreSQL arrays, for psycopg 3 and psycopg2.

Neither driver knows numpy arrays (psycopg 3 refuses them, psycopg2 sends
their repr): an application either passes embedding.tolist() or registers
an adapter once, as here. A float32 array is sent as real[] and any other
numeric array as double precision[], in text form, each element written
exactly (the shortest repr of its value as a double), so model_select reads
the same numbers the application holds:

    import psycopg, numpy_adapt
    conn = psycopg.connect()
    numpy_adapt.register_psycopg(conn)          # or no argument: every connection
    conn.execute("SELECT model_select.select_model('router', %s)",
                 (numpy.asarray(emb, dtype=numpy.float32),))

    import psycopg2, numpy_adapt
    numpy_adapt.register_psycopg2()             # every psycopg2 connection
"""
import numpy


def _array_literal(arr):
    """'{v1,v2,...}' of a one-dimensional numeric array."""
    arr = numpy.asarray(arr)
    if arr.ndim != 1 or arr.dtype.kind not in "fiu":
        raise TypeError(f"expected a one-dimensional numeric array, got {arr.ndim}-d {arr.dtype}")
    return "{" + ",".join(map(repr, arr.astype(numpy.float64).tolist())) + "}"


def _sql_type(arr):
    return "real[]" if numpy.asarray(arr).dtype == numpy.float32 else "double precision[]"


def register_psycopg(context=None):
    """psycopg 3: dump numpy.ndarray as real[] (float32) or double precision[]
    on `context` (a connection or cursor), or globally when None."""
    import psycopg
    from psycopg.adapt import Dumper

    adapters = psycopg.adapters if context is None else context.adapters
    oids = {t + "[]": adapters.types[t].array_oid for t in ("float4", "float8")}

    class Float8ArrayDumper(Dumper):
        oid = oids["float8[]"]

        def dump(self, obj):
            return _array_literal(obj).encode()

    class Float4ArrayDumper(Float8ArrayDumper):
        oid = oids["float4[]"]

    class NdarrayDumper(Float8ArrayDumper):
        # psycopg asks once per key which dumper an object needs
        def get_key(self, obj, format):
            return (self.cls, _sql_type(obj))

        def upgrade(self, obj, format):
            cls = Float4ArrayDumper if _sql_type(obj) == "real[]" else Float8ArrayDumper
            return cls(self.cls)

    adapters.register_dumper(numpy.ndarray, NdarrayDumper)


def register_psycopg2():
    """psycopg2: adapt numpy.ndarray as '{...}'::real[] (float32) or
    '{...}'::double precision[] for every connection."""
    from psycopg2.extensions import AsIs, QuotedString, register_adapter

    def adapt(arr):
        literal = QuotedString(_array_literal(arr)).getquoted().decode()
        return AsIs(f"{literal}::{_sql_type(arr)}")

    register_adapter(numpy.ndarray, adapt)
