#!/usr/bin/python3
"""bench/quality_learner.py (run by bench/quality_learner.sh): RouterDC's
evaluation stream routed three ways, per seed and warm start, in a database
that holds table dc and its split (bench/quality_dc.sql) and that a learner
serves:

  replay   model_select.replay() of the stream in its split order (shuffle
           off), the offline evaluation of bench-quality;
  one tx   a live selector routing the stream in one transaction (a DO
           block: route(), then the chosen model's reward, every round): each
           decision sees every reward before it (its own transaction's);
  learner  a live selector routed from this client, one transaction per
           round (route() and the reward insert, committed): a decision sees
           the learner's newest versions, so the rewards of the last rounds
           until the learner has published them are not seen (bounded
           staleness, docs/operations.md#what-a-decision-sees).

For the learner's runs, the staleness of each decision in rounds: the rewards
logged before it (warm start included) minus those of the versions it scored
(decisions.versions), and the learner's lag (its view, over its last 256
passes). Writes the markdown table to OUT.

    quality_learner.py OUT SEEDS KS POLICY SETTINGS      (libpq environment)
"""
import statistics
import sys
import time

import psycopg

ARMS = [f"m{a}" for a in range(1, 8)]


def stream(conn, seed):
    """The seed's evaluation stream in its split order: (embedding text, rewards)."""
    return conn.execute(
        "SELECT d.embedding::text, d.rewards FROM dc d JOIN dc_split x USING (id)"
        " WHERE x.seed = %s AND x.rk > 2000 ORDER BY x.rk", (seed,)).fetchall()


def replay(conn, seed, k, policy, settings):
    return conn.execute(
        "SELECT cum_reward / round FROM model_select.replay(dc_eval(%s), %s, NULL, %s::jsonb, %s, 0, NULL,"
        " 1, NULL, false, dc_warm(%s, %s)) ORDER BY round DESC LIMIT 1",
        (seed, policy, settings, seed, seed, k)).fetchone()[0]


def new_selector(conn, name, seed, k, policy, settings):
    """A fresh live selector, warm-started from the seed's first k pool prompts."""
    with conn.transaction():
        conn.execute("SELECT model_select.drop_selector(name) FROM model_select.selectors WHERE name = %s", (name,))
        conn.execute("SELECT model_select.create_selector(%s, (SELECT array_length(embedding, 1) FROM dc LIMIT 1),"
                     " %s, %s, NULL, %s::jsonb, %s)", (name, ARMS, policy, settings, seed))
        if k > 0:
            conn.execute("SELECT model_select.warm_start(%s, dc_warm(%s, %s))", (name, seed, k))


def one_tx(conn, seed, k, policy, settings):
    name = f"ql_tx_{seed}_{k}"
    new_selector(conn, name, seed, k, policy, settings)
    conn.execute("CREATE TEMP TABLE IF NOT EXISTS tx_total (total float8)")
    conn.execute("TRUNCATE tx_total")
    conn.execute(f"""DO $$
        DECLARE
            r record;
            d record;
            total float8 := 0;
        BEGIN
            FOR r IN EXECUTE dc_eval({seed}) LOOP
                d := model_select.route('{name}', r.embedding);
                INSERT INTO model_select.rewards(decision_id, reward)
                VALUES (d.decision_id, r.rewards[substr(d.arm, 2)::int]);
                total := total + r.rewards[substr(d.arm, 2)::int];
            END LOOP;
            INSERT INTO tx_total VALUES (total);
        END $$""")
    return conn.execute("SELECT total FROM tx_total").fetchone()[0]


def learner_loop(conn, seed, k, policy, settings, rows):
    """The client loop; returns the mean reward and the staleness (rounds) of every decision."""
    name = f"ql_learner_{seed}_{k}"
    new_selector(conn, name, seed, k, policy, settings)
    warm = conn.execute("SELECT count(*) FROM model_select.rewards WHERE selector = %s", (name,)).fetchone()[0]
    total = 0.0
    first = None
    for emb, rewards in rows:
        with conn.transaction():
            did, arm = conn.execute("SELECT decision_id, arm FROM model_select.route(%s, %s::real[])",
                                    (name, emb)).fetchone()
            reward = rewards[ARMS.index(arm)]
            conn.execute("INSERT INTO model_select.rewards(decision_id, reward) VALUES (%s, %s)", (did, reward))
        first = first or did
        total += reward
    stale = conn.execute(
        "SELECT %s + row_number() OVER (ORDER BY decision_id) - 1 - (SELECT sum(v) FROM unnest(versions) v)"
        "  FROM model_select.decisions WHERE decision_id >= %s AND selector_id ="
        "       (SELECT selector_id FROM model_select.selectors WHERE name = %s) ORDER BY decision_id",
        (warm, first, name)).fetchall()
    return total / len(rows), [s[0] for s in stale]


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(p * len(xs)))]


def main():
    out, seeds, ks, policy, settings = sys.argv[1:6]
    seeds = [int(s) for s in seeds.split()]
    ks = [int(k) for k in ks.split()]
    res = {}
    with psycopg.connect(autocommit=True, prepare_threshold=None) as conn:
        for seed in seeds:
            rows = stream(conn, seed)
            for k in ks:
                t0 = time.time()
                r_replay = replay(conn, seed, k, policy, settings)
                t1 = time.time()
                r_tx = one_tx(conn, seed, k, policy, settings) / len(rows)
                t2 = time.time()
                r_learner, stale = learner_loop(conn, seed, k, policy, settings, rows)
                t3 = time.time()
                lag = conn.execute("SELECT max(lag_ms_p50), max(lag_ms_p99) FROM model_select.learner"
                                   " WHERE database = current_database()").fetchone()
                res[seed, k] = (r_replay, r_tx, r_learner, stale, lag, t3 - t2)
                print(f"   seed {seed} warm {k}: replay {r_replay:.4f} ({t1 - t0:.1f} s), one transaction "
                      f"{r_tx:.4f} ({t2 - t1:.1f} s), learner, commit per round {r_learner:.4f} "
                      f"({t3 - t2:.1f} s, {len(rows) / (t3 - t2):.0f} rounds/s); staleness in rounds "
                      f"mean {statistics.mean(stale):.1f}, p99 {pct(stale, 0.99)}, max {max(stale)}; "
                      f"learner lag p50/p99 {lag[0]}/{lag[1]} ms", flush=True)
    write(out, res, seeds, ks, policy, settings)


def write(out, res, seeds, ks, policy, settings):
    def ms(xs):
        return f"{statistics.mean(xs):.4f} ± {statistics.stdev(xs):.4f}" if len(xs) > 1 else f"{xs[0]:.4f}"
    lines = [
        f"RouterDC's evaluation stream (7,271 prompts per seed, in its split order), `{policy}` with "
        f"settings `{settings}`, routed three ways: `replay()`, a live selector in one transaction, and a "
        f"live selector with the learner serving and one transaction per round from a client "
        f"(mean score per prompt; {len(seeds)} seeds: mean ± standard deviation).",
        "",
        "| warm start | replay() | one transaction | learner, commit per round | learner − one transaction "
        "| staleness (rounds): mean / p50 / p99 / max | rounds/s |",
        "|---|---:|---:|---:|---:|---|---:|"]
    for k in ks:
        rr = [res[s, k] for s in seeds]
        stale = [x for r in rr for x in r[3]]
        diff = [r[2] - r[1] for r in rr]
        lines.append(
            f"| {'cold' if k == 0 else k} | {ms([r[0] for r in rr])} | {ms([r[1] for r in rr])} | "
            f"{ms([r[2] for r in rr])} | {ms(diff)} | {statistics.mean(stale):.1f} / {pct(stale, 0.5)} / "
            f"{pct(stale, 0.99)} / {max(stale)} | {statistics.mean(7271 / r[5] for r in rr):.0f} |")
    lines += ["", "Per seed, learner − one transaction: " + "; ".join(
        f"{'cold' if k == 0 else 'warm ' + str(k)}: " + ", ".join(
            f"seed {s} {res[s, k][2] - res[s, k][1]:+.4f}" for s in seeds) for k in ks) + "."]
    with open(out, "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
