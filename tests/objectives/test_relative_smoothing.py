"""Relative smoothing, the sigma schedule and the relevance-shift guard of StochasticRank.

* The relative-mode gradient (CCS at the query's noise scale ``s(z) = sigma sqrt(var(c) +
  nu^2)``, then the radial correction) equals central finite differences of the exactly
  integrated loss ``E L(z + s(z) (e - mu r))`` of a three-document query, within 5 standard
  errors of 200k CCS draws: the derivation in ``kernels/ccs/__init__.py`` (``dG/ds = -<z, g> / s``) is
  checked against an independent computation that never uses it. The same holds for the
  spread of the top ``spread_top`` scores, and for FilteredDCG (not translation invariant: the
  correction projects with ``<g, z>``), whose exact loss is integrated document by document.
* Scale-freeness: with ``nu -> 0`` the gradient is orthogonal to the centred scores and
  homogeneous of degree -1 (same noise).
* The guard: every ``mu`` with ``mu * label range <= 4`` keeps the gradient alive from zero
  scores and trains a model better than a constant one; larger values raise.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from _rankers import fit_ranker
from _reference import metric_list
from scipy import integrate
from scipy.stats import norm

from stochrank_objectives import StochasticRank, draw_noise, metrics, stochastic_rank_gradient
from stochrank_objectives.data import load_mq2008
from stochrank_objectives.objectives import MAX_SHIFT


def _order_probability(means, s, order):
    """P(y_order[0] > y_order[1] > y_order[2]) for independent y_i ~ N(means_i, s^2)."""
    a, b, c = order

    def density(x):
        return (norm.pdf(x, means[b], s) * norm.sf(x, means[a], s) * norm.cdf(x, means[c], s))

    lo, hi = means.min() - 12 * s, means.max() + 12 * s
    return integrate.quad(density, lo, hi, epsabs=1e-14, epsrel=1e-12, limit=200)[0]


def _exact_relative_loss(z, labels, *, sigma, nu, mu, metric="NDCG", top=None, spread_top=None):
    """``E L(z + s(z) (e - mu r))`` of one 3-document query, integrated numerically; the
    spread of its ``spread_top`` highest scores (``None``: all three)."""
    region = np.sort(z)[::-1][:spread_top or z.size]
    c = region - region.mean()
    s = sigma * math.sqrt(np.mean(c * c) + nu * nu)
    means = z - s * mu * labels
    total = 0.0
    for order in itertools.permutations(range(3)):
        value = metric_list(metric, list(labels[list(order)]), top)
        total += _order_probability(means, s, order) * -value
    return total


@pytest.mark.slow
@pytest.mark.parametrize("z", [[0.3, 0.0, -0.2], [0.0, 0.0, 0.0], [1.5, -0.4, 0.9]])
@pytest.mark.parametrize("mu", [0.0, 0.5])
def test_relative_gradient_is_the_gradient_of_the_relatively_smoothed_loss(z, mu):
    z = np.array(z)
    labels = np.array([1.0, 2.0, 0.0])
    kw = dict(sigma=0.7, nu=0.4, mu=mu)
    h = 1e-5
    fd = np.array([(_exact_relative_loss(z + h * e, labels, **kw)
                    - _exact_relative_loss(z - h * e, labels, **kw)) / (2 * h)
                   for e in np.eye(3)])
    copies = 200_000
    offs = np.arange(copies + 1, dtype=np.int64) * 3
    g = stochastic_rank_gradient(np.tile(z, copies), np.tile(labels, copies), offs,
                                 smoothing="relative", sfa=1.0, seed=11, **kw).reshape(copies, 3)
    est, se = g.mean(axis=0), g.std(axis=0, ddof=1) / np.sqrt(copies)
    assert np.max(np.abs(fd)) > 20 * np.max(se)  # the comparison resolves the gradient
    assert np.all(np.abs(est - fd) <= 5 * se + 1e-6), (est, fd, se)
    # Without the radial correction the estimate is the fixed-scale gradient, which differs
    # where the scores are spread against nu: the check has power.
    if np.ptp(z) > 1:
        g0 = stochastic_rank_gradient(np.tile(z, copies), np.tile(labels, copies), offs,
                                      smoothing="relative", sfa=0.0, seed=11, **kw)
        g0 = g0.reshape(copies, 3)
        assert np.any(np.abs(g0.mean(axis=0) - fd) > 10 * se)


@pytest.mark.slow
@pytest.mark.parametrize("z", [[0.3, 0.0, -0.2], [1.5, -0.4, 0.9]])
def test_region_gradient_is_the_gradient_of_the_region_smoothed_loss(z):
    # spread_top=2: the noise scale is the spread of the two highest scores; the radial
    # correction over that region (c_T) is checked against finite differences of the exact loss
    z = np.array(z)
    labels = np.array([1.0, 2.0, 0.0])
    kw = dict(sigma=0.7, nu=0.4, mu=0.5)
    h = 1e-5
    fd = np.array([(_exact_relative_loss(z + h * e, labels, spread_top=2, **kw)
                    - _exact_relative_loss(z - h * e, labels, spread_top=2, **kw)) / (2 * h)
                   for e in np.eye(3)])
    copies = 200_000
    offs = np.arange(copies + 1, dtype=np.int64) * 3
    args = (np.tile(z, copies), np.tile(labels, copies), offs)
    g = stochastic_rank_gradient(*args, smoothing="relative", sfa=1.0, seed=11, spread_top=2,
                                 **kw).reshape(copies, 3)
    est, se = g.mean(axis=0), g.std(axis=0, ddof=1) / np.sqrt(copies)
    assert np.max(np.abs(fd)) > 20 * np.max(se)
    assert np.all(np.abs(est - fd) <= 5 * se + 1e-6), (est, fd, se)
    # the whole list's spread and its correction are another gradient here: the check has power
    whole = stochastic_rank_gradient(*args, smoothing="relative", sfa=1.0, seed=11,
                                     **kw).reshape(copies, 3)
    assert np.any(np.abs(whole.mean(axis=0) - fd) > 10 * se)


def _exact_relative_filtered_dcg_loss(z, labels, *, sigma, nu, mu, spread_top=None):
    """``-E FilteredDCG(z + s(z) (e - mu r))`` of one query (exp2 gains, Position denominator,
    the list cut at the fixed score 0), by linearity: document ``i`` adds
    ``g_i E[1{y_i > 0} / (1 + #{j: y_j > y_i})]``, one integral over ``y_i`` each."""
    region = np.sort(z)[::-1][:spread_top or z.size]
    c = region - region.mean()
    s = sigma * math.sqrt(np.mean(c * c) + nu * nu)
    means = z - s * mu * labels
    total = 0.0
    for i in range(z.size):
        others = [j for j in range(z.size) if j != i]

        def density(x, i=i, others=others):
            above = [norm.sf(x, means[j], s) for j in others]
            # E[1 / (1 + N)] for N ~ the number of independent successes of ``above``
            dist = np.array([1.0])
            for p in above:
                dist = np.append(dist * (1 - p), 0.0) + np.append(0.0, dist * p)
            return norm.pdf(x, means[i], s) * np.sum(dist / np.arange(1, dist.size + 1))

        total -= (2.0 ** labels[i] - 1) * integrate.quad(
            density, 0.0, means.max() + 12 * s, epsabs=1e-14, epsrel=1e-12, limit=200)[0]
    return total


@pytest.mark.slow
@pytest.mark.parametrize("z", [[0.3, 0.0, -0.2], [1.5, -0.4, 0.9]])
@pytest.mark.parametrize("spread_top", [None, 2])
def test_relative_filtered_dcg_gradient_is_the_gradient_of_its_smoothed_loss(z, spread_top):
    # FilteredDCG is not translation invariant: the radial correction uses <g, z> (not the
    # centred scores), over the whole list or the region; finite differences of the exact loss
    z = np.array(z)
    labels = np.array([1.0, 2.0, 0.0])
    kw = dict(sigma=0.7, nu=0.4, mu=0.5)
    h = 1e-5
    fd = np.array([(_exact_relative_filtered_dcg_loss(z + h * e, labels, spread_top=spread_top,
                                                      **kw)
                    - _exact_relative_filtered_dcg_loss(z - h * e, labels,
                                                        spread_top=spread_top, **kw)) / (2 * h)
                   for e in np.eye(3)])
    copies = 200_000
    offs = np.arange(copies + 1, dtype=np.int64) * 3
    args = (np.tile(z, copies), np.tile(labels, copies), offs)
    common = dict(metric="FilteredDCG", top=5, smoothing="relative", seed=11,
                  spread_top=spread_top, **kw)
    g = stochastic_rank_gradient(*args, sfa=1.0, **common).reshape(copies, 3)
    est, se = g.mean(axis=0), g.std(axis=0, ddof=1) / np.sqrt(copies)
    assert np.max(np.abs(fd)) > 20 * np.max(se)
    assert np.all(np.abs(est - fd) <= 5 * se + 1e-6), (est, fd, se)
    # without the radial correction: the fixed-scale gradient, another one here (power)
    g0 = stochastic_rank_gradient(*args, sfa=0.0, **common).reshape(copies, 3)
    assert np.any(np.abs(g0.mean(axis=0) - fd) > 10 * se)


def test_spread_top_covering_the_list_is_the_whole_list():
    rng = np.random.default_rng(5)
    offs = np.array([0, 4, 10, 13], dtype=np.int64)
    z, labels = rng.normal(size=13), rng.integers(0, 3, 13).astype(float)
    kw = dict(metric="NDCG", top=3, sigma=0.3, smoothing="relative", noise=draw_noise(offs, 1))
    whole = stochastic_rank_gradient(z, labels, offs, **kw)
    assert np.array_equal(stochastic_rank_gradient(z, labels, offs, spread_top=6, **kw)[:4],
                          whole[:4])  # 4 documents: the region is the whole query
    assert not np.allclose(stochastic_rank_gradient(z, labels, offs, spread_top=3, **kw), whole)


@pytest.mark.parametrize("params, match", [
    (dict(spread_top=1), "spread_top"), (dict(spread_top=2.5), "spread_top"),
    (dict(spread_top=5, smoothing="absolute"), "spread_top=5.*smoothing='relative'")])
def test_spread_top_bad_input(params, match):
    obj = StochasticRank(metric="NDCG", top=5, **params)
    with pytest.raises((ValueError, TypeError), match=match):
        obj.grad_hess(np.zeros(4), np.array([1.0, 0.0, 2.0, 0.0]), np.array([0, 4]))


@pytest.mark.parametrize("metric", ["NDCG", "FilteredDCG"])
@pytest.mark.parametrize("spread_top", [None, 3])
def test_relative_gradient_is_scale_free(spread_top, metric):
    # FilteredDCG is not translation invariant: its gradient is not centred and its radial
    # direction is z itself (z - mean z for NDCG); either way, orthogonal to it as nu -> 0
    rng = np.random.default_rng(4)
    sizes = rng.integers(3, 12, 40)
    offs = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    z = rng.normal(size=offs[-1])
    labels = rng.integers(0, 3, offs[-1]).astype(float)
    noise = draw_noise(offs, 2, seed=1)
    kw = dict(metric=metric, top=5, sigma=0.3, nu=1e-12, mu=0.2, smoothing="relative",
              noise=noise)
    g = stochastic_rank_gradient(z, labels, offs, spread_top=spread_top, **kw)
    g7 = stochastic_rank_gradient(7.0 * z, labels, offs, spread_top=spread_top, **kw)
    np.testing.assert_allclose(g7, g / 7.0, rtol=1e-9, atol=1e-12)
    assert np.max(np.abs(g)) > 1e-3
    for q in range(40):
        zq = z[offs[q]:offs[q + 1]]
        c = zq - zq.mean() if metric == "NDCG" else zq
        gq = g[offs[q]:offs[q + 1]]
        assert abs(gq @ c) <= 1e-9 * np.linalg.norm(gq) * np.linalg.norm(c)
    if metric != "NDCG":
        return
    # Absolute smoothing is not scale-free: the same scores x 7 give another direction.
    a = stochastic_rank_gradient(z, labels, offs, **dict(kw, smoothing="absolute"))
    a7 = stochastic_rank_gradient(7.0 * z, labels, offs, **dict(kw, smoothing="absolute"))
    assert not np.allclose(a7, a / 7.0, rtol=1e-3)


def test_sigma_schedule():
    assert [StochasticRank().sigma_at(t) for t in (0, 100, 200)] == [0.1] * 3  # at its floor
    obj = StochasticRank(sigma=0.3)
    assert [obj.sigma_at(t) for t in (0, 100, 200)] == [0.3, 0.15, 0.1]
    assert StochasticRank(sigma=0.3, anneal_half_life=None).sigma_at(10_000) == 0.3
    assert StochasticRank(sigma=0.05).sigma_at(1000) == 0.05  # the floor never raises sigma
    paper = StochasticRank.paper(metric="ERR", top=3)
    assert (paper.sigma, paper.nu, paper.smoothing, paper.anneal_half_life) == \
        (1.0, 0.01, "absolute", None)


@pytest.mark.parametrize("field, value, exc", [
    ("smoothing", "scaled", ValueError), ("sigma_min", 0.0, ValueError),
    ("sigma_min", "x", TypeError), ("anneal_half_life", -1.0, ValueError),
    ("anneal_half_life", float("inf"), ValueError)])
def test_new_parameters_bad_input(field, value, exc):
    with pytest.raises(exc, match=field):  # checked at first use: __init__ only stores
        StochasticRank(**{field: value}).sigma_at(0)


@pytest.fixture(scope="module")
def mq_train():
    return load_mq2008("train")


@pytest.mark.parametrize("mu", [0.0, 0.01, 0.1, 0.5, 1.0, 2.0])
def test_documented_mu_range_keeps_the_gradient_alive(mq_train, mu):
    """MQ2008 labels span 2, so mu <= MAX_SHIFT / 2 = 2 is accepted; from all-zero scores
    (iteration 0) the gradient keeps at least 5% of the mu = 0 magnitude."""
    z = np.zeros(mq_train.y.size)
    base = np.abs(StochasticRank(metric="NDCG", top=5).grad_hess(
        z, mq_train.y, mq_train.query_offsets)[0]).mean()
    g, _ = StochasticRank(metric="NDCG", top=5, mu=mu).grad_hess(z, mq_train.y,
                                                                  mq_train.query_offsets)
    assert np.all(np.isfinite(g))
    assert np.abs(g).mean() >= 0.05 * base


@pytest.mark.parametrize("mu", [2.01, 3.0, 9.0, 10.0])
def test_flattening_mu_is_refused(mq_train, mu):
    assert MAX_SHIFT / 2 == 2.0
    obj = StochasticRank(metric="NDCG", top=5, mu=mu)
    with pytest.raises(ValueError, match=r"mu=.*flat.*mu <= 2"):
        obj.grad_hess(np.zeros(mq_train.y.size), mq_train.y, mq_train.query_offsets)


@pytest.mark.slow
@pytest.mark.parametrize("mu", [0.0, 2.0])
def test_largest_accepted_mu_trains_a_model(mq_train, mu):
    vali = load_mq2008("vali")
    ranker = fit_ranker("lightgbm", StochasticRank(metric="NDCG", top=5, mu=mu), mq_train.X,
                        mq_train.y, mq_train.group_sizes, n_estimators=30, learning_rate=0.1,
                        n_jobs=None, num_leaves=15, deterministic=True)
    scores = ranker.predict(vali.X)
    constant = metrics.ndcg_at_k(np.zeros(vali.y.size), vali.y, vali.query_offsets, 5)
    assert np.ptp(scores) > 0
    assert metrics.ndcg_at_k(scores, vali.y, vali.query_offsets, 5) > constant + 0.3

