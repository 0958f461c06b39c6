"""The adapters' arguments and derivatives: non-finite gradients refused with one error, booster
aliases refused, SGLB's learning rate honoured, eval-metric strings; each test failed before its
fix."""

from __future__ import annotations

import json

import lightgbm as lgb
import numpy as np
import pytest
import xgboost as xgb

from stochrank_objectives import SGLB, StochasticRank
from stochrank_objectives.adapters.lightgbm import LGBMObjective
from stochrank_objectives.adapters.xgboost import StochasticXGBRanker, XGBMetric, XGBObjective

RNG = np.random.default_rng(0)
X = RNG.normal(size=(60, 3))
Y = RNG.integers(0, 3, 60).astype(float)
GROUP = [20, 20, 20]
QID = np.repeat([0, 1, 2], 20)


class NaNObjective:
    """Follows the protocol but returns NaN gradients (what overflowing scores produce)."""

    def grad_hess(self, scores, labels, query_offsets, iteration=0):
        return np.full(scores.shape, np.nan), np.ones(scores.shape)


def test_lightgbm_refuses_non_finite_gradients():
    adapter = LGBMObjective(NaNObjective())
    with pytest.raises(ValueError, match="non-finite derivative"):
        lgb.train({"objective": adapter, "verbose": -1}, lgb.Dataset(X, Y, group=GROUP), 3)


def test_xgboost_refuses_non_finite_gradients():
    with pytest.raises(ValueError, match="non-finite derivative"):
        xgb.train({"base_score": 0.0}, xgb.DMatrix(X, Y, qid=QID), 3,
                  obj=XGBObjective(NaNObjective()))
    with pytest.raises(ValueError, match="non-finite derivative"):
        StochasticXGBRanker(NaNObjective(), n_estimators=3).fit(X, Y, qid=QID)


@pytest.mark.parametrize("booster", ["lightgbm", "xgboost", "catboost"])
def test_every_ranker_refuses_non_finite_gradients_with_one_error(booster):
    """The same ValueError from each booster's ranker (CatBoost's adapter raised a
    FloatingPointError before, which CatBoost wrapped in a CatBoostError with a traceback)."""
    import stochrank_objectives as sro

    ranker_class = {"lightgbm": sro.StochasticLGBMRanker, "xgboost": sro.StochasticXGBRanker,
                    "catboost": sro.StochasticCatBoostRanker}[booster]
    with pytest.raises(ValueError, match="non-finite derivative for 60 document"):
        ranker_class(NaNObjective(), n_estimators=3).fit(X, Y, qid=QID)


def _trained_eta(ranker):
    config = json.loads(ranker.get_booster().save_config())
    return float(config["learner"]["gradient_booster"]["tree_train_param"]["learning_rate"])


def test_xgboost_ranker_honours_learning_rate_and_xgboost_aliases():
    ranker = StochasticXGBRanker(StochasticRank(metric="NDCG", top=5), n_estimators=2,
                                 learning_rate=0.05)
    ranker.fit(X, Y, qid=QID)
    assert _trained_eta(ranker) == pytest.approx(0.05)
    # an XGBRanker: XGBoost's alias eta is XGBoost's parameter, as in XGBRanker
    aliased = StochasticXGBRanker(StochasticRank(), n_estimators=2, eta=0.05).fit(X, Y, qid=QID)
    assert _trained_eta(aliased) == pytest.approx(0.05)


def test_lightgbm_sglb_refuses_a_different_booster_learning_rate():
    sglb = SGLB(learning_rate=0.1, model_shrink_rate=1e-3, diffusion_temperature=1e4, seed=0)
    adapter = LGBMObjective(StochasticRank(metric="NDCG", top=5), sglb=sglb)
    with pytest.raises(ValueError, match="learning_rate=0.3 differs from sglb.learning_rate"):
        lgb.train({"objective": adapter, "learning_rate": 0.3, "verbose": -1},
                  lgb.Dataset(X, Y, group=GROUP), 3, callbacks=[adapter.callback()])
    adapter = LGBMObjective(StochasticRank(metric="NDCG", top=5), sglb=sglb)
    lgb.train({"objective": adapter, "learning_rate": 0.1, "verbose": -1},
              lgb.Dataset(X, Y, group=GROUP), 3, callbacks=[adapter.callback()])


def test_eval_metric_strings_and_repr():
    with pytest.raises(ValueError, match="eval_metric 'ndcg@5-'.*positive integer"):
        XGBMetric.from_string("ndcg@5-")
    assert "grade_max=2" in repr(XGBMetric("ERR", 10, grade_max=2))
