"""SHAP on the package's rankers (issue 35, item 4; issue 42).

``shap.TreeExplainer`` recognises models by ``isinstance`` against the native classes
(``lightgbm.sklearn.LGBMRanker``, ``xgboost.sklearn.XGBRanker``, ``catboost.core.CatBoost``),
and the rankers are subclasses of them, so it takes the rankers themselves, as it takes the
booster's own model (``TreeExplainer(ranker.booster_)``) and the ranker's shortcut
``ranker.explainer()``. Each must be additive: the base value plus the SHAP values of a row
equal ``ranker.predict``.
"""

from __future__ import annotations

import sys

import numpy as np
import pytest

from stochrank_objectives import SGLB, StochasticRank

shap = pytest.importorskip("shap")

BOOSTERS = {
    "lightgbm": ("StochasticLGBMRanker", dict(num_leaves=7, min_data_in_leaf=5), 1e-9),
    # XGBoost's margins and SHAP's tree values are float32
    "xgboost": ("StochasticXGBRanker", dict(max_depth=3), 1e-5),
    "catboost": ("StochasticCatBoostRanker", dict(depth=3), 1e-9),
}


def _data(n_queries=30, seed=0, n_features=5):
    rng = np.random.default_rng(seed)
    sizes = rng.integers(4, 12, n_queries)
    qid = np.repeat(np.arange(n_queries), sizes)
    X = rng.normal(size=(qid.size, n_features))
    y = np.clip(np.round(X[:, 0] + 0.5 * X[:, 1] + rng.normal(0, 0.5, qid.size) + 1), 0, 3)
    return X, y, qid


X, Y, QID = _data()


def _ranker(booster, **kwargs):
    pytest.importorskip(booster)
    import stochrank_objectives

    name, params, _ = BOOSTERS[booster]
    params = dict(n_estimators=10, n_jobs=1, **params, **kwargs)
    return getattr(stochrank_objectives, name)(StochasticRank(top=5, seed=1), **params)


def _assert_additive(explanation, ranker, tol):
    values = np.asarray(explanation.values, dtype=np.float64)
    assert values.shape == X.shape
    total = np.asarray(explanation.base_values, dtype=np.float64) + values.sum(axis=1)
    predicted = ranker.predict(X)
    assert np.ptp(predicted) > 0   # a model that ranks, not a constant
    atol = tol * max(1.0, np.abs(predicted).max())
    np.testing.assert_allclose(total, predicted, rtol=0, atol=atol)


@pytest.mark.parametrize("booster", list(BOOSTERS))
@pytest.mark.parametrize("sglb", [None, SGLB(0.1, 0.01, 1e4, seed=0)], ids=["plain", "sglb"])
def test_booster_and_explainer_are_additive(booster, sglb):
    ranker = _ranker(booster, sglb=sglb).fit(X, Y, qid=QID)
    tol = BOOSTERS[booster][2]
    _assert_additive(shap.TreeExplainer(ranker.booster_)(X), ranker, tol)
    explainer = ranker.explainer()
    assert isinstance(explainer, shap.TreeExplainer)
    _assert_additive(explainer(X), ranker, tol)


@pytest.mark.parametrize("booster", ["lightgbm", "xgboost"])
def test_explainer_passes_background_data_and_options(booster):
    """``explainer(data, **kwargs)`` is ``TreeExplainer(booster_, data, **kwargs)``: with a
    background set the interventional SHAP values are additive too (SHAP's interventional
    path works in float32; it does not take CatBoost models at all, native ones included)."""
    ranker = _ranker(booster).fit(X, Y, qid=QID)
    explainer = ranker.explainer(X[:50], feature_perturbation="interventional")
    assert explainer.feature_perturbation == "interventional"
    _assert_additive(explainer(X), ranker, 1e-6)


def test_explainer_names_the_fitted_features():
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame(X, columns=[f"col{i}" for i in range(X.shape[1])])
    ranker = _ranker("lightgbm").fit(frame, Y, qid=QID)
    assert list(ranker.explainer()(frame).feature_names) == list(frame.columns)


@pytest.mark.parametrize("booster", list(BOOSTERS))
def test_explainer_needs_a_fitted_ranker_and_shap(monkeypatch, booster):
    ranker = _ranker(booster)
    # the booster's own error for an unfitted ranker's model
    with pytest.raises((AttributeError, ValueError),
                       match="not fitted yet: call fit first|fit beforehand|need to call fit"):
        ranker.explainer()
    ranker.fit(X, Y, qid=QID)
    monkeypatch.setitem(sys.modules, "shap", None)   # as if shap were not installed
    with pytest.raises(ImportError, match=r"pip install shap.*TreeExplainer\(ranker\)"):
        ranker.explainer()


def test_tree_explainer_takes_the_lightgbm_ranker_itself():
    """StochasticLGBMRanker is an LGBMRanker, which SHAP recognises (isinstance)."""
    ranker = _ranker("lightgbm", sglb=SGLB(0.1, 0.01, 1e4, seed=0)).fit(X, Y, qid=QID)
    _assert_additive(shap.TreeExplainer(ranker)(X), ranker, BOOSTERS["lightgbm"][2])


def test_tree_explainer_takes_the_xgboost_ranker_itself():
    """StochasticXGBRanker is an XGBRanker, which SHAP recognises (isinstance)."""
    ranker = _ranker("xgboost").fit(X, Y, qid=QID)
    _assert_additive(shap.TreeExplainer(ranker)(X), ranker, BOOSTERS["xgboost"][2])


@pytest.mark.parametrize("sglb", [None, SGLB(0.1, 0.01, 1e4, seed=0)], ids=["plain", "sglb"])
def test_tree_explainer_takes_the_catboost_ranker_itself(sglb):
    """StochasticCatBoostRanker is a catboost.CatBoost, which SHAP recognises (isinstance)."""
    ranker = _ranker("catboost", sglb=sglb).fit(X, Y, qid=QID)
    _assert_additive(shap.TreeExplainer(ranker)(X), ranker, BOOSTERS["catboost"][2])
