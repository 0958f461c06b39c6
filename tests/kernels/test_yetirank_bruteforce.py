"""The YetiRank / YetiLoss pair kernel against a pure-Python brute force of the definitions
(``_yetirank_reference.brute_pairs``): for one order, every pair the definition makes and its
weight, in every mode, with and without ``top`` and ``num_neighbors``."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from _yetirank_reference import brute_pairs

from stochrank_objectives.kernels import yetirank as K
from stochrank_objectives.kernels.common import dcg_discounts, inverse_ideal_dcg, \
    reciprocal_weights

MODES = {"Classic": K.MODE_CLASSIC, "DCG": K.MODE_DCG, "NDCG": K.MODE_NDCG, "MRR": K.MODE_MRR,
         "ERR": K.MODE_ERR, "MAP": K.MODE_MAP}


def settings(mode, top=None, neighbors=1, decay=0.85):
    return K.YetiSettings(mode=MODES[mode], top=2 ** 62 if top is None else top,
                          neighbors=neighbors, permutations=1, decay=decay, noise=K.NOISE_NONE,
                          noise_power=1.0, seed=0)


def kernel_pairs(order, labels, mode, top=None, neighbors=1, decay=0.85, exp_gain=False,
                 log_position=True):
    n = len(order)
    labels = np.asarray(labels, dtype=np.float64)
    gains = 2.0 ** labels - 1 if exp_gain else labels.copy()
    t = n if top is None else top
    discounts = (dcg_discounts if log_position else reciprocal_weights)(n, t)
    inv_ideal = inverse_ideal_dcg(gains, gains, np.array([0, n]), discounts, t)[0]
    st = settings(mode, top, neighbors, decay)
    size = K.max_pairs(n, st)
    win, lose, w = np.empty(size, np.int64), np.empty(size, np.int64), np.empty(size)
    count = K.permutation_pairs(np.asarray(order, dtype=np.int64), labels, gains, discounts,
                                inv_ideal, st, win, lose, w)
    out = {}
    for i in range(count):
        out[(int(win[i]), int(lose[i]))] = out.get((int(win[i]), int(lose[i])), 0.0) + w[i]
    return out


def assert_same_pairs(got, want):
    got = {k: v for k, v in got.items() if v > 1e-15}
    assert set(got) == set(want), (got, want)
    for key in want:
        assert got[key] == pytest.approx(want[key], rel=1e-12, abs=1e-15), key


# Classic has neither top nor num_neighbors
CASES = [("Classic", None, 1)] + [(mode, top, neighbors) for mode in list(MODES)[1:]
                                  for top in (None, 1, 3) for neighbors in (1, 2, -1)]


@pytest.mark.parametrize("case", range(len(CASES)), ids=lambda i: "-".join(map(str, CASES[i])))
def test_pairs_match_the_brute_force(case):
    mode, top, neighbors = CASES[case]
    rng = np.random.default_rng(case)
    for trial in range(40):
        n = int(rng.integers(2, 8))
        if mode == "ERR":
            labels = rng.choice([0.0, 0.25, 0.5, 1.0], n).tolist()
        else:
            labels = rng.integers(0, 4, n).astype(float).tolist()
        order = rng.permutation(n).tolist()
        options = dict(exp_gain=bool(trial % 2), log_position=trial % 3 != 0)
        if mode not in ("DCG", "NDCG"):
            options = {}
        if mode == "NDCG" and not any(labels[:]):
            continue
        want = brute_pairs(order, labels, mode, top, neighbors, **options)
        got = kernel_pairs(order, labels, mode, top, neighbors, **options)
        assert_same_pairs(got, want)


def test_classic_pairs_of_a_sampled_order():
    # f = (0.5, 1.0, -0.2, 0.3), noise (0.9, -0.6, 0.4, 0.2): order d0, d3, d1, d2
    got = kernel_pairs([0, 3, 1, 2], [2.0, 0.0, 1.0, 3.0], "Classic")
    assert_same_pairs(got, {(3, 0): 0.15, (3, 1): 0.15 * 0.85 * 3, (2, 1): 0.15 * 0.85 ** 2})


def test_max_pairs_bounds_every_mode():
    for mode, top, neighbors in CASES:
        for n in range(1, 8):
            st = settings(mode, top, neighbors)
            worst = sum(1 for k, m in itertools.combinations(range(n), 2)
                        if (mode == "Classic" and m == k + 1) or (
                            mode != "Classic" and k < (top or n)
                            and (neighbors == -1 or m - k <= neighbors)))
            assert K.max_pairs(n, st) == worst, (mode, top, neighbors, n)


def test_top_order_is_the_prefix_of_the_stable_sort():
    rng = np.random.default_rng(3)
    for _ in range(300):
        n = int(rng.integers(1, 40))
        z = rng.integers(0, 6, n).astype(np.float64)  # heavy ties
        if rng.random() < 0.5:
            z += rng.normal(size=n)
        m = int(rng.integers(1, n + 1))
        full = np.argsort(-z, kind="stable")
        np.testing.assert_array_equal(K.top_order(z.copy(), m), full[:m])
        order = K.noisy_order(z, K.NOISE_NONE, 1.0, (0, 0, 0, 0), m, np.empty(n),
                              K.sort_workspace(n))
        np.testing.assert_array_equal(order[:m], full[:m])


def _bucket_cases(rng):
    for trial in range(3000):
        n = int(rng.integers(1, 300))
        z = rng.normal(size=n) * rng.uniform(0.01, 5.0) + rng.logistic(size=n)
        kind = trial % 7
        if kind == 1:
            z = np.round(z)  # heavy ties
        elif kind == 2:
            z = np.round(z * 4.0) / 4.0
        elif kind == 3:
            z[rng.integers(0, n)] = 1e6  # an outlier: one crowded bucket
        elif kind == 4:
            z = np.full(n, 1.5)
            z[::3], z[1::3] = -0.0, 0.0  # signed zeros tie
        elif kind == 5:
            z = rng.integers(0, 3, n) * 1e-300
        elif kind == 6:
            z = rng.integers(-2, 3, n) * 5e-324  # subnormal span
        yield z
    for z in ([np.inf, 1.0, 2.0, np.inf], [-np.inf, np.inf, 0.0], [1e308, -1e308, 0.0],
              [-1e308, 1e308], [2.0, 2.0, 2.0]):
        yield np.array(z)


def test_bucket_order_is_the_stable_sort_or_declines():
    rng = np.random.default_rng(11)
    for z in _bucket_cases(rng):
        n = z.shape[0]
        work = K.sort_workspace(n)
        full = np.argsort(-z, kind="stable")
        if K.bucket_order(z, work):
            np.testing.assert_array_equal(work.order[:n], full)
        order = K.noisy_order(z, K.NOISE_NONE, 1.0, (0, 0, 0, 0), n, np.empty(n), work)
        np.testing.assert_array_equal(order, full)
