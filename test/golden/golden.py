#!/usr/bin/python3
"""Golden-value generator for the model_select extension.

Computes the expected (mean, width, ucb) of model_select.scores() for a small
fixed data set with numpy's *dense* linear algebra (np.linalg.solve on the full
K + alpha*I, resp. the primal A = alpha*I + sum z z^T for lin_ucb), i.e.
independently of the extension's incremental Cholesky updates, and writes the
pgTAP file test/tap/generated/golden.sql with those numbers embedded.

The generated file is committed, so running the test needs no python.

Regenerate (from the repository root; needs Debian's python3-numpy):

    /usr/bin/python3 test/golden/golden.py            # writes test/tap/generated/golden.sql
    /usr/bin/python3 test/golden/golden.py -o FILE    # writes elsewhere

Formulas implemented here (from the API contract):
  pak_ucb:  k'(x,y) = k(x,y) + intercept,  K = [k'(x_i,x_j)],  v = rewards
            mean  = k'_y^T (K + alpha I)^-1 v
            width = alpha^-1/2 sqrt(max(0, k'(y,y) - k'_y^T (K + alpha I)^-1 k'_y))
            ucb   = mean + eta * width
            rbf:    k = exp(-||x-y||^2 / (2 bandwidth^2))
            poly:   k = (gamma x.y + offset)^degree
            linear: k = x.y
  lin_ucb:  z = [x ; sqrt(intercept)], A = alpha I + sum z z^T, b = sum r z,
            mean = z^T A^-1 b, width = sqrt(z^T A^-1 z), ucb = mean + eta*width;
            with noise_prior n0 > 0 (lin_ucb's default 5) ucb = mean + eta*s*width,
            s = sqrt((n0 + max(0, r^T r - b^T A^-1 b)) / (n0 + n))
  greedy:   mean = reward_sum / n, width = 0, ucb = mean
  n = 0:    mean = width = ucb = 'Infinity'
  normalize (default true, pak_ucb/lin_ucb): contexts (data and probe) are
            L2-normalised before use.
"""

import argparse
import json
import math
import os
import sys

import numpy as np

from sqlgen import Out, arr, f8, jsonb, q

REL_TOL = 1e-9          # tolerance used in the generated SQL
SELF_TOL = 1e-12        # tolerance for the script's own cross-checks

# --------------------------------------------------------------------------
# Fixed data set (hand-written, non-normalised, pairwise different directions)
# --------------------------------------------------------------------------
DATA = {
    'a': [
        ([1.0, 0.2, -0.3], 0.9),
        ([0.1, 1.0, 0.4], 0.2),
        ([-0.5, 0.3, 1.2], 0.75),
        ([0.7, -0.8, 0.1], 0.4),
        ([0.3, 0.6, -0.9], 0.6),
        ([-1.1, -0.4, 0.2], 0.1),
    ],
    'b': [
        ([0.4, 0.9, -0.2], 0.55),
        ([-0.6, 0.2, -0.7], 0.3),
    ],
}
PROBES = [
    [0.8, 0.5, 0.1],
    [-0.2, -1.0, 0.6],
    [0.5, -0.3, -1.4],
]
ARMS = ['a', 'b']
DIM = 3
SEED = 0

BASE = {"alpha": 0.5, "eta": 1.5, "intercept": 0.3}

# (selector name, policy, kernel or None, settings as passed to create_selector,
#  add an empty arm 'c' after loading the data?)
CASES = [
    ('g_rbf', 'pak_ucb', 'rbf', dict(BASE, bandwidth=0.8), True),
    ('g_poly', 'pak_ucb', 'poly', dict(BASE, gamma=2, degree=3, offset=1), False),
    ('g_linear', 'pak_ucb', 'linear', dict(BASE), False),
    ('g_lin', 'lin_ucb', None, dict(BASE, noise_prior=0), False),
    ('g_lin_noise', 'lin_ucb', None, dict(BASE, noise_prior=3), True),
    ('g_lin_defaults', 'lin_ucb', None, {}, False),
    ('g_greedy', 'greedy', None, {}, True),
    ('g_rbf_raw', 'pak_ucb', 'rbf', dict(BASE, bandwidth=0.8, normalize=False), False),
]

# Defaults from the contract (only those the formulas need), and the
# policies' own (PolicyOps.defaults).
DEFAULTS = {"alpha": 1.0, "eta": 0.5, "intercept": 1.0, "bandwidth": 1.0,
            "gamma": 1.0, "degree": 3, "offset": 1.0, "normalize": True, "noise_prior": 0.0}
UCB_SCALE = {"alpha": 20.0, "intercept": 10.0, "eta": 2.0}
POLICY_DEFAULTS = {'lin_ucb': dict(UCB_SCALE, noise_prior=5.0), 'pak_ucb': UCB_SCALE, 'bkb': UCB_SCALE}

# Closed-form single-point checks: one reward for arm 'a', one probe.  With a
# single data point x (reward r) the formulas collapse to
#   mean  = k'(x,y) r / (k'(x,x) + alpha)
#   width = sqrt(max(0, k'(y,y) - k'(x,y)^2 / (k'(x,x) + alpha)) / alpha)
# and the kernel itself is written out in SQL, so these assertions do not
# depend on numbers computed here.
CLOSED = [
    # name, policy, kernel, settings, x, r, y
    ('k_rbf', 'pak_ucb', 'rbf',
     {"alpha": 0.5, "eta": 1.5, "intercept": 0.3, "bandwidth": 0.8, "normalize": False},
     [1.0, 2.0, 0.5], 0.7, [0.3, 1.5, -0.4]),
    ('k_poly', 'pak_ucb', 'poly',
     {"alpha": 2, "eta": 0.25, "intercept": 0.1, "gamma": 0.5, "degree": 2, "offset": 2,
      "normalize": False},
     [1.0, -0.5, 2.0], 0.35, [0.4, 0.9, -1.2]),
    ('k_linear', 'pak_ucb', 'linear',
     {"alpha": 0.5, "eta": 1.5, "intercept": 0.3},          # normalize defaults to true
     [2.0, -1.0, 0.5], 0.8, [1.5, 0.5, 1.0]),
    ('k_lin', 'lin_ucb', None,
     {"alpha": 0.5, "eta": 1.5, "intercept": 0.3, "normalize": False, "noise_prior": 0},
     [2.0, -1.0, 0.5], 0.8, [1.5, 0.5, 1.0]),
]


# --------------------------------------------------------------------------
# numpy reference implementation
# --------------------------------------------------------------------------
def resolve(settings, policy=None):
    s = dict(DEFAULTS)
    s.update(POLICY_DEFAULTS.get(policy, {}))
    s.update(settings)
    return s


def prep(x, s):
    x = np.asarray(x, dtype=np.float64)
    if s["normalize"]:
        nrm = np.linalg.norm(x)
        assert nrm > 0
        x = x / nrm
    return x


def kernel(kind, s, x, y):
    if kind == 'rbf':
        d = x - y
        return math.exp(-float(d @ d) / (2.0 * s["bandwidth"] ** 2))
    if kind == 'poly':
        return (s["gamma"] * float(x @ y) + s["offset"]) ** s["degree"]
    if kind == 'linear':
        return float(x @ y)
    raise ValueError(kind)


def pak_ucb(kind, s, X, v, y):
    """Dense kernel form, K + alpha*I solved in one go."""
    c, alpha = s["intercept"], s["alpha"]
    kp = lambda a, b: kernel(kind, s, a, b) + c
    n = len(X)
    K = np.array([[kp(X[i], X[j]) for j in range(n)] for i in range(n)])
    ky = np.array([kp(X[i], y) for i in range(n)])
    M = K + alpha * np.eye(n)
    mean = float(ky @ np.linalg.solve(M, v))
    kyy = kp(y, y)
    q = float(ky @ np.linalg.solve(M, ky))
    resid = kyy - q
    # the 1e-9 relative tolerance is only meaningful if the width is not
    # the result of catastrophic cancellation
    assert resid > 1e-3 * kyy, (kind, resid, kyy)
    width = math.sqrt(max(0.0, resid)) / math.sqrt(alpha)
    # accuracy cross-check of the float64 solve: same quantities through an
    # eigendecomposition of K + alpha*I (well conditioned, so both must agree)
    w, U = np.linalg.eigh(M)
    assert w.min() >= alpha * (1 - 1e-12) and w.max() / w.min() < 1e6, (kind, w)
    a, b = U.T @ ky, U.T @ v
    assert abs(float(np.sum(a * b / w)) - mean) <= SELF_TOL * max(1.0, abs(mean))
    assert abs(kyy - float(np.sum(a * a / w)) - resid) <= SELF_TOL * kyy
    return mean, width


def lin_ucb(s, X, v, y):
    """Primal ridge form, A = alpha*I + sum z z^T."""
    c, alpha = s["intercept"], s["alpha"]
    z = lambda x: np.concatenate([x, [math.sqrt(c)]])
    Z = np.array([z(x) for x in X])
    A = alpha * np.eye(Z.shape[1]) + Z.T @ Z
    b = Z.T @ v
    zy = z(y)
    mean = float(zy @ np.linalg.solve(A, b))
    width = math.sqrt(float(zy @ np.linalg.solve(A, zy)))
    return mean, width


def lin_noise_scale(s, X, v):
    """The learnt noise scale of noise_prior (1 when off)."""
    n0 = s["noise_prior"]
    if n0 == 0:
        return 1.0
    c, alpha = s["intercept"], s["alpha"]
    Z = np.array([np.concatenate([x, [math.sqrt(c)]]) for x in X])
    b = Z.T @ v
    quad = float(v @ v) - float(b @ np.linalg.solve(alpha * np.eye(Z.shape[1]) + Z.T @ Z, b))
    return math.sqrt((n0 + max(quad, 0.0)) / (n0 + len(v)))


def golden(policy, kind, settings, rows, probe):
    s = resolve(settings, policy)
    if not rows:
        inf = float('inf')
        return inf, inf, inf
    rewards = np.array([r for _, r in rows], dtype=np.float64)
    if policy == 'greedy':
        m = float(np.sum(rewards)) / len(rewards)
        return m, 0.0, m
    X = [prep(x, s) for x, _ in rows]
    y = prep(probe, s)
    if policy == 'pak_ucb':
        mean, width = pak_ucb(kind, s, X, rewards, y)
    elif policy == 'lin_ucb':
        mean, width = lin_ucb(s, X, rewards, y)
        return mean, width, mean + s["eta"] * lin_noise_scale(s, X, rewards) * width
    else:
        raise ValueError(policy)
    return mean, width, mean + s["eta"] * width


def close(a, b, tol=SELF_TOL):
    return abs(a - b) <= tol * max(1.0, abs(b))


def self_checks(table):
    # spec identity: pak_ucb 'linear' == lin_ucb for the same data/settings
    for p in range(len(PROBES)):
        for arm in ARMS:
            gl = table[('g_linear', p, arm)]
            gi = table[('g_lin', p, arm)]
            for a, b in zip(gl, gi):
                assert close(a, b), ('linear/lin_ucb identity', p, arm, gl, gi)
    # primal form of the 'linear' kernel without intercept trick cross-check:
    # dual (kernel) and primal results for the full data of arm 'a'
    s = resolve(dict(BASE))
    X = [prep(x, s) for x, _ in DATA['a']]
    v = np.array([r for _, r in DATA['a']])
    for probe in PROBES:
        y = prep(probe, s)
        d = pak_ucb('linear', s, X, v, y)
        q = lin_ucb(s, X, v, y)
        assert close(d[0], q[0]) and close(d[1], q[1]), (d, q)
    # noise_prior scales the radius only, and by a factor other than 1 here
    for p in range(len(PROBES)):
        for arm in ARMS:
            plain, noisy = table[('g_lin', p, arm)], table[('g_lin_noise', p, arm)]
            assert close(plain[0], noisy[0]) and close(plain[1], noisy[1]) and not close(plain[2], noisy[2], 1e-3)
    # greedy does not depend on the probe
    for arm in ARMS:
        vals = {table[('g_greedy', p, arm)] for p in range(len(PROBES))}
        assert len(vals) == 1
    # normalisation matters for the rbf data set (otherwise the raw case is pointless)
    assert not close(table[('g_rbf', 0, 'a')][0], table[('g_rbf_raw', 0, 'a')][0], 1e-6)


def closed_form(kind, s, x, y):
    """Single-point closed form, straight from the formulas above."""
    x, y = prep(x, s), prep(y, s)
    c, alpha = s["intercept"], s["alpha"]
    if kind is None:       # lin_ucb, via Sherman-Morrison
        kind = 'linear'
    kxy = kernel(kind, s, x, y) + c
    kxx = kernel(kind, s, x, x) + c
    kyy = kernel(kind, s, y, y) + c
    return kxy, kxx, kyy


# --------------------------------------------------------------------------
# SQL generation
# --------------------------------------------------------------------------
def create_selector(out, name, policy, kind, settings):
    kern = q(kind) if kind else 'NULL::text'
    out.sql("SELECT isnt(model_select.create_selector(%s, %d, ARRAY['a','b'], %s, %s,\n"
            "            %s, %d), NULL, %s);"
            % (q(name), DIM, q(policy), kern, jsonb(settings), SEED,
               q('%s: create_selector' % name)), 1)


def insert_rewards(out, name, rows_by_arm):
    vals = []
    for arm, rows in rows_by_arm.items():
        for x, r in rows:
            vals.append("  (%s, %s, %s, %s)" % (q(name), q(arm), arr(x), repr(float(r))))
    out.sql("SELECT lives_ok($$\nINSERT INTO model_select.rewards(selector, arm, context, reward) VALUES\n"
            + ',\n'.join(vals) + "\n$$, %s);" % q('%s: insert %d reward%s' % (name, len(vals), '' if len(vals) == 1 else 's')), 1)


def check_scores(out, name, phase, table, with_c):
    for arm, cnt in (('a', len(DATA['a'])), ('b', len(DATA['b']))):
        out.sql("SELECT is((SELECT n FROM model_select.scores(%s, %s) WHERE arm = %s), %d::bigint, %s);"
                % (q(name), arr(PROBES[0]), q(arm), cnt,
                   q('%s %s: arm %s n' % (name, phase, arm))), 1)
    for p, probe in enumerate(PROBES):
        for arm in ARMS:
            mean, width, ucb = table[(name, p, arm)]
            d = '%s %s: probe %d arm %s ' % (name, phase, p + 1, arm)
            out.sql(
                "WITH s AS (SELECT * FROM model_select.scores(%s, %s) WHERE arm = %s)\n"
                "SELECT pg_temp.close_to((SELECT mean FROM s), %s, %s)\n"
                "UNION ALL SELECT pg_temp.close_to((SELECT width FROM s), %s, %s)\n"
                "UNION ALL SELECT pg_temp.close_to((SELECT ucb FROM s), %s, %s);"
                % (q(name), arr(probe), q(arm),
                   f8(mean), q(d + 'mean'), f8(width), q(d + 'width'), f8(ucb), q(d + 'ucb')), 3)
    if with_c:
        d = '%s %s: empty arm c ' % (name, phase)
        out.sql(
            "WITH s AS (SELECT * FROM model_select.scores(%s, %s) WHERE arm = 'c')\n"
            "SELECT is((SELECT n FROM s), 0::bigint, %s)\n"
            "UNION ALL SELECT is((SELECT mean FROM s), 'Infinity'::float8, %s)\n"
            "UNION ALL SELECT is((SELECT width FROM s), 'Infinity'::float8, %s)\n"
            "UNION ALL SELECT is((SELECT ucb FROM s), 'Infinity'::float8, %s);"
            % (q(name), arr(PROBES[1]), q(d + 'n = 0'), q(d + 'mean = Infinity'),
               q(d + 'width = Infinity'), q(d + 'ucb = Infinity')), 4)


def kernel_sql(kind, s, xs, ys):
    """SQL expression (over columns named by xs / ys) for k(x,y)+c."""
    dot = ' + '.join('%s*%s' % (a, b) for a, b in zip(xs, ys))
    if kind == 'rbf':
        sq = ' + '.join('(%s - %s)^2' % (a, b) for a, b in zip(xs, ys))
        k = 'exp(-(%s) / (2 * %r^2))' % (sq, float(s["bandwidth"]))
    elif kind == 'poly':
        k = '(%r * (%s) + %r)^%d' % (float(s["gamma"]), dot, float(s["offset"]), s["degree"])
    else:
        k = '(%s)' % dot
    return '%s + %r' % (k, float(s["intercept"]))


def closed_form_block(out, name, policy, kind, settings, x, r, y):
    s = resolve(settings, policy)
    create_selector(out, name, policy, kind, settings)
    insert_rewards(out, name, {'a': [(x, r)]})

    # numpy: closed form must agree with the dense solve
    kxy, kxx, kyy = closed_form(kind, s, x, y)
    cf_mean = kxy * r / (kxx + s["alpha"])
    cf_width = math.sqrt(max(0.0, kyy - kxy * kxy / (kxx + s["alpha"])) / s["alpha"])
    g = golden(policy, kind, settings, [(x, r)], y)
    assert close(cf_mean, g[0]) and close(cf_width, g[1]), (name, cf_mean, cf_width, g)

    # SQL: the same closed form written out over the raw numbers
    cols = ['x1', 'x2', 'x3', 'y1', 'y2', 'y3']
    if s["normalize"]:
        src = ("SELECT x1/nx AS x1, x2/nx AS x2, x3/nx AS x3, y1/ny AS y1, y2/ny AS y2, y3/ny AS y3\n"
               "    FROM (SELECT *, sqrt(x1^2 + x2^2 + x3^2) AS nx, sqrt(y1^2 + y2^2 + y3^2) AS ny FROM raw) t")
    else:
        src = "SELECT * FROM raw"
    kk = 'linear' if kind is None else kind
    kxy_s = kernel_sql(kk, s, cols[:3], cols[3:])
    kxx_s = kernel_sql(kk, s, cols[:3], cols[:3])
    kyy_s = kernel_sql(kk, s, cols[3:], cols[3:])
    a = repr(float(s["alpha"]))
    eta = repr(float(s["eta"]))
    vals = ', '.join('%s::float8' % repr(float(t)) for t in list(x) + list(y))
    d = '%s: single-point closed form ' % name
    out.sql(
        "WITH raw(%s) AS (VALUES (%s)),\n"
        "  v AS (%s),\n"
        "  k AS (SELECT %s AS kxy,\n"
        "               %s AS kxx,\n"
        "               %s AS kyy FROM v),\n"
        "  e AS (SELECT kxy * %r / (kxx + %s) AS mean,\n"
        "               sqrt(greatest(0, kyy - kxy^2 / (kxx + %s)) / %s) AS width FROM k),\n"
        "  s AS (SELECT * FROM model_select.scores(%s, %s) WHERE arm = 'a')\n"
        "SELECT pg_temp.close_to((SELECT mean FROM s), (SELECT mean FROM e), %s)\n"
        "UNION ALL SELECT pg_temp.close_to((SELECT width FROM s), (SELECT width FROM e), %s)\n"
        "UNION ALL SELECT pg_temp.close_to((SELECT ucb FROM s), (SELECT mean + %s * width FROM e), %s);"
        % (', '.join(cols), vals, src, kxy_s, kxx_s, kyy_s, float(r), a, a, a,
           q(name), arr(y), q(d + 'mean'), q(d + 'width'), eta, q(d + 'ucb')), 3)


def generate():
    table = {}
    for name, policy, kind, settings, _ in CASES:
        for p, probe in enumerate(PROBES):
            for arm in ARMS:
                table[(name, p, arm)] = golden(policy, kind, settings, DATA[arm], probe)
    self_checks(table)

    out = Out()
    out.sql("BEGIN;\n"
            "CREATE EXTENSION IF NOT EXISTS pgtap;\n"
            "CREATE EXTENSION model_select;\n"
            "SELECT plan(@@PLAN@@);")
    out.comment(
        "close_to(got, expected, description): relative tolerance %g,\n"
        "i.e. abs(got - expected) <= %g * greatest(1, abs(expected)); prints got/expected on failure."
        % (REL_TOL, REL_TOL))
    out.sql(
        "CREATE FUNCTION pg_temp.close_to(got float8, want float8, descr text) RETURNS text\n"
        "LANGUAGE plpgsql AS $f$\n"
        "BEGIN\n"
        "  IF got IS NOT NULL AND want IS NOT NULL\n"
        "     AND (got = want OR abs(got - want) <= %r * greatest(1, abs(want))) THEN\n"
        "    RETURN ok(true, descr);\n"
        "  END IF;\n"
        "  RETURN ok(false, descr) || E'\\n' || diag(format(\n"
        "    E'    got:      %%s\\n    expected: %%s\\n    (relative tolerance %g)',\n"
        "    coalesce(got::text, 'NULL'), coalesce(want::text, 'NULL')));\n"
        "END\n"
        "$f$;" % (REL_TOL, REL_TOL))

    for name, policy, kind, settings, with_c in CASES:
        out.comment("Case %s: policy %s, kernel %s, settings %s"
                    % (name, policy, kind or 'NULL', json.dumps(settings)))
        create_selector(out, name, policy, kind, settings)
        insert_rewards(out, name, DATA)
        if with_c:
            out.sql("SELECT lives_ok($$SELECT model_select.add_arm(%s, 'c')$$, %s);"
                    % (q(name), q('%s: add_arm c (no rewards)' % name)), 1)
        check_scores(out, name, 'before rebuild', table, with_c)
        out.sql("SELECT is(model_select.rebuild_state(%s), %d::bigint, %s);"
                % (q(name), len(DATA['a']) + len(DATA['b']), q('%s: rebuild_state applies all rewards' % name)), 1)
        check_scores(out, name, 'after rebuild', table, with_c)

    out.comment("Spec identity: pak_ucb 'linear' and lin_ucb give the same mean, width (and ucb)\n"
                "for the same data and settings (compared directly, not via golden numbers).")
    for p, probe in enumerate(PROBES):
        for arm in ARMS:
            d = 'identity pak_ucb linear = lin_ucb: probe %d arm %s ' % (p + 1, arm)
            out.sql(
                "WITH l AS (SELECT * FROM model_select.scores('g_linear', %s) WHERE arm = %s),\n"
                "     z AS (SELECT * FROM model_select.scores('g_lin', %s) WHERE arm = %s)\n"
                "SELECT pg_temp.close_to((SELECT mean FROM l), (SELECT mean FROM z), %s)\n"
                "UNION ALL SELECT pg_temp.close_to((SELECT width FROM l), (SELECT width FROM z), %s)\n"
                "UNION ALL SELECT pg_temp.close_to((SELECT ucb FROM l), (SELECT ucb FROM z), %s);"
                % (arr(probe), q(arm), arr(probe), q(arm), q(d + 'mean'), q(d + 'width'), q(d + 'ucb')), 3)

    out.comment(
        "Kernel closed forms.  One reward (x, r) for arm 'a', probe y:\n"
        "  mean  = k'(x,y) r / (k'(x,x) + alpha)\n"
        "  width = sqrt(max(0, k'(y,y) - k'(x,y)^2 / (k'(x,x) + alpha)) / alpha)\n"
        "with k' written out in SQL (rbf / poly unnormalised, linear normalised,\n"
        "lin_ucb unnormalised via z = [x ; sqrt(c)]).")
    for name, policy, kind, settings, x, r, y in CLOSED:
        closed_form_block(out, name, policy, kind, settings, x, r, y)

    out.sql("\nSELECT * FROM finish();\nROLLBACK;")

    header = (
        "-- GENERATED FILE, DO NOT EDIT.\n"
        "-- Generated by test/golden/golden.py (numpy %s, dense np.linalg.solve).\n"
        "-- Regenerate from the repository root with:\n"
        "--     /usr/bin/python3 test/golden/golden.py\n"
        "-- Golden values for model_select.scores(): mean, width, ucb per (policy, kernel)\n"
        "-- case, checked to relative %g, before and after model_select.rebuild_state().\n"
        % (np.__version__, REL_TOL))
    text = header + '\n'.join(out.lines) + '\n'
    text = text.replace('@@PLAN@@', str(out.ntests), 1)
    return text, out.ntests


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('-o', '--output', default=os.path.join(here, '..', 'tap', 'generated', 'golden.sql'))
    args = ap.parse_args()
    text, n = generate()
    with open(args.output, 'w') as f:
        f.write(text)
    print('wrote %s (%d tests)' % (os.path.normpath(args.output), n), file=sys.stderr)


if __name__ == '__main__':
    main()
