"""LightGBM adapter: training on MQ2008, SGLB equivalence, reproducibility, saved models, errors."""

import warnings

import numpy as np
import pytest

lgb = pytest.importorskip("lightgbm")

from stochrank_objectives import StochasticRank, metrics  # noqa: E402
from stochrank_objectives.adapters.lightgbm import LGBMMetric, LGBMObjective  # noqa: E402
from stochrank_objectives.sglb import SGLB  # noqa: E402
from _reference import (  # noqa: E402
    Recorder,
    predict_without_the_package,
    train_and_vali_arrays,
)

# One thread: the tests are tiny, and on a busy 2-core machine two threads are much slower.
PARAMS = dict(num_leaves=7, min_data_in_leaf=20, learning_rate=0.3, verbose=-1, num_threads=1,
              deterministic=True, force_row_wise=True, seed=0)


@pytest.fixture(scope="module")
def mq2008(mq2008_train_vali):  # bundled with the package (conftest)
    return train_and_vali_arrays(mq2008_train_vali, "query_offsets")


@pytest.fixture(scope="module")
def small(mq2008_first_queries):
    return mq2008_first_queries[:3]  # X, y, query offsets


def _dataset(X, y, offs, **kwargs):
    return lgb.Dataset(X, y, group=np.diff(offs), free_raw_data=False, **kwargs)


def _sglb_reference(X, y, offs, objective, sglb, n_trees, params):
    """Explicit shrink-and-refit: F carried in init_score, one tree per lgb.train call."""
    F = np.zeros(y.size)
    for t in range(n_trees):
        S = sglb.shrink * F
        grad, hess = objective.grad_hess(S, y, offs, iteration=t)
        grad = grad + np.sqrt(hess) * sglb.noise(y.size, t)  # preconditioned noise
        fixed = (lambda preds, data, g=grad, h=hess: (g, h))
        booster = lgb.train({**params, "objective": fixed, "learning_rate": sglb.learning_rate},
                            _dataset(X, y, offs, init_score=S), 1)
        F = S + booster.predict(X, raw_score=True)
    return F


# -- training on MQ2008 ---------------------------------------------------------------------
def test_lgb_train_beats_constant_model(mq2008):
    X, y, offs, Xv, yv, offs_v = mq2008
    train = _dataset(X, y, offs)
    valid = lgb.Dataset(Xv, yv, group=np.diff(offs_v), reference=train)
    obj = LGBMObjective(StochasticRank(metric="NDCG", top=5, seed=0))
    booster = lgb.train({**PARAMS, "objective": obj}, train, 40, valid_sets=[valid],
                        feval=LGBMMetric("NDCG", 5),
                        callbacks=[lgb.early_stopping(10, verbose=False)])
    assert booster.best_iteration >= 1
    pred = booster.predict(Xv)
    ndcg = metrics.ndcg_at_k(pred, yv, offs_v, 5)
    constant = metrics.ndcg_at_k(np.zeros_like(yv), yv, offs_v, 5)
    assert ndcg > constant + 0.2
    assert booster.best_score["valid_0"]["NDCG@5"] == pytest.approx(ndcg, abs=1e-12)


def test_lgbmranker_beats_constant_model(mq2008):
    X, y, offs, Xv, yv, offs_v = mq2008
    ranker = lgb.LGBMRanker(objective=LGBMObjective(StochasticRank(metric="NDCG", top=5)),
                            metric="None", n_estimators=40, **PARAMS)
    ranker.fit(X, y, group=np.diff(offs), eval_X=(Xv,), eval_y=(yv,),
               eval_group=[np.diff(offs_v)],
               eval_metric=[LGBMMetric("NDCG", 5), LGBMMetric("ERR", 5, grade_max=2),
                            LGBMMetric("MRR")],
               callbacks=[lgb.early_stopping(10, first_metric_only=True, verbose=False)])
    log = ranker.evals_result_["valid_0"]
    assert set(log) == {"NDCG@5", "ERR@5", "MRR"}
    ndcg = metrics.ndcg_at_k(ranker.predict(Xv), yv, offs_v, 5)
    assert ndcg > metrics.ndcg_at_k(np.zeros_like(yv), yv, offs_v, 5) + 0.2
    assert max(log["NDCG@5"]) == pytest.approx(ndcg, abs=1e-12)
    err = metrics.err_at_k(ranker.predict(Xv), yv, offs_v, 5, grade_max=2)
    assert log["ERR@5"][ranker.best_iteration_ - 1] == pytest.approx(err, abs=1e-12)


def test_metric_matches_package_metrics(mq2008):
    _, _, _, Xv, yv, offs_v = mq2008
    scores = np.round(Xv[:, 0], 1)  # many ties
    data = lgb.Dataset(Xv, yv, group=np.diff(offs_v)).construct()
    for metric, k, fn, opts in [("NDCG", 5, metrics.ndcg_at_k, {}),
                                ("err", 3, metrics.err_at_k, {"grade_max": 2}),
                                ("MRR", None, metrics.mrr, {})]:
        m = LGBMMetric(metric, k, **opts)
        expected = fn(scores, yv, offs_v, k, ties="worst", **opts)
        assert m(scores, data) == (m.name, pytest.approx(expected, abs=1e-15), True)
        assert m(yv, scores, None, np.diff(offs_v))[1] == pytest.approx(expected, abs=1e-15)
    assert LGBMMetric("NDCG", 5).name == "NDCG@5"
    assert LGBMMetric("mrr", ties="best").name == "MRR[best]"
    best = LGBMMetric("NDCG", 5, ties="best")(scores, data)[1]
    assert best > LGBMMetric("NDCG", 5)(scores, data)[1]


# -- iterations and reproducibility ---------------------------------------------------------
def test_iterations_restart_for_every_training_run(small):
    X, y, offs = small
    rec = Recorder(StochasticRank(top=5))
    obj = LGBMObjective(rec)
    lgb.train({**PARAMS, "objective": obj}, _dataset(X, y, offs), 4)
    lgb.train({**PARAMS, "objective": obj}, _dataset(X, y, offs), 3, callbacks=[obj.callback()])
    ranker = lgb.LGBMRanker(objective=obj, n_estimators=2, **PARAMS)
    ranker.fit(X, y, group=np.diff(offs))
    ranker.fit(X, y, group=np.diff(offs))
    assert rec.iterations == [0, 1, 2, 3, 0, 1, 2, 0, 1, 0, 1]


def test_same_seed_gives_bit_identical_models(small):
    X, y, offs = small
    obj = LGBMObjective(StochasticRank(top=5, seed=11))
    params = {**PARAMS, "objective": obj}
    a = lgb.train(params, _dataset(X, y, offs), 8).model_to_string()
    b = lgb.train(params, _dataset(X, y, offs), 8).model_to_string()  # same adapter, again
    fresh = LGBMObjective(StochasticRank(top=5, seed=11))
    c = lgb.train({**PARAMS, "objective": fresh}, _dataset(X, y, offs), 8).model_to_string()
    other = LGBMObjective(StochasticRank(top=5, seed=12))
    d = lgb.train({**PARAMS, "objective": other}, _dataset(X, y, offs), 8).model_to_string()
    assert a == b == c
    assert a != d


# -- SGLB -----------------------------------------------------------------------------------
SGLB_CASE = dict(learning_rate=0.3, model_shrink_rate=0.6, diffusion_temperature=300.0, seed=5)


def test_sglb_matches_shrink_and_refit_reference(small):
    X, y, offs = small
    sglb = SGLB(**SGLB_CASE)
    inner = StochasticRank(metric="NDCG", top=5, seed=1)
    n_trees = 10
    obj = LGBMObjective(inner, sglb=sglb)
    booster = lgb.train({**PARAMS, "objective": obj}, _dataset(X, y, offs), n_trees,
                        callbacks=[obj.callback()])
    raw = booster.predict(X, raw_score=True)
    assert obj.finalize(booster) is booster
    F = _sglb_reference(X, y, offs, inner, sglb, n_trees, PARAMS)
    pred = booster.predict(X, raw_score=True)
    assert np.abs(F).max() > 0.01
    np.testing.assert_allclose(pred, F, rtol=0, atol=1e-10 * np.abs(F).max())
    np.testing.assert_allclose(pred, sglb.final_scale(n_trees) * raw, rtol=1e-13, atol=1e-16)
    # the same through LGBMRanker
    obj2 = LGBMObjective(inner, sglb=sglb)
    ranker = lgb.LGBMRanker(objective=obj2, n_estimators=n_trees, **PARAMS)
    ranker.fit(X, y, group=np.diff(offs), callbacks=[obj2.callback()])
    obj2.finalize(ranker)
    np.testing.assert_array_equal(ranker.predict(X), pred)


def test_sglb_with_early_stopping_finalises_the_best_prefix(mq2008, small):
    X, y, offs = small
    _, _, _, Xv, yv, offs_v = mq2008
    sglb = SGLB(**SGLB_CASE)
    inner = StochasticRank(metric="NDCG", top=5, seed=1)
    obj = LGBMObjective(inner, sglb=sglb)
    train = _dataset(X, y, offs)
    valid = lgb.Dataset(Xv, yv, group=np.diff(offs_v), reference=train)
    booster = lgb.train({**PARAMS, "objective": obj}, train, 30, valid_sets=[valid],
                        feval=LGBMMetric("NDCG", 5),
                        callbacks=[obj.callback(), lgb.early_stopping(3, verbose=False)])
    best = booster.best_iteration
    assert 1 <= best < 30 and booster.current_iteration() == best
    obj.finalize(booster)
    F = _sglb_reference(X, y, offs, inner, sglb, best, PARAMS)
    np.testing.assert_allclose(booster.predict(X), F, rtol=0, atol=1e-10 * np.abs(F).max())


def test_saved_model_predicts_identically_without_the_package(small, tmp_path):
    X, y, offs = small
    obj = LGBMObjective(StochasticRank(top=5, seed=2), sglb=SGLB(**SGLB_CASE))
    booster = lgb.train({**PARAMS, "objective": obj}, _dataset(X, y, offs), 6,
                        callbacks=[obj.callback()])
    obj.finalize(booster)
    expected = booster.predict(X)
    booster.save_model(str(tmp_path / "model.txt"))
    pred = predict_without_the_package(
        tmp_path, X, "import lightgbm as lgb\n"
        "pred = lgb.Booster(model_file='model.txt').predict(X)\n")
    np.testing.assert_array_equal(pred, expected)


def test_sglb_errors(small):
    X, y, offs = small
    obj = LGBMObjective(StochasticRank(top=5), sglb=SGLB(**SGLB_CASE))
    with pytest.raises(RuntimeError, match="callback"):
        lgb.train({**PARAMS, "objective": obj}, _dataset(X, y, offs), 2)
    booster = lgb.train({**PARAMS, "objective": obj}, _dataset(X, y, offs), 2,
                        callbacks=[obj.callback()])
    obj.finalize(booster)
    with pytest.raises(RuntimeError, match="already been finalised"):
        obj.finalize(booster)
    # continued training (init_model) is exact under SGLB: test_lightgbm_stack.py
    with pytest.raises(ValueError, match="gbdt"):
        lgb.train({**PARAMS, "objective": obj, "boosting": "dart"}, _dataset(X, y, offs), 2,
                  callbacks=[obj.callback()])
    # float64 overflow guard of G = F c^-t
    steep = LGBMObjective(StochasticRank(), sglb=SGLB(1.0, 0.9, None))  # c = 0.1
    env = lgb.callback.CallbackEnv(model=None, params={}, iteration=400, begin_iteration=0,
                                   end_iteration=500, evaluation_result_list=None)
    with pytest.raises(ValueError, match="float64"):
        steep.callback()(env)
    # an early-stopped booster that kept its later trees is not a prefix of the SGLB model
    kept = lgb.train({**PARAMS, "objective": obj}, _dataset(X, y, offs), 6,
                     keep_training_booster=True, callbacks=[obj.callback()])
    kept.best_iteration = 3  # as lgb.early_stopping leaves it with keep_training_booster=True
    with pytest.raises(ValueError, match="best_iteration"):
        obj.finalize(kept)
    assert LGBMObjective(StochasticRank()).finalize(booster) is booster  # no SGLB: unchanged


# -- bad inputs -----------------------------------------------------------------------------
def test_missing_groups_weights_and_lengths(small):
    X, y, offs = small
    obj = LGBMObjective(StochasticRank(top=5))
    with pytest.raises(ValueError, match="group="):
        lgb.train({**PARAMS, "objective": obj}, lgb.Dataset(X, y), 2)
    varying = np.arange(1.0, y.size + 1.0)  # a weight per row: differs within a query
    with pytest.raises(ValueError, match="documents of query 0 .* different weights"):
        weighted = _dataset(X, y, offs, weight=varying)
        lgb.train({**PARAMS, "objective": obj}, weighted, 2)
    with pytest.raises(ValueError, match="documents of query 0 .* different weights"):
        lgb.LGBMRanker(objective=obj, n_estimators=2, **PARAMS).fit(
            X, y, group=np.diff(offs), sample_weight=varying)
    data = _dataset(X, y, offs).construct()
    with pytest.raises(ValueError, match="length mismatch"):
        obj(np.zeros(y.size - 1), data)
    with pytest.raises(ValueError, match="length mismatch"):
        obj(y, np.zeros(y.size), None, np.diff(offs)[:-1])
    with pytest.raises(ValueError, match="one score per document"):
        obj(np.zeros((y.size, 2)), data)
    with pytest.raises(TypeError, match="lightgbm.Dataset"):
        obj(np.zeros(y.size), y)
    metric = LGBMMetric("NDCG", 5)
    with pytest.raises(ValueError, match="group="):
        metric(np.zeros(y.size), lgb.Dataset(X, y).construct())
    with pytest.raises(ValueError, match="length mismatch"):
        metric(np.zeros(y.size + 3), data)


def test_bad_construction():
    with pytest.raises(TypeError, match="grad_hess"):
        LGBMObjective(lambda preds, data: (preds, preds))
    with pytest.raises(TypeError, match="SGLB"):
        LGBMObjective(StochasticRank(), sglb=0.1)
    with pytest.raises(ValueError, match="unknown metric"):
        LGBMMetric("AUC")
    with pytest.raises(ValueError, match="ties"):
        LGBMMetric("NDCG", 5, ties="random")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert "LGBMObjective(StochasticRank(" in repr(LGBMObjective(StochasticRank()))
