#!/usr/bin/python3
"""bench/pacer_reuse.py (run by bench/pacer_reuse.sh): what the budget pacer's
kept window (model_select.pacer_window_reuse, src/routing/pacer_window.c)
costs in spend and quality, live.

RouteLLM with prices (Mixtral 0.05, GPT-4 1.0 per call) in a database that
holds table rl and its split (bench/quality_rl.sql) and that a learner serves:
per seed, a fresh lin_ucb selector with a budget of 0.25 per decision (25% of
GPT-4's cost), warm-started from the seed's first 1,000 pool prompts, routes
the seed's 13,361 evaluation prompts from CLIENTS client connections at once
(client c takes prompts c, c + CLIENTS, ... in the split order), one
transaction per round: route(), then the chosen model's reward with its cost,
committed.  Each client sets model_select.pacer_window_reuse to REUSE; 1 is a
full read of the window every decision (the pacer's exact count under the
snapshot).  Reported: mean cost per decision / budget, mean reward / GPT-4's
on the same prompts, decisions per second.  Writes the markdown table to OUT.

    pacer_reuse.py OUT SEEDS CLIENTS REUSES      (libpq environment)
"""
import statistics
import sys
import threading
import time

import psycopg

ARMS = ["mixtral", "gpt4"]
PRICES = [0.05, 1.0]
BUDGET = 0.25


def stream(conn, seed):
    """The seed's evaluation stream in its split order: (embedding text, rewards)."""
    return conn.execute(
        "SELECT d.embedding::text, d.rewards FROM rl d JOIN rl_split x USING (id)"
        " WHERE x.seed = %s AND x.rk > 2000 ORDER BY x.rk", (seed,)).fetchall()


def new_selector(conn, name, seed):
    with conn.transaction():
        conn.execute("SELECT model_select.drop_selector(name) FROM model_select.selectors WHERE name = %s", (name,))
        conn.execute("SELECT model_select.create_selector(%s, 128, %s, 'lin_ucb', NULL, %s::jsonb, %s)",
                     (name, ARMS, f'{{"budget": {BUDGET}}}', seed))
        conn.execute("SELECT model_select.warm_start(%s, rl_src(%s, false, true, 1000))", (name, seed))


def client(name, rows, reuse, out):
    with psycopg.connect(autocommit=True, prepare_threshold=None) as conn:
        conn.execute(f"SET model_select.pacer_window_reuse = {int(reuse)}")
        for emb, rewards in rows:
            with conn.transaction():
                did, arm = conn.execute("SELECT decision_id, arm FROM model_select.route(%s, %s::real[])",
                                        (name, emb)).fetchone()
                a = ARMS.index(arm)
                conn.execute("INSERT INTO model_select.rewards(decision_id, reward, cost) VALUES (%s, %s, %s)",
                             (did, rewards[a], PRICES[a]))
            out.append((rewards[a], PRICES[a]))


def run(conn, seed, clients, reuse, rows):
    name = f"pr_{seed}_{clients}_{reuse}"
    new_selector(conn, name, seed)
    outs = [[] for _ in range(clients)]
    threads = [threading.Thread(target=client, args=(name, rows[c::clients], reuse, outs[c]))
               for c in range(clients)]
    t0 = time.time()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    seconds = time.time() - t0
    done = [x for o in outs for x in o]
    if len(done) != len(rows):
        raise SystemExit(f"pacer_reuse.py: {len(done)} of {len(rows)} rounds done (a client failed)")
    gpt4 = statistics.mean(r[1] for _, r in rows)
    spend = statistics.mean(c for _, c in done) / BUDGET
    quality = statistics.mean(r for r, _ in done) / gpt4
    return spend, quality, len(rows) / seconds


def main():
    out, seeds, clients, reuses = sys.argv[1:5]
    seeds = [int(s) for s in seeds.split()]
    clients = [int(c) for c in clients.split()]
    reuses = [int(r) for r in reuses.split()]
    res = {}
    with psycopg.connect(autocommit=True, prepare_threshold=None) as conn:
        for seed in seeds:
            rows = stream(conn, seed)
            for c in clients:
                for r in reuses:
                    res[seed, c, r] = run(conn, seed, c, r, rows)
                    s, q, rate = res[seed, c, r]
                    print(f"   seed {seed}, {c} clients, pacer_window_reuse {r}: cost / budget {s:.4f}, "
                          f"quality / GPT-4's {q:.4f}, {rate:.0f} decisions/s", flush=True)
    write(out, res, seeds, clients, reuses)


def write(out, res, seeds, clients, reuses):
    def ms(xs):
        return f"{statistics.mean(xs):.4f} ± {statistics.stdev(xs):.4f}" if len(xs) > 1 else f"{xs[0]:.4f}"
    lines = [
        "RouteLLM with prices (Mixtral 0.05, GPT-4 1.0), `lin_ucb` defaults with a budget of 0.25 per "
        "decision, warm-started from 1,000 pool prompts, live with the learner serving: the 13,361 "
        "evaluation prompts of each seed routed from several client connections at once, one "
        "transaction per round (route(), the reward with its cost). "
        f"Seeds {', '.join(map(str, seeds))}: mean ± standard deviation; per seed the pairs share "
        "the selector's settings and the prompts, not the interleaving of the clients.",
        "",
        "| clients | `pacer_window_reuse` | cost / budget | quality / GPT-4's | decisions/s |",
        "|---:|---:|---:|---:|---:|"]
    for c in clients:
        for r in reuses:
            rr = [res[s, c, r] for s in seeds]
            lines.append(f"| {c} | {r} | {ms([x[0] for x in rr])} | {ms([x[1] for x in rr])} | "
                         f"{statistics.mean(x[2] for x in rr):.0f} |")
    base = reuses[0]
    if len(reuses) > 1:
        lines += ["", f"Paired by seed, quality with each `pacer_window_reuse` minus with {base}: " + "; ".join(
            f"{c} client{'s' if c > 1 else ''}, {r}: " + ms([res[s, c, r][1] - res[s, c, base][1] for s in seeds])
            + " (" + ", ".join(f"{res[s, c, r][1] - res[s, c, base][1]:+.4f}" for s in seeds) + ")"
            for c in clients for r in reuses if r != base) + "."]
    with open(out, "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
