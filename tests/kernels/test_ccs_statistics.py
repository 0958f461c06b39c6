"""Statistical and structural properties of the StochasticRank gradient.

* Unbiasedness: the CCS estimate (both conditionings) averaged over many draws equals the
  gradient of the smoothed loss ``E L(z - sigma mu r + sigma e)``, estimated independently in
  numpy with the score-function (Stein) identity ``E[(L(a + sigma e) - b) e] / sigma``
  (1e6 draws, baseline b from an independent pilot). Tolerance: 5 combined standard errors
  plus 1e-5. The same tolerance rejects CatBoost's unit-mismatched conditional mean at
  sigma = 0.3 (checked here, so the test demonstrably has power).
* Exact identities (same noise): scale-freeness, translation invariance, centring, the SFA
  projection formula and its orthogonality limit.
* Consistency of the mu-shifted smoothing (Theorem 1): as sigma -> 0 the smoothed loss tends to
  the worst-permutation loss for large mu and to the tie-averaged loss for mu = 0.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from _reference import (
    ccs_raw_query,
    center_sfa_query,
    grouped_metric,
    random_query_set,
    score_function_gradient,
    smoothed_loss_samples,
)

from stochrank_objectives import draw_noise, metrics, stochastic_rank_gradient
from stochrank_objectives.kernels.noise_scale import center_and_accelerate

Z = np.array([0.4, 0.0, 0.0, -0.3, 0.4])  # two tied pairs
CASES = {
    "NDCG@3": ("NDCG", 3, np.array([2.0, 0.0, 1.0, 1.0, 3.0]), {"gain": "exp2"}),
    "ERR": ("ERR", None, np.array([0.5, 0.0, 1.0, 0.25, 0.75]), {}),
    "MRR": ("MRR", None, np.array([0.0, 1.0, 0.0, 0.0, 1.0]), {"threshold": 0.0}),
    "DCG@2-linear": ("DCG", 2, np.array([2.0, 0.0, 1.0, 1.0, 3.0]), {"gain": "linear"}),
}
N_COPIES = 20_000
N_SF = 1_000_000


def _ccs_draws(z, labels, *, copies=N_COPIES, seed=3, **kw):
    """Per-draw CCS gradients of one query (n_samples=1 on ``copies`` replicas of the query,
    whose noise streams are independent): returns (mean, standard error)."""
    n = z.size
    offs = np.arange(copies + 1, dtype=np.int64) * n
    g = stochastic_rank_gradient(np.tile(z, copies), np.tile(labels, copies), offs, seed=seed,
                                 n_samples=1, **kw).reshape(copies, n)
    return g.mean(axis=0), g.std(axis=0, ddof=1) / np.sqrt(copies)


def _assert_close(est, se_est, ref, se_ref, what):
    tol = 5.0 * np.sqrt(se_est ** 2 + se_ref ** 2) + 1e-5
    bad = np.abs(est - ref) > tol
    assert not bad.any(), (
        f"{what}: estimate {np.round(est, 5)} vs reference {np.round(ref, 5)}, "
        f"|diff|/se = {np.round(np.abs(est - ref) / np.sqrt(se_est ** 2 + se_ref ** 2), 2)}")


@pytest.mark.slow
@pytest.mark.parametrize("mu", [0.0, 1.0])
@pytest.mark.parametrize("sigma", [0.3, 1.0, 3.0])
@pytest.mark.parametrize("case", list(CASES))
def test_ccs_is_unbiased(case, sigma, mu):
    metric, top, labels, opts = CASES[case]
    a = Z - sigma * mu * labels
    ref, ref_se = score_function_gradient(a, labels, sigma, metric, top, n=N_SF, seed=17, **opts)
    assert np.max(np.abs(ref)) > 20 * np.max(ref_se)  # the reference resolves the gradient
    for conditioning in ("translation", "coordinate"):
        est, est_se = _ccs_draws(Z, labels, metric=metric, top=top, sigma=sigma, mu=mu,
                                 conditioning=conditioning, center=False, sfa=0.0, **opts)
        _assert_close(est, est_se, ref, ref_se, f"{case} sigma={sigma} mu={mu} {conditioning}")


@pytest.mark.slow
@pytest.mark.parametrize("case", ["NDCG@3", "MRR"])
def test_unbiasedness_check_has_power(case):
    """The same comparison rejects CatBoost's literal conditional mean at sigma = 0.3
    (its bias is ~20%), while our brute force with the exact law passes it."""
    metric, top, labels, opts = CASES[case]
    sigma, n_rows = 0.3, N_COPIES
    ref, ref_se = score_function_gradient(Z, labels, sigma, metric, top, n=N_SF, seed=5, **opts)
    noise = np.random.default_rng(8).standard_normal((n_rows, Z.size))
    for conditioning, should_pass in (("translation", True), ("catboost_literal", False)):
        rows = np.stack([ccs_raw_query(Z, labels, noise[j::8], metric=metric, top=top,
                                       sigma=sigma, conditioning=conditioning, **opts)
                         for j in range(8)])  # 8 batch means -> standard error
        est, est_se = rows.mean(axis=0), rows.std(axis=0, ddof=1) / np.sqrt(8)
        tol = 5.0 * np.sqrt(est_se ** 2 + ref_se ** 2) + 1e-5
        assert bool(np.all(np.abs(est - ref) <= tol)) == should_pass, conditioning


@pytest.mark.slow
@pytest.mark.parametrize("estimator", ["reinforce"])
def test_reinforce_is_unbiased(estimator):
    metric, top, labels, opts = CASES["NDCG@3"]
    sigma = 1.0
    ref, ref_se = score_function_gradient(Z, labels, sigma, metric, top, n=N_SF, seed=23, **opts)
    est, est_se = _ccs_draws(Z, labels, copies=100_000, metric=metric, top=top, sigma=sigma,
                             estimator=estimator, center=False, sfa=0.0, **opts)
    _assert_close(est, est_se, ref, ref_se, "reinforce")


def test_centred_gradient_is_unbiased_for_the_centred_target():
    """Centring is unbiased because the smoothed loss is translation invariant: the true
    gradient sums to zero, so centring the estimate changes only its noise."""
    metric, top, labels, opts = CASES["ERR"]
    ref, ref_se = score_function_gradient(Z, labels, 1.0, metric, top, n=N_SF, seed=29, **opts)
    assert abs(ref.sum()) < 5 * np.sqrt((ref_se ** 2).sum()) * np.sqrt(Z.size) + 1e-5
    est, est_se = _ccs_draws(Z, labels, metric=metric, top=top, sigma=1.0, center=True, sfa=0.0,
                             **opts)
    assert abs(est.sum()) < 1e-10
    _assert_close(est, est_se, ref - ref.mean(), ref_se, "centred")


# ----------------------------------------------------------------------------------------
# Exact identities with common noise
# ----------------------------------------------------------------------------------------


def _data(metric="NDCG", seed=0):
    rng = np.random.default_rng(seed)
    scores, labels, offs = random_query_set(rng, [6, 2, 9, 1, 4, 30], metric, tie_levels=4)
    return scores + 0.1 * rng.normal(size=scores.size), labels, offs


@pytest.mark.parametrize("metric,top", [("NDCG", 3), ("ERR", None), ("MRR", 5), ("DCG", None)])
@pytest.mark.parametrize("conditioning", ["translation", "coordinate"])
@pytest.mark.parametrize("mu", [0.0, 1.0])
def test_scale_free(metric, top, conditioning, mu):
    scores, labels, offs = _data(metric)
    noise = draw_noise(offs, 3, 1, 0)
    kw = dict(metric=metric, top=top, mu=mu, conditioning=conditioning, noise=noise, sfa=0.0)
    base = stochastic_rank_gradient(scores, labels, offs, sigma=0.8, **kw)
    assert np.max(np.abs(base)) > 1e-3
    for lam in (2.5, 0.1, 7.0):
        scaled = stochastic_rank_gradient(lam * scores, labels, offs, sigma=0.8 * lam, **kw)
        np.testing.assert_allclose(scaled, base / lam, rtol=1e-9, atol=1e-12 / lam)


@pytest.mark.parametrize("metric", ["NDCG", "ERR", "MRR"])
@pytest.mark.parametrize("sfa", [0.0, 1.0])
def test_translation_invariance(metric, sfa):
    scores, labels, offs = _data(metric, 1)
    noise = draw_noise(offs, 3, 2, 0)
    kw = dict(metric=metric, top=4, sigma=1.0, mu=1.0, noise=noise, sfa=sfa)
    base = stochastic_rank_gradient(scores, labels, offs, **kw)
    shift = np.repeat(np.array([3.0, -11.0, 0.25, 5.0, -2.0, 40.0]), np.diff(offs))
    moved = stochastic_rank_gradient(scores + shift, labels, offs, **kw)
    np.testing.assert_allclose(moved, base, rtol=0, atol=1e-12)
    assert np.max(np.abs(base)) > 1e-3


def test_centring_and_sfa_formula():
    """center subtracts the query mean; SFA is g - sfa <g,c>/(|c|+nu)^2 c for n > 2 only,
    with c the centred *unshifted* scores; sfa = 0 leaves the centred gradient untouched."""
    scores, labels, offs = _data("NDCG", 2)
    noise = draw_noise(offs, 2, 3, 0)
    kw = dict(metric="NDCG", top=3, sigma=0.7, mu=2.0, noise=noise)
    raw = stochastic_rank_gradient(scores, labels, offs, center=False, sfa=0.0, **kw)
    centred = stochastic_rank_gradient(scores, labels, offs, center=True, sfa=0.0, **kw)
    for sfa in (0.0, 0.5, 1.0, 2.0):
        for nu in (1e-12, 0.01, 3.0):
            out = stochastic_rank_gradient(scores, labels, offs, center=True, sfa=sfa, nu=nu, **kw)
            for lo, hi in zip(offs[:-1], offs[1:]):
                exp = center_sfa_query(raw[lo:hi], scores[lo:hi], center=True, sfa=sfa, nu=nu)
                np.testing.assert_allclose(out[lo:hi], exp, rtol=1e-12, atol=1e-15)
                assert abs(out[lo:hi].sum()) < 1e-12
                if sfa == 0.0:
                    assert np.array_equal(out[lo:hi], centred[lo:hi])
                if hi - lo <= 2:
                    np.testing.assert_allclose(out[lo:hi], centred[lo:hi], atol=1e-15)
    # uncentred SFA: projection applied to the raw estimate
    out = stochastic_rank_gradient(scores, labels, offs, center=False, sfa=1.0, **kw)
    for lo, hi in zip(offs[:-1], offs[1:]):
        exp = center_sfa_query(raw[lo:hi], scores[lo:hi], center=False, sfa=1.0, nu=0.01)
        np.testing.assert_allclose(out[lo:hi], exp, rtol=1e-12, atol=1e-15)


def _sequential_center_sfa(grad, scores, center, sfa, nu, relative):
    """The centring and radial correction of one query with every sum taken in document order,
    one operation at a time (the kernel's rounding, whatever passes it fuses)."""
    g = [float(v) for v in grad]
    z = [float(v) for v in scores]
    n = len(g)
    if center:
        total = 0.0
        for v in g:
            total += v
        g = [v - total / n for v in g]
    total = 0.0
    for v in z:
        total += v
    zmean = total / n
    dot = norm2 = 0.0
    for gi, zi in zip(g, z):
        c = zi - zmean
        dot += gi * c
        norm2 += c * c
    denom2 = norm2 + n * nu * nu if relative else (math.sqrt(norm2) + nu) ** 2
    k = sfa * dot / denom2
    return np.array([gi - k * (zi - zmean) if k != 0.0 else gi for gi, zi in zip(g, z)])


@pytest.mark.parametrize("center", [True, False])
@pytest.mark.parametrize("relative", [True, False])
def test_centring_and_sfa_round_as_sequential_sums(center, relative):
    """The kernel's fused passes give, bit for bit, the sums of separate passes in document
    order (a change of summation order would show here as a last-bit difference)."""
    rng = np.random.default_rng(7)
    sizes = [3, 7, 40, 129]
    offs = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    scores = rng.standard_normal(offs[-1]) * 3.0 + 1.0
    grad = rng.standard_normal(offs[-1]) * 1e-3
    out = grad.copy()
    center_and_accelerate(out, scores, offs, center, 1.0, 0.7, relative)
    for lo, hi in zip(offs[:-1], offs[1:]):
        expected = _sequential_center_sfa(grad[lo:hi], scores[lo:hi], center, 1.0, 0.7,
                                          relative)
        assert np.array_equal(out[lo:hi], expected)


def test_sfa_is_orthogonal_to_centred_scores_as_nu_vanishes():
    scores, labels, offs = _data("ERR", 3)
    kw = dict(metric="ERR", sigma=1.0, n_samples=2, seed=4)
    g_small = stochastic_rank_gradient(scores, labels, offs, sfa=1.0, nu=1e-12, **kw)
    g_off = stochastic_rank_gradient(scores, labels, offs, sfa=0.0, **kw)
    ratios = []
    for lo, hi in zip(offs[:-1], offs[1:]):
        if hi - lo <= 2:
            continue
        c = scores[lo:hi] - scores[lo:hi].mean()
        norm = np.linalg.norm(c) * np.linalg.norm(g_off[lo:hi])
        assert abs(np.dot(g_small[lo:hi], c)) <= 1e-10 * norm
        ratios.append(abs(np.dot(g_off[lo:hi], c)) / norm)
    assert max(ratios) > 1e-3  # without SFA the gradient does have a radial component


# ----------------------------------------------------------------------------------------
# Consistency of the mu-shifted smoothing (Theorem 1)
# ----------------------------------------------------------------------------------------

TIE_Z = np.array([1.0, 1.0, 1.0, 0.0, 0.0, 2.0])
TIE_LABELS = {
    "NDCG": (np.array([0.0, 2.0, 1.0, 3.0, 0.0, 1.0]), {"gain": "exp2"}, 3),
    "ERR": (np.array([0.0, 1.0, 0.5, 0.75, 0.0, 0.25]), {}, None),
    "MRR": (np.array([0.0, 1.0, 0.0, 1.0, 0.0, 0.0]), {"threshold": 0.0}, None),
}


def _smoothed_loss(metric, labels, opts, top, sigma, mu, n=200_000, seed=0):
    eps = np.random.default_rng(seed).standard_normal((n, TIE_Z.size))
    a = TIE_Z - sigma * mu * labels
    loss = smoothed_loss_samples(a, labels, eps, sigma, metric, top, **opts)
    return loss.mean(), loss.std() / np.sqrt(n)


@pytest.mark.slow
@pytest.mark.parametrize("metric", list(TIE_LABELS))
def test_mu_smoothing_consistency(metric):
    labels, opts, top = TIE_LABELS[metric]
    offs = np.array([0, TIE_Z.size])
    worst = -metrics.evaluate(metric, TIE_Z, labels, offs, top, ties="worst", **opts)
    ref_worst = -grouped_metric(metric, TIE_Z, labels, offs, top, "worst", **opts)[0]
    mean_ties = -grouped_metric(metric, TIE_Z, labels, offs, top, "expected", **opts)[0]
    assert worst == pytest.approx(ref_worst, abs=1e-12)
    assert mean_ties < worst - 1e-3  # the two limits differ on this query
    sigma = 1e-3
    # mu = 0: ties are resolved uniformly at random in the limit
    m0, se0 = _smoothed_loss(metric, labels, opts, top, sigma, 0.0)
    assert abs(m0 - mean_ties) <= 5 * se0 + 1e-9
    if metric in ("NDCG", "DCG"):
        expected = -metrics.evaluate(metric, TIE_Z, labels, offs, top, ties="expected", **opts)
        assert expected == pytest.approx(mean_ties, abs=1e-12)
    # growing mu moves the limit to the worst permutation
    gaps = []
    for mu in (0.3, 1.0, 3.0, 50.0):
        m, se = _smoothed_loss(metric, labels, opts, top, sigma, mu, seed=int(mu * 10))
        gaps.append(worst - m)
    assert all(g >= -1e-12 for g in gaps)
    assert gaps[0] > gaps[1] > gaps[2] >= gaps[3]
    assert abs(gaps[-1]) < 1e-9
