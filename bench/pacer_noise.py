#!/usr/bin/env python3
"""bench/pacer_noise.py: what the budget's pacer costs by itself.

RouteLLM with its prices (Mixtral 0.05, GPT-4 1.0), budget 0.25 per prompt.
A fixed predictor stands in for the router, so that only the pacer differs:
a ridge regression of GPT-4's gain over Mixtral on [embedding; 3 one-hot of
the category; 3], fitted on every prompt (in-sample: it does not learn).
Each decision sends the prompt to GPT-4 when the predicted gain exceeds
λ times the price difference.  Per seed s the evaluation prompts are those
after the first 2,000 by md5(id:s) (bench/quality_split.sql), in that order,
the whole 13,361 or the first 4,000.  Pacers (src/routing/pacer.c):

  fixed λ*          the one λ that meets the budget on the pass (bisection):
                    what a noiseless pacer reaches
  integral pace P   0.2.0's pacer, λ = max(0, scale (C − B N) / (P B))
  λ̄ + integral      0.3.0's, λ = max(0, λ̄ + scale (C − B N) / (P B)),
                    λ̄ the mean λ of the last W decisions, each at most scale

Prints quality (mean reward over GPT-4's) and spend over the budget, mean of
seeds 1–10.  Usage: bench/pacer_noise.py DATA_DIR (the folder of routellm.csv).
"""
import csv
import hashlib
import sys

import numpy as np

BUDGET = 0.25
PRICES = np.array([0.05, 1.0])


def load(data_dir):
    ids, rewards, cats, x = [], [], [], []
    with open(f'{data_dir}/routellm.csv') as f:
        for r in csv.DictReader(f):
            ids.append(int(r['id']))
            rewards.append([float(v) for v in r['rewards'].strip('{}').split(',')])
            cats.append(r['category'])
            x.append([float(v) for v in r['embedding'].strip('{}').split(',')])
    names = sorted(set(cats))
    onehot = np.eye(len(names))[[names.index(c) for c in cats]]
    x = np.array(x)
    z = np.hstack([x, 3 * onehot, np.full((len(x), 1), 3.0)])
    rewards = np.array(rewards)
    gain = rewards[:, 1] - rewards[:, 0]
    w = np.linalg.solve(z.T @ z + 20 * np.eye(z.shape[1]), z.T @ gain)
    return ids, rewards, z @ w


def evaluation_order(ids, seed):
    ranked = sorted(range(len(ids)), key=lambda i: hashlib.md5(f'{ids[i]}:{seed}'.encode()).hexdigest())
    return np.array(ranked[2000:])


def run(rewards, pred, rows, pacer, pace, window=1000):
    """Quality over GPT-4's and spend over the budget of one pass."""
    scale = 1.0 / BUDGET
    spend, lambdas, total = 0.0, [], 0.0
    for n, i in enumerate(rows):
        overspend = spend - BUDGET * n
        if pacer == 'fixed':
            lam = pace
        elif pacer == 'integral':
            lam = max(0.0, scale * overspend / (pace * BUDGET))
        else:
            mean = float(np.mean(np.minimum(lambdas[-window:], scale))) if lambdas else 0.0
            lam = max(0.0, mean + scale * overspend / (pace * BUDGET))
        arm = 1 if pred[i] > lam * (PRICES[1] - PRICES[0]) else 0
        lambdas.append(lam)
        spend += PRICES[arm]
        total += rewards[i, arm]
    return total / len(rows) / rewards[rows, 1].mean(), spend / len(rows) / BUDGET


def fixed_lambda(rewards, pred, rows):
    lo, hi = 0.0, 2.0
    for _ in range(40):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if run(rewards, pred, rows, 'fixed', mid)[1] > 1 else (lo, mid)
    return run(rewards, pred, rows, 'fixed', hi)


def main():
    ids, rewards, pred = load(sys.argv[1] if len(sys.argv) > 1 else '../shared/bench')
    pacers = [('fixed λ*', None, None), ('integral pace 100', 'integral', 100),
              ('integral pace 1000', 'integral', 1000), ('λ̄ + integral pace 100', 'mean', 100),
              ('λ̄ + integral pace 1000', 'mean', 1000)]
    for length in (13361, 4000):
        print(f'evaluation passes of {length} prompts, seeds 1-10:')
        for label, pacer, pace in pacers:
            results = []
            for seed in range(1, 11):
                rows = evaluation_order(ids, seed)[:length]
                results.append(fixed_lambda(rewards, pred, rows) if pacer is None
                               else run(rewards, pred, rows, pacer, pace))
            q, s = np.array(results).T
            print(f'  {label:26s} quality {q.mean():.4f}  spend {s.mean():.4f} (max {s.max():.4f})')


if __name__ == '__main__':
    main()
