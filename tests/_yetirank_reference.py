"""A pure-Python reference of YetiRank / YetiLoss, written from the definitions (the
objective's docstring: Gulin et al. 2011, Lyzhin et al. 2023 as CatBoost 1.2.10 implements them),
not from the package's kernels: the pairs of one order and their weights, and the pairwise
logistic derivatives of given pair weights.

DCG/NDCG and ERR weights are computed as the exact change of the metric when the two documents
swap (by swapping and re-evaluating); MRR with one neighbour as the exact change of the
reciprocal rank; MRR with more neighbours and MAP from their (heuristic) formulas.
"""

from __future__ import annotations

import math

import numpy as np


def dcg(ranked_gains, top, log_position):
    total = 0.0
    for p, g in enumerate(ranked_gains[:top], start=1):
        total += g / (math.log2(p + 1) if log_position else p)
    return total


def err(ranked):
    total, alive = 0.0, 1.0
    for p, r in enumerate(ranked, start=1):
        total += alive * r / p
        alive *= 1 - r
    return total


def reciprocal_rank(ranked):
    return next((1.0 / p for p, r in enumerate(ranked, start=1) if r > 0), 0.0)


def brute_pairs(order, labels, mode, top=None, neighbors=1, decay=0.85, exp_gain=False,
                log_position=True):
    """``{(winner, loser): weight}`` of one order, from the definitions."""
    n = len(order)
    out = {}
    ranked = [labels[i] for i in order]
    gains = [2.0 ** r - 1 if exp_gain else r for r in labels]
    if mode == "Classic":
        for p in range(n - 1):
            a, b = order[p], order[p + 1]
            if labels[a] != labels[b]:
                key = (a, b) if labels[a] > labels[b] else (b, a)
                out[key] = out.get(key, 0.0) + 0.15 * decay ** p * abs(labels[a] - labels[b])
        return out
    t = n if top is None else min(top, n)
    reach = n if neighbors == -1 else neighbors
    first_rel = next((p for p, r in enumerate(ranked) if r > 0), n)
    ideal = dcg(sorted(gains, reverse=True), t, log_position)
    for k in range(t):
        if mode == "MRR" and k > first_rel:
            break
        for m in range(k + 1, min(n, k + 1 + reach)):
            a, b = order[k], order[m]
            if labels[a] == labels[b]:
                continue
            swapped = list(order)
            swapped[k], swapped[m] = swapped[m], swapped[k]
            one_relevant = (labels[a] > 0) != (labels[b] > 0)
            if mode in ("DCG", "NDCG"):
                w = abs(dcg([gains[i] for i in swapped], t, log_position)
                        - dcg([gains[i] for i in order], t, log_position))
                w = w / ideal if mode == "NDCG" else w
            elif mode == "ERR":
                w = abs(err([labels[i] for i in swapped]) - err(ranked))
            elif mode == "MRR" and neighbors == 1:
                w = abs(reciprocal_rank([labels[i] for i in swapped]) - reciprocal_rank(ranked))
            elif mode == "MRR":
                w = 1 / (k + 1) - 1 / (m + 1) if one_relevant else 0.0
            else:  # MAP
                w = (1 / (k + 1) + sum(1 / (j + 1) for j in range(k + 1, m) if ranked[j] > 0)
                     if one_relevant else 0.0)
            if w > 1e-15:
                key = (a, b) if labels[a] > labels[b] else (b, a)
                out[key] = out.get(key, 0.0) + w
    return out



def pairwise_logistic(scores, pairs):
    """``(loss, grad, hess)`` of ``sum W log(1 + exp(-(s_a - s_b)))`` over ``{(a, b): W}``."""
    scores = np.asarray(scores, dtype=np.float64)
    grad, hess, loss = np.zeros(scores.size), np.zeros(scores.size), 0.0
    for (a, b), w in pairs.items():
        d = scores[b] - scores[a]
        rho = 1.0 / (1.0 + math.exp(-d))
        loss += w * math.log1p(math.exp(d))
        grad[a] -= w * rho
        grad[b] += w * rho
        hess[a] += w * rho * (1 - rho)
        hess[b] += w * rho * (1 - rho)
    return loss, grad, hess
