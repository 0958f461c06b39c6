"""Malformed input gives a clear ValueError/TypeError naming the offending field; degenerate
(but valid) queries give zero, finite gradients."""

from __future__ import annotations

import numpy as np
import pytest

from stochrank_objectives import (
    StochasticRank,
    draw_noise,
    query_offsets_from_qid,
    query_offsets_from_sizes,
    stochastic_rank_gradient,
)
from stochrank_objectives import metrics as M

S = np.array([1.0, 2.0, 3.0, 0.5])
L = np.array([0.0, 1.0, 2.0, 1.0])
OFFS = np.array([0, 3, 4])


def grad(scores=S, labels=L, offs=OFFS, **kw):
    return stochastic_rank_gradient(scores, labels, offs, **kw)


def ndcg(scores=S, labels=L, offs=OFFS, k=None, **kw):
    return M.ndcg_at_k(scores, labels, offs, k, **kw)


GROUPED_CASES = [
    # (id, kwargs for (scores, labels, offs), exception, message pattern)
    ("length-mismatch", dict(labels=L[:3], offs=[0, 3]), ValueError, "scores"),
    ("length-mismatch-labels", dict(scores=S[:3], offs=[0, 4]), ValueError, "scores"),
    ("offsets-start", dict(offs=[1, 3, 4]), ValueError, "query_offsets.*start at 0"),
    ("offsets-decreasing", dict(offs=[0, 3, 2, 4]), ValueError, "query_offsets.*decreasing"),
    ("offsets-short", dict(offs=[0, 3]), ValueError, "query_offsets.*cover"),
    ("offsets-long", dict(offs=[0, 3, 5]), ValueError, "query_offsets.*cover"),
    ("offsets-2d", dict(offs=[[0, 4]]), ValueError, "query_offsets"),
    ("offsets-float", dict(offs=[0, 1.5, 4]), TypeError, "query_offsets"),
    ("scores-nan", dict(scores=np.array([1.0, np.nan, 3.0, 0.0])), ValueError, "scores.*NaN"),
    ("scores-inf", dict(scores=np.array([1.0, np.inf, 3.0, 0.0])), ValueError, "scores.*inf"),
    ("scores-neginf", dict(scores=np.array([1.0, 2.0, -np.inf, 0.0])), ValueError, "scores"),
    ("labels-nan", dict(labels=np.array([0.0, np.nan, 1.0, 0.0])), ValueError, "labels.*NaN"),
    ("labels-inf", dict(labels=np.array([0.0, np.inf, 1.0, 0.0])), ValueError, "labels"),
    ("labels-negative", dict(labels=np.array([0.0, -1.0, 1.0, 0.0])), ValueError,
     "labels.*non-negative"),
    ("labels-exp2-overflow", dict(labels=np.array([0.0, 32.0, 1.0, 0.0])), ValueError,
     "labels.*31"),
    ("scores-not-numeric", dict(scores=["a", "b", "c", "d"]), TypeError, "scores"),
    ("scores-2d", dict(scores=np.ones((2, 2))), ValueError, "scores"),
]


@pytest.mark.parametrize("case", GROUPED_CASES, ids=[c[0] for c in GROUPED_CASES])
@pytest.mark.parametrize("fn", [grad, ndcg, StochasticRank().grad_hess],
                         ids=["grad", "ndcg", "obj"])
def test_bad_grouped_data(fn, case):
    _, kw, exc, pattern = case
    args = dict(scores=S, labels=L, offs=OFFS)
    args.update(kw)
    with pytest.raises(exc, match=pattern):
        fn(args["scores"], args["labels"], args["offs"])


def _first_use(obj):
    """Parameters are checked when an objective is first used (``__init__`` only stores)."""
    return obj.grad_hess(np.array([0.5, 0.0]), np.array([1.0, 0.0]), np.array([0, 2]))


PARAM_CASES = [
    ("top-0", dict(top=0), ValueError, "top"),
    ("top-negative", dict(top=-3), ValueError, "top"),
    ("top-float", dict(top=2.5), TypeError, "top"),
    ("sigma-0", dict(sigma=0.0), ValueError, "sigma"),
    ("sigma-negative", dict(sigma=-1.0), ValueError, "sigma"),
    ("sigma-nan", dict(sigma=float("nan")), ValueError, "sigma"),
    ("sigma-inf", dict(sigma=float("inf")), ValueError, "sigma"),
    ("sigma-str", dict(sigma="1"), TypeError, "sigma"),
    ("sigma-bool", dict(sigma=True), TypeError, "sigma"),
    ("mu-negative", dict(mu=-0.1), ValueError, "mu"),
    ("nu-0", dict(nu=0.0), ValueError, "nu"),
    ("nu-negative", dict(nu=-1.0), ValueError, "nu"),
    ("sfa-negative", dict(sfa=-1.0), ValueError, "sfa"),
    ("n_samples-0", dict(n_samples=0), ValueError, "n_samples"),
    ("n_samples-float", dict(n_samples=2.0), TypeError, "n_samples"),
    ("seed-negative", dict(seed=-1), ValueError, "seed"),
    ("metric-unknown", dict(metric="AUC"), ValueError, "metric"),
    ("metric-not-str", dict(metric=3), TypeError, "metric"),
    ("estimator-unknown", dict(estimator="sf"), ValueError, "estimator"),
    ("conditioning-unknown", dict(conditioning="both"), ValueError, "conditioning"),
    ("gain-unknown", dict(gain="exp"), ValueError, "gain"),
    ("grade_max-0", dict(metric="ERR", grade_max=0.0), ValueError, "grade_max"),
    ("threshold-negative", dict(metric="MRR", threshold=-1.0), ValueError, "threshold"),
]


@pytest.mark.parametrize("case", PARAM_CASES, ids=[c[0] for c in PARAM_CASES])
def test_bad_estimator_parameters(case):
    _, kw, exc, pattern = case
    with pytest.raises(exc, match=pattern):
        grad(**kw)
    with pytest.raises(exc, match=pattern):
        _first_use(StochasticRank(**kw))


@pytest.mark.parametrize("case", PARAM_CASES, ids=[c[0] for c in PARAM_CASES])
def test_bad_parameters_via_set_params(case):
    _, kw, exc, pattern = case
    with pytest.raises(exc, match=pattern):
        StochasticRank().set_params(**kw)


def test_estimator_only_arguments():
    with pytest.raises(ValueError, match="iteration"):
        grad(iteration=-1)
    with pytest.raises(TypeError, match="iteration"):
        grad(iteration=1.5)
    with pytest.raises(ValueError, match="window"):
        grad(window=0.0)
    with pytest.raises(ValueError, match="noise"):
        grad(noise=np.zeros((2, 5)))
    with pytest.raises(ValueError, match="noise"):
        grad(noise=np.zeros((2, 2, 4)))
    with pytest.raises(ValueError, match="noise"):
        grad(noise=np.full((1, 4), np.nan))
    with pytest.raises(ValueError, match="hessian"):
        _first_use(StochasticRank(hessian="exact"))
    with pytest.raises(ValueError, match="iteration"):
        StochasticRank().grad_hess(S, L, OFFS, iteration=-2)
    with pytest.raises(ValueError, match="n_samples"):
        draw_noise(OFFS, 0)
    with pytest.raises(ValueError, match="seed"):
        draw_noise(OFFS, 1, -1)


def test_err_label_domain():
    with pytest.raises(ValueError, match="labels.*probabilities"):
        grad(metric="ERR")  # labels up to 2 without grade_max
    with pytest.raises(ValueError, match="labels.*probabilities"):
        M.err_at_k(S, L, OFFS)
    with pytest.raises(ValueError, match="grade_max"):
        grad(metric="ERR", grade_max=1.0)  # labels exceed grade_max
    with pytest.raises(ValueError, match="grade_max"):
        M.err_at_k(S, L, OFFS, grade_max=1.0)
    # valid: probabilities incl. exact 1, and grades with grade_max
    assert np.all(np.isfinite(grad(metric="ERR", labels=np.array([0.0, 1.0, 0.5, 1.0]))))
    assert np.all(np.isfinite(grad(metric="ERR", grade_max=2.0)))
    # linear gain has no overflow limit
    assert np.all(np.isfinite(grad(labels=L * 40, gain="linear")))


def test_set_params_unknown_name():
    obj = StochasticRank()
    with pytest.raises(ValueError, match="sigm"):
        obj.set_params(sigm=1.0)
    with pytest.raises(ValueError, match="lambda"):
        obj.set_params(sigma=2.0, **{"lambda": 1.0})
    with pytest.raises(TypeError):
        StochasticRank(sigm=1.0)


@pytest.mark.parametrize("name,fn,kw", [
    ("k", M.ndcg_at_k, {}), ("k", M.dcg_at_k, {}), ("k", M.mrr, {}), ("k", M.average_precision, {}),
])
def test_metric_bad_k(name, fn, kw):
    with pytest.raises(ValueError, match=r"\(k\)|k must"):
        fn(S, L, OFFS, 0, **kw)
    with pytest.raises(TypeError, match="k"):
        fn(S, L, OFFS, 1.5, **kw)


def test_metric_bad_options():
    with pytest.raises(ValueError, match="k"):
        M.precision_at_k(S, L, OFFS, 0)
    with pytest.raises(TypeError, match="k"):
        M.precision_at_k(S, L, OFFS, 1.5)  # k=None is the whole list, as in every metric
    with pytest.raises(ValueError, match="k"):
        M.err_at_k(S, L / 2, OFFS, 0)
    for fn in (M.ndcg_at_k, M.dcg_at_k, M.mrr, M.average_precision):
        with pytest.raises(ValueError, match="ties"):
            fn(S, L, OFFS, ties="random")
        with pytest.raises(ValueError, match="no_relevant"):
            fn(S, L, OFFS, no_relevant="nan")
    with pytest.raises(ValueError, match="ties"):
        M.err_at_k(S, L / 2, OFFS, ties="expected")
    with pytest.raises(ValueError, match="ties"):
        M.mrr(S, L, OFFS, ties="expected")
    with pytest.raises(ValueError, match="ties"):
        M.average_precision(S, L, OFFS, ties="expected")
    with pytest.raises(ValueError, match="gain"):
        M.ndcg_at_k(S, L, OFFS, gain="exp")
    with pytest.raises(ValueError, match="metric"):
        M.evaluate("AUC", S, L, OFFS)
    with pytest.raises(ValueError, match="threshold"):
        M.mrr(S, L, OFFS, threshold=-1.0)


def test_group_helpers():
    np.testing.assert_array_equal(query_offsets_from_qid([7, 7, 3, 3, 3, 9]), [0, 2, 5, 6])
    np.testing.assert_array_equal(query_offsets_from_qid(np.array(["b", "a", "a"])), [0, 1, 3])
    np.testing.assert_array_equal(query_offsets_from_qid([]), [0])
    with pytest.raises(ValueError, match="qid.*1"):
        query_offsets_from_qid([1, 1, 2, 1])
    with pytest.raises(ValueError, match="qid.*'a'"):
        query_offsets_from_qid(np.array(["a", "b", "a"]))
    with pytest.raises(ValueError, match="qid"):
        query_offsets_from_qid(np.zeros((2, 2)))
    np.testing.assert_array_equal(query_offsets_from_sizes([3, 0, 2]), [0, 3, 3, 5])
    with pytest.raises(ValueError, match="sizes"):
        query_offsets_from_sizes([2, -1])
    with pytest.raises(TypeError, match="sizes"):
        query_offsets_from_sizes([1.5, 2])
    with pytest.raises(ValueError, match="sizes"):
        query_offsets_from_sizes([[1, 2]])


# ----------------------------------------------------------------------------------------
# Degenerate but valid queries: exact zeros, never NaN
# ----------------------------------------------------------------------------------------

DEGENERATE_SIZES = [0, 1, 0, 1, 1, 0]


@pytest.mark.parametrize("estimator", ["ccs", "reinforce"])
@pytest.mark.parametrize("metric", ["NDCG", "DCG", "ERR", "MRR"])
def test_tiny_queries_give_zero_gradient(estimator, metric):
    offs = query_offsets_from_sizes(DEGENERATE_SIZES)
    n = int(offs[-1])
    labels = np.array([1.0, 0.0, 1.0])[:n]
    for sfa, center in ((1.0, True), (0.0, False)):
        g = stochastic_rank_gradient(np.arange(n, dtype=float), labels, offs, metric=metric,
                                     estimator=estimator, n_samples=3, sfa=sfa, center=center)
        assert g.shape == (n,)
        assert np.array_equal(g, np.zeros(n))
    # mixed with a real query, the tiny ones stay exactly 0 and the real one is finite
    offs2 = query_offsets_from_sizes(DEGENERATE_SIZES + [4])
    scores2 = np.concatenate([np.arange(n, dtype=float), np.zeros(4)])
    labels2 = np.concatenate([labels, [1.0, 0.0, 1.0, 0.0]])
    g2, h2 = StochasticRank(metric=metric, estimator=estimator, n_samples=2).grad_hess(
        scores2, labels2, offs2)
    assert np.array_equal(g2[:n], np.zeros(n))
    assert np.all(np.isfinite(g2)) and np.any(g2[n:] != 0)
    assert np.all(np.isfinite(h2)) and np.all(h2 > 0)
    _, h_unit = StochasticRank(metric=metric, estimator=estimator, n_samples=2,
                               hessian="constant").grad_hess(scores2, labels2, offs2)
    assert np.array_equal(h_unit, np.ones(n + 4))


@pytest.mark.parametrize("estimator", ["ccs", "reinforce"])
def test_empty_data_and_degenerate_labels(estimator):
    empty = stochastic_rank_gradient(np.zeros(0), np.zeros(0), [0, 0], estimator=estimator)
    assert empty.shape == (0,)
    offs = np.array([0, 4, 8])
    tied = np.zeros(8)
    for metric, labels in [("NDCG", np.zeros(8)), ("ERR", np.zeros(8)), ("MRR", np.zeros(8)),
                           ("DCG", np.zeros(8)), ("ERR", np.ones(8)), ("MRR", np.ones(8)),
                           ("NDCG", np.full(8, 2.0))]:
        g = stochastic_rank_gradient(tied, labels, offs, metric=metric, estimator=estimator,
                                     n_samples=4, mu=1.0)
        assert np.all(np.isfinite(g))
        # nothing to gain by reordering: no relevant doc, or all equally relevant
        assert np.max(np.abs(g)) == 0.0, (metric, labels[0])


@pytest.mark.parametrize("estimator", ["ccs", "reinforce"])
def test_extreme_but_valid_values_stay_finite(estimator):
    offs = np.array([0, 5])
    labels = np.array([0.0, 1.0, 2.0, 0.0, 3.0])
    for scores, sigma in [(np.array([1e12, -1e12, 0.0, 5.0, 5.0]), 1.0),
                          (np.arange(5.0), 1e-8), (np.arange(5.0), 1e8),
                          (np.zeros(5), 1e-12), (np.full(5, 1e15), 1.0)]:
        g = stochastic_rank_gradient(scores, labels, offs, sigma=sigma, estimator=estimator,
                                     n_samples=2, mu=1.0)
        assert np.all(np.isfinite(g)), (scores, sigma)


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_a_non_finite_qid_names_the_row_not_the_order(bad):
    with pytest.raises(ValueError, match=r"^qid has (NaN|inf) at row 2 \(first of 2\): query ids "
                                         r"must be finite"):
        query_offsets_from_qid([1.0, 1.0, bad, bad, 2.0])
