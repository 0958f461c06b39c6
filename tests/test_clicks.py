"""Click debiasing (:mod:`stochrank_objectives.clicks`): the IPS estimate is unbiased for the
full-information DCG, the debiased objective is the existing objective on IPS labels (its
gradient checked against the loss by finite differences), and regression-EM recovers known
propensities."""

import numpy as np
import pytest

from stochrank_objectives import clicks as C
from stochrank_objectives import metrics as M
from stochrank_objectives.objectives import LambdaLoss


def _toy(n_queries=40, size=8, seed=0):
    rng = np.random.default_rng(seed)
    offs = np.arange(0, n_queries * size + 1, size)
    grades = rng.integers(0, 3, n_queries * size).astype(float)
    logging = grades + rng.normal(0, 1.5, grades.size)
    return offs, grades, C.display_positions(logging, offs), rng


def _dcg(scores, gains, offs, k):
    return M.dcg_at_k(scores, gains, offs, k, gain="linear", per_query=True)


def test_ips_dcg_is_unbiased_for_the_full_information_dcg():
    offs, grades, pos, rng = _toy()
    theta = C.power_law_propensities(8, eta=1.0)
    gamma = C.click_probabilities(grades, grade_max=2)
    scores = rng.normal(size=grades.size)  # any ranking to evaluate
    truth = _dcg(scores, gamma, offs, 5).sum()
    estimates = []
    for s in range(400):
        c = C.simulate_clicks(gamma, pos, offs, theta, n_sessions=1, seed=s)
        estimates.append(_dcg(scores, C.ips_labels(c, pos, theta, clip=0.0), offs, 5).sum())
    mean, se = np.mean(estimates), np.std(estimates, ddof=1) / np.sqrt(len(estimates))
    assert abs(mean - truth) < 3 * se
    # the naive estimate (raw clicks) is biased towards the logging ranking
    naive = np.mean([_dcg(scores, C.simulate_clicks(gamma, pos, offs, theta, seed=s),
                          offs, 5).sum() for s in range(400)])
    assert abs(naive - truth) > 10 * se


def test_clipping_bounds_the_weights_and_is_biased_below_the_clip():
    theta = np.array([1.0, 0.5, 0.01])
    labels = C.ips_labels([1, 1, 1], [0, 1, 2], theta, clip=0.1)
    np.testing.assert_allclose(labels, [1.0, 2.0, 10.0])
    np.testing.assert_allclose(C.ips_labels([1, 1, 1], [0, 1, 2], theta, clip=0.0),
                               [1.0, 2.0, 100.0])


@pytest.mark.parametrize("bad, match", [
    (dict(positions=[0, -1]), "position must be >= 0"),
    (dict(positions=[0, 1.5]), "integer display positions"),
    (dict(propensities=[1.0]), "every position"),
    (dict(propensities=[1.0, 0.0]), "> 0"),
    (dict(clicks=[-1, 0]), "clicks must be >= 0"),
])
def test_ips_labels_refuses_bad_input(bad, match):
    args = dict(clicks=[1, 0], positions=[0, 1], propensities=[1.0, 0.5])
    args.update(bad)
    with pytest.raises(ValueError, match=match):
        C.ips_labels(args["clicks"], args["positions"], args["propensities"])


def _ips_toy(seed=1):
    offs, grades, pos, rng = _toy(n_queries=3, size=5, seed=seed)
    theta = C.power_law_propensities(5, 1.5)
    c = C.simulate_clicks(C.click_probabilities(grades, 2), pos, offs, theta, n_sessions=5,
                          seed=2)
    return rng.normal(size=grades.size), C.ips_labels(c, pos, theta, clip=0.0), offs, rng


@pytest.mark.parametrize("metric", ["DCG", "NDCG"])
def test_debiased_stochastic_rank_matches_brute_force_on_ips_labels(metric):
    """StochasticRank's estimator on real-valued IPS labels with linear gain equals the
    brute-force CCS gradient of the smoothed (N)DCG of those labels (same noise)."""
    from tests._reference import assert_matches_brute_force

    scores, labels, offs, rng = _ips_toy()
    assert np.any(labels != np.round(labels))  # real-valued labels, not grades
    noise = rng.standard_normal((3, scores.size))
    fast, _ = assert_matches_brute_force(scores, labels, offs, noise, 1e-10, metric=metric,
                                         top=3, sigma=1.0, mu=0.0, gain="linear",
                                         conditioning="translation", center=True, sfa=0.0,
                                         nu=0.01)
    assert np.any(fast != 0)


def test_debiased_lambdaloss_gradient_matches_finite_differences():
    scores, labels, offs, _ = _ips_toy()
    objective = LambdaLoss(gain="linear")
    grad, _ = objective.grad_hess(scores, labels, offs)
    h = 1e-6
    fd = np.array([(objective.loss(scores + h * e, labels, offs)
                    - objective.loss(scores - h * e, labels, offs)) / (2 * h)
                   for e in np.eye(scores.size)])
    np.testing.assert_allclose(grad, fd, rtol=1e-4, atol=1e-6)


def test_regression_em_recovers_known_propensities():
    rng = np.random.default_rng(0)
    n_queries, size = 400, 10
    offs = np.arange(0, n_queries * size + 1, size)
    X = rng.normal(size=(n_queries * size, 5))
    gamma = 1 / (1 + np.exp(-(X @ np.array([1.5, -1.0, 0.5, 0.0, 0.0]) - 1.0)))
    pos = C.display_positions(X[:, 0] + rng.normal(0, 1, len(X)), offs)  # logging ranker
    theta = C.power_law_propensities(size, 1.0)
    clicks = C.simulate_clicks(gamma, pos, offs, theta, n_sessions=10, seed=1)
    est = C.estimate_propensities(X, clicks, pos, n_sessions=10)
    np.testing.assert_allclose(est, theta, rtol=0.1, atol=0.02)
    # the naive click-through-rate ratio is confounded by the logging ranker
    ctr = np.bincount(pos, clicks) / np.bincount(pos)
    assert np.abs(ctr / ctr[0] - theta).max() > 2 * np.abs(est - theta).max()


def test_cascade_clicks_at_most_one_per_session():
    offs, grades, pos, _ = _toy(n_queries=5, size=6)
    c = C.simulate_clicks(np.full(grades.size, 0.9), pos, offs, None, n_sessions=7,
                          model="cascade", seed=0)
    per_query = np.add.reduceat(c, offs[:-1])
    assert np.all(per_query <= 7) and c[pos == 0].sum() > c[pos == 5].sum()
