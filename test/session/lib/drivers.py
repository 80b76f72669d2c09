"""Contexts from Python drivers (run by test/session/drivers.sh).

For psycopg2 and psycopg 3 alike, on a lin_ucb selector that has learned (so
that the choice depends on the context): select_model() with a list of
floats, a list of ints, a numpy float32 array through examples/numpy_adapt.py
and a '{...}' literal each returns the arm that SQL chooses for the same
numbers given as float8[] (real[] for the float32 array); route() and a
reward insert by decision_id are learned.  Prints TAP lines; exit 1 on any
failure.  Connects with the libpq environment (PGHOST, PGDATABASE, ...).
"""
import os
import sys

import numpy

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "examples"))
import numpy_adapt  # noqa: E402

FLOATS = [0.9, -0.35, 0.125]
INTS = [3, -1, 2]
F32 = numpy.array([0.3, 0.7, -0.2], dtype=numpy.float32)
failures = 0
count = 0


def check(desc, ok, detail=""):
    global failures, count
    count += 1
    print(f"{'ok' if ok else 'not ok'} {count} - {desc}")
    if not ok:
        failures += 1
        print(f"#   {detail}")


def one(cur, sql, args=()):
    cur.execute(sql, args)
    return cur.fetchone()[0]


def contexts(cur, name):
    """(description, parameter, the SQL that gives the same numbers typed)."""
    f32_sql = "ARRAY[" + ",".join(map(repr, F32.astype(float).tolist())) + "]::real[]"
    return [
        ("a list of floats", FLOATS, "ARRAY[0.9, -0.35, 0.125]::float8[]"),
        ("a list of ints", INTS, "ARRAY[3, -1, 2]::float8[]"),
        ("a numpy float32 array (numpy_adapt)", F32, f32_sql),
    ]


def drive(name, conn):
    cur = conn.cursor()
    for desc, param, typed in contexts(cur, name):
        sent = one(cur, "SELECT pg_typeof(%s)::text", (param,))
        got = one(cur, "SELECT model_select.select_model('drv', %s)", (param,))
        want = one(cur, f"SELECT model_select.select_model('drv', {typed})")
        check(f"{name}: select_model with {desc} (sent as {sent}) returns {want}", got == want,
              f"got {got!r}")
    got = one(cur, "SELECT model_select.select_model('drv', '{0.9, -0.35, 0.125}')")
    want = one(cur, "SELECT model_select.select_model('drv', ARRAY[0.9, -0.35, 0.125]::float8[])")
    check(f"{name}: select_model with a '{{...}}' literal returns {want}", got == want, f"got {got!r}")

    cur.execute("SELECT decision_id, arm FROM model_select.route('drv', %s)", (FLOATS,))
    decision_id, arm = cur.fetchone()
    before = one(cur, "SELECT n FROM model_select.arm_stats WHERE selector = 'drv' AND arm = %s", (arm,))
    cur.execute("INSERT INTO model_select.rewards(decision_id, reward) VALUES (%s, %s)", (decision_id, 0.75))
    after = one(cur, "SELECT n FROM model_select.arm_stats WHERE selector = 'drv' AND arm = %s", (arm,))
    # stored once, in the decision (real[] when every value is a real)
    logged = one(cur, "SELECT COALESCE(context, context_real::float8[]) = %s::float8[]"
                      " FROM model_select.decisions WHERE decision_id = %s", (FLOATS, decision_id))
    check(f"{name}: route() then a reward for its decision: {arm} learned it (n {before} -> {after})",
          after == before + 1 and logged, f"n {before} -> {after}, context logged as sent: {logged}")


def main():
    import psycopg
    import psycopg2

    with psycopg.connect(autocommit=True) as conn:
        conn.execute("SELECT model_select.create_selector('drv', 3, ARRAY['a', 'b', 'c'], 'lin_ucb', NULL,"
                     " '{\"eta\": 0.05}', 5)")
        # each arm is best in its own direction: the choice depends on the context
        conn.execute("""INSERT INTO model_select.rewards(selector, arm, context, reward)
                        SELECT 'drv', arm, ctx, CASE WHEN arm = best THEN 0.9 ELSE 0.1 END
                          FROM (VALUES ('a', '{1,0,0}'::float8[]), ('b', '{0,1,0}'), ('c', '{0,0,1}'),
                                       ('a', '{1,-0.5,0}'), ('b', '{-0.3,1,0}'), ('c', '{0,-0.2,1}')) p(best, ctx),
                               unnest(ARRAY['a', 'b', 'c']) arm""")
        chosen = {r[0] for r in conn.execute(
            "SELECT model_select.select_model('drv', c) FROM (VALUES ('{1,0,0}'::float8[]), ('{0,1,0}'),"
            " ('{0,0,1}')) v(c)")}
        check("the selector's choice depends on the context (3 arms for 3 directions)", len(chosen) == 3,
              f"chose {sorted(chosen)}")
        numpy_adapt.register_psycopg(conn)
        drive("psycopg 3", conn)
    numpy_adapt.register_psycopg2()
    conn2 = psycopg2.connect("")
    conn2.autocommit = True
    drive("psycopg2", conn2)
    conn2.close()
    print(f"{count - failures} passed, {failures} failed")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
