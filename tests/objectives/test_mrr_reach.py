"""StochasticRank's reach for MRR: a relevant document continues the cascade with probability
``reach`` (``training_metric.with_reach``), so MRR with reach rho is binary ERR with a satisfaction
probability 1 - rho, rescaled by 1 / (1 - rho) -- over the first ``reach_depth(rho)`` relevant
documents in rank order (4 at rho = 0.3), trained by the counting kernel, which then orders only
the positions above the next relevant document."""

from itertools import permutations

import numpy as np
import pytest
from _reference import brute_gradient, reach_depth_reference

from stochrank_objectives import StochasticRank
from stochrank_objectives.kernels.ccs.noisy_order import MAX_RANKED_RELEVANT, kth_relevant_position
from stochrank_objectives.metric_spec import MetricSpec
from stochrank_objectives.objectives.training_metric import REACH_TAIL, reach_depth, with_reach
from stochrank_objectives.objectives import stochastic_rank_gradient


def _query(rng, n_queries=6):
    sizes = rng.integers(2, 9, n_queries)
    offs = np.concatenate(([0], np.cumsum(sizes))).astype(np.int64)
    labels = (rng.random(offs[-1]) < 0.35).astype(np.float64)
    scores = rng.normal(size=offs[-1])
    return scores, labels, offs


def _reach_value(order_labels, reach):
    """Brute force: sum_{j <= K} reach^(j-1) / (p_j + 1) over the relevant documents in rank
    order (K: reach_depth_reference)."""
    positions = np.flatnonzero(order_labels > 0)
    depth = reach_depth_reference(reach) if reach > 0 else 1
    return sum(reach ** j / (p + 1.0) for j, p in enumerate(positions)
               if depth is None or j < depth)


@pytest.mark.parametrize("labels", [[0.0, 1.0, 0.0, 1.0, 1.0], [1.0] * 7 + [0.0]])
@pytest.mark.parametrize("reach", [0.0, 0.3, 1.0])
def test_ideal_is_the_best_permutation(reach, labels):
    # eight documents, seven relevant: the fifth to seventh are beyond the depth at reach 0.3
    labels = np.array(labels)
    n = labels.size
    offs = np.array([0, 2, n + 2])
    both = np.concatenate(([1.0, 0.0], labels))
    args = with_reach(MetricSpec.make("MRR").kernel_args(both, offs), reach, offs)
    best = max(_reach_value(labels[list(p)], reach) for p in permutations(range(n)))
    assert args.ideal[1] == pytest.approx(best, rel=1e-12)
    assert args.ideal[0] == 1.0


def test_reach_depth_keeps_the_weights_above_the_tail():
    assert [reach_depth(r) for r in (0.0, 0.3, 0.5, 1.0)] == [1, 4, 7, 0]
    for reach in (0.05, 0.2, 0.3, 0.45, 0.6, 0.8, 0.95):
        depth = reach_depth(reach)
        assert depth == reach_depth_reference(reach)
        assert reach ** (depth - 1) >= REACH_TAIL > reach ** depth


def _many_relevant(seed, sizes=(2, 5, 9, 20, 60, 150), share=0.3):
    rng = np.random.default_rng(seed)
    offs = np.concatenate(([0], np.cumsum(sizes))).astype(np.int64)
    labels = (rng.random(offs[-1]) < share).astype(np.float64)
    return rng.normal(size=offs[-1]), labels, offs, rng.standard_normal((2, offs[-1]))


@pytest.mark.parametrize("summation", ["auto", "exact", "fast"])
@pytest.mark.parametrize("top", [None, 3, 30])
@pytest.mark.parametrize("reach", [0.3, 0.6, 1.0])
def test_reach_matches_brute_force(reach, top, summation):
    # queries of up to 150 documents, 30% relevant: the depth (4 at 0.3, 10 at 0.6) cuts the
    # cascade in the long ones, and the selection path orders only the positions above it
    scores, labels, offs, noise = _many_relevant(int(reach * 10) + (top or 0))
    tol = 2e-12 if summation == "fast" else 1e-13
    # sigma 0.05: most windows miss the breakpoints (the documents below them are skipped)
    for sigma, mu in ((0.05, 0.0), (0.3, 0.0), (1.0, 1.0)):
        kw = dict(metric="MRR", top=top, sigma=sigma, mu=mu, reach=reach)
        fast = stochastic_rank_gradient(scores, labels, offs, noise=noise, summation=summation,
                                        **kw)
        ref = brute_gradient(scores, labels, offs, noise, **kw)
        # the transforms' error bound is relative to the jumps (1.7e-12 of their sum)
        np.testing.assert_allclose(fast, ref, rtol=0, atol=tol * max(1.0, np.abs(ref).max()))
        assert np.count_nonzero(ref) > 100


def test_the_depth_changes_the_gradient_where_more_relevant_documents_follow():
    # one query, 20 relevant of 40: the relevant documents below the fourth get no gradient
    scores, labels, offs, noise = _many_relevant(3, sizes=(40,), share=0.5)
    order = np.argsort(-(scores + 0.01 * noise[0]))
    deep = order[labels[order] > 0][8:]
    g = stochastic_rank_gradient(scores, labels, offs, noise=noise[:1], metric="MRR", sigma=0.01,
                                 reach=0.3, center=False, sfa=0.0)
    g_whole = stochastic_rank_gradient(scores, labels, offs, noise=noise[:1], metric="MRR",
                                       sigma=0.01, reach=1.0, center=False, sfa=0.0)
    assert np.all(g[deep] == 0.0) and np.any(g_whole[deep] != 0.0)


def test_kth_relevant_position_against_a_full_sort():
    rng = np.random.default_rng(11)
    for n in (1, 2, 7, 40, 300):
        shifted, noise = rng.normal(size=n), rng.normal(size=n)
        relevant = (rng.random(n) < 0.3).astype(np.float64)
        order = np.argsort(-(shifted + 0.5 * noise))
        ranks = np.flatnonzero(relevant[order] > 0)
        for k in (1, 2, 5, MAX_RANKED_RELEVANT, MAX_RANKED_RELEVANT + 1):
            want = ranks[k - 1] if k <= ranks.size and k <= MAX_RANKED_RELEVANT else n
            assert kth_relevant_position(shifted, relevant, noise, 0.5, k) == want


@pytest.mark.parametrize("reach", [0.3, 0.5, 0.7])
def test_mrr_with_reach_is_rescaled_binary_err(reach):
    # same noise streams, same scores: the ERR gradient of labels (1 - rho) rel is (1 - rho)
    # times the reach gradient, and the unit-mean curvature hessian removes the factor (the
    # queries have at most four relevant documents, within every depth here)
    scores, labels, offs = _query(np.random.default_rng(4))
    assert max(labels[lo:hi].sum() for lo, hi in zip(offs[:-1], offs[1:])) <= reach_depth(reach)
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
    (dict(metric="MRR", reach=0.3, estimator="reinforce"), ValueError,
     "reach=0.3 is trained by estimator='ccs' only"),
])
def test_bad_reach_is_refused(kwargs, error, words):
    with pytest.raises(error, match=words):
        StochasticRank(**kwargs).grad_hess(np.zeros(2), np.array([1.0, 0.0]), np.array([0, 2]))


def test_reinforce_trains_mrr_itself_by_default():
    # REINFORCE's cascade kernel has no depth: reach=None is 0 for it, an explicit reach refused
    scores, labels, offs = _query(np.random.default_rng(9))
    assert StochasticRank(metric="MRR", estimator="reinforce")._checked()["reach"] == 0.0
    np.testing.assert_array_equal(
        StochasticRank(metric="MRR", estimator="reinforce", seed=2).grad_hess(scores, labels,
                                                                             offs)[0],
        StochasticRank(metric="MRR", estimator="reinforce", seed=2, reach=0.0).grad_hess(
            scores, labels, offs)[0])
