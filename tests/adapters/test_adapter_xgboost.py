"""XGBoost adapter: training on MQ2008, SGLB equivalence, reproducibility, saved models, errors."""

import json

import numpy as np
import pytest

xgb = pytest.importorskip("xgboost")

from stochrank_objectives import StochasticRank, metrics, query_offsets_from_qid  # noqa: E402
from stochrank_objectives.adapters.xgboost import (  # noqa: E402
    DEFAULT_PARAMS,
    StochasticXGBRanker,
    XGBMetric,
    XGBObjective,
)
from stochrank_objectives.sglb import SGLB  # noqa: E402
from _reference import (  # noqa: E402
    Recorder,
    predict_without_the_package,
    train_and_vali_arrays,
)

# One thread: the tests are tiny, and on a busy 2-core machine two threads are much slower.
PARAMS = {**DEFAULT_PARAMS, "max_depth": 3, "learning_rate": 0.3, "nthread": 1,
          "tree_method": "hist", "seed": 0}


@pytest.fixture(scope="module")
def mq2008(mq2008_train_vali):  # bundled with the package (conftest)
    return train_and_vali_arrays(mq2008_train_vali, "qid")


@pytest.fixture(scope="module")
def small(mq2008_first_queries):
    X, y, _, qid = mq2008_first_queries
    return X, y, qid


def _sglb_reference(X, y, qid, objective, sglb, n_trees, params, base_score=0.0):
    """Explicit shrink-and-refit: F carried in base_margin, one tree per xgb.train call."""
    offs = query_offsets_from_qid(qid)
    F = np.full(y.size, base_score)
    for t in range(n_trees):
        S = sglb.shrink * F
        dmat = xgb.DMatrix(X, y, qid=qid, base_margin=S)

        def fixed(predt, dtrain, t=t):
            grad, hess = objective.grad_hess(predt.astype(np.float64), y, offs, iteration=t)
            return grad + np.sqrt(hess) * sglb.noise(y.size, t), hess  # preconditioned

        booster = xgb.train({**params, "base_score": 0.0, "learning_rate": sglb.learning_rate},
                            dmat, 1, obj=fixed)
        F = booster.predict(dmat, output_margin=True).astype(np.float64)
    return F


def _ndcg5(scores, y, qid):
    return metrics.ndcg_at_k(scores, y, query_offsets_from_qid(qid), 5)


# -- training on MQ2008 ---------------------------------------------------------------------
def test_xgb_train_beats_constant_model(mq2008):
    X, y, qid, Xv, yv, qid_v = mq2008
    dtrain, dvalid = xgb.DMatrix(X, y, qid=qid), xgb.DMatrix(Xv, yv, qid=qid_v)
    log = {}
    booster = xgb.train(PARAMS, dtrain, 40, evals=[(dvalid, "vali")],
                        obj=XGBObjective(StochasticRank(metric="NDCG", top=5)),
                        custom_metric=XGBMetric("NDCG", 5), maximize=True,
                        early_stopping_rounds=10, evals_result=log, verbose_eval=False)
    assert list(log["vali"]) == ["NDCG@5"]  # no default rmse
    best = booster.best_iteration
    pred = booster.predict(dvalid, output_margin=True, iteration_range=(0, best + 1))
    ndcg = _ndcg5(pred, yv, qid_v)
    assert ndcg > _ndcg5(np.zeros_like(yv), yv, qid_v) + 0.2
    # XGBoost passes evaluation results through "%f" text: 6 decimals
    assert booster.best_score == pytest.approx(ndcg, abs=1e-6)
    assert max(log["vali"]["NDCG@5"]) == pytest.approx(ndcg, abs=1e-6)
    first = xgb.train(PARAMS, dtrain, 1, obj=XGBObjective(StochasticRank(top=5)))
    assert json.loads(first.save_config())["learner"]["learner_model_param"]["base_score"] in (
        "[0E0]", "0E0")


def test_ranker_beats_constant_model_and_keeps_best_trees(mq2008):
    X, y, qid, Xv, yv, qid_v = mq2008
    ranker = StochasticXGBRanker(StochasticRank(metric="NDCG", top=5), n_estimators=40,
                                 max_depth=3, learning_rate=0.3, eval_metric="NDCG@5",
                                 early_stopping_rounds=10, n_jobs=1)
    assert ranker.fit(X, y, qid=qid, eval_set=[(Xv, yv, qid_v)]) is ranker
    pred = ranker.predict(Xv)
    ndcg = _ndcg5(pred, yv, qid_v)
    assert ndcg > _ndcg5(np.zeros_like(yv), yv, qid_v) + 0.2
    # XGBRanker's early stopping: the booster keeps the rounds after the best one too, and
    # predict uses the best ones (best_iteration, 0-based)
    best = ranker.best_iteration_
    assert best == ranker.best_iteration
    assert ranker.get_booster().num_boosted_rounds() == best + 1 + 10
    assert max(ranker.evals_result_["validation_0"]["NDCG@5"]) == pytest.approx(ndcg, abs=1e-6)
    np.testing.assert_array_equal(
        pred, ranker.get_booster().predict(xgb.DMatrix(Xv), output_margin=True,
                                           iteration_range=(0, best + 1)))
    params = ranker.get_params()
    assert params["max_depth"] == 3 and params["n_estimators"] == 40
    assert ranker.set_params(max_depth=2).get_params()["max_depth"] == 2 == ranker.max_depth


def test_metric_matches_package_metrics(mq2008):
    _, _, _, Xv, yv, qid_v = mq2008
    offs = query_offsets_from_qid(qid_v)
    scores = np.round(Xv[:, 0], 1).astype(np.float32)  # many ties
    dmat = xgb.DMatrix(Xv, yv, qid=qid_v)
    for metric, k, fn, opts in [("NDCG", 5, metrics.ndcg_at_k, {}),
                                ("ERR", 3, metrics.err_at_k, {"grade_max": 2}),
                                ("mrr", None, metrics.mrr, {})]:
        m = XGBMetric(metric, k, **opts)
        name, value = m(scores, dmat)
        assert name == m.name
        assert value == pytest.approx(fn(scores, yv, offs, k, ties="worst", **opts), abs=1e-15)
    assert XGBMetric.from_string("ERR@10").name == "ERR@10"
    assert XGBMetric.from_string("MRR").k is None
    best = XGBMetric("NDCG", 5, ties="best")(scores, dmat)[1]
    assert best > XGBMetric("NDCG", 5)(scores, dmat)[1]


# -- iterations and reproducibility ---------------------------------------------------------
def test_iteration_counting(small):
    X, y, qid = small
    dtrain = xgb.DMatrix(X, y, qid=qid)
    rec = Recorder(StochasticRank(top=5))
    xgb.train(PARAMS, dtrain, 3, obj=XGBObjective(rec))
    obj = XGBObjective(rec)
    xgb.train(PARAMS, dtrain, 3, obj=obj, callbacks=[obj.callback()])
    xgb.train(PARAMS, dtrain, 2, obj=obj, callbacks=[obj.callback()])  # reset by the callback
    StochasticXGBRanker(rec, n_estimators=2, max_depth=2, n_jobs=1).fit(X, y, qid=qid)
    assert rec.iterations == [0, 1, 2, 0, 1, 2, 0, 1, 0, 1]


def test_same_seed_gives_bit_identical_models(small):
    X, y, qid = small
    dtrain = xgb.DMatrix(X, y, qid=qid)

    def model(seed):
        return bytes(xgb.train(PARAMS, dtrain, 8, obj=XGBObjective(StochasticRank(seed=seed)))
                     .save_raw("json"))

    assert model(3) == model(3)
    assert model(3) != model(4)
    ranker = StochasticXGBRanker(StochasticRank(top=5, seed=1), n_estimators=6, max_depth=3,
                                 sglb=SGLB(0.3, 0.5, 100.0, seed=2), learning_rate=0.3,
                                 n_jobs=1)
    a = bytes(ranker.fit(X, y, qid=qid).get_booster().save_raw("json"))
    b = bytes(ranker.fit(X, y, qid=qid).get_booster().save_raw("json"))
    assert a == b


def test_contiguous_unsorted_qid_is_renumbered(small):
    X, y, qid = small
    ranker = StochasticXGBRanker(StochasticRank(top=5), n_estimators=4, max_depth=3, n_jobs=1)
    a = ranker.fit(X, y, qid=qid).predict(X)
    b = ranker.fit(X, y, qid=-qid).predict(X)  # descending ids, same contiguous blocks
    np.testing.assert_array_equal(a, b)
    sizes = np.diff(query_offsets_from_qid(qid))
    np.testing.assert_array_equal(a, ranker.fit(X, y, group=sizes).predict(X))


# -- SGLB -----------------------------------------------------------------------------------
SGLB_CASE = dict(learning_rate=0.3, model_shrink_rate=0.6, diffusion_temperature=300.0, seed=5)


@pytest.mark.parametrize("base_score", [0.0, 0.5])
def test_sglb_matches_shrink_and_refit_reference(small, base_score):
    X, y, qid = small
    sglb = SGLB(**SGLB_CASE)
    inner = StochasticRank(metric="NDCG", top=5, seed=1)
    n_trees = 10
    obj = XGBObjective(inner, sglb=sglb)
    dtrain = xgb.DMatrix(X, y, qid=qid)
    booster = xgb.train({**PARAMS, "base_score": base_score}, dtrain, n_trees, obj=obj,
                        callbacks=[obj.callback()])
    assert float(booster.attr("stochrank_sglb_final_scale")) == sglb.final_scale(n_trees)
    pred = booster.predict(xgb.DMatrix(X), output_margin=True).astype(np.float64)
    F = _sglb_reference(X, y, qid, inner, sglb, n_trees, PARAMS, base_score)
    assert np.abs(F).max() > 0.01
    np.testing.assert_allclose(pred, F, rtol=0, atol=1e-5 * np.abs(F).max())


def test_sglb_with_early_stopping_finalises_the_best_prefix(mq2008, small):
    X, y, qid = small
    _, _, _, Xv, yv, qid_v = mq2008
    sglb = SGLB(**SGLB_CASE)
    inner = StochasticRank(metric="NDCG", top=5, seed=1)
    ranker = StochasticXGBRanker(inner, sglb=sglb, learning_rate=sglb.learning_rate,
                                 n_estimators=30, eval_metric="NDCG@5",
                                 early_stopping_rounds=3, max_depth=PARAMS["max_depth"],
                                 tree_method=PARAMS["tree_method"], n_jobs=1)
    ranker.fit(X, y, qid=qid, eval_set=[(Xv, yv, qid_v)])
    best = ranker.best_iteration_
    assert best is not None and best + 1 < 30
    assert ranker.get_booster().num_boosted_rounds() == best + 1
    F = _sglb_reference(X, y, qid, inner, sglb, best + 1, PARAMS)
    np.testing.assert_allclose(ranker.predict(X), F, rtol=0, atol=1e-5 * np.abs(F).max())


@pytest.mark.parametrize("fmt", ["json", "ubj"])
def test_saved_model_predicts_identically_without_the_package(small, tmp_path, fmt):
    X, y, qid = small
    ranker = StochasticXGBRanker(StochasticRank(top=5, seed=2), sglb=SGLB(**SGLB_CASE),
                                 learning_rate=SGLB_CASE["learning_rate"], n_estimators=6, max_depth=3, n_jobs=1)
    expected = ranker.fit(X, y, qid=qid).predict(X)
    ranker.save_model(str(tmp_path / f"model.{fmt}"))
    pred = predict_without_the_package(
        tmp_path, X, f"import xgboost as xgb\nb = xgb.Booster(model_file='model.{fmt}')\n"
        "pred = b.predict(xgb.DMatrix(X), output_margin=True)\n")
    np.testing.assert_array_equal(pred, expected)


def test_sglb_errors(small):
    X, y, qid = small
    dtrain = xgb.DMatrix(X, y, qid=qid)
    obj = XGBObjective(StochasticRank(top=5), sglb=SGLB(**SGLB_CASE))
    with pytest.raises(RuntimeError, match="callback"):
        xgb.train(PARAMS, dtrain, 2, obj=obj)
    booster = xgb.train(PARAMS, dtrain, 2, obj=obj, callbacks=[obj.callback()])
    with pytest.raises(RuntimeError, match="already been finalised"):
        obj.finalize(booster)
    with pytest.raises(ValueError, match="xgb_model"):
        xgb.train(PARAMS, dtrain, 2, obj=obj, xgb_model=booster, callbacks=[obj.callback()])
    with pytest.raises(ValueError, match="gbtree"):
        xgb.train({**PARAMS, "booster": "dart"}, dtrain, 2, obj=obj, callbacks=[obj.callback()])
    # float32 overflow guard of G = F c^-t
    steep = SGLB(1.0, 0.9, None)  # c = 0.1: 34 trees at most
    with pytest.raises(ValueError, match="float32"):
        StochasticXGBRanker(StochasticRank(), sglb=steep, learning_rate=1.0, n_estimators=35,
                            n_jobs=1).fit(X, y, qid=qid)
    with pytest.raises(ValueError, match="float32"):
        XGBObjective(StochasticRank(), sglb=steep).callback().before_iteration(
            xgb.Booster(), 35, {})
    with pytest.raises(ValueError, match="learning_rate"):
        StochasticXGBRanker(StochasticRank(), sglb=SGLB(0.1), learning_rate=0.2,
                            n_jobs=1).fit(X, y, qid=qid)
    assert XGBObjective(StochasticRank()).finalize(booster) is booster  # no SGLB: unchanged


# -- bad inputs -----------------------------------------------------------------------------
def test_missing_groups_weights_and_lengths(small):
    X, y, qid = small
    obj = XGBObjective(StochasticRank(top=5))
    with pytest.raises(ValueError, match="qid="):
        xgb.train(PARAMS, xgb.DMatrix(X, y), 2, obj=obj)
    with pytest.raises(ValueError, match="every query's weight is 0"):
        weights = np.zeros(np.unique(qid).size)  # XGBoost itself takes them
        xgb.train(PARAMS, xgb.DMatrix(X, y, qid=qid, weight=weights), 2, obj=obj)
    dtrain = xgb.DMatrix(X, y, qid=qid)
    with pytest.raises(ValueError, match="length mismatch"):
        obj(np.zeros(y.size - 1, dtype=np.float32), dtrain)
    with pytest.raises(ValueError, match="one score per document"):
        obj(np.zeros((y.size, 2), dtype=np.float32), dtrain)
    with pytest.raises(TypeError, match="DMatrix"):
        obj(np.zeros(y.size), y)
    with pytest.raises(ValueError, match="qid="):
        XGBMetric("NDCG", 5)(np.zeros(y.size), xgb.DMatrix(X, y))
    with pytest.raises(ValueError, match="length mismatch"):
        XGBMetric("NDCG", 5)(np.zeros(y.size + 2), dtrain)


def test_ranker_input_errors(small):
    X, y, qid = small
    ranker = StochasticXGBRanker(StochasticRank(top=5), n_estimators=2, n_jobs=1)
    shuffled = qid.copy()
    shuffled[[0, -1]] = shuffled[[-1, 0]]  # the first query now appears twice
    with pytest.raises(ValueError, match="contiguous"):
        ranker.fit(X, y, qid=shuffled)
    with pytest.raises(ValueError, match="exactly one of qid"):
        ranker.fit(X, y)
    with pytest.raises(ValueError, match="exactly one of qid"):
        ranker.fit(X, y, qid=qid, group=[y.size])
    with pytest.raises(ValueError, match="sum to"):
        ranker.fit(X, y, group=[y.size - 1])
    with pytest.raises(ValueError, match="qid has shape"):
        ranker.fit(X, y, qid=qid[:-1])
    with pytest.raises(ValueError, match=r"eval_set\[0\]: qid has shape"):
        ranker.fit(X, y, qid=qid, eval_set=[(X, y, qid[:-5])])
    # an XGBRanker (X, y) pair needs its queries (eval_qid=, eval_group= or a qid column)
    with pytest.raises(ValueError, match=r"eval_set\[0\]: pass exactly one of qid"):
        ranker.fit(X, y, qid=qid, eval_set=[(X, y)])
    with pytest.raises(TypeError, match=r"eval_set\[0\] must be an \(X, y\) pair"):
        ranker.fit(X, y, qid=qid, eval_set=[(X,)])
    # XGBRanker's own answers: early stopping needs an eval set; an unknown parameter (or an
    # alias such as obj=) is one XGBoost warns it does not use; not fitted
    with pytest.raises(ValueError, match="at least 1 validation dataset for early stopping"):
        StochasticXGBRanker(StochasticRank(), early_stopping_rounds=3, n_jobs=1).fit(X, y, qid=qid)
    with pytest.warns(UserWarning, match='Parameters: { "obj" } are not used'):
        StochasticXGBRanker(StochasticRank(), obj="rank:ndcg", n_estimators=1,
                            n_jobs=1).fit(X, y, qid=qid)
    with pytest.raises(AttributeError, match="need to call fit"):
        StochasticXGBRanker(StochasticRank(), n_jobs=1).predict(X)
    fitted = ranker.fit(X, y, qid=qid)
    with pytest.raises(ValueError, match="Feature shape mismatch"):  # XGBoost's own
        fitted.predict(X[:, :5])
    with pytest.raises(TypeError, match="grad_hess"):
        XGBObjective(object())
    with pytest.raises(ValueError, match="unknown metric"):
        XGBMetric("AUC")
