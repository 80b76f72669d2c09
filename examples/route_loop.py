#!/usr/bin/python3
"""The loop an application runs with model_select: route each prompt, call the
chosen model, report how well it did, and learn.

Prompts come from an outcome table in the format of the project's benchmark
files (CSV: id, category, embedding real[], rewards real[] — one recorded
score per model, in the order of the .arms file next to it — costs). "Calling"
the chosen model means reading its recorded score for that prompt, so the
program shows what routing would have earned on real traffic.

    examples/route_loop.py examples/routerdc7_slice.csv          # 240 prompts
    examples/route_loop.py ../shared/bench/routerdc7_dev.csv     # all 9,271
    examples/route_loop.py ../shared/bench/routerdc7_dev.csv --warm 1000

Connects with the usual libpq environment (PGHOST, PGPORT, PGDATABASE, ...)
or --dsn; needs psycopg 3 and numpy (Debian: python3-psycopg, python3-numpy).
Embeddings are numpy float32 arrays, as an embedding model returns them,
passed as query parameters through the adapter of numpy_adapt.py (next to
this file), which sends them as real[]. It (re)creates the
selector --selector, then prints the learning curve every --every prompts and
a summary: the router's mean reward next to the best single model's and the
per-prompt oracle's over the same prompts.

With --warm K the first K prompts (after the shuffle) play the part of an
offline benchmark where every model was scored: warm_start() loads them into
the reward log before the loop, and the other prompts are routed.

It works behind a transaction-mode pooler (PgBouncer), where each transaction
may run on another server backend and several copies share backends: no
statement is prepared by the driver (prepare_threshold=None: the pooler does
not carry a prepared statement from one transaction to the next); everything
that needs the same backend -- creating the selector, the warm start's
temporary table (ON COMMIT DROP) and warm_start() -- runs in one transaction;
and no session setting is used (SET LOCAL inside a transaction, or settings
put on the role: docs/deployment.md).
"""
import argparse
import csv
import os
import random
import sys

import numpy
import psycopg

import numpy_adapt


def read_outcomes(path):
    """Rows (category, float32 embedding, rewards) and the model names."""
    arms_path = os.path.splitext(path)[0] + ".arms"
    with open(arms_path) as f:
        arms = [line.strip() for line in f if line.strip()]
    rows = []
    with open(path, newline="") as f:
        for rec in csv.DictReader(f):
            rewards = [float(v) for v in rec["rewards"].strip("{}").split(",")]
            if len(rewards) != len(arms):
                sys.exit(f"{path}: row {rec['id']} has {len(rewards)} rewards for {len(arms)} models")
            embedding = numpy.array(rec["embedding"].strip("{}").split(","), dtype=numpy.float32)
            rows.append((rec["category"], embedding, rewards))
    return rows, arms


def create_selector(conn, name, dim, arms, policy, settings, seed):
    with conn.transaction():
        conn.execute("SELECT model_select.drop_selector(name) FROM model_select.selectors WHERE name = %s",
                     (name,))
        conn.execute("SELECT model_select.create_selector(%s, %s, %s, %s, NULL, %s::jsonb, %s)",
                     (name, dim, arms, policy, settings, seed))


def warm_start(conn, selector, rows):
    """Load a full-information outcome table (every model scored) as rewards.

    One transaction: behind a transaction-mode pooler the next statement may
    run on another backend, which would not see this temporary table (or see
    another client's); ON COMMIT DROP leaves nothing on the backend."""
    with conn.transaction():
        conn.execute("CREATE TEMP TABLE warm_outcomes (ord int, embedding real[], rewards real[])"
                     " ON COMMIT DROP")
        with conn.cursor() as cur:
            cur.executemany("INSERT INTO warm_outcomes VALUES (%s, %s, %s::real[])",
                            [(i, emb, rewards) for i, (_, emb, rewards) in enumerate(rows)])
        return conn.execute("SELECT model_select.warm_start(%s, 'SELECT embedding, rewards "
                            "FROM warm_outcomes ORDER BY ord')", (selector,)).fetchone()[0]


def route_and_reward(conn, selector, embedding, rewards, arms):
    """One round: route, "call" the model, insert the reward; returns it."""
    decision_id, arm = conn.execute(
        "SELECT decision_id, arm FROM model_select.route(%s, %s)",
        (selector, embedding)).fetchone()
    reward = rewards[arms.index(arm)]
    conn.execute("INSERT INTO model_select.rewards(decision_id, reward) VALUES (%s, %s)",
                 (decision_id, reward))
    return reward


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("outcomes", help="CSV outcome table (with its .arms file next to it)")
    ap.add_argument("--dsn", default="", help="libpq connection string (default: environment)")
    ap.add_argument("--selector", default="example_router")
    ap.add_argument("--policy", default="lin_ucb", help="the selector's policy (default lin_ucb, the library's default)")
    ap.add_argument("--settings", default="{}", help="the selector's settings (jsonb)")
    ap.add_argument("--warm", type=int, default=0, metavar="K",
                    help="load the first K prompts, every model scored, with warm_start()")
    ap.add_argument("--seed", type=int, default=1, help="selector seed and shuffle of the prompts")
    ap.add_argument("--every", type=int, default=1000, help="print the curve every N prompts")
    args = ap.parse_args()

    rows, arms = read_outcomes(args.outcomes)
    random.Random(args.seed).shuffle(rows)
    dim = len(rows[0][1])
    if not 0 <= args.warm < len(rows):
        sys.exit(f"--warm must be in 0..{len(rows) - 1}")
    warm_rows, rows = rows[:args.warm], rows[args.warm:]
    earned = 0.0
    window = []
    # prepare_threshold=None: no server-side prepared statements, which a
    # transaction-mode pooler cannot keep (psycopg prepares after 5 runs)
    with psycopg.connect(args.dsn, autocommit=True, prepare_threshold=None) as conn:
        numpy_adapt.register_psycopg(conn)
        create_selector(conn, args.selector, dim, arms, args.policy, args.settings, args.seed)
        if warm_rows:
            n = warm_start(conn, args.selector, warm_rows)
            print(f"warm start: {len(warm_rows)} prompts, every model scored: {n} rewards")
        print(f"{len(rows)} prompts, {len(arms)} models, {args.policy}, d = {dim}")
        print(f"{'prompts':>8} {'mean reward':>12} {'last ' + str(args.every):>12}")
        for t, (_, embedding, rewards) in enumerate(rows, start=1):
            reward = route_and_reward(conn, args.selector, embedding, rewards, arms)
            earned += reward
            window = (window + [reward])[-args.every:]
            if t % args.every == 0 or t == len(rows):
                print(f"{t:>8} {earned / t:>12.4f} {sum(window) / len(window):>12.4f}")
    best = max(range(len(arms)), key=lambda a: sum(r[2][a] for r in rows))
    best_mean = sum(r[2][best] for r in rows) / len(rows)
    oracle = sum(max(r[2]) for r in rows) / len(rows)
    print(f"router {earned / len(rows):.4f}; best single model {best_mean:.4f} ({arms[best]}); "
          f"oracle {oracle:.4f}")
    print(verdict(earned / len(rows) - best_mean, len(rows), len(arms), len(warm_rows)))


def verdict(gap, routed, models, warm):
    """One line: did routing pay here, and if not, why."""
    if gap >= 0:
        return f"verdict: the router beats the best single model (chosen in hindsight) by {gap:.4f}"
    return (f"verdict: the router trails the best single model (chosen in hindsight) by {-gap:.4f}: "
            f"{routed} routed prompts are {routed / models:.0f} per model"
            f"{f' after {warm} warm prompts' if warm else ''}, too few to learn which prompts each "
            f"model wins (on the full table it takes thousands); try --warm K or a larger table")


if __name__ == "__main__":
    main()
