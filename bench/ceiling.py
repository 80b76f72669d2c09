#!/usr/bin/env python3
"""bench/ceiling.py: how much a router can gain from these embeddings at all.

Full-information routers fitted offline (every model's score known on every
training prompt), on the held-out protocol of bench/quality_split.sql (per
seed s the prompts ranked by md5(id:s); the first 2,000 are the pool, the
rest the evaluation prompts):

  routerdc7_dev.csv  per-model ridge regression on [x; sqrt(10)] fitted on the
                     first k pool prompts (or on the evaluation prompts
                     themselves: an in-sample ceiling), then the predicted best
                     model on every evaluation prompt: mean score minus the
                     best single model's on the same prompts.  "stream": the
                     warm-1,000 protocol with full information, refitted every
                     500 evaluation prompts (in rank order) on the 1,000 and
                     the prompts routed so far: what an online linear router
                     that saw every model's score would earn.  "codebook":
                     the same on lin_ucb's default features once a codebook
                     is fitted, [x/sqrt(5); sqrt(10) one-hot of the nearest
                     of 8 k-means centroids of the 1,000 warm contexts;
                     sqrt(10)], fitted on the 1,000 ("warm only") and as a
                     stream (the mean over 4 k-means++ seedings: numpy's
                     generator, not the extension's, so single seedings
                     differ from the extension's fit).  "stream cold": the
                     stream without the warm prompts; "family as tag": the
                     stream on [x; sqrt(10) one-hot of the prompt's family;
                     sqrt(10)], cold and warm 1,000 (what tags could reach).
                     A cold stream has seen nothing in its first 500 prompts:
                     it is given the best single model there, so a cold
                     figure is an upper bound.
  routellm.csv       ridge regression of GPT-4's minus Mixtral's score; GPT-4
                     for the 21.05% of evaluation prompts with the largest
                     predicted gain (what a budget of 0.25 buys at costs 0.05 /
                     1.0), Mixtral for the rest: quality / GPT-4's.  Then
                     cost weight 0.05 (utility = score - 0.05 x cost): the
                     stream cold and warm 1,000 and the in-sample fit, minus
                     GPT-4's utility on the same prompts.

An online router sees only the chosen model's score and pays for exploring,
so it stays below these figures.  Needs numpy (Debian: python3-numpy); not
part of `make bench-quality`.  Usage: bench/ceiling.py [DATA_DIR [FIRST-LAST]]
(default ../shared/bench, seeds 1-5; `make bench-candidates` uses 101-130).
"""
import csv
import hashlib
import sys

import numpy as np

DATA = sys.argv[1] if len(sys.argv) > 1 else '../shared/bench'
FIRST, LAST = map(int, (sys.argv[2] if len(sys.argv) > 2 else '1-5').split('-'))
SEEDS = range(FIRST, LAST + 1)
POOL = 2000


def load(name, with_family=False):
    ids, X, R, fam = [], [], [], []
    with open(f'{DATA}/{name}') as f:
        for r in csv.DictReader(f):
            ids.append(int(r['id']))
            X.append([float(v) for v in r['embedding'].strip('{}').split(',')])
            R.append([float(v) for v in r['rewards'].strip('{}').split(',')])
            fam.append(r['category'])
    X = np.array(X)
    Z = np.hstack([X, np.full((len(X), 1), np.sqrt(10.0))])
    if with_family:
        return ids, Z, np.array(R), family_features(X, fam)
    return ids, Z, np.array(R)


def family_features(X, fam):
    """[x; sqrt(10) one-hot of the prompt's family; sqrt(10)]: the family as a tag."""
    names = sorted(set(fam))
    onehot = np.eye(len(names))[[names.index(f) for f in fam]] * np.sqrt(10.0)
    return np.hstack([X, onehot, np.full((len(X), 1), np.sqrt(10.0))])


def split(ids, seed):
    order = sorted(range(len(ids)), key=lambda i: hashlib.md5(f'{ids[i]}:{seed}'.encode()).hexdigest())
    return np.array(order[:POOL]), np.array(order[POOL:])


def ridge(Z, Y, alpha):
    return np.linalg.solve(Z.T @ Z + alpha * np.eye(Z.shape[1]), Z.T @ Y)


def training_sets(pool, ev):
    return [('pool 1000', pool[:1000]), ('pool 2000', pool), ('in-sample', ev)]


def kmeans(P, k, seed, iters=100):
    """k-means++ seeding, then Lloyd's iterations (as src/math/kmeans.c)."""
    g = np.random.default_rng(seed)
    C = [P[g.integers(len(P))]]
    for _ in range(k - 1):
        d = ((P[:, None] - np.array(C)[None]) ** 2).sum(2).min(1)
        C.append(P[g.choice(len(P), p=d / d.sum())])
    C = np.array(C)
    for _ in range(iters):
        near = ((P[:, None] - C[None]) ** 2).sum(2).argmin(1)
        for j in range(k):
            if (near == j).any():
                C[j] = P[near == j].mean(0)
    return C


def codebook_features(X, C, shrink=5.0, intercept=10.0):
    near = ((X[:, None] - C[None]) ** 2).sum(2).argmin(1)
    return np.hstack([X / np.sqrt(shrink), np.eye(len(C))[near] * np.sqrt(intercept),
                      np.full((len(X), 1), np.sqrt(intercept))])


def stream_score(Z, R, warm, ev, step=500):
    total = 0.0
    for start in range(0, len(ev), step):
        seen = np.concatenate([warm, ev[:start]])
        block = ev[start:start + step]
        if len(seen) == 0:
            total += R[block, R[ev].mean(0).argmax()].sum()
            continue
        pick = np.argmax(Z[block] @ ridge(Z[seen], R[seen], 20.0), 1)
        total += R[block, pick].sum()
    return total / len(ev)


def routerdc7():
    ids, Z, R, T = load('routerdc7_dev.csv', with_family=True)
    print('routerdc7_dev: mean score minus the best single model (alpha 20)')
    for seed in SEEDS:
        pool, ev = split(ids, seed)
        best = R[ev].mean(0).max()
        cells = []
        for label, tr in training_sets(pool, ev):
            pick = np.argmax(Z[ev] @ ridge(Z[tr], R[tr], 20.0), 1)
            cells.append(f'{label} {R[ev, pick].mean() - best:+.4f}')
        cells.append(f'stream {stream_score(Z, R, pool[:1000], ev) - best:+.4f}')
        X, warm = Z[:, :-1], pool[:1000]
        static, stream = [], []
        for init in range(4):
            F = codebook_features(X, kmeans(X[warm], 8, 100 * seed + init))
            pick = np.argmax(F[ev] @ ridge(F[warm], R[warm], 20.0), 1)
            static.append(R[ev, pick].mean() - best)
            stream.append(stream_score(F, R, warm, ev) - best)
        cells.append(f'codebook: warm only {np.mean(static):+.4f}, stream {np.mean(stream):+.4f}')
        none = np.array([], dtype=int)
        cells.append(f'stream cold {stream_score(Z, R, none, ev) - best:+.4f}')
        cells.append(f'family as tag: stream cold {stream_score(T, R, none, ev) - best:+.4f}, '
                     f'warm 1000 {stream_score(T, R, warm, ev) - best:+.4f}')
        print(f'  seed {seed}: ' + ', '.join(cells))


def routellm():
    ids, Z, R = load('routellm.csv')
    print('routellm, budget 0.25 (GPT-4 on 21.05% of prompts): quality / GPT-4\'s (alpha 20)')
    for seed in SEEDS:
        pool, ev = split(ids, seed)
        n_gpt4 = int(round(0.2105 * len(ev)))
        cells = []
        for label, tr in training_sets(pool, ev):
            gain = Z[ev] @ ridge(Z[tr], R[tr, 1] - R[tr, 0], 20.0)
            quality = R[ev, 0].copy()
            top = np.argsort(-gain)[:n_gpt4]
            quality[top] = R[ev[top], 1]
            cells.append(f'{label} {quality.mean() / R[ev, 1].mean():.3f}')
        print(f'  seed {seed}: ' + ', '.join(cells))
    print('routellm, cost weight 0.05 (costs 0.05 / 1.0): utility minus GPT-4\'s (alpha 20)')
    U = R - 0.05 * np.array([0.05, 1.0])
    none = np.array([], dtype=int)
    for seed in SEEDS:
        pool, ev = split(ids, seed)
        gpt4 = U[ev, 1].mean()
        pick = np.argmax(Z[ev] @ ridge(Z[ev], U[ev], 20.0), 1)
        print(f'  seed {seed}: stream cold {stream_score(Z, U, none, ev) - gpt4:+.4f}, '
              f'warm 1000 {stream_score(Z, U, pool[:1000], ev) - gpt4:+.4f}, '
              f'in-sample {U[ev, pick].mean() - gpt4:+.4f} (Mixtral for {(pick == 0).mean():.1%})')


if __name__ == '__main__':
    routerdc7()
    routellm()
