"""Fast summation of the full-list CCS sums (one-sided Gauss transforms by Hermite expansion).

* The transform against the direct O(n^2) sums over the same sources: every error within the
  derived bound ``eps * sum |w|`` (module docstring of ``kernels/ccs/gauss_transform.py``), and the
  bound itself checked at its worst case (a source on a box edge) over a sweep of targets.
* The CCS kernels' fast path (``PATH_FAST``) against their exact sort path (``PATH_SORT``,
  itself tested against brute force) with the same noise, every metric family: relative error
  of the gradient below 1e-8 on queries of 300-3000 documents, tied and spread scores.
* The automatic rule uses the transform on a large dense query and the direct sums on small
  or sparse ones; the public estimator stays bit-identical on one and two threads.
"""

from __future__ import annotations

import math
import zlib

import numpy as np
import pytest
from _reference import on_one_and_two_threads, random_query_set
from test_ccs_topk_selection import METRICS, _query_args, _sample, random_kernel_args

from stochrank_objectives import query_offsets_from_sizes, stochastic_rank_gradient
from stochrank_objectives.kernels.ccs import PATH_AUTO, PATH_FAST, PATH_SORT
from stochrank_objectives.metric_table import METRIC_TABLE
from stochrank_objectives.kernels.ccs.fast_sums import use_fast_sums
from stochrank_objectives.kernels.ccs.gauss_transform import (
    DEFAULT_BOX_WIDTH,
    DEFAULT_TERMS,
    one_sided_gauss_sums,
    truncation_bound,
)


def _direct(ys, n_src, means, up_w, down_w, s, window):
    n = means.size
    up = np.zeros((up_w.shape[0], n))
    down = np.zeros((down_w.shape[0], n))
    for p in range(n):
        x = (ys[:n_src] - means[p]) / s
        kern = np.exp(-0.5 * x * x) * (np.abs(x) <= window)
        up[:, p] = (up_w[:, :n_src] * kern)[:, :min(p, n_src)].sum(axis=1)
        down[:, p] = (down_w[:, :n_src] * kern)[:, p + 1:].sum(axis=1)
    return up, down


def test_bound_value_and_bad_box():
    assert truncation_bound() < 2e-12
    assert truncation_bound(16, 1.0) < 5e-12
    with pytest.raises(ValueError, match="box_width"):
        truncation_bound(3, 5.0)


@pytest.mark.parametrize("spread", [0.0, 0.05, 1.0, 10.0, 300.0])
def test_transform_within_bound_of_direct_sums(spread):
    rng = np.random.default_rng(zlib.crc32(repr(spread).encode()))
    eps = truncation_bound()
    for trial in range(12):
        n = int(rng.integers(1, 500))
        n_src = n if trial % 3 else int(rng.integers(0, n + 1))
        ys = np.sort(rng.normal(0.0, spread, n))[::-1].copy()
        means = ys + rng.normal(0.0, 1.5, n)
        s = 0.5 + rng.random()
        up_w = rng.normal(size=(3, n)) * 10.0 ** rng.integers(-3, 4, size=(3, 1))
        down_w = rng.normal(size=(2, n))
        up = np.full((3, n), np.nan)
        down = np.full((2, n), np.nan)
        one_sided_gauss_sums(ys, n_src, means, up_w, down_w, s, 9.0, up, down)
        ref_up, ref_down = _direct(ys, n_src, means, up_w, down_w, s, 9.0)
        # skipped boxes and the window's edge: each term below phi(9) of its weight
        slack = math.exp(-40.5)
        bound_up = (eps + slack) * np.abs(up_w[:, :n_src]).sum(axis=1) + 1e-300
        bound_down = (eps + slack) * np.abs(down_w[:, :n_src]).sum(axis=1) + 1e-300
        assert np.all(np.abs(up - ref_up) <= bound_up[:, None])
        assert np.all(np.abs(down - ref_down) <= bound_down[:, None])


def test_bound_holds_at_its_worst_case():
    """One source on a box edge (the largest ``|t|``), targets swept across the window: the
    truncated series of a single unit weight never errs by more than ``eps``, and fewer terms
    (``K = 12``) err by more than the bound at ``K = 24`` (the test has power)."""
    s = 1.0
    width = DEFAULT_BOX_WIDTH * s
    ys = np.array([0.0, -width])  # one box, centre -width/2: the top source on its edge
    up_w = np.array([[1.0, 0.0]])  # seen from the target at position 1, below it
    down_w = np.zeros((1, 2))
    errs = []
    for n_terms in (DEFAULT_TERMS, 12):
        worst = 0.0
        for m in np.linspace(-12.0, 12.0, 2001):
            up = np.empty((1, 2))
            down = np.empty((1, 2))
            one_sided_gauss_sums(ys, 2, np.array([m, m]), up_w, down_w, s, 30.0, up, down,
                                 n_terms, DEFAULT_BOX_WIDTH)
            worst = max(worst, abs(up[0, 1] - math.exp(-0.5 * m * m)))
        errs.append(worst)
    assert errs[0] <= truncation_bound(DEFAULT_TERMS, DEFAULT_BOX_WIDTH)
    assert errs[1] > truncation_bound(DEFAULT_TERMS, DEFAULT_BOX_WIDTH)


@pytest.mark.parametrize("metric,opts", METRICS)
def test_fast_path_equals_exact_sort_path(metric, opts):
    rng = np.random.default_rng(zlib.crc32(repr((metric, opts)).encode()))
    # a metric that needs a cutoff (the table's needs_top: Precision, Recall) has no top=None
    tops = (None, 200) if METRIC_TABLE[metric].needs_top is None else (50, 200)
    compared = 0
    for top in tops:
        for n in (300, 1200, 3000):
            for levels in (3, 0):
                spec, args = random_kernel_args(rng, metric, opts, top, n, levels,
                                                metric != "FILTEREDDCG")
                exact = _sample(spec, PATH_SORT, *args)
                fast = _sample(spec, PATH_FAST, *args)
                norm = np.linalg.norm(exact)
                assert norm > 0.0
                rel = np.linalg.norm(fast - exact) / norm
                assert rel < 1e-8, f"top={top} n={n} sigma={args[7]}: relative error {rel:.3g}"
                compared += 1
    assert compared == 12


def test_automatic_rule_picks_by_query_size_and_density():
    s = 0.3
    dense = np.sort(np.random.default_rng(0).normal(0.0, 1.0, 5000))[::-1].copy()
    assert use_fast_sums(PATH_AUTO, dense, s, 9.0)
    assert not use_fast_sums(PATH_AUTO, dense[:100], s, 9.0)  # small: direct sums
    sparse = np.linspace(1e4, 0.0, 5000)  # about one breakpoint per window
    assert not use_fast_sums(PATH_AUTO, sparse, s, 9.0)
    assert not use_fast_sums(PATH_SORT, dense, s, 9.0)
    assert use_fast_sums(PATH_FAST, dense[:10], s, 9.0)


def test_public_estimator_uses_it_and_stays_thread_invariant():
    """A large query (fast sums) among small ones: one and two threads bit-identical, and the
    large query's gradient within 1e-8 of the exact kernel's."""
    rng = np.random.default_rng(5)
    sizes = [4000, 37, 150, 2, 900]
    scores, labels, offs = random_query_set(rng, sizes, "NDCG", tie_levels=0)
    kw = dict(metric="NDCG", sigma=1.0, n_samples=1, seed=3, iteration=2)
    one, two = on_one_and_two_threads(lambda: stochastic_rank_gradient(scores, labels, offs, **kw))
    assert np.array_equal(one, two)
    big = slice(0, 4000)
    assert query_offsets_from_sizes(sizes)[1] == 4000
    noise = np.random.default_rng(0).standard_normal(4000)  # any noise: compare the two paths
    spec, shifted, gain, cont, nz, pos_weight, t, scale = _query_args(
        "NDCG", {}, None, scores[big], labels[big], noise)
    args = (shifted, gain, cont, nz, pos_weight, t, scale, 1.0, True)
    exact = _sample(spec, PATH_SORT, *args)
    auto = _sample(spec, PATH_AUTO, *args)
    assert np.array_equal(auto, _sample(spec, PATH_FAST, *args))
    assert np.linalg.norm(auto - exact) <= 1e-8 * np.linalg.norm(exact)


def test_summation_parameter_selects_the_path_and_is_validated():
    """``summation="exact"`` / ``"fast"`` through the objective equal the kernel paths; a bad
    value names the parameter."""
    from stochrank_objectives import StochasticRank

    rng = np.random.default_rng(2)
    n = 1500
    labels = rng.integers(0, 5, n).astype(float)
    scores = rng.normal(size=n)
    offs = query_offsets_from_sizes([n])
    grads = {}
    for summation in ("auto", "exact", "fast"):
        obj = StochasticRank(metric="NDCG", summation=summation, seed=1)
        grads[summation] = obj.grad_hess(scores, labels, offs, 3)[0]
    assert np.array_equal(grads["auto"], grads["fast"])  # a large dense query
    assert not np.array_equal(grads["exact"], grads["fast"])
    assert np.linalg.norm(grads["fast"] - grads["exact"]) <= 1e-8 * np.linalg.norm(grads["exact"])
    with pytest.raises(ValueError, match="summation"):
        StochasticRank(summation="quick").grad_hess(scores, labels, offs, 0)
