"""Baseline objectives: LambdaMART (and LightGBM lambdarank equivalence), LambdaLoss NDCG-Loss2++,
ApproxNDCG, ListNet, the Gumbel E[.] wrapper.

Proofs: finite differences of the exposed losses, brute-force swap deltas, bit-for-bit LightGBM
models, beta -> 0 and seeding of the Gumbel wrapper, bad input, degenerate queries, training
through the LightGBM adapter on MQ2008 Fold 1.
"""

import numba
import numpy as np
import pytest

from stochrank_objectives import metrics
from stochrank_objectives.baselines import (
    ApproxNDCG,
    Gumbel,
    LambdaLoss,
    LambdaMART,
    ListNet,
    e_lambda_mart,
)
from stochrank_objectives.groups import query_offsets_from_sizes
from _rankers import fit_ranker  # noqa: E402
from _reference import fd_grad, fd_hess_diag, separated_queries  # noqa: E402


# -- helpers ---------------------------------------------------------------------------------




def _assert_close_rel(actual, expected, rtol):
    scale = max(np.abs(expected).max(), 1e-12)
    err = np.abs(actual - expected).max() / scale
    assert err < rtol, f"relative error {err:.2e} >= {rtol:.0e}"


SMOOTH = [
    LambdaLoss(),
    LambdaLoss(mu=1.5, sigma=2.0, gain="linear"),
    ApproxNDCG(),
    ApproxNDCG(eta=2.5, gain="linear"),
    ListNet(),
    ListNet(target="linear"),
]


# -- gradients of the smooth losses ------------------------------------------------------------
@pytest.mark.parametrize("obj", SMOOTH, ids=repr)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_smooth_gradient_equals_finite_differences(obj, seed):
    scores, labels, offs = separated_queries(seed)
    grad, _ = obj.grad_hess(scores, labels, offs)
    fd = fd_grad(lambda s: obj.loss(s, labels, offs), scores)
    _assert_close_rel(grad, fd, 1e-6)
    assert np.abs(grad).max() > 0


@pytest.mark.parametrize("obj", [LambdaLoss(), LambdaLoss(mu=2.0, sigma=0.5),
                                 ApproxNDCG(hessian="exact"), ApproxNDCG(eta=3.0, hessian="exact"),
                                 ListNet(), ListNet(target="linear")], ids=repr)
def test_hessian_diagonal_equals_finite_differences(obj):
    scores, labels, offs = separated_queries(7)
    _, hess = obj.grad_hess(scores, labels, offs)
    fd = fd_hess_diag(lambda s: obj.grad_hess(s, labels, offs)[0], scores)
    _assert_close_rel(hess, fd, 1e-5)


def test_approx_ndcg_tends_to_ndcg_and_constant_hessian():
    scores, labels, offs = separated_queries(3)
    sharp = ApproxNDCG(eta=1e4)
    ndcg = metrics.ndcg_at_k(scores, labels, offs, ties="input_order", per_query=True)
    has_info = np.array([labels[a:b].max() > labels[a:b].min() for a, b in zip(offs[:-1], offs[1:])])
    assert sharp.loss(scores, labels, offs) == pytest.approx(-ndcg[has_info].sum(), rel=1e-6)
    _, hess = ApproxNDCG().grad_hess(scores, labels, offs)
    assert np.all(hess == 1.0)


def test_lambdaloss_weights_by_hand():
    # two documents, y = (1, 0), ranks (2, 1): G = (1/IDCG, 0), IDCG = 1
    s, y = np.array([0.0, 1.0]), np.array([1.0, 0.0])
    inv_d = lambda r: 1.0 / np.log2(1.0 + r)  # noqa: E731
    rho = abs(inv_d(2) - inv_d(1))
    delta = abs(inv_d(1) - inv_d(2))
    w = rho + 5.0 * delta
    expected = w * np.log2(1 + np.exp(-(0.0 - 1.0)))
    assert LambdaLoss().loss(s, y, [0, 2]) == pytest.approx(expected, rel=1e-12)


# -- LambdaMART ----------------------------------------------------------------------------------
def _brute_force_lambdas(scores, labels, offs, metric, top, sigma, threshold=0.0):
    """Lambdas from explicit swaps evaluated with the metrics module (input-order ties)."""
    grad = np.zeros_like(scores)
    hess = np.zeros_like(scores)
    _brute_force_lambdas.total = 0.0  # sum_pairs 2 sigma W rho (of the last query)
    for a0, b0 in zip(offs[:-1], offs[1:]):
        s, y = scores[a0:b0], labels[a0:b0]
        n = b0 - a0
        order = np.argsort(-s, kind="stable")
        ranked_scores = np.arange(n, 0, -1, dtype=float)  # position p gets score n - p

        def value(perm):
            z = np.empty(n)
            z[perm] = ranked_scores
            if metric == "NDCG":
                return metrics.ndcg_at_k(z, y, [0, n], top, ties="input_order", no_relevant="zero")
            return metrics.mrr(z, y, [0, n], top, threshold=threshold, ties="input_order")

        base = value(order)
        for a in range(n):
            for b in range(a + 1, n):
                i, j = order[a], order[b]
                if y[i] == y[j]:
                    continue
                swapped = order.copy()
                swapped[a], swapped[b] = j, i
                w = abs(value(swapped) - base)
                h, lo = (i, j) if y[i] > y[j] else (j, i)
                rho = 1.0 / (1.0 + np.exp(sigma * (s[h] - s[lo])))
                grad[a0 + h] -= sigma * w * rho
                grad[a0 + lo] += sigma * w * rho
                hess[a0 + h] += sigma ** 2 * w * rho * (1 - rho)
                hess[a0 + lo] += sigma ** 2 * w * rho * (1 - rho)
                _brute_force_lambdas.total += 2 * sigma * w * rho
    return grad, hess


@pytest.mark.parametrize("metric,top,sigma", [("NDCG", None, 1.0), ("NDCG", 3, 2.0),
                                              ("MRR", None, 1.0), ("MRR", 2, 0.7)])
@pytest.mark.parametrize("seed", [0, 1])
def test_lambdamart_equals_brute_force_swaps(metric, top, sigma, seed):
    scores, labels, offs = separated_queries(seed, max_label=2)
    threshold = 1.0 if metric == "MRR" and seed else 0.0
    obj = LambdaMART(metric=metric, top=top, sigma=sigma, threshold=threshold)
    grad, hess = obj.grad_hess(scores, labels, offs)
    ref_g, ref_h = _brute_force_lambdas(scores, labels, offs, metric, top, sigma, threshold)
    np.testing.assert_allclose(grad, ref_g, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(hess, ref_h, rtol=1e-10, atol=1e-12)
    assert np.abs(grad).max() > 0


@pytest.mark.parametrize("obj", [LambdaMART(), LambdaMART(top=3, sigma=2.0),
                                 LambdaMART(metric="MRR", top=4)], ids=repr)
def test_lambdamart_is_gradient_of_frozen_weight_surrogate(obj):
    scores, labels, offs = separated_queries(5)
    grad, hess = obj.grad_hess(scores, labels, offs)
    _assert_close_rel(grad, fd_grad(lambda s: obj.loss(s, labels, offs), scores), 1e-6)
    _assert_close_rel(hess, fd_hess_diag(lambda s: obj.grad_hess(s, labels, offs)[0], scores),
                      1e-5)


def test_lambdamart_norms():
    scores, labels, offs = separated_queries(4, sizes=(12,))
    plain, _ = LambdaMART(sigma=2.0).grad_hess(scores, labels, offs)
    normed, _ = LambdaMART(sigma=2.0, norm=True).grad_hess(scores, labels, offs)
    _brute_force_lambdas(scores, labels, offs, "NDCG", None, 2.0)
    total = _brute_force_lambdas.total  # sum_pairs 2 sigma W rho
    np.testing.assert_allclose(normed, plain * np.log2(1 + total) / total, rtol=1e-12)
    # score normalisation divides every pair weight by 0.01 + |ds|
    scored, _ = LambdaMART(score_norm=True).grad_hess(scores, labels, offs)
    assert not np.allclose(scored, LambdaMART().grad_hess(scores, labels, offs)[0])


# LightGBM trees of the tests below; ours go through StochasticLGBMRanker (random_state=0,
# n_jobs=2), the native lambdarank through lgb.train with the same settings
LGB_TREES = dict(num_leaves=15, min_data_in_leaf=20, deterministic=True, force_row_wise=True)
LGB_PARAMS = dict(LGB_TREES, learning_rate=0.1, verbose=-1, num_threads=2, seed=0)


@pytest.mark.slow
@pytest.mark.parametrize("lgb_params", [
    {},
    {"sigmoid": 2.0, "lambdarank_truncation_level": 5},
    {"lambdarank_norm": False, "sigmoid": 0.5},
    {"label_gain": [0.0, 1.0, 5.0], "lambdarank_truncation_level": 3},
], ids=str)
def test_lambdamart_lightgbm_equals_native_lambdarank(mq2008_train_vali, lgb_params):
    lgb = pytest.importorskip("lightgbm")

    tr, va = mq2008_train_vali
    native_params = dict(lgb_params)
    if "label_gain" in native_params:
        native_params["label_gain"] = ",".join(str(v) for v in native_params["label_gain"])
    native = lgb.train({**LGB_PARAMS, "objective": "lambdarank", **native_params},
                       lgb.Dataset(tr.X, tr.y, group=tr.group_sizes), 15)
    ours = fit_ranker("lightgbm", LambdaMART.lightgbm(**lgb_params), tr.X, tr.y, tr.group_sizes,
                      n_estimators=15, learning_rate=0.1, **LGB_TREES).booster_
    for X in (tr.X, va.X):
        np.testing.assert_allclose(ours.predict(X), native.predict(X), rtol=0, atol=1e-6)
    # in fact the gradients agree bit for bit, so LightGBM grows the very same trees
    trees = lambda b: b.model_to_string().split("Tree=0", 1)[1].split("end of trees")[0]  # noqa
    assert trees(ours) == trees(native)


def test_lambdamart_lightgbm_one_pair_by_hand():
    # one pair, scores (0, 1), labels (1, 0): ds = -1, W = |1 - 1/log2(3)| / 1 (IDCG = 1), score
    # normalisation W / (0.01f + 1); norm factor log2(1 + L) / L, L = 2 W rho.
    g, h = LambdaMART.lightgbm().grad_hess(np.array([0.0, 1.0]), np.array([1.0, 0.0]), [0, 2])
    w = (1.0 - 1.0 / np.log2(3.0)) / (float(np.float32(0.01)) + 1.0)
    rho = 1.0 / (1.0 + np.exp(-1.0))
    total = 2 * w * rho
    factor = np.log2(1 + total) / total
    np.testing.assert_allclose(g, [-w * rho * factor, w * rho * factor], rtol=2e-5)
    np.testing.assert_allclose(h, [w * rho * (1 - rho) * factor] * 2, rtol=2e-5)
    assert g.dtype == np.float64 and np.float32(g[0]) == g[0]  # float32 values, as LightGBM's


# -- Gumbel --------------------------------------------------------------------------------------
@pytest.mark.parametrize("inner", [LambdaMART(top=5), LambdaMART.lightgbm(), ApproxNDCG(),
                                   ListNet(), LambdaLoss()], ids=repr)
def test_gumbel_small_beta_reproduces_wrapped(inner):
    scores, labels, offs = separated_queries(11)
    g0, h0 = inner.grad_hess(scores, labels, offs)
    g, h = Gumbel(inner, beta=1e-10, n_samples=3, seed=5).grad_hess(scores, labels, offs, 4)
    np.testing.assert_allclose(g, g0, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(h, h0, rtol=1e-6, atol=1e-7)


def test_gumbel_noise_seeded_reproducible_and_gumbel_distributed():
    offs = query_offsets_from_sizes([3, 50, 7, 1000])
    obj = Gumbel(ListNet(), beta=0.5, n_samples=4, seed=9)
    a = obj.noise(offs, iteration=2)
    assert a.shape == (4, offs[-1])
    np.testing.assert_array_equal(a, obj.noise(offs, iteration=2))
    assert not np.any(a == obj.noise(offs, iteration=3))
    assert not np.any(a == Gumbel(ListNet(), beta=0.5, n_samples=4, seed=10).noise(offs, 2))
    # a query's noise depends on its key only, not on the other queries
    np.testing.assert_array_equal(a[:, 3:53], obj.noise(query_offsets_from_sizes([3, 50]), 2)[:, 3:])
    numba.set_num_threads(1)
    try:
        np.testing.assert_array_equal(a, obj.noise(offs, iteration=2))
    finally:
        numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)
    big = Gumbel(ListNet(), beta=0.5, n_samples=200, seed=1).noise(offs).ravel()
    assert big.mean() == pytest.approx(0.5 * np.euler_gamma, abs=0.01)
    assert big.std() == pytest.approx(0.5 * np.pi / np.sqrt(6), rel=0.02)


def test_gumbel_averages_wrapped_at_stochastic_scores_and_loss_is_consistent():
    scores, labels, offs = separated_queries(2)
    inner = ApproxNDCG(eta=2.0)
    obj = Gumbel(inner, beta=0.25, n_samples=8, seed=1)
    noise = obj.noise(offs, iteration=6)
    expected = np.mean([inner.grad_hess(scores + e, labels, offs)[0] for e in noise], axis=0)
    grad, _ = obj.grad_hess(scores, labels, offs, iteration=6)
    np.testing.assert_allclose(grad, expected, rtol=1e-12, atol=1e-15)
    # with the noise held fixed, E[ApproxNDCG]'s gradient is that of its Monte-Carlo loss
    fd = fd_grad(lambda s: obj.loss(s, labels, offs, iteration=6), scores)
    _assert_close_rel(grad, fd, 1e-6)
    e = e_lambda_mart(lightgbm=True, sigmoid=2.0)
    assert isinstance(e.objective, LambdaMART) and e.objective.compat == "lightgbm"
    assert (e.beta, e.n_samples) == (0.25, 8)


# -- invariances, degenerate queries -------------------------------------------------------------
ALL = [LambdaMART(), LambdaMART(metric="MRR", top=3), LambdaMART.lightgbm(), LambdaLoss(),
       ApproxNDCG(), ApproxNDCG(hessian="exact"), ListNet(), ListNet(target="linear"),
       Gumbel(LambdaMART(), n_samples=2)]


@pytest.mark.parametrize("obj", ALL, ids=repr)
def test_translation_invariant_and_gradients_sum_to_zero(obj):
    scores, labels, offs = separated_queries(8)
    g, h = obj.grad_hess(scores, labels, offs)
    g2, h2 = obj.grad_hess(scores + 0.75, labels, offs)
    np.testing.assert_allclose(g2, g, rtol=1e-9, atol=1e-9)
    for a, b in zip(offs[:-1], offs[1:]):
        assert abs(g[a:b].sum()) < 1e-6 * max(1.0, np.abs(g[a:b]).max())


@pytest.mark.parametrize("obj", ALL, ids=repr)
def test_degenerate_queries_give_zero_gradient(obj):
    # sizes: empty, one document, all-equal labels (2), all irrelevant, ties in scores, normal
    sizes = [0, 1, 4, 3, 5, 6]
    offs = query_offsets_from_sizes(sizes)
    labels = np.array([2.0, 1, 1, 1, 1, 0, 0, 0, 2, 0, 1, 0, 2, 2, 1, 0, 0, 1, 0])
    scores = np.array([0.3, 1.0, 1.0, 1.0, 1.0, 0.5, -0.2, 0.1, 0, 0, 0, 0, 0,
                       0.4, -1.0, 0.2, 1.3, 0.0, -0.5])
    g, h = obj.grad_hess(scores, labels, offs)
    assert np.all(np.isfinite(g)) and np.all(np.isfinite(h))
    assert np.all(g[:8] == 0.0)
    assert np.abs(g[8:13]).max() > 0 and np.abs(g[13:]).max() > 0  # ties still get gradients
    if hasattr(obj, "loss"):
        assert np.isfinite(obj.loss(scores, labels, offs))
    # the non-degenerate queries are unaffected by the degenerate ones
    g_alone, _ = obj.grad_hess(scores[13:], labels[13:], [0, 6])
    if not isinstance(obj, Gumbel):  # (Gumbel noise is keyed by the query index)
        np.testing.assert_allclose(g[13:], g_alone, rtol=1e-12, atol=1e-15)


# -- parameters and bad input ------------------------------------------------------------------
@pytest.mark.parametrize("obj", ALL, ids=repr)
def test_params_roundtrip(obj):
    params = obj.get_params()
    clone = type(obj)(**params)
    assert clone.get_params() == params
    assert repr(clone) == repr(obj)
    assert repr(obj).startswith(type(obj).__name__ + "(")


def _first_use(obj):
    """Parameters are checked when an objective is first used (``__init__`` only stores)."""
    return obj.grad_hess(np.array([0.5, 0.0]), np.array([1.0, 0.0]), np.array([0, 2]))


@pytest.mark.parametrize("cls,kwargs,exc,name", [
    (LambdaMART, {"sigma": 0.0}, ValueError, "sigma"),
    (LambdaMART, {"sigma": "1"}, TypeError, "sigma"),
    (LambdaMART, {"metric": "ERR"}, ValueError, "metric"),
    (LambdaMART, {"top": 0}, ValueError, "top"),
    (LambdaMART, {"compat": "catboost"}, ValueError, "compat"),
    (LambdaMART, {"compat": "lightgbm", "metric": "MRR"}, ValueError, "compat"),
    (LambdaMART, {"label_gain": [1.0, -1.0]}, ValueError, "label_gain"),
    (LambdaMART, {"norm": 1}, TypeError, "norm"),
    (LambdaMART, {"gain": "exp"}, ValueError, "gain"),
    (LambdaLoss, {"mu": 0.0}, ValueError, "mu"),
    (LambdaLoss, {"mu": -1.0}, ValueError, "mu"),
    (LambdaLoss, {"sigma": float("nan")}, ValueError, "sigma"),
    (ApproxNDCG, {"eta": 0.0}, ValueError, "eta"),
    (ApproxNDCG, {"eta": -3}, ValueError, "eta"),
    (ApproxNDCG, {"hessian": "newton"}, ValueError, "hessian"),
    (ListNet, {"target": "softmax"}, ValueError, "target"),
    (LambdaMART, {"bogus": 1}, TypeError, "bogus"),
    (ListNet, {"temperature": 1}, TypeError, "temperature"),
])
def test_bad_parameters(cls, kwargs, exc, name):
    with pytest.raises(exc, match=name):
        _first_use(cls(**kwargs))


@pytest.mark.parametrize("kwargs,exc,name", [
    ({"beta": 0.0}, ValueError, "beta"), ({"beta": -0.25}, ValueError, "beta"),
    ({"n_samples": 0}, ValueError, "n_samples"), ({"n_samples": 2.0}, TypeError, "n_samples"),
    ({"seed": -1}, ValueError, "seed"), ({"objective": "lambdamart"}, TypeError, "objective"),
])
def test_bad_gumbel_parameters(kwargs, exc, name):
    with pytest.raises(exc, match=name):
        _first_use(Gumbel(**{"objective": LambdaMART(), **kwargs}))


def test_set_params_validates_and_rejects_unknown():
    obj = ApproxNDCG(eta=3.0)
    with pytest.raises(ValueError, match="unknown parameter.*'mu'"):
        obj.set_params(mu=1.0)
    with pytest.raises(ValueError, match="eta"):
        obj.set_params(eta=-1.0)
    assert obj.eta == 3.0  # unchanged after a failed set_params
    assert obj.set_params(eta=5.0) is obj and obj.eta == 5.0
    g = Gumbel(ListNet())
    g.set_params(beta=1.0, n_samples=2)
    assert (g.beta, g.n_samples) == (1.0, 2)


@pytest.mark.parametrize("obj", ALL, ids=repr)
def test_bad_labels_and_arrays(obj):
    offs = [0, 3]
    with pytest.raises(ValueError, match="labels"):
        obj.grad_hess(np.zeros(3), np.array([1.0, -1.0, 0.0]), offs)
    with pytest.raises(ValueError, match="scores"):
        obj.grad_hess(np.array([0.0, np.nan, 1.0]), np.array([1.0, 0.0, 0.0]), offs)
    with pytest.raises(ValueError, match="query_offsets"):
        obj.grad_hess(np.zeros(3), np.array([1.0, 0.0, 0.0]), [0, 2])
    with pytest.raises(ValueError, match="iteration"):
        obj.grad_hess(np.zeros(3), np.array([1.0, 0.0, 0.0]), offs, iteration=-1)


@pytest.mark.parametrize("obj", [LambdaMART(), LambdaLoss(), ApproxNDCG()], ids=repr)
def test_exp2_gain_label_domain(obj):
    with pytest.raises(ValueError, match="labels"):
        obj.grad_hess(np.zeros(2), np.array([40.0, 0.0]), [0, 2])


def test_lightgbm_label_gain_domain():
    with pytest.raises(ValueError, match="labels must be integers"):
        LambdaMART.lightgbm().grad_hess(np.zeros(2), np.array([1.5, 0.0]), [0, 2])
    with pytest.raises(ValueError, match="label_gain"):
        LambdaMART(label_gain=[0.0, 1.0]).grad_hess(np.zeros(2), np.array([2.0, 0.0]), [0, 2])


# -- training through LightGBM (its ranker) -------------------------------------------------------
TRAINED = [LambdaMART(top=5), LambdaMART(metric="MRR"), LambdaMART.lightgbm(), LambdaLoss(),
           ApproxNDCG(), ListNet(), e_lambda_mart(lightgbm=True), Gumbel(ApproxNDCG())]


@pytest.mark.slow
@pytest.mark.parametrize("obj", TRAINED, ids=repr)
def test_trains_through_lightgbm_adapter_on_mq2008(mq2008_train_vali, obj):
    tr, va = mq2008_train_vali
    lr = 1.0 if "ApproxNDCG" in repr(obj) else 0.1  # unit hessian: a gradient step
    ranker = fit_ranker("lightgbm", obj, tr.X, tr.y, tr.group_sizes, n_estimators=20,
                        learning_rate=lr, **dict(LGB_TREES, num_leaves=7))
    constant = metrics.ndcg_at_k(np.zeros(va.y.size), va.y, va.query_offsets, 5)
    trained = metrics.ndcg_at_k(ranker.predict(va.X), va.y, va.query_offsets, 5)
    assert trained > constant + 0.3, (trained, constant)
    assert trained > 0.65
