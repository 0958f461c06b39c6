"""The clicks feature refuses impossible inputs and runs its propensity EM to convergence:
regression-EM stops on a tolerance (not after a fixed 50 iterations), warns when its cap stops it
first, and takes its settings from a ranker's fit; simulated clicks, click probabilities and
the rankers' ``position`` refuse values that have no meaning, naming the argument."""

import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

import stochrank_objectives
from stochrank_objectives import clicks as C
from stochrank_objectives.data import load_mq2008
from stochrank_objectives.objectives import StochasticRank
from tests._rankers import RANKERS, SHALLOW


@pytest.fixture(scope="module")
def mq():
    return load_mq2008("train").subset_queries(60)


def _clicks(d, positions):
    theta = C.power_law_propensities(positions.max() + 1, 1.0)
    return C.simulate_clicks(C.click_probabilities(d.y, 2), positions, d.query_offsets, theta,
                             n_sessions=10, seed=0) / 10


@pytest.fixture(scope="module")
def feature_positions(mq):
    """``(X, ctr, pos)``: positions that are a function of a feature (a slow case for the EM;
    three features keep each iteration cheap)."""
    pos = C.display_positions(mq.X[:, 0], mq.query_offsets)
    return mq.X[:, :3], _clicks(mq, pos), pos


def _ranker(booster="lightgbm"):
    pytest.importorskip(booster)
    cls = getattr(stochrank_objectives, RANKERS[booster])
    return cls(StochasticRank(metric="DCG", top=5, gain="linear"), n_estimators=3,
               random_state=0, n_jobs=1, **SHALLOW[booster])


# -- item 3: the EM runs to convergence ---------------------------------------------------------
@pytest.mark.slow
def test_em_default_is_the_converged_estimate(feature_positions):
    X, ctr, pos = feature_positions
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        default = C.estimate_propensities(X, ctr, pos)
    converged = C.estimate_propensities(X, ctr, pos, max_iter=100_000, tol=1e-8)
    # the former fixed 50 iterations stopped 0.19 away from here
    np.testing.assert_allclose(default, converged, atol=1e-3)


def test_em_warns_when_the_cap_stops_it_before_convergence(feature_positions):
    X, ctr, pos = feature_positions
    with pytest.warns(ConvergenceWarning, match="raise max_iter"):
        C.estimate_propensities(X, ctr, pos, max_iter=5)


@pytest.mark.parametrize("kwargs, match", [
    (dict(max_iter=0), "max_iter"), (dict(max_iter=-3), "max_iter"),
    (dict(max_iter=2.5), "max_iter"), (dict(tol=-1.0), "tol"), (dict(tol=np.nan), "tol")])
def test_em_refuses_settings_that_run_no_iteration(feature_positions, kwargs, match):
    X, ctr, pos = feature_positions
    with pytest.raises(ValueError, match=match):
        C.estimate_propensities(X, ctr, pos, **kwargs)


def test_em_n_iter_still_works_deprecated_and_refuses_zero(feature_positions):
    X, ctr, pos = feature_positions
    with pytest.raises(ValueError, match="n_iter must be .* >= 1"):
        C.estimate_propensities(X, ctr, pos, n_iter=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        with pytest.warns(FutureWarning, match="n_iter is deprecated, pass max_iter="):
            old = C.estimate_propensities(X, ctr, pos, n_iter=20)
        np.testing.assert_array_equal(old, C.estimate_propensities(X, ctr, pos, max_iter=20))


def test_ranker_fit_takes_the_em_settings(mq, feature_positions):
    X, ctr, pos = feature_positions
    with pytest.warns(ConvergenceWarning, match="max_iter"):
        ranker = _ranker().fit(X, ctr, qid=mq.qid, position=pos,
                               propensity=C.RegressionEM(max_iter=5))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        np.testing.assert_array_equal(ranker.propensities_,
                                      C.estimate_propensities(X, ctr, pos, max_iter=5))
    loose = _ranker().fit(X, ctr, qid=mq.qid, position=pos,
                          propensity=C.RegressionEM(tol=1e-3, ridge=2.0))
    np.testing.assert_array_equal(loose.propensities_,
                                  C.estimate_propensities(X, ctr, pos, tol=1e-3, ridge=2.0))


@pytest.mark.parametrize("kwargs, match", [
    (dict(max_iter=0), "max_iter"), (dict(tol=-1e-3), "tol"), (dict(ridge=-1.0), "ridge")])
def test_em_settings_are_refused_when_made(kwargs, match):
    with pytest.raises(ValueError, match=match):
        C.RegressionEM(**kwargs)


def test_dask_em_has_the_same_convergence_rule(mq, feature_positions):
    # the default (converged) estimate equals the one-array one: test_click_rankers.py
    pytest.importorskip("dask.dataframe")
    import dask.dataframe as dd
    import pandas as pd
    from stochrank_objectives.adapters.dask import estimate_propensities

    X, ctr, pos = feature_positions
    pdf = pd.DataFrame(X, columns=[f"f{i}" for i in range(X.shape[1])])
    pdf["qid"], pdf["click"], pdf["pos"] = mq.qid, ctr, pos
    df = dd.from_pandas(pdf, npartitions=2, sort=False)
    with pytest.warns(ConvergenceWarning, match="raise max_iter"):
        estimate_propensities(df, "qid", "click", "pos", max_iter=3)
    with pytest.raises(ValueError, match="n_iter must be .* >= 1"):
        estimate_propensities(df, "qid", "click", "pos", n_iter=0)
    with pytest.raises(ValueError, match="tol"):
        estimate_propensities(df, "qid", "click", "pos", tol=-1.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        with pytest.warns(FutureWarning, match="n_iter is deprecated"):
            old = estimate_propensities(df, "qid", "click", "pos", n_iter=3)
        np.testing.assert_allclose(old, C.estimate_propensities(X, ctr, pos, max_iter=3),
                                   rtol=1e-9)


# -- item 4: impossible positions and grades ------------------------------------------------------
@pytest.mark.parametrize("bad_row, value, match", [
    (3, -1, r"positions must be >= 0.*row 3 has -1"),
    (5, 10, r"positions.*row 5.*10.*propensities")])
def test_simulate_clicks_refuses_positions_outside_the_table(bad_row, value, match):
    pos = np.arange(10)
    pos[bad_row] = value
    with pytest.raises(ValueError, match=match):
        C.simulate_clicks(np.full(10, 0.5), pos, [0, 10], C.power_law_propensities(10))


def test_simulate_clicks_cascade_refuses_negative_positions():
    with pytest.raises(ValueError, match=r"positions.*row 1"):
        C.simulate_clicks(np.full(3, 0.5), [0, -1, 2], [0, 3], None, model="cascade")


@pytest.mark.parametrize("labels, grade_max, match", [
    ([0, 1, 4], 2, r"labels.*grade_max"), ([0, -1, 2], 2, r"labels.*>= 0"),
    ([0, np.nan], 2, "labels"), ([0, 0], 0, "grade_max")])
def test_click_probabilities_refuses_grades_outside_0_to_grade_max(labels, grade_max, match):
    with pytest.raises(ValueError, match=match):
        C.click_probabilities(labels, grade_max)


def test_click_probabilities_refuses_low_high_outside_the_unit_interval():
    with pytest.raises(ValueError, match="high"):
        C.click_probabilities([0, 1], 1, high=1.5)


def test_click_probabilities_of_valid_grades_are_probabilities():
    p = C.click_probabilities([0, 1, 2, 2.0], 2)
    np.testing.assert_allclose(p, [0.1, 0.4, 1.0, 1.0])


@pytest.mark.parametrize("propensity", [None, "given"])
def test_ranker_refuses_a_constant_position(mq, propensity):
    pos = np.full(mq.y.size, 2)
    ctr = _clicks(mq, C.display_positions(mq.X[:, 3], mq.query_offsets))
    kwargs = {} if propensity is None else dict(propensity=C.power_law_propensities(3))
    with pytest.raises(ValueError, match="position: every row has the same display position"):
        _ranker().fit(mq.X, ctr, qid=mq.qid, position=pos, **kwargs)


# -- item 7b: propensities and attractiveness that are not probabilities -------------------------
@pytest.mark.parametrize("theta, match", [
    ([1.0, 1.5, 0.3], r"propensities.*\[0, 1\]"), ([1.0, -0.1, 0.3], r"propensities.*\[0, 1\]"),
    ([1.0, np.nan, 0.3], r"propensities.*entry 1 is nan"),
    ([[1.0, 0.5], [0.3, 0.2]], "propensities must be one-dimensional")])
def test_simulate_clicks_refuses_propensities_that_are_not_probabilities(theta, match):
    with pytest.raises(ValueError, match=match):
        C.simulate_clicks(np.full(3, 0.5), [0, 1, 2], [0, 3], theta)


def test_simulate_clicks_refuses_attractiveness_that_is_not_a_probability():
    with pytest.raises(ValueError, match=r"attractiveness.*\[0, 1\]"):
        C.simulate_clicks([0.5, 1.2, 0.1], [0, 1, 2], [0, 3], [1.0, 0.5, 0.3])
