"""The DCG/NDCG every-partner shortcut of the YetiRank kernel (``top_derivatives``,
``mass_derivatives``, the prefix order ``noisy_top_order``) against a pure-Python reference
that adds the same pairs pair by pair, in the documented order: the kernel's derivatives equal
it up to the rounding of the own sums of the pass below the top (one partial sum per vector
lane: relative differences of ~1e-14, held here to 1e-12 of the largest value), and the prefix
order is exactly the stable sort's prefix whatever bound it is guessed."""

from __future__ import annotations

import math

import numpy as np
import pytest

from stochrank_objectives import YetiRank
from stochrank_objectives.kernels import yetirank as K
from stochrank_objectives.kernels.rng import LOGISTIC_SALT, fill_logistic_ratios, stream_key


def noisy_z(s, seed, iteration, q, k):
    """The logistic noisy scores ``log(r) + s`` of permutation ``k`` of query ``q``."""
    r = ratios(len(s), seed, iteration, q, k)
    return np.array([math.log(r[i]) + s[i] for i in range(len(s))])


def ratios(n, seed, iteration, q, k):
    """The odds ``r`` whose logarithms are that permutation's logistic noise."""
    r = np.empty(n)
    key = stream_key(seed, iteration, q, np.uint64(k) + LOGISTIC_SALT)
    fill_logistic_ratios(np.uint64(key), r)
    return r


def sigmoid(x):
    if x >= 0.0:
        return 1.0 / (1.0 + math.exp(-x))
    e = math.exp(x)
    return e / (1.0 + e)


def add_pair(s, e, winner, loser, w, grad, hess):
    denominator = e[winner] + e[loser]
    rho = e[loser] / denominator if denominator > 1e-300 else sigmoid(s[loser] - s[winner])
    grad[winner] -= w * rho
    grad[loser] += w * rho
    h = w * rho * (1.0 - rho)
    hess[winner] += h
    hess[loser] += h


def reference_query(s, y, gains, discounts, inv_ideal_q, top, permutations, seed, iteration, q):
    """``(grad, hess)`` of one query longer than ``top``, pair by pair (plain floats)."""
    n = len(s)
    assert n > top
    s, y, gains = [float(v) for v in s], [float(v) for v in y], [float(v) for v in gains]
    best = max(s)
    e = [math.exp(v - best) for v in s]
    mass, grad, hess = [0.0] * n, [0.0] * n, [0.0] * n
    for k in range(permutations):
        order = np.argsort(-noisy_z(s, seed, iteration, q, k), kind="stable")[:top].tolist()
        for k2 in range(top):
            a = order[k2]
            mass[a] += discounts[k2]
            for m in range(k2 + 1, top):
                b = order[m]
                if y[a] != y[b]:
                    w = -2.0 * abs(gains[a] - gains[b]) * discounts[m] * inv_ideal_q
                    winner, loser = (a, b) if y[a] > y[b] else (b, a)
                    add_pair(s, e, winner, loser, w, grad, hess)
    for a in range(n):
        if mass[a] == 0.0:
            continue
        for b in range(n):
            if y[b] == y[a] or (b < a and mass[b] != 0.0):
                continue
            w = abs(gains[a] - gains[b]) * (mass[a] + mass[b]) * inv_ideal_q
            winner, loser = (a, b) if y[a] > y[b] else (b, a)
            add_pair(s, e, winner, loser, w, grad, hess)
    inv = 1.0 / permutations
    for i in range(n):
        grad[i] *= inv
        hess[i] *= inv
    return grad, hess


def objective(mode, top, dcg_type, seed, permutations=10):
    return YetiRank(mode=mode, top=top, num_neighbors=-1, dcg_type=dcg_type, seed=seed,
                    permutations=permutations, hessian_scale="raw")


def reference(scores, labels, offs, mode, top, dcg_type, seed, iteration, permutations=10):
    """The reference over all queries (each must be longer than ``top``)."""
    p = objective(mode, top, dcg_type, seed, permutations)._checked()
    gains, keep, discounts = YetiRank._derived(labels, offs, p)
    discounts = [float(v) for v in discounts]
    grad, hess = np.zeros(len(scores)), np.zeros(len(scores))
    for q in range(len(offs) - 1):
        lo, hi = int(offs[q]), int(offs[q + 1])
        if hi - lo < 2 or keep[q] == 0:
            continue
        g, h = reference_query(scores[lo:hi], labels[lo:hi], gains[lo:hi], discounts,
                               float(keep[q]), top, permutations, seed, iteration, q)
        grad[lo:hi], hess[lo:hi] = g, h
    return grad, hess


def random_queries(rng, n_queries=25, sizes=(12, 70)):
    sizes = rng.integers(sizes[0], sizes[1] + 1, n_queries)
    offs = np.concatenate([[0], np.cumsum(sizes)])
    labels = rng.integers(0, 5, offs[-1]).astype(np.float64)
    scores = 0.5 * labels + rng.normal(size=offs[-1])
    return scores, labels, offs


# (mode, top, dcg_type, seed, iteration, scores' variant)
CASES = [("NDCG", 1, "Base", 0, 3, "normal"), ("NDCG", 3, "Exp", 7, 0, "normal"),
         ("NDCG", 5, "Base", 2, 11, "normal"), ("DCG", 1, "Exp", 5, 1, "normal"),
         ("DCG", 3, "Base", 1, 4, "normal"), ("DCG", 5, "Exp", 9, 2, "normal"),
         ("NDCG", 3, "Base", 4, 0, "zero"), ("DCG", 5, "Base", 3, 6, "ties"),
         ("NDCG", 1, "Exp", 6, 5, "ties"), ("NDCG", 5, "Exp", 8, 7, "large"),
         ("DCG", 3, "Base", 10, 9, "large"), ("DCG", 5, "Exp", 11, 3, "huge"),
         ("NDCG", 3, "Exp", 12, 2, "equal_labels"), ("NDCG", 5, "Base", 13, 8, "z_ties"),
         ("DCG", 3, "Exp", 14, 0, "z_ties")]


def mixed_queries(rng):
    """25 queries: 6 of 6-8 documents, 6 of 9-14 and 13 of 15-70, in a random order (the
    prefix order and the full sort both run for each top of :data:`CASES`)."""
    sizes = rng.permutation(np.concatenate([rng.integers(6, 9, 6), rng.integers(9, 15, 6),
                                            rng.integers(15, 71, 13)]))
    offs = np.concatenate([[0], np.cumsum(sizes)])
    labels = rng.integers(0, 5, offs[-1]).astype(np.float64)
    scores = 0.5 * labels + rng.normal(size=offs[-1])
    return scores, labels, offs


def case_data(i):
    mode, top, dcg_type, seed, iteration, variant = CASES[i]
    rng = np.random.default_rng(100 + i)
    scores, labels, offs = mixed_queries(rng)
    if variant == "zero":
        scores[:] = 0.0
    elif variant == "ties":
        scores = np.round(scores * 2.0) / 2.0
    elif variant == "large":
        scores *= 300.0  # exp(s - max) underflows for the low documents
    elif variant == "huge":
        scores *= 3000.0  # the top's partners underflow too: the sigmoid of the scores
    elif variant == "z_ties":  # permutation 0's noisy scores tie (or nearly) at the labels
        for q in range(len(offs) - 1):
            lo, hi = offs[q], offs[q + 1]
            r = ratios(hi - lo, seed, iteration, q, 0)
            scores[lo:hi] = np.round(labels[lo:hi] / 2.0) - np.log(r)
    elif variant == "equal_labels":
        labels[offs[3]:offs[4]] = 2.0  # a query without pairs
        labels[offs[5]:offs[6]] = 0.0  # NDCG: no ideal DCG (keep = 0)
    return scores, labels, offs


@pytest.mark.parametrize("case", range(len(CASES)), ids=lambda i: "-".join(map(str, CASES[i])))
def test_shortcut_matches_the_pairs_one_by_one(case):
    """grad and hess of the shortcut equal the pair-by-pair reference up to the rounding of
    the reassociated own sums (a wrong pair, weight or winner moves a value by far more)."""
    mode, top, dcg_type, seed, iteration, _ = CASES[case]
    scores, labels, offs = case_data(case)
    grad, hess = objective(mode, top, dcg_type, seed).grad_hess(scores, labels, offs,
                                                                iteration=iteration)
    want_grad, want_hess = reference(scores, labels, offs, mode, top, dcg_type, seed,
                                     iteration)
    for got, want in ((grad, want_grad), (hess, want_hess)):
        scale = max(float(np.abs(want).max()), 1e-300)
        np.testing.assert_allclose(got, want, rtol=0.0, atol=1e-12 * scale)
        assert np.isfinite(got).all()


def test_the_prefix_path_is_exercised():
    """Every case reaches the prefix order (``PROXY_LIST_SHARE top <= n``) for every top, and
    the full sort (``PROXY_LIST_SHARE top > n``) for top 3 and 5."""
    for case in range(len(CASES)):
        sizes = np.diff(case_data(case)[2])
        for top in (1, 3, 5):
            assert (K.PROXY_LIST_SHARE * top <= sizes).sum() >= 5
            assert top == 1 or (K.PROXY_LIST_SHARE * top > sizes).sum() >= 5


def test_queries_not_longer_than_top_are_finite_and_balanced():
    """Without the shortcut (n <= top) the derivatives are finite and each query's gradient
    sums to (about) zero; the longer queries beside them are unaffected."""
    rng = np.random.default_rng(5)
    scores, labels, offs = random_queries(rng, 12, (2, 8))
    for mode in ("DCG", "NDCG"):
        grad, hess = objective(mode, 8, "Exp", 3).grad_hess(scores, labels, offs, iteration=2)
        assert np.isfinite(grad).all() and np.isfinite(hess).all() and (hess >= 0).all()
        for q in range(len(offs) - 1):
            g = grad[offs[q]:offs[q + 1]]
            assert abs(g.sum()) <= 1e-12 * max(1.0, np.abs(g).sum())


def prefix_cases(rng):
    for trial in range(480):
        length = (1, 2, 5, 10)[trial % 4]
        n = int(rng.integers(K.PROXY_LIST_SHARE * length, 201))
        s = rng.normal(size=n) * rng.uniform(0.1, 3.0)
        kind = trial % 5
        if kind == 1:
            s = np.round(s)  # heavy ties
        elif kind == 2:
            s = rng.integers(0, 3, n).astype(np.float64)
        elif kind == 3:
            s = s * 1e3  # huge magnitudes: most proxies underflow
        elif kind == 4:
            s[:] = 0.0
        stream = tuple(int(v) for v in rng.integers(0, 50, 4))
        if trial % 3 == 0:  # the noisy scores of some documents tie (or nearly)
            tied = rng.random(n) < 0.6
            s[tied] = rng.integers(4, 6, tied.sum()) - np.log(ratios(n, *stream)[tied])
        yield s, length, stream


def test_noisy_top_order_is_the_stable_prefix_for_any_guess():
    """``noisy_top_order`` (or, where it declines, ``noisy_order``, as the kernel does) starts
    with the stable sort's prefix of ``log(r) + s`` for every guessed bound, including nonsense
    ones (0, tiny, huge, inf, negative, NaN); so does ``logistic_top_order`` where it does not
    decline, which is most of the cases."""
    rng = np.random.default_rng(17)
    served = total = 0
    for s, length, stream in prefix_cases(rng):
        n = len(s)
        want = np.argsort(-noisy_z(s, *stream), kind="stable")[:length]
        e = np.empty(n)
        K.exp_scores(s, e)
        r = ratios(n, *stream)
        kth = np.sort(r * e)[-length]
        for guess in (0.0, 1e-300, 1.0, 1e6, kth, 0.5 * kth, np.inf, -1.0, np.nan):
            buf, work = np.empty(n), K.sort_workspace(n)
            got = K.noisy_top_order(s, e, stream, length, guess, buf, work)
            if got.shape[0] == 0:  # declined: the kernel's caller then takes noisy_order
                got = K.noisy_order(s, K.NOISE_LOGISTIC, 1.0, stream, length, buf, work)
            np.testing.assert_array_equal(got[:length], want, err_msg=f"guess={guess}")
            got = K.logistic_top_order(s, e, r.copy(), length, guess, K.sort_workspace(n))
            total += 1
            if got.shape[0]:
                served += 1
                np.testing.assert_array_equal(got, want, err_msg=f"guess={guess}")
    assert served > 0.7 * total
