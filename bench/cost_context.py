#!/usr/bin/env python3
"""bench/cost_context.py: what the budget's pacer leaves when costs vary by prompt.

The pacer prices every decision at each arm's mean cost (src/routing/pacer.c), so
with a budget it cannot send the dear model to the prompts that are cheap for it.
With token prices a call's cost follows the prompt's length, and lengths differ
by task.  RouteLLM has no per-call costs, so this gives it synthetic ones:
price (Mixtral 0.05, GPT-4 1.0) × a length factor per category, exp(σ·g) with
g ~ N(0, 1) drawn per category, × a factor per prompt exp(σ_w·e) that no
router could know; both scaled to mean 1.  The budget is 25% of GPT-4's mean
cost.  The router is bench/pacer_noise.py's fixed in-sample predictor with the
one λ that meets the budget (bisection), so that only the cost it prices each
prompt at differs:

  mean cost       each arm's mean (the pacer today)
  region cost     the mean over the prompt's region, one of 8 k-means regions of
                  the embeddings (as lin_ucb's codebook): a cost per arm and region
  category cost   the category's mean: what a cost model on the context learns
  own cost        the prompt's own cost (an oracle)

Prints quality (mean reward over GPT-4's), mean of seeds 101-105, each with
its own draw of the factors.  A planning estimate, not a measurement of the
extension.  Usage: bench/cost_context.py DATA_DIR (the folder of routellm.csv).
"""
import csv
import sys

import numpy as np

from pacer_noise import BUDGET, PRICES, evaluation_order, load


def categories_and_regions(data_dir, k=8, iterations=25):
    """Each prompt's category and region (Lloyd's k-means of the embeddings, seeded)."""
    with open(f'{data_dir}/routellm.csv') as f:
        rows = list(csv.DictReader(f))
    names = sorted({r['category'] for r in rows})
    category = np.array([names.index(r['category']) for r in rows])
    x = np.array([[float(v) for v in r['embedding'].strip('{}').split(',')] for r in rows])
    centres = x[np.random.default_rng(1).choice(len(x), k, replace=False)]
    for _ in range(iterations):
        nearest = np.argmin(((x[:, None, :] - centres[None]) ** 2).sum(-1), axis=1)
        centres = np.array([x[nearest == j].mean(0) if (nearest == j).any() else centres[j] for j in range(k)])
    return category, len(names), nearest


def group_mean(values, groups):
    sums = np.bincount(groups, weights=values)
    return (sums / np.bincount(groups))[groups]


def quality(rewards, pred, rows, cost, priced):
    """Quality over GPT-4's at the λ whose picks spend the budget on `cost`."""
    def picks(lam):
        return pred[rows] > lam * (PRICES[1] - PRICES[0]) * priced[rows]
    lo, hi = 0.0, 10.0
    for _ in range(60):
        mid = (lo + hi) / 2
        spend = np.mean(np.where(picks(mid), PRICES[1], PRICES[0]) * cost[rows])
        lo, hi = (mid, hi) if spend > BUDGET * np.mean(cost[rows]) else (lo, mid)
    chosen = np.where(picks(hi), rewards[rows, 1], rewards[rows, 0])
    return chosen.mean() / rewards[rows, 1].mean()


def main():
    data_dir = sys.argv[1] if len(sys.argv) > 1 else '../shared/bench'
    ids, rewards, pred = load(data_dir)
    cat, ncat, region = categories_and_regions(data_dir)
    rng = np.random.default_rng(0)
    print('quality over GPT-4\'s at 25% of its cost, pricing each prompt at: '
          'mean cost / region cost / category cost / own cost')
    for sigma in (0.0, 0.5, 1.0):
        for sigma_w in (0.0, 0.5):
            results = []
            for seed in range(101, 106):
                by_category = np.exp(sigma * rng.standard_normal(ncat))[cat]
                by_category /= by_category.mean()
                own = by_category * np.exp(sigma_w * rng.standard_normal(len(cat)))
                own /= own.mean()
                rows = evaluation_order(ids, seed)
                results.append([quality(rewards, pred, rows, own, priced)
                                for priced in (np.ones(len(cat)), group_mean(own, region), by_category, own)])
            q = np.mean(results, axis=0)
            print(f'  σ {sigma} by category, σ_w {sigma_w} by prompt: '
                  f'{q[0]:.4f} / {q[1]:.4f} / {q[2]:.4f} / {q[3]:.4f}')


if __name__ == '__main__':
    main()
