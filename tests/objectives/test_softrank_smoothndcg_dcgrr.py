"""SoftRank, SmoothNDCG (with annealing), StochasticRank for the LSO loss DCG-RR, and LambdaMART's
XGBoost ``rank:ndcg`` compatibility mode.

Proofs: SoftRank is StochasticRank(mu=0, sfa=0) bit for bit; SmoothNDCG's O(m^2) gradient equals
finite differences of its loss, whose value equals a brute-force evaluation of Chapelle & Wu's
eqs. 7-8; the DCG-RR CCS kernel equals a brute force with the same noise and is unbiased for the
exactly enumerated smoothed loss; an LSO model trained through the LightGBM adapter beats
showing nothing / everything; XGBoost-compatible LambdaMART grows the native rank:ndcg model.
"""

import itertools
import math

import numpy as np
import pytest

from stochrank_objectives import metrics
from stochrank_objectives.baselines import (
    LambdaMART,
    SmoothNDCG,
    SoftRank,
    StochasticRankDCGRR,
)
from stochrank_objectives.groups import query_offsets_from_sizes
from stochrank_objectives.objectives import StochasticRank, draw_noise
from _rankers import SHALLOW, fit_ranker  # noqa: E402
from _reference import fd_grad, separated_queries  # noqa: E402


# -- SoftRank --------------------------------------------------------------------------------------
@pytest.mark.parametrize("kwargs", [{}, {"top": 3, "sigma": 0.5, "n_samples": 4, "seed": 7},
                                    {"conditioning": "coordinate", "gain": "linear"}])
def test_softrank_is_stochastic_rank_without_shift_and_sfa(kwargs):
    scores, labels, offs = separated_queries(1)
    ours = SoftRank(**kwargs)
    ref = StochasticRank.paper(metric="NDCG", mu=0.0, sfa=0.0, **kwargs)
    for it in (0, 3):
        g, h = ours.grad_hess(scores, labels, offs, iteration=it)
        g_ref, h_ref = ref.grad_hess(scores, labels, offs, iteration=it)
        np.testing.assert_array_equal(g, g_ref)
        np.testing.assert_array_equal(h, h_ref)
    assert np.abs(g).max() > 0
    params = ours.get_params()
    assert set(params) == {"top", "sigma", "n_samples", "seed", "conditioning", "gain", "hessian"}
    assert repr(SoftRank(**params)) == repr(ours) and repr(ours).startswith("SoftRank(")
    assert ours.loss(scores, labels, offs) == pytest.approx(ref.loss(scores, labels, offs))


def _first_use(obj):
    """Parameters are checked when an objective is first used (``__init__`` only stores)."""
    return obj.grad_hess(np.array([0.5, 0.0]), np.array([1.0, 0.0]), np.array([0, 2]))


@pytest.mark.parametrize("kwargs,exc,name", [
    ({"sigma": 0.0}, ValueError, "sigma"), ({"sigma": -1}, ValueError, "sigma"),
    ({"top": 0}, ValueError, "top"), ({"mu": 1.0}, TypeError, "mu"),
    ({"sfa": 1.0}, TypeError, "sfa"), ({"conditioning": "x"}, ValueError, "conditioning"),
])
def test_softrank_bad_parameters(kwargs, exc, name):
    with pytest.raises(exc, match=name):
        _first_use(SoftRank(**kwargs))
    with pytest.raises(ValueError, match="unknown parameter"):
        SoftRank().set_params(mu=1.0)


# -- SmoothNDCG ------------------------------------------------------------------------------------
def _smooth_ndcg_brute(scores, labels, offs, sigma, top=None, gain="exp2"):
    """Chapelle & Wu eqs. 7-8 literally: the h matrix, sum_ij G_i D(j) h_ij / Z."""
    total = 0.0
    for a, b in zip(offs[:-1], offs[1:]):
        s, y = scores[a:b], labels[a:b]
        n = b - a
        if n < 2 or y.max() == y.min():
            continue
        G = 2.0 ** y - 1 if gain == "exp2" else y
        k = n if top is None else min(top, n)
        D = np.array([1 / np.log2(1 + j) if j <= k else 0.0 for j in range(1, n + 1)])
        Z = np.sum(np.sort(G)[::-1] * D)
        if Z == 0:
            continue
        d = np.argsort(-s, kind="stable")
        e = np.exp(-(s[:, None] - s[d][None, :]) ** 2 / sigma)  # e[i, j] = e_ij
        h = e / e.sum(axis=0, keepdims=True)
        total += (G[:, None] * D[None, :] * h).sum() / Z
    return -total


@pytest.mark.parametrize("kwargs", [{}, {"smoothing": 0.3, "top": 3}, {"smoothing": 4.0,
                                                                        "gain": "linear"}])
@pytest.mark.parametrize("seed", [0, 1])
def test_smooth_ndcg_value_and_gradient(kwargs, seed):
    scores, labels, offs = separated_queries(seed)
    obj = SmoothNDCG(**kwargs)
    loss = obj.loss(scores, labels, offs)
    assert loss == pytest.approx(_smooth_ndcg_brute(scores, labels, offs, obj.smoothing,
                                                     obj.top, obj.gain), rel=1e-12)
    grad, hess = obj.grad_hess(scores, labels, offs)
    fd = fd_grad(lambda s: obj.loss(s, labels, offs), scores)
    np.testing.assert_allclose(grad, fd, rtol=1e-6, atol=1e-7 * np.abs(fd).max())
    assert np.abs(grad).max() > 0 and np.all(hess == 1.0)
    # translation invariant, gradients of a query sum to zero
    np.testing.assert_allclose(obj.grad_hess(scores + 3.0, labels, offs)[0], grad, atol=1e-9)
    for a, b in zip(offs[:-1], offs[1:]):
        assert abs(grad[a:b].sum()) < 1e-9


def test_smooth_ndcg_tends_to_ndcg_and_to_constant():
    scores, labels, offs = separated_queries(3)
    has_info = np.array([labels[a:b].max() > labels[a:b].min()
                         for a, b in zip(offs[:-1], offs[1:])])
    for top in (None, 3):
        ndcg = metrics.ndcg_at_k(scores, labels, offs, top, ties="input_order", per_query=True)
        assert SmoothNDCG(smoothing=1e-9, top=top).loss(scores, labels, offs) == pytest.approx(
            -ndcg[has_info].sum(), rel=1e-9)
    # sigma -> infinity: h_ij -> 1/m, the gradient vanishes (section 5.3)
    g, _ = SmoothNDCG(smoothing=1e8).grad_hess(scores, labels, offs)
    assert np.abs(g).max() < 1e-6


def test_smooth_ndcg_stationary_at_ties_and_regression_start():
    labels, offs = np.array([2.0, 0.0, 1.0, 0.0]), [0, 4]
    g, _ = SmoothNDCG().grad_hess(np.zeros(4), labels, offs)
    assert np.all(g == 0.0)  # h_ij = 1/m: the paper's reason for a starting point
    obj = SmoothNDCG(start_iterations=3)
    s = np.array([0.5, 0.0, 0.0, 1.0])
    g, h = obj.grad_hess(s, labels, offs, iteration=2)  # regression on the gains
    np.testing.assert_array_equal(g, s - (2.0 ** labels - 1.0))
    np.testing.assert_array_equal(h, np.ones(4))
    np.testing.assert_array_equal(obj.grad_hess(s, labels, offs, iteration=3)[0],
                                  SmoothNDCG().grad_hess(s, labels, offs)[0])


def test_smooth_ndcg_annealing_schedule():
    obj = SmoothNDCG(smoothing=64.0, anneal_every=5, min_smoothing=1 / 64, start_iterations=2)
    values = [obj.smoothing_at(t) for t in range(0, 80)]
    assert values[:7] == [64.0] * 7 and values[7] == 32.0 and values[12] == 16.0
    assert values[-1] == 1 / 64 and min(values) == 1 / 64
    assert all(a >= b for a, b in zip(values, values[1:]))
    assert SmoothNDCG(smoothing=2.0).smoothing_at(10 ** 6) == 2.0  # no annealing by default
    assert SmoothNDCG(smoothing=1.0, anneal_every=1).smoothing_at(10 ** 6) == 1.0 / 4096
    assert SmoothNDCG(smoothing=9.0, anneal_every=2, anneal_factor=3.0).smoothing_at(3) == 3.0
    # the gradient at iteration t is that of the loss at smoothing_at(t)
    scores, labels, offs = separated_queries(4)
    g, _ = obj.grad_hess(scores, labels, offs, iteration=40)
    np.testing.assert_array_equal(g, SmoothNDCG(smoothing=obj.smoothing_at(40)).grad_hess(
        scores, labels, offs)[0])
    fd = fd_grad(lambda s: obj.loss(s, labels, offs, iteration=40), scores)
    np.testing.assert_allclose(g, fd, rtol=1e-5, atol=1e-6 * np.abs(fd).max())


def test_smooth_ndcg_degenerate_queries_and_bad_input():
    sizes = [0, 1, 4, 3, 5]
    offs = query_offsets_from_sizes(sizes)
    labels = np.array([2.0, 1, 1, 1, 1, 0, 0, 0, 2, 0, 1, 0, 2])
    scores = np.array([0.3, 1.0, 1.0, 1.0, 1.0, 0.5, -0.2, 0.1, 0, 0, 0.5, 0, 0])
    obj = SmoothNDCG()
    g, h = obj.grad_hess(scores, labels, offs)
    assert np.all(np.isfinite(g)) and np.all(g[:8] == 0.0) and np.abs(g[8:]).max() > 0
    assert np.isfinite(obj.loss(scores, labels, offs))
    for kwargs, exc, name in [({"smoothing": 0.0}, ValueError, "smoothing"),
                              ({"smoothing": -1.0}, ValueError, "smoothing"),
                              ({"smoothing": "1"}, TypeError, "smoothing"),
                              ({"anneal_every": 0}, ValueError, "anneal_every"),
                              ({"anneal_factor": 1.0}, ValueError, "anneal_factor"),
                              ({"min_smoothing": 0.0}, ValueError, "min_smoothing"),
                              ({"min_smoothing": 2.0}, ValueError, "min_smoothing"),
                              ({"start_iterations": -1}, ValueError, "start_iterations"),
                              ({"top": 0}, ValueError, "top"), ({"eta": 1}, TypeError, "eta")]:
        with pytest.raises(exc, match=name):
            _first_use(SmoothNDCG(**kwargs))
    with pytest.raises(ValueError, match="labels"):
        obj.grad_hess(np.zeros(2), np.array([1.0, -1.0]), [0, 2])
    with pytest.raises(ValueError, match="iteration"):
        obj.grad_hess(np.zeros(2), np.array([1.0, 0.0]), [0, 2], iteration=-1)
    clone = SmoothNDCG(**SmoothNDCG(top=5, anneal_every=3).get_params())
    assert repr(clone) == "SmoothNDCG(smoothing=1.0, top=5, gain='exp2', anneal_every=3, " \
                          "anneal_factor=2.0, min_smoothing=None, start_iterations=0)"


# -- StochasticRank for DCG-RR ------------------------------------------------------------------
def _dcgrr(z, r):
    shown = 0
    total = 0.0
    for zi, ri in zip(z, r):
        if zi > 0:
            shown += 1
            total += ri / shown
    return total


def _dcgrr_ccs_brute(scores, labels, offs, noise, sigma):
    """Per sample and document: the loss jump as y_i crosses 0 (others fixed), times the
    N(z_i, sigma^2) density at 0."""
    grad = np.zeros_like(scores)
    for e in noise:
        y = scores + sigma * e
        for a, b in zip(offs[:-1], offs[1:]):
            for i in range(a, b):
                up, down = y[a:b].copy(), y[a:b].copy()
                up[i - a], down[i - a] = 1.0, -1.0
                jump = -(_dcgrr(up, labels[a:b]) - _dcgrr(down, labels[a:b]))
                dens = math.exp(-0.5 * (scores[i] / sigma) ** 2) / (sigma * math.sqrt(2 * math.pi))
                grad[i] += jump * dens
    return grad / noise.shape[0]


def _dcgrr_smoothed_exact(scores, labels, sigma):
    """E[-DCG-RR(z + sigma e)] by enumerating the 2^n independent inclusion patterns."""
    p = 0.5 * (1 + np.vectorize(math.erf)(scores / (sigma * math.sqrt(2))))
    total = 0.0
    for pattern in itertools.product([0, 1], repeat=scores.size):
        b = np.array(pattern)
        prob = np.prod(np.where(b == 1, p, 1 - p))
        total -= prob * _dcgrr(np.where(b == 1, 1.0, -1.0), labels)
    return total


@pytest.mark.parametrize("sigma", [1.0, 0.4])
def test_dcgrr_ccs_equals_brute_force_with_same_noise(sigma):
    rng = np.random.default_rng(0)
    offs = query_offsets_from_sizes([1, 4, 7, 12])
    scores = rng.normal(size=offs[-1])
    labels = rng.integers(0, 4, size=offs[-1]) * 0.5
    obj = StochasticRankDCGRR(sigma=sigma, n_samples=5, seed=3)
    noise = draw_noise(offs, 5, seed=3, iteration=2)
    g = obj.gradient(scores, labels, offs, noise=noise)
    np.testing.assert_allclose(g, _dcgrr_ccs_brute(scores, labels, offs, noise, sigma),
                               rtol=1e-12, atol=1e-15)
    # the seeded streams are draw_noise's
    np.testing.assert_array_equal(obj.grad_hess(scores, labels, offs, iteration=2)[0], g)
    assert not np.array_equal(obj.grad_hess(scores, labels, offs, iteration=3)[0], g)


@pytest.mark.slow
def test_dcgrr_ccs_is_unbiased():
    rng = np.random.default_rng(5)
    scores = rng.normal(scale=0.8, size=7)
    labels = np.array([1.0, 0.0, 2.0, 0.5, 0.0, 1.0, 3.0])
    sigma = 0.7
    exact = fd_grad(lambda s: _dcgrr_smoothed_exact(s, labels, sigma), scores, h=1e-5)
    n = 100000
    # n independent single-draw estimates: the query replicated n times (one stream per copy)
    offs = query_offsets_from_sizes([7] * n)
    obj = StochasticRankDCGRR(sigma=sigma, n_samples=1, seed=11)
    draws = obj.gradient(np.tile(scores, n), np.tile(labels, n), offs).reshape(n, 7)
    mean, se = draws.mean(axis=0), draws.std(axis=0) / math.sqrt(n)
    assert np.all(np.abs(mean - exact) < 4.5 * se + 1e-9), (mean, exact, se)
    # n_samples averages the draws of one query's streams (k = 0 .. n - 1)
    many = StochasticRankDCGRR(sigma=sigma, n_samples=n, seed=11).gradient(scores, labels, [0, 7])
    assert np.all(np.abs(many - exact) < 4.5 * se + 1e-9), (many, exact, se)
    assert np.all(np.abs(exact) > 10 * se)  # the test has power


def test_dcgrr_loss_degenerate_and_bad_input():
    obj = StochasticRankDCGRR(n_samples=3)
    offs = query_offsets_from_sizes([0, 1, 3, 2])
    labels = np.array([1.0, 0.0, 0.0, 0.0, 2.0, 2.0])
    scores = np.array([0.0, 0.3, -1.0, 2.0, 0.0, 0.0])
    g, h = obj.grad_hess(scores, labels, offs)
    assert np.all(np.isfinite(g)) and np.all(h == 1.0)
    assert g[0] < 0  # a single relevant document should be shown
    assert np.all(g[1:4] == 0.0)  # nothing relevant: nothing to learn
    assert g[4] < 0 and g[5] < 0
    assert obj.loss(np.array([1.0, 1.0, -1.0, 1.0]), np.array([3.0, 1.0, 5.0, 2.0]), [0, 4]) \
        == pytest.approx(-(3.0 + 1.0 / 2 + 2.0 / 3))
    # not translation invariant: shifting all scores changes the gradient
    assert not np.allclose(obj.grad_hess(scores + 1.0, labels, offs)[0], g)
    for kwargs, exc, name in [({"sigma": 0.0}, ValueError, "sigma"),
                              ({"n_samples": 0}, ValueError, "n_samples"),
                              ({"seed": -2}, ValueError, "seed"), ({"mu": 1.0}, TypeError, "mu")]:
        with pytest.raises(exc, match=name):
            _first_use(StochasticRankDCGRR(**kwargs))
    with pytest.raises(ValueError, match="labels"):
        obj.grad_hess(np.zeros(2), np.array([1.0, -1.0]), [0, 2])
    with pytest.raises(ValueError, match="noise"):
        obj.gradient(np.zeros(2), np.ones(2), [0, 2], noise=np.zeros((1, 3)))


def _lso_task(seed, n_queries, n_docs=10):
    """Documents in a fixed order with 4 features; relevance 0/1/2 from the first two."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n_queries * n_docs, 4))
    t = X[:, 0] + 0.5 * X[:, 1] + 0.3 * rng.normal(size=X.shape[0])
    y = (t > 0.8).astype(float) + (t > 1.6)
    return X, y, query_offsets_from_sizes([n_docs] * n_queries)


@pytest.mark.slow
def test_dcgrr_lso_task_through_lightgbm_beats_nothing_and_everything():
    X, y, offs = _lso_task(0, 300)
    Xt, yt, offs_t = _lso_task(1, 200)
    obj = StochasticRankDCGRR(sigma=1.0, n_samples=4, seed=0)
    ranker = fit_ranker("lightgbm", obj, X, y, np.diff(offs), n_estimators=40, learning_rate=0.3,
                        **SHALLOW["lightgbm"])
    value = lambda s: -obj.loss(s, yt, offs_t) / (offs_t.size - 1)  # noqa: E731
    trained = value(ranker.predict(Xt))
    nothing, everything = value(-np.ones(yt.size)), value(np.ones(yt.size))
    oracle = value(np.where(yt > 0, 1.0, -1.0))
    assert nothing == 0.0
    assert trained > everything + 0.5 * (oracle - everything), (trained, everything, oracle)
    assert trained > 0.8 * oracle


# -- XGBoost rank:ndcg ---------------------------------------------------------------------------
def test_xgboost_mode_pair_by_hand():
    # scores (0, 1), labels (1, 0): W = (1 - 1/log2 3) / (1 + 0.01), p = sigmoid(-1)
    g, h = LambdaMART.xgboost().grad_hess(np.array([0.0, 1.0]), np.array([1.0, 0.0]), [0, 2])
    w = (1 - 1 / np.log2(3.0)) / 1.01
    p = 1 / (1 + np.exp(1.0))
    total = 2 * (1 - p) * w
    f = np.log2(1 + total) / total
    np.testing.assert_allclose(g, [(p - 1) * w * f, (1 - p) * w * f], rtol=1e-12)
    np.testing.assert_allclose(h, [2 * p * (1 - p) * w * f] * 2, rtol=1e-12)
    # far apart scores: the hessian floor 2 * 1e-16 * W
    _, h = LambdaMART.xgboost(lambdarank_normalization=False).grad_hess(
        np.array([0.0, 60.0]), np.array([1.0, 0.0]), [0, 2])
    np.testing.assert_allclose(h, 2e-16 * (1 - 1 / np.log2(3.0)) / 60.01, rtol=1e-12)
    assert LambdaMART.xgboost(ndcg_exp_gain=False).gain == "linear"
    with pytest.raises(ValueError, match="compat"):
        _first_use(LambdaMART(compat="xgboost", metric="MRR"))
    with pytest.raises(ValueError, match="label_gain"):
        _first_use(LambdaMART(compat="xgboost", label_gain=[0.0, 1.0]))
    with pytest.raises(TypeError, match="ndcg_exp_gain"):
        LambdaMART.xgboost(ndcg_exp_gain="yes")


@pytest.mark.slow
@pytest.mark.parametrize("xgb_params", [
    {},
    {"lambdarank_num_pair_per_sample": 5, "lambdarank_score_normalization": False},
    {"lambdarank_normalization": False, "ndcg_exp_gain": False},
], ids=str)
def test_lambdamart_xgboost_equals_native_rank_ndcg(mq2008_train_vali, xgb_params):
    xgb = pytest.importorskip("xgboost")

    tr, va = mq2008_train_vali
    qid = np.repeat(np.arange(tr.n_queries), tr.group_sizes)
    trees = dict(max_depth=4, base_score=0.5, tree_method="hist")
    native = xgb.train({**trees, "learning_rate": 0.1, "nthread": 2, "seed": 0,
                        "objective": "rank:ndcg", "lambdarank_pair_method": "topk",
                        **xgb_params}, xgb.DMatrix(tr.X, tr.y, qid=qid), 15)
    ours = fit_ranker("xgboost", LambdaMART.xgboost(**xgb_params), tr.X, tr.y, tr.group_sizes,
                      n_estimators=15, learning_rate=0.1, **trees).booster_
    for X in (tr.X, va.X):
        a = native.predict(xgb.DMatrix(X), output_margin=True)
        b = ours.predict(xgb.DMatrix(X), output_margin=True)
        np.testing.assert_allclose(b, a, rtol=0, atol=1e-5)
