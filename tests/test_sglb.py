"""The SGLB schedule (library-agnostic): formulas, noise, reparametrisation, overflow guard."""

import math

import numpy as np
import pytest

from stochrank_objectives import StochasticRank
from stochrank_objectives.sglb import SGLB


def _toy_problem(seed=0, n_queries=6, size=7):
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 3, n_queries * size).astype(float)
    offsets = np.arange(0, n_queries * size + 1, size)
    return labels, offsets


def test_schedule_identities():
    s = SGLB(learning_rate=0.2, model_shrink_rate=0.5, diffusion_temperature=100.0)
    c = 1.0 - 0.5 * 0.2
    assert s.shrink == pytest.approx(c, abs=0)
    for t in range(5):
        assert s.learning_rate_at(t) == pytest.approx(0.2 * c ** -(t + 1), rel=1e-15)
        assert s.score_scale(t) == pytest.approx(c ** (t + 1), rel=1e-15)
        # tree t's step in F-space: c^(t+1) (lr_t h) must be lr h
        assert s.learning_rate_at(t) * s.score_scale(t) == pytest.approx(0.2, rel=1e-14)
    assert s.final_scale(0) == 1.0
    assert s.final_scale(7) == pytest.approx(c ** 7, rel=1e-15)
    assert s.noise_std == pytest.approx(math.sqrt(2.0 / (0.2 * 100.0)))


def test_catboost_defaults_and_posterior_sampling():
    s = SGLB()
    assert (s.learning_rate, s.model_shrink_rate, s.diffusion_temperature) == (0.1, 0.001, 1e4)
    p = SGLB.posterior_sampling(3000, learning_rate=0.05, seed=4)
    assert p.diffusion_temperature == 3000.0
    assert p.model_shrink_rate == pytest.approx(1.0 / 6000.0)
    assert p.seed == 4 and "SGLB(" in repr(p)


def test_noise_is_seeded_per_iteration_with_the_right_variance():
    s = SGLB(learning_rate=0.1, model_shrink_rate=0.0, diffusion_temperature=50.0, seed=3)
    a = s.noise(200_000, 5)
    np.testing.assert_array_equal(a, s.noise(200_000, 5))
    rng = np.random.default_rng(np.random.SeedSequence([3, 5]))
    np.testing.assert_array_equal(a, s.noise_std * rng.standard_normal(200_000))
    assert not np.array_equal(a[:100], s.noise(100, 6))
    assert not np.array_equal(a[:100], SGLB(0.1, 0.0, 50.0, seed=4).noise(100, 5))
    assert a.var() == pytest.approx(2.0 / (0.1 * 50.0), rel=0.02)
    assert abs(a.mean()) < 0.01
    np.testing.assert_array_equal(SGLB(0.1, 0.1, None).noise(4, 0), np.zeros(4))
    no_noise = SGLB(0.1, 0.1, math.inf)  # stored as given; inf means no noise once validated
    assert no_noise.validate()["diffusion_temperature"] is None and no_noise.noise_std == 0.0


def test_grad_hess_scales_scores_and_adds_noise():
    labels, offsets = _toy_problem()
    obj = StochasticRank(metric="NDCG", top=3, seed=2)
    s = SGLB(learning_rate=0.3, model_shrink_rate=0.7, diffusion_temperature=20.0, seed=1)
    raw = np.random.default_rng(5).normal(size=labels.size)
    g, h = s.grad_hess(obj, raw, labels, offsets, 4)
    g0, h0 = obj.grad_hess(s.score_scale(4) * raw, labels, offsets, iteration=4)
    # the noise is preconditioned by the objective's hessian (sqrt(h) per document)
    np.testing.assert_array_equal(g, g0 + np.sqrt(h0) * s.noise(labels.size, 4))
    np.testing.assert_array_equal(h, h0)
    unit = StochasticRank(metric="NDCG", top=3, seed=2, hessian="constant")
    gu, _ = s.grad_hess(unit, raw, labels, offsets, 4)   # unit hessians: the plain noise
    np.testing.assert_array_equal(gu, unit.grad_hess(s.score_scale(4) * raw, labels, offsets,
                                                     iteration=4)[0] + s.noise(labels.size, 4))
    # no shrinkage and no noise: a plain pass-through
    plain = SGLB(learning_rate=0.3, model_shrink_rate=0.0, diffusion_temperature=None)
    g1, _ = plain.grad_hess(obj, raw, labels, offsets, 4)
    np.testing.assert_array_equal(g1, obj.grad_hess(raw, labels, offsets, iteration=4)[0])


def _fit_learner(grad, hess, offsets):
    """A deterministic stand-in for a tree: per-query Newton step on the mean (plus the raw
    gradient, so that every document moves differently)."""
    step = -grad / (hess + 1.0)
    sums = np.add.reduceat(step, offsets[:-1])
    return step + np.repeat(sums / np.diff(offsets), np.diff(offsets))


def test_reparametrisation_equals_shrink_and_refit():
    labels, offsets = _toy_problem(seed=1)
    obj = StochasticRank(metric="ERR", top=4, seed=7, grade_max=2)
    s = SGLB(learning_rate=0.25, model_shrink_rate=1.2, diffusion_temperature=30.0, seed=9)
    n_trees, c = 15, s.shrink
    # reference: F <- c F + lr h, h fitted at c F with noisy gradients
    F = np.zeros(labels.size)
    for t in range(n_trees):
        S = c * F
        g, h = obj.grad_hess(S, labels, offsets, iteration=t)
        F = S + s.learning_rate * _fit_learner(g + np.sqrt(h) * s.noise(labels.size, t), h,
                                               offsets)
    # reparametrised booster: G <- G + lr_t h, objective at score_scale(t) G, final c^T G
    G = np.zeros(labels.size)
    for t in range(n_trees):
        g, h = s.grad_hess(obj, G, labels, offsets, t)
        G = G + s.learning_rate_at(t) * _fit_learner(g, h, offsets)
    np.testing.assert_allclose(s.final_scale(n_trees) * G, F, rtol=1e-12, atol=1e-14)
    assert np.abs(G).max() > 10 * np.abs(F).max()  # the raw scores really are inflated


def test_overflow_guard():
    s = SGLB(learning_rate=0.1, model_shrink_rate=2.0, diffusion_temperature=None)  # c = 0.8
    cap32 = s.max_iterations(np.float32)
    assert cap32 == math.floor(80.0 / -math.log(0.8))
    assert s.max_iterations(np.float64) == math.floor(700.0 / -math.log(0.8))
    assert s.shrink ** -cap32 < np.finfo(np.float32).max / 1000
    s.check_iterations(cap32, np.float32)
    with pytest.raises(ValueError, match="float32 scores"):
        s.check_iterations(cap32 + 1, np.float32)
    s.check_iterations(cap32 + 1, np.float64)
    assert SGLB(0.1, 0.0, None).max_iterations() is None
    SGLB(0.1, 0.0, None).check_iterations(10**9)
    with pytest.raises(ValueError, match="float32 or float64"):
        s.max_iterations(np.int32)


@pytest.mark.parametrize("kwargs, exc, match", [
    (dict(learning_rate=0.0), ValueError, "learning_rate"),
    (dict(learning_rate=-1.0), ValueError, "learning_rate"),
    (dict(model_shrink_rate=-0.1), ValueError, "model_shrink_rate"),
    (dict(learning_rate=0.5, model_shrink_rate=2.0), ValueError, "must be < 1"),
    (dict(diffusion_temperature=0.0), ValueError, "diffusion_temperature"),
    (dict(diffusion_temperature="hot"), TypeError, "diffusion_temperature"),
    (dict(seed=-1), ValueError, "seed"),
    (dict(seed=1.5), TypeError, "seed"),
])
def test_invalid_parameters_are_refused_at_first_use(kwargs, exc, match):
    s = SGLB(**kwargs)  # __init__ only stores (scikit-learn's rule), as the objectives do
    assert s.get_params() == {**SGLB().get_params(), **kwargs}
    for first_use in (s.validate, lambda: s.learning_rate_at(0), lambda: s.noise(2, 0),
                      lambda: s.shrink):
        with pytest.raises(exc, match=match):
            first_use()
    with pytest.raises(exc, match=match):
        SGLB().set_params(**kwargs)  # set_params checks at once


def test_init_is_written_out_and_only_stores():
    import inspect

    assert "__init__" in SGLB.__dict__
    source = inspect.getsource(SGLB.__init__)
    names = list(inspect.signature(SGLB.__init__).parameters)[1:]
    assert names == ["learning_rate", "model_shrink_rate", "diffusion_temperature", "seed"]
    assert all(f"self.{name} = {name}" in source for name in names)
    assert set(SGLB._parameter_constraints) == set(names)
    SGLB(learning_rate=-1.0)  # no error until the schedule is used


def test_set_params_checks_at_once_and_leaves_the_schedule_unchanged_on_error():
    s = SGLB(learning_rate=0.2, seed=1)
    with pytest.raises(ValueError, match="unknown parameter"):
        s.set_params(lr=0.1)
    with pytest.raises(ValueError, match="must be < 1"):
        s.set_params(model_shrink_rate=10.0)
    assert s.get_params()["model_shrink_rate"] == 0.001 and s.shrink == 1 - 0.001 * 0.2
    assert s.set_params(learning_rate=0.5) is s and s.shrink == 1 - 0.001 * 0.5


def test_invalid_iteration():
    s = SGLB()
    with pytest.raises(ValueError, match="iteration"):
        s.learning_rate_at(-1)
    with pytest.raises(ValueError, match="iteration"):
        s.noise(3, -2)


def test_shrink_factor_modes():
    from stochrank_objectives.sglb import shrink_factor

    assert shrink_factor(0.5, 0.2, 0) == 1.0 and shrink_factor(0.0, 0.2, 5) == 1.0
    assert shrink_factor(0.5, 0.2, 3) == 1.0 - 0.5 * 0.2
    assert shrink_factor(0.5, 0.2, 4, "Decreasing") == 1.0 - 0.5 / 4
    with pytest.raises(ValueError, match="model_shrink_mode"):
        shrink_factor(0.5, 0.2, 1, "Linear")


def test_tree_weights_bake_the_later_shrinkage():
    from stochrank_objectives.sglb import shrink_factor, tree_weights as catboost_tree_weights

    factors = [shrink_factor(0.5, 0.2, t) for t in range(5)]
    c = factors[1]
    # tree t is shrunk by every factor applied after it, up to the last kept tree
    assert catboost_tree_weights(factors) == pytest.approx([c ** 4, c ** 3, c ** 2, c, 1.0])
    assert catboost_tree_weights(factors, keep=2) == pytest.approx([c, 1.0])
    assert catboost_tree_weights(factors, keep=0) == []
    # the weighted sum of per-tree increments equals shrinking the running score
    increments = np.array([1.0, -2.0, 0.5, 3.0, 0.25])
    score = 0.0
    for f, inc in zip(factors, increments):
        score = score * f + inc
    assert np.dot(catboost_tree_weights(factors), increments) == pytest.approx(score)
    with pytest.raises(ValueError, match="exceeds"):
        catboost_tree_weights(factors, keep=6)
