"""StochasticRank's ``min_top_share``: a query of ``n`` documents is trained on the metric at
its own cutoff ``T_q = max(top, ceil(share * n))`` (``training_metric.training_args``). The
reference is the objective itself at ``top=T_q`` and ``min_top_share=0`` on the same data, so on
the same noise streams: every query's gradient must be the one of the metric at its own cutoff,
bit for bit (the kernels weigh the positions from ``T_q`` on 0 in that query alone)."""

import numpy as np
import pytest

from stochrank_objectives import StochasticRank
from stochrank_objectives.metric_spec import MetricSpec
from stochrank_objectives.objectives._estimator import stochastic_rank_gradient
from stochrank_objectives.objectives.training_metric import (NDCG_MIN_TOP_SHARE, training_args,
                                                  training_cutoffs)

SIZES = (6, 31, 3, 25, 1, 20)  # top=2, share 0.1: cutoffs 2, 4, 2, 3, 2, 2


def _data(seed=0):
    rng = np.random.default_rng(seed)
    offs = np.concatenate(([0], np.cumsum(SIZES)))
    labels = rng.integers(0, 3, offs[-1]).astype(float)
    scores = rng.normal(size=offs[-1]).round(1)  # ties included
    return scores, labels, offs


@pytest.mark.parametrize("metric, extra", [("NDCG", {}), ("DCG", {"gain": "linear"}),
                                           ("ERR", {"grade_max": 2.0}), ("MAP", {}),
                                           ("MRR", {"reach": 0.3}), ("PFound", {})])
@pytest.mark.parametrize("mu, estimator", [(0.0, "ccs"), (0.2, "ccs"), (0.0, "reinforce")])
def test_each_query_gets_the_gradient_at_its_own_cutoff(metric, extra, mu, estimator):
    if estimator == "reinforce" and metric == "MAP":
        pytest.skip("REINFORCE is wired for the cascades only")
    if estimator == "reinforce":
        extra = {k: v for k, v in extra.items() if k != "reach"}  # it trains MRR itself
    scores, labels, offs = _data()
    if metric == "PFound":
        labels = labels / 2.0
    kw = dict(metric=metric, mu=mu, seed=5, n_samples=2, hessian="constant",
              estimator=estimator, **extra)
    grown = StochasticRank(top=2, min_top_share=0.1, **kw)
    cutoffs = np.repeat(training_cutoffs(2, SIZES, 0.1), SIZES)
    assert set(cutoffs.tolist()) == {2, 3, 4}
    for iteration in (0, 3):
        g, h = grown.grad_hess(scores, labels, offs, iteration)
        for t in (2, 3, 4):
            ref = StochasticRank(top=t, min_top_share=0.0, **kw).grad_hess(scores, labels, offs,
                                                                           iteration)[0]
            np.testing.assert_array_equal(g[cutoffs == t], ref[cutoffs == t])
        np.testing.assert_array_equal(h, 1.0)
    # the reported loss stays the metric at top
    top_k = StochasticRank(top=2, min_top_share=0.0, **kw)
    assert grown.loss(scores, labels, offs) == top_k.loss(scores, labels, offs)


def test_training_cutoffs_and_their_arrays():
    assert training_cutoffs(5, np.array([20, 50, 51, 120, 300]), 0.1).tolist() == [5, 5, 6, 12,
                                                                                   30]
    assert training_cutoffs(3, np.array([4, 9]), 1.0).tolist() == [4, 9]   # the whole list
    scores, labels, offs = _data()
    spec = MetricSpec.make("NDCG", top=2)
    args = training_args(spec, labels, offs, min_top_share=0.1)
    assert args.query_cutoff.tolist() == [2, 4, 2, 3, 2, 2] and args.cutoff == 4
    # each query's ideal is its IDCG at its own cutoff
    for q, t in enumerate(args.query_cutoff):
        at_t = MetricSpec.make("NDCG", top=int(t)).kernel_args(labels, offs)
        assert args.ideal[q] == at_t.ideal[q] and args.scale[q] == at_t.scale[q]
    # where no cutoff grows, the arrays are the metric's own: no per-query cutoffs
    plain = training_args(spec, labels, offs, min_top_share=0.01)
    assert plain.query_cutoff.size == 0 and plain.cutoff == 2
    np.testing.assert_array_equal(plain.ideal, spec.kernel_args(labels, offs).ideal)


def test_default_is_for_ndcg_with_a_cutoff():
    scores, labels, offs = _data(1)
    assert StochasticRank().min_top_share is None
    for kw, share in (({"top": 2}, NDCG_MIN_TOP_SHARE), ({"metric": "ERR", "top": 2,
                                                          "grade_max": 2.0}, 0.0),
                      ({"metric": "MAP", "top": 2}, 0.0), ({"top": None}, 0.0)):
        default = StochasticRank(seed=2, **kw).grad_hess(scores, labels, offs)
        explicit = StochasticRank(seed=2, min_top_share=share if kw.get("top") else None,
                                  **kw).grad_hess(scores, labels, offs)
        np.testing.assert_array_equal(default[0], explicit[0])
    assert NDCG_MIN_TOP_SHARE == 0.1
    assert not np.array_equal(StochasticRank(top=2, seed=2).grad_hess(scores, labels, offs)[0],
                              StochasticRank(top=2, seed=2, min_top_share=0.0).grad_hess(
                                  scores, labels, offs)[0])  # the default grows two cutoffs
    # the paper's parametrisation (CatBoost's native StochasticRank) trains the top-k
    assert StochasticRank.paper(top=2).get_params()["min_top_share"] == 0.0
    # the function takes it too; None means the objective's default
    obj = StochasticRank(top=2, seed=2, hessian="constant")
    fn = stochastic_rank_gradient(scores, labels, offs, top=2, sigma=0.1, nu=1.0,
                                  smoothing="relative", seed=2, min_top_share=None)
    np.testing.assert_array_equal(obj.grad_hess(scores, labels, offs)[0], fn)


def test_set_params_changes_the_prepared_cutoffs():
    scores, labels, offs = _data(2)
    obj = StochasticRank(top=2, seed=1, min_top_share=0.1)
    before = obj.grad_hess(scores, labels, offs)[0]
    obj.set_params(min_top_share=0.0)
    after = obj.grad_hess(scores, labels, offs)[0]
    np.testing.assert_array_equal(
        after, StochasticRank(top=2, seed=1, min_top_share=0.0).grad_hess(scores, labels, offs)[0])
    assert not np.array_equal(before, after)


@pytest.mark.parametrize("kw, error, match", [
    ({"top": 2, "min_top_share": 1.5}, ValueError, "min_top_share"),
    ({"top": 2, "min_top_share": -0.1}, ValueError, "min_top_share"),
    ({"top": 2, "min_top_share": float("nan")}, ValueError, "min_top_share"),
    ({"top": 2, "min_top_share": "0.1"}, TypeError, "min_top_share"),
    ({"top": None, "min_top_share": 0.1}, ValueError, "top=None has none"),
    ({"metric": "Precision", "top": 2, "min_top_share": 0.1}, ValueError, "Precision|PRECISION"),
    ({"metric": "FilteredDCG", "top": 2, "min_top_share": 0.1}, ValueError, "FILTEREDDCG"),
])
def test_bad_share_is_refused_with_the_fix(kw, error, match):
    scores, labels, offs = _data()
    with pytest.raises(error, match=match):
        StochasticRank(**kw).grad_hess(scores, labels, offs)
