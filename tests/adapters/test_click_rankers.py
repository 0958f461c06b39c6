"""Training the rankers on clicks: ``fit(X, clicks, position=..., propensity=...)`` is the
ranker on the IPS labels (the same model in every booster), with regression-EM propensities when
none are given."""

import numpy as np
import pytest

import stochrank_objectives
from stochrank_objectives import clicks as C
from stochrank_objectives.objectives import StochasticRank
from tests._rankers import RANKERS, SHALLOW


def _click_data(seed=0, n_queries=60, size=10):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n_queries * size, 4))
    grades = np.clip(np.round(X[:, 0] + 0.5 * rng.normal(size=len(X))), 0, 2)
    offs = np.arange(0, len(X) + 1, size)
    pos = C.display_positions(X[:, 1] + grades, offs)
    theta = C.power_law_propensities(size, 1.0)
    clicks = C.simulate_clicks(C.click_probabilities(grades, 2), pos, offs, theta,
                               n_sessions=5, seed=seed) / 5.0
    return X, clicks, pos, theta, np.full(n_queries, size)


def _ranker(booster):
    pytest.importorskip(booster)
    cls = getattr(stochrank_objectives, RANKERS[booster])
    return cls(StochasticRank(metric="DCG", top=5, gain="linear"), n_estimators=5,
               random_state=0, n_jobs=1, **SHALLOW[booster])


@pytest.mark.parametrize("booster", list(RANKERS))
def test_position_trains_on_the_ips_labels(booster):
    X, clicks, pos, theta, group = _click_data()
    on_clicks = _ranker(booster).fit(X, clicks, group=group, position=pos, propensity=theta)
    on_labels = _ranker(booster).fit(X, C.ips_labels(clicks, pos, theta), group=group)
    np.testing.assert_allclose(on_clicks.predict(X), on_labels.predict(X))
    np.testing.assert_allclose(on_clicks.propensities_, theta)


def test_propensities_are_estimated_when_not_given():
    X, clicks, pos, theta, group = _click_data()
    ranker = _ranker("lightgbm").fit(X, clicks, group=group, position=pos)
    expected = C.estimate_propensities(X, clicks, pos)
    np.testing.assert_allclose(ranker.propensities_, expected)
    assert ranker.propensities_[0] == 1.0 and np.all(ranker.propensities_[1:] < 1.0)


@pytest.mark.parametrize("kwargs, match", [
    (dict(propensity=[1.0, 0.5]), "propensity needs position="),
    (dict(position="counts"), "click-through rates"),
])
def test_click_arguments_are_checked(kwargs, match):
    X, clicks, pos, theta, group = _click_data()
    if kwargs.get("position") == "counts":
        kwargs, clicks = dict(position=pos), clicks * 5
    with pytest.raises(ValueError, match=match):
        _ranker("lightgbm").fit(X, clicks, group=group, **kwargs)
    assert not hasattr(_ranker("lightgbm"), "booster_")


def test_dask_ips_label_column_matches_ips_labels():
    pytest.importorskip("dask.dataframe")
    import dask.dataframe as dd
    import pandas as pd
    from stochrank_objectives.adapters.dask import ips_label_column

    X, clicks, pos, theta, group = _click_data(n_queries=6)
    df = dd.from_pandas(pd.DataFrame({"qid": np.repeat(np.arange(6), 10), "click": clicks,
                                      "pos": pos}), npartitions=3, sort=False)
    out = ips_label_column(df, "click", "pos", theta).compute()
    np.testing.assert_allclose(out["ips_label"], C.ips_labels(clicks, pos, theta))
    with pytest.raises(ValueError, match="needs propensity="):
        ips_label_column(df, "click", "pos", None)


def _click_frame(n_queries, npartitions):
    import dask.dataframe as dd
    import pandas as pd

    X, clicks, pos, theta, group = _click_data(n_queries=n_queries)
    pdf = pd.DataFrame(X, columns=[f"f{i}" for i in range(X.shape[1])])
    pdf["qid"], pdf["click"], pdf["pos"] = np.repeat(np.arange(n_queries), 10), clicks, pos
    return X, clicks, pos, theta, dd.from_pandas(pdf, npartitions=npartitions, sort=False)


def test_dask_regression_em_is_the_one_array_estimate():
    # every EM step is a sum over rows: one partition gives the array's estimate bit for bit,
    # four give it to rounding (the sums are added in partition order)
    pytest.importorskip("dask.dataframe")
    from stochrank_objectives.adapters.dask import estimate_propensities

    X, clicks, pos, theta, df1 = _click_frame(60, 1)
    local = C.estimate_propensities(X, clicks, pos)
    assert np.array_equal(estimate_propensities(df1, "qid", "click", "pos"), local)
    df4 = _click_frame(60, 4)[-1]
    assert df4.npartitions == 4
    np.testing.assert_allclose(estimate_propensities(df4, "qid", "click", "pos"), local,
                               rtol=1e-9, atol=1e-12)
    assert np.max(np.abs(local - theta)) < 0.2 and local[1] < 0.8  # it estimated something
    only_two = estimate_propensities(df4, "qid", "click", "pos", features=["f0", "f1"])
    np.testing.assert_allclose(only_two, C.estimate_propensities(X[:, :2], clicks, pos),
                               rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("kwargs, match", [
    (dict(click="clicks"), "no column 'clicks'"), (dict(features=["f9"]), "no column 'f9'"),
    (dict(features=[]), "at least one feature column"),
    (dict(n_sessions=0.5), "click rates in \\[0, 1\\]")])
def test_dask_regression_em_bad_input(kwargs, match):
    pytest.importorskip("dask.dataframe")
    from stochrank_objectives.adapters.dask import estimate_propensities

    df = _click_frame(6, 2)[-1]
    args = {**dict(qid="qid", click="click", position="pos"), **kwargs}
    with pytest.raises(ValueError, match=match):
        estimate_propensities(df, **args)
