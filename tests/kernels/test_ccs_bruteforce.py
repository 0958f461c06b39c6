"""The fast CCS / REINFORCE kernels against an explicit brute force (tests/_reference.py).

The brute force re-inserts every document just above and just below every other document's
noisy score, recomputes the metric of each list from scratch and weights the jumps with the
conditional density (coordinate or translation conditioning). The same unit normals are
passed to both through ``noise=``, so agreement must be to rounding (1e-10).
Also: reproducibility of the seeded noise streams, thread-count independence, the
breakpoint window, and the objective object's plumbing.
"""

from __future__ import annotations

import zlib

import numba
import numpy as np
import pytest
from _reference import assert_matches_brute_force, random_query_set
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stochrank_objectives import (
    StochasticRank,
    draw_noise,
    query_offsets_from_sizes,
    stochastic_rank_gradient,
)

TOL = 1e-10

# (metric, estimator options, label-generator options)
METRIC_CONFIGS = [
    pytest.param("NDCG", {"gain": "exp2"}, {}, id="NDCG-exp2"),
    pytest.param("NDCG", {"gain": "linear"}, {}, id="NDCG-linear"),
    pytest.param("DCG", {"gain": "exp2"}, {}, id="DCG-exp2"),
    pytest.param("DCG", {"gain": "linear"}, {}, id="DCG-linear"),
    pytest.param("ERR", {}, {}, id="ERR-prob"),
    pytest.param("ERR", {"grade_max": 4.0}, {"grade_max": 4.0}, id="ERR-grades"),
    pytest.param("MRR", {"threshold": 0.0}, {}, id="MRR-t0"),
    pytest.param("MRR", {"threshold": 1.0}, {}, id="MRR-t1"),
]
SIZES = [2, 3, 5, 20, 0, 1, 3]  # includes an empty and a one-document query


def _compare(scores, labels, offs, noise, **kw):
    return assert_matches_brute_force(scores, labels, offs, noise, TOL, **kw)


@pytest.mark.parametrize("conditioning", ["translation", "coordinate"])
@pytest.mark.parametrize("top", [1, 3, 10, None])
@pytest.mark.parametrize("metric,opts,label_opts", METRIC_CONFIGS)
def test_ccs_matches_bruteforce(metric, opts, label_opts, top, conditioning):
    rng = np.random.default_rng(zlib.crc32(repr((metric, opts, top, conditioning)).encode()))
    nonzero = 0
    for sigma in (0.3, 1.0, 3.0):
        for mu in (0.0, 1.0):
            scores, labels, offs = random_query_set(rng, SIZES, metric, **label_opts)
            noise = rng.standard_normal((2, scores.size))
            for center, sfa in ((False, 0.0), (True, 0.0), (True, 1.0)):
                fast, _ = _compare(scores, labels, offs, noise, metric=metric, top=top,
                                   sigma=sigma, mu=mu, conditioning=conditioning, center=center,
                                   sfa=sfa, nu=0.01, **opts)
                nonzero += int(np.any(fast != 0))
                # queries with 0 or 1 documents get exactly 0
                assert np.all(fast[offs[5]:offs[6]] == 0.0)
    assert nonzero > 0  # the comparison was not vacuous


@pytest.mark.parametrize("metric,top,opts", [
    ("NDCG", 10, {"gain": "exp2"}),
    ("NDCG", None, {"gain": "linear"}),
    ("ERR", None, {}),
    ("MRR", 3, {"threshold": 0.0}),
])
def test_ccs_matches_bruteforce_200_docs(metric, top, opts):
    rng = np.random.default_rng(200)
    scores, labels, offs = random_query_set(rng, [200], metric, tie_levels=5)
    noise = rng.standard_normal((1, 200))
    fast, ref = _compare(scores, labels, offs, noise, metric=metric, top=top, sigma=1.0, mu=1.0,
                         **opts)
    assert np.count_nonzero(ref) > 10


@pytest.mark.parametrize("metric,opts", [("NDCG", {}), ("ERR", {}), ("MRR", {}), ("DCG", {})])
@pytest.mark.parametrize("top", [2, None])
def test_reinforce_matches_bruteforce(metric, opts, top):
    rng = np.random.default_rng(7)
    for sigma, mu in ((0.3, 0.0), (1.0, 1.0), (3.0, 1.0)):
        scores, labels, offs = random_query_set(rng, SIZES, metric)
        noise = rng.standard_normal((4, scores.size))
        for center, sfa in ((False, 0.0), (True, 1.0)):
            _compare(scores, labels, offs, noise, metric=metric, top=top, sigma=sigma, mu=mu,
                     estimator="reinforce", center=center, sfa=sfa, **opts)


def test_err_certain_documents():
    """ERR with R = 1 documents (continuation 0): everything below them is worth nothing."""
    scores = np.array([0.0, 0.0, 1.0, 2.0, 0.5, 0.5])
    labels = np.array([1.0, 1.0, 0.0, 0.5, 1.0, 0.0])
    offs = np.array([0, 6])
    rng = np.random.default_rng(3)
    for sigma in (0.3, 1.0):
        noise = rng.standard_normal((3, 6))
        for top in (None, 2):
            _compare(scores, labels, offs, noise, metric="ERR", top=top, sigma=sigma,
                     center=False, sfa=0.0)


def test_ndcg_query_without_relevant_documents_is_zero():
    scores = np.array([1.0, 0.0, 2.0, 1.0, 1.0, 0.0])
    labels = np.array([0.0, 0.0, 0.0, 2.0, 0.0, 1.0])
    offs = np.array([0, 3, 6])
    for estimator in ("ccs", "reinforce"):
        g = stochastic_rank_gradient(scores, labels, offs, metric="NDCG", n_samples=3,
                                     estimator=estimator, center=False, sfa=0.0)
        assert np.all(g[:3] == 0.0)
        assert np.any(g[3:] != 0.0)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    data=st.data(),
    metric=st.sampled_from(["NDCG", "DCG", "ERR", "MRR"]),
    top=st.one_of(st.none(), st.integers(1, 6)),
    sigma=st.floats(0.05, 5.0),
    mu=st.floats(0.0, 3.0),
    conditioning=st.sampled_from(["translation", "coordinate"]),
    sfa=st.sampled_from([0.0, 0.5, 1.0]),
)
def test_ccs_property(data, metric, top, sigma, mu, conditioning, sfa):
    sizes = data.draw(st.lists(st.integers(0, 7), min_size=1, max_size=4), label="sizes")
    n = sum(sizes)
    grade = st.sampled_from([0.0, 0.25, 0.5, 1.0]) if metric == "ERR" else \
        st.integers(0, 4).map(float)
    labels = np.array(data.draw(st.lists(grade, min_size=n, max_size=n), label="labels"))
    scores = np.array(data.draw(st.lists(st.integers(-2, 2).map(float), min_size=n, max_size=n),
                                label="scores"))
    seed = data.draw(st.integers(0, 2**31 - 1), label="seed")
    noise = np.random.default_rng(seed).standard_normal((2, n))
    offs = query_offsets_from_sizes(sizes)
    _compare(scores, labels, offs, noise, metric=metric, top=top, sigma=sigma, mu=mu,
             conditioning=conditioning, sfa=sfa, nu=0.01)


# ----------------------------------------------------------------------------------------
# Seeded noise streams
# ----------------------------------------------------------------------------------------


def _dataset(seed=0, sizes=(5, 1, 0, 12, 3, 40, 2, 7)):
    rng = np.random.default_rng(seed)
    return random_query_set(rng, list(sizes), "NDCG", tie_levels=4)


@pytest.mark.parametrize("estimator", ["ccs", "reinforce"])
@pytest.mark.parametrize("iteration", [0, 5])
def test_seeded_equals_explicit_noise(estimator, iteration):
    scores, labels, offs = _dataset()
    kw = dict(metric="NDCG", top=3, sigma=0.7, mu=0.5, estimator=estimator)
    seeded = stochastic_rank_gradient(scores, labels, offs, n_samples=4, seed=11,
                                      iteration=iteration, **kw)
    noise = draw_noise(offs, 4, 11, iteration)
    assert noise.shape == (4, scores.size)
    explicit = stochastic_rank_gradient(scores, labels, offs, noise=noise, **kw)
    assert np.array_equal(seeded, explicit)
    assert np.any(seeded != 0)


def test_draw_noise_is_unit_normal_and_keyed():
    offs = query_offsets_from_sizes([3000, 2000])
    a = draw_noise(offs, 2, 3, 0)
    assert np.array_equal(a, draw_noise(offs, 2, 3, 0))
    assert abs(a.mean()) < 0.05 and abs(a.std() - 1.0) < 0.05
    assert not np.array_equal(a, draw_noise(offs, 2, 4, 0))  # seed
    assert not np.array_equal(a, draw_noise(offs, 2, 3, 1))  # iteration
    assert not np.array_equal(a[0], a[1])  # samples differ
    assert not np.array_equal(a[0, :2000], a[0, 3000:])  # queries differ


def test_same_seed_bit_identical_different_seed_not():
    scores, labels, offs = _dataset(1)
    kw = dict(metric="ERR", n_samples=3, sigma=1.0, mu=1.0)
    labels = labels / labels.max()
    g1 = stochastic_rank_gradient(scores, labels, offs, seed=5, **kw)
    g2 = stochastic_rank_gradient(scores, labels, offs, seed=5, **kw)
    g3 = stochastic_rank_gradient(scores, labels, offs, seed=6, **kw)
    g4 = stochastic_rank_gradient(scores, labels, offs, seed=5, iteration=1, **kw)
    assert np.array_equal(g1, g2)
    assert not np.array_equal(g1, g3)
    assert not np.array_equal(g1, g4)
    obj = StochasticRank.paper(metric="ERR", n_samples=3, seed=5, mu=1.0)
    assert np.array_equal(obj.grad_hess(scores, labels, offs)[0], g1)
    assert np.array_equal(obj.grad_hess(scores, labels, offs, iteration=1)[0], g4)


@pytest.mark.parametrize("estimator", ["ccs", "reinforce"])
def test_thread_count_does_not_change_output(estimator):
    rng = np.random.default_rng(9)
    sizes = rng.integers(0, 30, 400)
    scores, labels, offs = random_query_set(rng, sizes, "NDCG", tie_levels=4)
    kw = dict(metric="NDCG", top=5, n_samples=2, seed=3, iteration=2, estimator=estimator)
    old = numba.get_num_threads()
    try:
        numba.set_num_threads(1)
        one = stochastic_rank_gradient(scores, labels, offs, **kw)
        numba.set_num_threads(min(2, numba.config.NUMBA_NUM_THREADS))
        two = stochastic_rank_gradient(scores, labels, offs, **kw)
        two_noise = draw_noise(offs, 2, 3, 2)
        numba.set_num_threads(1)
        one_noise = draw_noise(offs, 2, 3, 2)
    finally:
        numba.set_num_threads(old)
    assert np.array_equal(one, two)
    assert np.array_equal(one_noise, two_noise)


@pytest.mark.parametrize("metric,top", [("NDCG", None), ("MRR", None), ("ERR", 10)])
def test_window_error_is_negligible(metric, top):
    rng = np.random.default_rng(21)
    scores, labels, offs = random_query_set(rng, [200], metric, tie_levels=0)
    scores *= 3.0  # spread the scores over many conditional standard deviations
    if metric == "MRR":  # a few relevant documents, not at the top
        labels = np.zeros(200)
        labels[np.argsort(-scores)[[5, 30, 31, 120]]] = 1.0
    for sigma in (0.3, 1.0):
        noise = rng.standard_normal((2, 200))
        kw = dict(metric=metric, top=top, sigma=sigma, noise=noise, center=False, sfa=0.0)
        g9 = stochastic_rank_gradient(scores, labels, offs, window=9.0, **kw)
        ginf = stochastic_rank_gradient(scores, labels, offs, window=np.inf, **kw)
        assert np.max(np.abs(g9 - ginf)) < 1e-12
        assert np.max(np.abs(ginf)) > 1e-3
    # a tiny window really truncates (so the comparison above can fail)
    g_small = stochastic_rank_gradient(scores, labels, offs, window=0.5, **kw)
    assert np.max(np.abs(g_small - ginf)) > 1e-6


# ----------------------------------------------------------------------------------------
# The objective object
# ----------------------------------------------------------------------------------------


def _function_kwargs(obj, iteration):
    """The keyword set of ``stochastic_rank_gradient`` that ``obj.grad_hess`` uses."""
    schedule = ("hessian", "hessian_floor", "sigma_min", "anneal_half_life")
    kwargs = {k: v for k, v in obj.get_params().items() if k not in schedule}
    return dict(kwargs, sigma=obj.sigma_at(iteration), iteration=iteration)


@pytest.mark.parametrize("smoothing", ["relative", "absolute"])
def test_objective_matches_function_and_params_roundtrip(smoothing):
    scores, labels, offs = _dataset(2)
    params = dict(metric="NDCG", top=4, sigma=0.5, mu=1.0, nu=0.1, sfa=0.5, n_samples=3, seed=8,
                  estimator="ccs", conditioning="coordinate", gain="linear", grade_max=None,
                  threshold=0.0, hessian="constant", smoothing=smoothing, sigma_min=0.2,
                  anneal_half_life=3.0, decay=0.85, summation="exact", hessian_floor=0.01,
                  spread_top=3 if smoothing == "relative" else None, reach=0.0,
                  min_top_share=0.2)  # the 40-document query trains at the cutoff 8
    obj = StochasticRank(**params)
    assert obj.get_params() == params
    assert obj.sigma_at(0) == 0.5 and obj.sigma_at(3) == 0.25 and obj.sigma_at(30) == 0.2
    grad, hess = obj.grad_hess(scores, labels, offs, iteration=4)
    ref = stochastic_rank_gradient(scores, labels, offs, **_function_kwargs(obj, 4))
    assert np.array_equal(grad, ref)
    assert np.array_equal(hess, np.ones_like(grad))
    clone = eval(repr(obj), {"StochasticRank": StochasticRank})  # noqa: S307
    assert clone.get_params() == params
    assert np.array_equal(clone.grad_hess(scores, labels, offs, iteration=4)[0], grad)
    obj.set_params(top=2)
    g2, _ = obj.grad_hess(scores, labels, offs, iteration=4)
    assert not np.array_equal(g2, grad)
    assert np.array_equal(g2, stochastic_rank_gradient(scores, labels, offs,
                                                       **_function_kwargs(obj, 4)))


def test_objective_label_cache_sees_labels_changed_in_place():
    """grad_hess caches gains/IDCG per label array; a buffer refilled in place with a
    permutation of the same labels (same id, size and sum) must not reuse stale gains."""
    scores, labels, offs = _dataset(2)
    obj = StochasticRank(metric="NDCG", top=4, n_samples=2, seed=8, hessian="constant")
    params = _function_kwargs(obj, 0)
    buffer = labels.copy()
    obj.grad_hess(scores, buffer, offs)
    buffer[:] = buffer[::-1]
    stale, _ = obj.grad_hess(scores, buffer, offs)
    fresh = stochastic_rank_gradient(scores, buffer, offs, **params)
    assert np.array_equal(stale, fresh)
