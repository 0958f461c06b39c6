"""StochasticRank's reach for MRR: a relevant document continues the cascade with probability
``reach`` (``training_metric.with_reach``), so MRR with reach rho is binary ERR with a satisfaction
probability 1 - rho, rescaled by 1 / (1 - rho)."""

from itertools import permutations

import numpy as np
import pytest

from stochrank_objectives import StochasticRank
from stochrank_objectives.metric_spec import MetricSpec
from stochrank_objectives.objectives.training_metric import with_reach
from stochrank_objectives.objectives import stochastic_rank_gradient


def _query(rng, n_queries=6):
    sizes = rng.integers(2, 9, n_queries)
    offs = np.concatenate(([0], np.cumsum(sizes))).astype(np.int64)
    labels = (rng.random(offs[-1]) < 0.35).astype(np.float64)
    scores = rng.normal(size=offs[-1])
    return scores, labels, offs


def _reach_value(order_labels, reach):
    """Brute force: sum_j reach^(j-1) / (p_j + 1) over the relevant documents in rank order."""
    positions = np.flatnonzero(order_labels > 0)
    return sum(reach ** j / (p + 1.0) for j, p in enumerate(positions))


@pytest.mark.parametrize("reach", [0.0, 0.3, 1.0])
def test_ideal_is_the_best_permutation(reach):
    labels = np.array([0.0, 1.0, 0.0, 1.0, 1.0])
    offs = np.array([0, 5])
    args = with_reach(MetricSpec.make("MRR").kernel_args(labels, offs), reach, offs)
    best = max(_reach_value(labels[list(p)], reach) for p in permutations(range(5)))
    assert args.ideal[0] == pytest.approx(best, rel=1e-12)


@pytest.mark.parametrize("reach", [0.1, 0.3, 0.7])
def test_mrr_with_reach_is_rescaled_binary_err(reach):
    # same noise streams, same scores: the ERR gradient of labels (1 - rho) rel is (1 - rho)
    # times the reach gradient, and the unit-mean curvature hessian removes the factor
    scores, labels, offs = _query(np.random.default_rng(4))
    mrr = StochasticRank(metric="MRR", reach=reach, n_samples=3, seed=7)
    err = StochasticRank(metric="ERR", n_samples=3, seed=7)   # labels are probabilities
    for it in (0, 5):
        g_mrr, h_mrr = mrr.grad_hess(scores, labels, offs, it)
        g_err, h_err = err.grad_hess(scores, (1.0 - reach) * labels, offs, it)
        np.testing.assert_allclose(g_mrr, g_err, rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(h_mrr, h_err, rtol=1e-9, atol=1e-12)
        assert np.abs(g_mrr).max() > 0


def test_zero_reach_is_mrr_and_the_default_is_mrr_reach():
    scores, labels, offs = _query(np.random.default_rng(5))
    exact = stochastic_rank_gradient(scores, labels, offs, metric="MRR", sigma=0.1, nu=1.0,
                                     smoothing="relative", seed=3)
    g0 = StochasticRank(metric="MRR", reach=0.0, seed=3, hessian="constant").grad_hess(
        scores, labels, offs)[0]
    np.testing.assert_array_equal(g0, exact)
    # the function takes the reach too, and None means the objective's default
    np.testing.assert_array_equal(
        StochasticRank(metric="MRR", seed=3, hessian="constant").grad_hess(scores, labels, offs)[0],
        stochastic_rank_gradient(scores, labels, offs, metric="MRR", sigma=0.1, nu=1.0,
                                 smoothing="relative", seed=3, reach=None))
    default = StochasticRank(metric="MRR", seed=3).grad_hess(scores, labels, offs)
    explicit = StochasticRank(metric="MRR", reach=0.3, seed=3).grad_hess(scores, labels, offs)
    np.testing.assert_array_equal(default[0], explicit[0])
    assert not np.array_equal(default[0], StochasticRank(metric="MRR", reach=0.0, seed=3)
                              .grad_hess(scores, labels, offs)[0])
    # other metrics: no reach, whatever the default
    ndcg = StochasticRank(top=3, seed=3).grad_hess(scores, labels, offs)
    np.testing.assert_array_equal(ndcg[0], StochasticRank(top=3, seed=3, reach=0.0)
                                  .grad_hess(scores, labels, offs)[0])


def test_set_params_changes_the_prepared_reach():
    scores, labels, offs = _query(np.random.default_rng(6))
    obj = StochasticRank(metric="MRR", reach=0.5, seed=1)
    obj.grad_hess(scores, labels, offs)                      # fills the prepared cache
    obj.set_params(reach=0.0)
    np.testing.assert_array_equal(obj.grad_hess(scores, labels, offs)[0],
                                  StochasticRank(metric="MRR", reach=0.0, seed=1)
                                  .grad_hess(scores, labels, offs)[0])


def test_loss_stays_mrr():
    scores, labels, offs = _query(np.random.default_rng(8))
    assert (StochasticRank(metric="MRR", reach=0.9).loss(scores, labels, offs)
            == StochasticRank(metric="MRR", reach=0.0).loss(scores, labels, offs))


@pytest.mark.parametrize("kwargs, error, words", [
    (dict(metric="NDCG", top=5, reach=0.3), ValueError, "reach=0.3 applies to metric='MRR'"),
    (dict(metric="MRR", reach=1.5), ValueError, "reach must be <= 1"),
    (dict(metric="MRR", reach=-0.1), ValueError, "reach"),
    (dict(metric="MRR", reach="far"), TypeError, "reach"),
])
def test_bad_reach_is_refused(kwargs, error, words):
    with pytest.raises(error, match=words):
        StochasticRank(**kwargs).grad_hess(np.zeros(2), np.array([1.0, 0.0]), np.array([0, 2]))
