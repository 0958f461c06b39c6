"""YetiRank / YetiLoss: brute force and finite differences where the loss is deterministic,
the expectation over noisy permutations against a NumPy reference, thread-count invariance,
bad input, CatBoost 1.2.10's native ``YetiRank`` and training through every ranker.

CatBoost harness (no API exposes YetiRank's derivatives; they are read through one tree):
one numeric feature = the document's index, one tree of depth ``n - 1`` (every border is
available), ``learning_rate=1``, ``l2_leaf_reg=0``, no bootstrap, no random strength, Plain
boosting, ``baseline`` = the scores. CatBoost's value for a document is then the Newton leaf
``sum Der1 / sum(-Der2)`` of the leaf CatBoost chose, minus the mean leaf value over the
documents (CatBoost centres the leaves of pairwise losses). Our prediction applies the same
two steps to our ``(grad, hess)`` on CatBoost's leaf assignment.
"""

from __future__ import annotations

import numba
import numpy as np
import pytest
from _rankers import RANKERS, SHALLOW, fit_ranker
from _yetirank_reference import brute_pairs, pairwise_logistic

import stochrank_objectives as sro
from stochrank_objectives import YetiRank, metrics
from stochrank_objectives.kernels import SERIAL_BELOW_DOCS

MODES = ("Classic", "DCG", "NDCG", "MRR", "ERR", "MAP")


def random_query(rng, n, mode):
    """Scores and labels of ``n`` documents; the labels are not all equal."""
    scores = rng.normal(size=n)
    while True:
        if mode == "ERR":
            labels = rng.choice([0.0, 0.2, 0.5, 1.0], n)
        else:
            labels = rng.integers(0, 4, n).astype(np.float64)
        if n < 2 or np.ptp(labels) > 0:
            return scores, labels


def mode_options(mode, rng):
    if mode == "Classic":
        return dict(decay=float(rng.choice([0.5, 0.85, 1.0])))
    options = dict(top=[None, 1, 3][rng.integers(3)], num_neighbors=[1, 2, -1][rng.integers(3)])
    if mode in ("DCG", "NDCG"):
        options.update(dcg_type=["Base", "Exp"][rng.integers(2)],
                       dcg_denominator=["LogPosition", "Position"][rng.integers(2)])
    return options


def reference_options(options):
    """The objective's options in :func:`brute_pairs`'s terms."""
    return dict(top=options.get("top"), neighbors=options.get("num_neighbors", 1),
                decay=options.get("decay", 0.85),
                exp_gain=options.get("dcg_type") == "Exp",
                log_position=options.get("dcg_denominator", "LogPosition") == "LogPosition")


def reference_grad_hess(scores, labels, offs, mode, options):
    """Noise-free derivatives from the brute-force pairs of each query's order."""
    grad, hess, loss = np.zeros(scores.size), np.zeros(scores.size), 0.0
    for lo, hi in zip(offs[:-1], offs[1:]):
        s, y = scores[lo:hi], labels[lo:hi]
        order = np.argsort(-s, kind="stable").tolist()
        pairs = brute_pairs(order, y.tolist(), mode, **reference_options(options))
        q_loss, grad[lo:hi], hess[lo:hi] = pairwise_logistic(s, pairs)
        loss += q_loss
    return loss, grad, hess


# -- deterministic: noise="No" --------------------------------------------------------------
@pytest.mark.parametrize("mode", MODES)
def test_noise_free_derivatives_match_the_brute_force(mode):
    rng = np.random.default_rng(MODES.index(mode))
    for _ in range(15):
        sizes = rng.integers(1, 7, size=3)
        offs = np.concatenate([[0], np.cumsum(sizes)])
        scores, labels = random_query(rng, int(offs[-1]), mode)
        options = mode_options(mode, rng)
        obj = YetiRank(mode=mode, noise="No", permutations=int(rng.integers(1, 4)),
                       hessian_scale="raw", **options)
        grad, hess = obj.grad_hess(scores, labels, offs, iteration=int(rng.integers(5)))
        loss, want_grad, want_hess = reference_grad_hess(scores, labels, offs, mode, options)
        np.testing.assert_allclose(grad, want_grad, rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(hess, want_hess, rtol=1e-12, atol=1e-14)
        assert obj.loss(scores, labels, offs) == pytest.approx(loss, rel=1e-12, abs=1e-14)


def test_worked_example():
    # f = (0.5, 1.0, -0.2, 0.3), r = (2, 0, 1, 3): order d1, d0, d3, d2
    f, r, offs = np.array([0.5, 1.0, -0.2, 0.3]), np.array([2.0, 0.0, 1.0, 3.0]), [0, 4]
    grad, hess = YetiRank(noise="No", hessian_scale="raw").grad_hess(f, r, offs)
    np.testing.assert_allclose(-grad, [0.116634, -0.186738, -0.081832, 0.151936], atol=1e-6)
    np.testing.assert_allclose(hess, [0.102059, 0.070501, 0.050937, 0.082495], atol=1e-6)
    grad, _ = YetiRank(mode="NDCG", noise="No", hessian_scale="raw").grad_hess(f, r, offs)
    np.testing.assert_allclose(-grad, [0.081370, -0.096488, -0.010993, 0.026110], atol=1e-6)


@pytest.mark.parametrize("mode", ["Classic", "NDCG", "MRR"])
def test_unit_mean_scale_keeps_the_newton_leaves(mode):
    rng = np.random.default_rng(4)
    offs = np.array([0, 9, 20, 31])
    scores, labels = rng.normal(size=31), rng.integers(0, 3, 31).astype(float)
    raw = YetiRank(mode=mode, seed=2, hessian_scale="raw").grad_hess(scores, labels, offs, 1)
    g, h = YetiRank(mode=mode, seed=2).grad_hess(scores, labels, offs, 1)
    assert h.mean() == pytest.approx(1.0, rel=1e-12) and raw[1].mean() < 0.5
    np.testing.assert_allclose(g * raw[1].mean(), raw[0], rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(h * raw[1].mean(), raw[1], rtol=1e-12, atol=1e-15)
    leaf = slice(3, 17)
    assert g[leaf].sum() / h[leaf].sum() == pytest.approx(raw[0][leaf].sum() / raw[1][leaf].sum(),
                                                          rel=1e-12)


@pytest.mark.parametrize("noise", ["No", "Gumbel", "Gauss"])
@pytest.mark.parametrize("mode", MODES)
def test_derivatives_are_the_finite_differences_of_the_loss(mode, noise):
    # the pairs depend on the scores only through their (noisy) order, which a step of 1e-6
    # does not change here: the loss is then smooth and grad, hess are its derivatives
    rng = np.random.default_rng(10 + MODES.index(mode))
    scores, labels = random_query(rng, 7, mode)
    offs = np.array([0, 3, 7])
    obj = YetiRank(mode=mode, noise=noise, permutations=4, seed=5, hessian_scale="raw")
    grad, hess = obj.grad_hess(scores, labels, offs, iteration=2)
    eps = 1e-6
    for i in range(scores.size):
        step = np.zeros(scores.size)
        step[i] = eps
        up, down = scores + step, scores - step
        fd = (obj.loss(up, labels, offs, 2) - obj.loss(down, labels, offs, 2)) / (2 * eps)
        assert grad[i] == pytest.approx(fd, abs=1e-7)
        fd2 = (obj.grad_hess(up, labels, offs, 2)[0][i]
               - obj.grad_hess(down, labels, offs, 2)[0][i]) / (2 * eps)
        assert hess[i] == pytest.approx(fd2, abs=1e-7)


def test_degenerate_queries_get_zero_derivatives():
    scores, offs = np.array([0.3, 1.0, -1.0, 0.2, 0.5]), [0, 1, 3, 5]
    labels = np.array([2.0, 1.0, 1.0, 0.0, 0.0])  # one document; equal labels; all zero
    for mode in MODES:
        grad, hess = YetiRank(mode=mode, seed=1).grad_hess(scores, labels / 2, offs)
        assert not grad.any() and not hess.any(), mode


# -- with noise: the expectation over permutations -------------------------------------------
def numpy_expected_grad(scores, labels, mode, noise, power=1.0, draws=400_000, seed=7, **opts):
    """E[grad] over the noise: NumPy draws, their orders counted, each order's derivatives from
    the brute-force pairs."""
    rng = np.random.default_rng(seed)
    n = scores.size
    e = rng.logistic(size=(draws, n)) if noise == "Gumbel" else rng.normal(0, power, (draws, n))
    orders, counts = np.unique(np.argsort(-(scores + e), axis=1, kind="stable"), axis=0,
                               return_counts=True)
    grad = np.zeros(n)
    for order, count in zip(orders, counts):
        pairs = brute_pairs(order.tolist(), labels.tolist(), mode, **opts)
        grad += count / draws * pairwise_logistic(scores, pairs)[1]
    return grad


@pytest.mark.slow
@pytest.mark.parametrize("mode, noise, power", [("Classic", "Gumbel", 1.0),
                                                ("NDCG", "Gumbel", 1.0),
                                                ("ERR", "Gumbel", 1.0),
                                                ("Classic", "Gauss", 1.5),
                                                ("MAP", "Gauss", 0.5)])
def test_mean_gradient_is_the_expectation_over_the_noise(mode, noise, power):
    scores = np.array([0.4, -0.3, 0.9, 0.0])
    labels = np.array([1.0, 0.0, 0.5, 0.2]) if mode == "ERR" else np.array([2.0, 0.0, 1.0, 3.0])
    opts = {} if mode == "Classic" else dict(num_neighbors=2)
    extra = {} if noise != "Gauss" else dict(noise_power=power)
    obj = YetiRank(mode=mode, noise=noise, permutations=400_000, seed=3, hessian_scale="raw",
                   **opts, **extra)
    grad, _ = obj.grad_hess(scores, labels, [0, 4])
    want = numpy_expected_grad(scores, labels, mode, noise, power,
                               neighbors=opts.get("num_neighbors", 1))
    np.testing.assert_allclose(grad, want, atol=3e-3)
    # the check can tell the noise laws apart: N(0, 1) instead of the logistic law, or a third of
    # the Gaussian standard deviation, is further off
    wrong_power = 1.0 if noise == "Gumbel" else power / 3
    wrong = numpy_expected_grad(scores, labels, mode, "Gauss", wrong_power,
                                neighbors=opts.get("num_neighbors", 1))
    assert np.abs(grad - wrong).max() > 3e-3


@pytest.mark.skipif(numba.config.NUMBA_NUM_THREADS < 2, reason="numba has a single thread here")
@pytest.mark.parametrize("mode, extra", [("Classic", {}), ("NDCG", {}), ("ERR", {}),
                                         # YetiLoss: the reassociated pass below the top
                                         ("NDCG", {"top": 5, "num_neighbors": -1})])
def test_bit_identical_on_one_and_two_threads(mode, extra):
    rng = np.random.default_rng(4)
    sizes = rng.integers(2, 60, size=4 * SERIAL_BELOW_DOCS // 30)
    offs = np.concatenate([[0], np.cumsum(sizes)])
    scores, labels = random_query(rng, int(offs[-1]), mode)
    obj = YetiRank(mode=mode, seed=9, **extra)
    previous = numba.get_num_threads()
    try:
        numba.set_num_threads(1)
        one = obj.grad_hess(scores, labels, offs, iteration=3)
        numba.set_num_threads(2)
        two = obj.grad_hess(scores, labels, offs, iteration=3)
    finally:
        numba.set_num_threads(previous)
    np.testing.assert_array_equal(one[0], two[0])
    np.testing.assert_array_equal(one[1], two[1])


@pytest.mark.parametrize("mode", ["DCG", "NDCG"])
def test_every_partner_below_the_top_equals_the_pairs_one_by_one(mode):
    # num_neighbors=-1 with a list longer than top sums the pairs with the documents below the
    # top over the orders first (their discount is 0); a finite reach past every list takes
    # the same pairs one by one, order by order
    rng = np.random.default_rng(11)
    for trial in range(30):
        sizes = rng.integers(1, 40, size=4)
        offs = np.concatenate([[0], np.cumsum(sizes)])
        scores = rng.normal(size=offs[-1]) * rng.choice([0.01, 1.0, 5.0])
        labels = rng.integers(0, 4, offs[-1]).astype(np.float64)
        options = dict(mode=mode, top=int(rng.choice([1, 2, 3, 5, 10])),
                       dcg_type=["Base", "Exp"][trial % 2],
                       dcg_denominator=["LogPosition", "Position"][trial % 3 % 2],
                       noise=["Gumbel", "Gauss"][trial % 2],
                       permutations=int(rng.integers(1, 12)), hessian_scale="raw", seed=trial)
        every, reach = (YetiRank(num_neighbors=k, **options) for k in (-1, 10 ** 6))
        for got, want in zip(every.grad_hess(scores, labels, offs, iteration=3),
                             reach.grad_hess(scores, labels, offs, iteration=3)):
            np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14)
        assert every.loss(scores, labels, offs) == pytest.approx(
            reach.loss(scores, labels, offs), rel=1e-12, abs=1e-14)


def test_seed_and_iteration_key_the_noise():
    rng = np.random.default_rng(1)
    scores, labels = random_query(rng, 12, "Classic")
    offs = [0, 12]
    g = lambda seed, it: YetiRank(seed=seed).grad_hess(scores, labels, offs, it)[0]  # noqa: E731
    np.testing.assert_array_equal(g(0, 1), g(0, 1))
    assert not np.array_equal(g(0, 1), g(0, 2)) and not np.array_equal(g(0, 1), g(1, 1))


# -- bad input ---------------------------------------------------------------------------------
BAD = [
    (dict(mode="ndcg"), ValueError, "mode"),
    (dict(permutations=0), ValueError, "permutations"),
    (dict(num_neighbors=0), ValueError, "num_neighbors"),
    (dict(mode="NDCG", num_neighbors=-2), ValueError, "num_neighbors"),
    (dict(mode="NDCG", top=0), ValueError, "top"),
    (dict(decay=0.0), ValueError, "decay"),
    (dict(decay=1.5), ValueError, "decay"),
    (dict(noise="Logistic"), ValueError, "noise"),
    (dict(noise="Gauss", noise_power=0.0), ValueError, "noise_power"),
    (dict(seed=-1), ValueError, "seed"),
    (dict(top=5), ValueError, "top=5 has no effect with mode='Classic'"),
    (dict(num_neighbors=2), ValueError, "num_neighbors"),
    (dict(mode="MRR", decay=0.5), ValueError, "decay"),
    (dict(mode="MAP", dcg_type="Exp"), ValueError, "dcg_type"),
    (dict(noise_power=2.0), ValueError, "noise_power applies to noise='Gauss'"),
    (dict(permutations=2.5), TypeError, "permutations"),
]


@pytest.mark.parametrize("params, exc, pattern", BAD, ids=[str(b[0]) for b in BAD])
def test_bad_parameters_name_the_parameter(params, exc, pattern):
    with pytest.raises(exc, match=pattern):
        YetiRank(**params).grad_hess(np.zeros(2), np.array([1.0, 0.0]), [0, 2])


def test_bad_labels():
    with pytest.raises(ValueError, match=r"labels must lie in \[0, 1\] for mode='ERR'"):
        YetiRank(mode="ERR").grad_hess(np.zeros(2), np.array([2.0, 0.0]), [0, 2])
    with pytest.raises(ValueError, match="labels"):
        YetiRank(mode="NDCG", dcg_type="Exp").grad_hess(np.zeros(2), np.array([40.0, 0]), [0, 2])
    with pytest.raises(ValueError, match="labels"):
        YetiRank().grad_hess(np.zeros(2), np.array([-1.0, 0.0]), [0, 2])


# -- CatBoost 1.2.10's native YetiRank -------------------------------------------------------
def catboost_values(scores, labels, offs, loss, seed=0):
    """CatBoost's one-tree values per document (harness: module docstring) and its leaves."""
    catboost = pytest.importorskip("catboost")
    n = scores.size
    x = np.arange(n, dtype=np.float64)[:, None]
    pool = catboost.Pool(x, label=labels, group_id=np.repeat(np.arange(len(offs) - 1),
                                                             np.diff(offs)),
                         baseline=scores.astype(np.float64))
    model = catboost.CatBoost(dict(
        loss_function=loss, iterations=1, depth=max(1, n - 1), learning_rate=1.0, l2_leaf_reg=0,
        random_strength=0, bootstrap_type="No", boosting_type="Plain", random_seed=seed,
        thread_count=1, verbose=False, allow_writing_files=False))
    model.fit(pool)
    leaves = np.asarray(model.calc_leaf_indexes(pool))[:, 0]
    return model.predict(x, prediction_type="RawFormulaVal"), leaves


def our_values(grad, hess, leaves):
    """Newton leaves on CatBoost's leaf assignment, centred over the documents."""
    values = np.zeros(grad.size)
    for leaf in np.unique(leaves):
        rows = leaves == leaf
        total = hess[rows].sum()
        values[rows] = -grad[rows].sum() / total if total > 0 else 0.0
    return values - values.mean()


def catboost_loss(mode, options, **extra):
    parts = [f"mode={mode}"] + [f"{k}={-1 if v == -1 else v}" for k, v in options.items()
                                if v is not None] + [f"{k}={v}" for k, v in extra.items()]
    return "YetiRank:" + ";".join(parts)


def test_catboost_worked_example():
    f, r, offs = np.array([0.5, 1.0, -0.2, 0.3]), np.array([2.0, 0.0, 1.0, 3.0]), [0, 4]
    native, leaves = catboost_values(f, r, offs, "YetiRank:noise=No;permutations=1")
    assert len(set(leaves.tolist())) == 4
    ours = our_values(*YetiRank(noise="No").grad_hess(f, r, offs), leaves)
    np.testing.assert_allclose(ours, native, rtol=1e-6)
    np.testing.assert_allclose(ours, [1.460479, -2.331046, -1.288856, 2.159423], atol=1e-6)


@pytest.mark.slow
@pytest.mark.parametrize("mode", MODES)
def test_noise_free_leaves_match_catboost(mode):
    rng = np.random.default_rng(100 + MODES.index(mode))
    informative = 0
    for _ in range(12):
        sizes = rng.integers(2, 6, size=int(rng.integers(1, 3)))
        offs = np.concatenate([[0], np.cumsum(sizes)])
        scores, labels = random_query(rng, int(offs[-1]), mode)
        scores[rng.integers(scores.size)] = scores[0]  # a tie, kept in input order by both
        options = mode_options(mode, rng)
        native, leaves = catboost_values(scores, labels, offs, catboost_loss(
            mode, options, noise="No", permutations=1))
        grad, hess = YetiRank(mode=mode, noise="No", **options).grad_hess(scores, labels, offs)
        np.testing.assert_allclose(our_values(grad, hess, leaves), native, rtol=2e-6, atol=1e-6)
        informative += len(set(leaves.tolist())) >= 3 and np.abs(native).max() > 1e-3
    assert informative >= 3  # most fits are real checks, not all-zero trees


@pytest.mark.slow
@pytest.mark.parametrize("mode, extra", [("Classic", {}), ("NDCG", dict(num_neighbors=2)),
                                         ("Classic", dict(noise="Gauss", noise_power=2.0))])
def test_expected_leaves_match_catboost(mode, extra):
    # many permutations in one call: W is then about E[W] on both sides
    f, r, offs = np.array([0.4, -0.3, 0.9, 0.0]), np.array([2.0, 0.0, 1.0, 3.0]), [0, 4]
    permutations = 200_000
    native, leaves = catboost_values(f, r, offs, catboost_loss(
        mode, extra, permutations=permutations))
    grad, hess = YetiRank(mode=mode, permutations=permutations, seed=2, **extra).grad_hess(
        f, r, offs)
    np.testing.assert_allclose(our_values(grad, hess, leaves), native, atol=0.01)


# -- every ranker ------------------------------------------------------------------------------
@pytest.mark.slow
@pytest.mark.parametrize("booster", list(RANKERS))
@pytest.mark.parametrize("obj", [YetiRank(seed=0), YetiRank(mode="NDCG", top=5, seed=0)],
                         ids=["Classic", "NDCG"])
def test_ten_trees_through_each_ranker(mq2008_train_vali, booster, obj):
    tr, va = mq2008_train_vali
    tr = tr.subset_queries(200)
    params = dict(SHALLOW[booster])
    if booster == "xgboost":
        params.update(min_child_weight=0.0, reg_lambda=0.0)
    if booster == "lightgbm":
        params.update(min_sum_hessian_in_leaf=1e-6, lambda_l2=0.0)
    ranker = fit_ranker(booster, obj, tr.X, tr.y, tr.group_sizes, n_estimators=10,
                        learning_rate=0.3, eval_metric="NDCG@5", **params)
    scores = np.asarray(ranker.predict(va.X), dtype=np.float64)
    constant = metrics.ndcg_at_k(np.zeros(va.y.size), va.y, va.query_offsets, 5)
    assert metrics.ndcg_at_k(scores, va.y, va.query_offsets, 5) > constant + 0.2


def test_exported_and_registered():
    assert sro.YetiRank is YetiRank and "YetiRank" in sro.__all__
    from stochrank_objectives import baselines, objectives
    assert baselines.YetiRank is YetiRank and objectives.YetiRank is YetiRank
