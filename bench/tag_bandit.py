#!/usr/bin/env python3
"""bench/tag_bandit.py: how much a bandit that knows only the prompt's family can gain cold.

On routerdc7_dev.csv's evaluation prompts of each seed (bench/quality_split.sql's
held-out protocol, through bench/ceiling.py's split; routed in its rank order,
cold), every arm a ridge regression on [sqrt(10 t) one-hot of the family;
sqrt(10)] with alpha 20, and the score mean + eta * sigma * width, sigma the
arm's learnt noise scale with 5 pseudo-rewards of unit variance: lin_ucb's
defaults (t = tag_scale 1, eta 2) with the embedding left out, so its tag
buckets and intercept alone.  Then a grid of eta and t, whose best cell is an
optimistic figure (chosen on the same orders); two other bandits on the
family (Thompson sampling with a Beta posterior per family and model, and UCB
on a hierarchical model whose prior mean in a family is the model's level
over all families); and the full-information router on the same features
(each family's best model so far on every prompt routed, its scores all
seen): what one score per prompt costs.  Prints the mean gain over the
seed's best single model, its standard error and the worst seed.

Usage: bench/tag_bandit.py [DATA_DIR [FIRST-LAST]]  (seeds 1-5 unless given;
bench-candidates' orders are 101-130).  Needs numpy (Debian: python3-numpy);
about 16 s per seed.  Not a part of make bench-quality.
"""
import csv

import numpy as np

from ceiling import DATA, SEEDS, split

ALPHA, INTERCEPT, NOISE_PRIOR = 20.0, 10.0, 5.0


def load_families():
    ids, fam, R = [], [], []
    with open(f'{DATA}/routerdc7_dev.csv') as f:
        for r in csv.DictReader(f):
            ids.append(int(r['id']))
            fam.append(r['category'])
            R.append([float(v) for v in r['rewards'].strip('{}').split(',')])
    names = sorted(set(fam))
    return ids, np.array([names.index(f) for f in fam]), len(names), np.array(R)


def ucb_gain(fam, R, nfam, eta, tag_scale):
    """One cold pass of the tag-only lin_ucb over the rows in order: mean score."""
    narms, p = R.shape[1], nfam + 1
    A = np.tile(ALPHA * np.eye(p), (narms, 1, 1))
    b = np.zeros((narms, p))
    yy = np.zeros(narms)
    n = np.zeros(narms)
    total = 0.0
    for f, r in zip(fam, R):
        z = np.zeros(p)
        z[f] = np.sqrt(INTERCEPT * tag_scale)
        z[nfam] = np.sqrt(INTERCEPT)
        sol = np.linalg.solve(A, np.stack([b, np.broadcast_to(z, b.shape)], axis=2))
        theta, Az = sol[:, :, 0], sol[:, :, 1]
        sigma = np.sqrt(np.maximum(NOISE_PRIOR + yy - (b * theta).sum(1), 0.0) / (NOISE_PRIOR + n))
        ucb = np.where(n > 0, theta @ z + eta * sigma * np.sqrt(Az @ z), np.inf)
        arm = int(np.flatnonzero(ucb == ucb.max())[0])
        total += r[arm]
        A[arm] += np.outer(z, z)
        b[arm] += r[arm] * z
        yy[arm] += r[arm] ** 2
        n[arm] += 1
    return total / len(R)


def beta_thompson_gain(fam, R, nfam, rng):
    """Thompson sampling, a Beta(1, 1) prior per family and model (the graded score as a Bernoulli mean)."""
    sums, pulls, total = np.zeros((nfam, R.shape[1])), np.zeros((nfam, R.shape[1])), 0.0
    for f, r in zip(fam, R):
        arm = int(np.argmax(rng.beta(1 + sums[f], 1 + pulls[f] - sums[f])))
        total += r[arm]
        sums[f, arm] += r[arm]
        pulls[f, arm] += 1
    return total / len(R)


def hierarchical_gain(fam, R, nfam, tau, eta=2.0, sigma=0.42):
    """UCB on a Gaussian model: a model's mean score in a family has its level over all families
    (one pseudo-score of 0.5) as prior mean and tau as prior standard deviation; noise sigma."""
    narms = R.shape[1]
    sums, pulls, total = np.zeros((nfam, narms)), np.zeros((nfam, narms)), 0.0
    for f, r in zip(fam, R):
        n_all = pulls.sum(0)
        level = (sums.sum(0) + 0.5) / (n_all + 1)
        precision = 1 / tau ** 2 + pulls[f] / sigma ** 2
        mean = (level / tau ** 2 + sums[f] / sigma ** 2) / precision
        var = 1 / precision + sigma ** 2 / (n_all + 1) * (1 / tau ** 2 / precision) ** 2
        arm = int(np.argmax(mean + eta * np.sqrt(var)))
        total += r[arm]
        sums[f, arm] += r[arm]
        pulls[f, arm] += 1
    return total / len(R)


def full_information_gain(fam, R, nfam):
    """Each family's best model so far (the best overall before its first prompt)."""
    sums, seen, overall, total = np.zeros((nfam, R.shape[1])), np.zeros(nfam), np.zeros(R.shape[1]), 0.0
    for f, r in zip(fam, R):
        total += r[np.argmax(sums[f] if seen[f] else overall)]
        sums[f] += r
        seen[f] += 1
        overall += r
    return total / len(R)


def report(label, gains):
    g = np.array(gains)
    se = f' ± {g.std(ddof=1) / np.sqrt(len(g)):.4f}' if len(g) > 1 else ''
    print(f'{label:36s} {g.mean():+.4f}{se} (worst {g.min():+.4f})')


def main():
    ids, fam, nfam, R = load_families()
    grid = [(eta, t) for eta in (1.0, 1.5, 2.0, 3.0) for t in (0.3, 0.5, 1.0, 2.0)]
    gains = {cell: [] for cell in grid}
    full, beta, hier = [], [], {0.1: [], 0.2: []}
    for seed in SEEDS:
        ev = split(ids, seed)[1]
        best = R[ev].mean(0).max()
        for eta, t in grid:
            gains[(eta, t)].append(ucb_gain(fam[ev], R[ev], nfam, eta, t) - best)
        full.append(full_information_gain(fam[ev], R[ev], nfam) - best)
        beta.append(beta_thompson_gain(fam[ev], R[ev], nfam, np.random.default_rng(seed)) - best)
        for tau, gains_tau in hier.items():
            gains_tau.append(hierarchical_gain(fam[ev], R[ev], nfam, tau) - best)
    print(f'routerdc7_dev, cold, the family as the only context; gain over the best single model, '
          f'seeds {SEEDS.start}-{SEEDS.stop - 1}')
    report("lin_ucb's defaults (eta 2, t 1)", gains[(2.0, 1.0)])
    best_cell = max(grid, key=lambda c: np.mean(gains[c]))
    report(f'best of the grid (eta {best_cell[0]:g}, t {best_cell[1]:g})', gains[best_cell])
    report('Thompson, Beta per family and model', beta)
    for tau, gains_tau in hier.items():
        report(f'hierarchical UCB, prior sd {tau:g}', gains_tau)
    report('full information', full)


if __name__ == '__main__':
    main()
