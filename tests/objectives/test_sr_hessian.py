"""StochasticRank's ``hessian="abs_gradient"``: ``h_i = |g_i| / s_q + 0.01 mean_j |g_j| / s_q(j)``
with the query's noise scale ``s_q`` recomputed here by hand (the annealed sigma times the
nu-floored spread), the gradient unchanged, Newton steps of at most one noise standard
deviation, and the ``1 / a^2`` scaling of a curvature when the scores scale by ``a``."""

import numpy as np
import pytest

from stochrank_objectives import StochasticRank


def grouped(seed=0, sizes=(7, 30, 2, 1, 12)):
    rng = np.random.default_rng(seed)
    offs = np.concatenate([[0], np.cumsum(sizes)])
    z = rng.normal(size=offs[-1]) * 2.0
    y = rng.integers(0, 3, offs[-1]).astype(float)
    y[offs[3]:offs[4]] = 0.0          # the one-document query: no gradient
    return z, y, offs


def scale_by_hand(z, offs, sigma, nu, relative):
    out = []
    for lo, hi in zip(offs[:-1], offs[1:]):
        c = z[lo:hi] - z[lo:hi].mean()
        out += [sigma * np.sqrt(np.mean(c * c) + nu * nu) if relative else sigma] * (hi - lo)
    return np.array(out)


@pytest.mark.parametrize("smoothing, iteration", [("relative", 0), ("relative", 150),
                                                  ("absolute", 0)])
@pytest.mark.parametrize("metric, top", [("NDCG", 5), ("MRR", None)])
def test_abs_gradient_hessian_is_its_formula(metric, top, smoothing, iteration):
    z, y, offs = grouped()
    kw = dict(metric=metric, top=top, seed=3, smoothing=smoothing, nu=0.5, sigma=0.3)
    g0, h0 = StochasticRank(hessian="constant", **kw).grad_hess(z, y, offs, iteration)
    obj = StochasticRank(hessian="abs_gradient", **kw)
    g, h = obj.grad_hess(z, y, offs, iteration)
    assert np.array_equal(g, g0) and np.all(h0 == 1.0)   # only the hessian changes
    s = scale_by_hand(z, offs, obj.sigma_at(iteration), 0.5, smoothing == "relative")
    if smoothing == "relative" and iteration:
        assert obj.sigma_at(iteration) < obj.sigma   # the annealed sigma, not the initial one
    ratio = np.abs(g) / s
    np.testing.assert_allclose(h, ratio + 0.01 * ratio.mean(), rtol=1e-12, atol=0)
    assert np.all(h > 0) and np.all(np.abs(g / h) <= s * (1 + 1e-12))   # step <= one s_q
    assert np.count_nonzero(g) > 10


def test_abs_gradient_hessian_scales_as_a_curvature():
    z, y, offs = grouped(1)
    obj = StochasticRank(metric="NDCG", top=5, hessian="abs_gradient", nu=1e-9, seed=2)
    g1, h1 = obj.grad_hess(z, y, offs, 4)
    g2, h2 = obj.grad_hess(10.0 * z, y, offs, 4)
    np.testing.assert_allclose(g2, g1 / 10.0, rtol=1e-7, atol=1e-12)
    np.testing.assert_allclose(h2, h1 / 100.0, rtol=1e-7)


def test_abs_gradient_hessian_without_any_gradient_is_one():
    z, y, offs = grouped(2)
    g, h = StochasticRank(hessian="abs_gradient").grad_hess(z, np.zeros_like(y), offs)
    assert not np.any(g) and np.all(h == 1.0)


def test_an_unknown_hessian_is_refused():
    with pytest.raises(ValueError, match="hessian"):
        StochasticRank(hessian="exact").grad_hess(*grouped())


@pytest.mark.parametrize("metric, top", [("NDCG", 5), ("MRR", None)])
def test_normalised_abs_gradient_keeps_the_newton_leaves_with_a_hessian_of_mean_one(metric, top):
    z, y, offs = grouped(3)
    kw = dict(metric=metric, top=top, seed=5)
    g0, h0 = StochasticRank(hessian="abs_gradient", **kw).grad_hess(z, y, offs, 7)
    g, h = StochasticRank(hessian="abs_gradient_normalised", **kw).grad_hess(z, y, offs, 7)
    assert h.mean() == pytest.approx(1.0, rel=1e-12)
    c = 1.0 / h0.mean()          # one constant for the whole call, gradient and hessian alike
    np.testing.assert_allclose(g, c * g0, rtol=1e-12, atol=0)
    np.testing.assert_allclose(h, c * h0, rtol=1e-12, atol=0)
    # any leaf's Newton step sum(g) / sum(h) is the unscaled one
    leaf = np.arange(0, z.size, 3)
    assert g[leaf].sum() / h[leaf].sum() == pytest.approx(g0[leaf].sum() / h0[leaf].sum(),
                                                           rel=1e-12)


def test_normalised_abs_gradient_without_any_gradient_is_one():
    z, y, offs = grouped(2)
    g, h = StochasticRank(hessian="abs_gradient_normalised").grad_hess(z, np.zeros_like(y), offs)
    assert not np.any(g) and np.all(h == 1.0)
