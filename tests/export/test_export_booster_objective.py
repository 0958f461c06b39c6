"""Issue 24, item 1: a booster trained by this package says it is a ranker in its own saved
form (LightGBM ``objective=lambdarank``, XGBoost ``rank:pairwise``), with every prediction
unchanged, so that the ecosystem's converters take ``booster_`` directly."""

import json

import numpy as np
import pytest
from _export_rows import mq2008_rows_with_nan

import stochrank_objectives as so
from stochrank_objectives.adapters._serving import lightgbm_model_text_as_ranker

lgb = pytest.importorskip("lightgbm")
xgb = pytest.importorskip("xgboost")


@pytest.fixture(scope="module")
def data():
    return mq2008_rows_with_nan(40, 0)


SGLB = [None, so.SGLB(0.1, 0.5, 1e3, seed=0)]


def _unmarked_lightgbm(booster):
    """The same model as LightGBM wrote it before (no objective line): the reference."""
    text = booster.model_to_string()
    text = text.replace("objective=lambdarank\n", "").replace("[objective: lambdarank]",
                                                              "[objective: custom]")
    return lgb.Booster(model_str=text)


@pytest.mark.parametrize("sglb", SGLB, ids=["plain", "sglb"])
def test_lightgbm_ranker_names_lambdarank_and_predicts_the_same(data, tmp_path, sglb):
    X, Xn, y, qid, _ = data
    ranker = so.StochasticLGBMRanker(so.LambdaMART(), sglb=sglb, n_estimators=8, num_leaves=7)
    ranker.fit(Xn, y, qid=qid)
    booster = ranker.booster_
    assert booster.dump_model()["objective"] == "lambdarank"
    assert "\nobjective=lambdarank\n" in booster.model_to_string()
    reference = _unmarked_lightgbm(booster)
    assert "objective" not in reference.dump_model()
    for Z in (X, Xn):
        np.testing.assert_array_equal(ranker.predict(Z), reference.predict(Z, raw_score=True))
        np.testing.assert_array_equal(booster.predict(Z), booster.predict(Z, raw_score=True))
    path = tmp_path / "model.txt"
    ranker.save_model(path)
    loaded = lgb.Booster(model_file=str(path))
    assert loaded.dump_model()["objective"] == "lambdarank"
    np.testing.assert_array_equal(loaded.predict(Xn), ranker.predict(Xn))


def test_lightgbm_low_level_finalize_names_the_objective(data):
    X, _, y, _, offsets = data
    from stochrank_objectives.adapters.lightgbm import LGBMObjective
    obj = LGBMObjective(so.StochasticRank(top=5))
    booster = lgb.train({"objective": obj, "verbose": -1, "num_leaves": 7},
                        lgb.Dataset(X, y, group=np.diff(offsets)), 5)
    before = booster.predict(X, raw_score=True)
    assert "objective" not in booster.dump_model()  # what LightGBM leaves
    assert obj.finalize(booster) is booster
    assert booster.dump_model()["objective"] == "lambdarank"
    np.testing.assert_array_equal(booster.predict(X, raw_score=True), before)


def test_lightgbm_model_text_keeps_an_objective_it_has():
    text = "tree\nversion=v4\nmax_feature_idx=1\nobjective=regression\n\nTree=0\n"
    assert lightgbm_model_text_as_ranker(text) == text
    with pytest.raises(ValueError, match="not a LightGBM model text"):
        lightgbm_model_text_as_ranker("garbage\n\n")


def _config_objective(booster):
    return json.loads(booster.save_config())["learner"]["objective"]["name"]


@pytest.mark.parametrize("sglb", SGLB, ids=["plain", "sglb"])
def test_xgboost_ranker_names_rank_pairwise_and_predicts_the_same(data, tmp_path, sglb):
    X, Xn, y, qid, _ = data
    ranker = so.StochasticXGBRanker(so.LambdaMART(), sglb=sglb, n_estimators=8, max_depth=3)
    ranker.fit(Xn, y, qid=qid)
    booster = ranker.booster_
    assert _config_objective(booster) == "rank:pairwise"
    reference = booster.copy()
    reference.set_param({"objective": "reg:squarederror"})  # what the model said before
    for Z in (X, Xn):
        margin = booster.predict(xgb.DMatrix(Z), output_margin=True)
        np.testing.assert_array_equal(margin, reference.predict(xgb.DMatrix(Z),
                                                                output_margin=True))
        np.testing.assert_array_equal(booster.predict(xgb.DMatrix(Z)), margin)
        np.testing.assert_array_equal(ranker.predict(Z), margin)
    for suffix in ("json", "ubj"):
        path = tmp_path / f"model.{suffix}"
        ranker.save_model(path)
        loaded = xgb.Booster(model_file=str(path))
        assert _config_objective(loaded) == "rank:pairwise"
        np.testing.assert_array_equal(loaded.predict(xgb.DMatrix(Xn), output_margin=True),
                                      ranker.predict(Xn))
        if suffix == "json":
            saved = json.loads(path.read_text())["learner"]
            assert saved["objective"]["name"] == "rank:pairwise"
            assert saved["learner_model_param"]["base_score"] == json.loads(
                booster.save_config())["learner"]["learner_model_param"]["base_score"]


def test_xgboost_low_level_callback_names_the_objective_and_keeps_base_score(data):
    X, _, y, qid, _ = data
    from stochrank_objectives.adapters.xgboost import XGBObjective
    obj = XGBObjective(so.StochasticRank(top=5))
    # no base_score=0: XGBoost's 0.5 start stays part of the model, and of its margins
    params = {"disable_default_eval_metric": 1, "max_depth": 3}
    plain = xgb.train(params, xgb.DMatrix(X, y, qid=qid), 4, obj=XGBObjective(
        so.StochasticRank(top=5)))
    assert _config_objective(plain) == "reg:squarederror"  # without the callback: untouched
    booster = xgb.train(params, xgb.DMatrix(X, y, qid=qid), 4, obj=obj,
                        callbacks=[obj.callback()])
    assert _config_objective(booster) == "rank:pairwise"
    np.testing.assert_array_equal(booster.predict(xgb.DMatrix(X), output_margin=True),
                                  plain.predict(xgb.DMatrix(X), output_margin=True))
    reloaded = xgb.Booster(model_file=booster.save_raw("ubj"))
    np.testing.assert_array_equal(reloaded.predict(xgb.DMatrix(X), output_margin=True),
                                  plain.predict(xgb.DMatrix(X), output_margin=True))


@pytest.mark.parametrize("kind", ["lightgbm", "xgboost"])
def test_onnxmltools_converts_booster_directly(data, kind):
    onnxmltools = pytest.importorskip("onnxmltools")
    ort = pytest.importorskip("onnxruntime")
    from onnxmltools.convert.common.data_types import FloatTensorType

    X, Xn, y, qid, _ = data
    types = [("X", FloatTensorType([None, X.shape[1]]))]
    if kind == "lightgbm":
        ranker = so.StochasticLGBMRanker(so.StochasticRank(top=5), n_estimators=8, num_leaves=7)
        convert = onnxmltools.convert_lightgbm
    else:
        # unit hessians (hessian="constant"): onnxmltools reads a rank:* Booster as a regressor
        # only when its node covers are whole numbers (see docs/guide/serving.md)
        ranker = so.StochasticXGBRanker(so.StochasticRank(top=5, hessian="constant"),
                                        n_estimators=8, max_depth=3)
        convert = onnxmltools.convert_xgboost
    ranker.fit(X, y, qid=qid)
    model = convert(ranker.booster_, initial_types=types)
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    for Z in (X, Xn):
        scores = session.run(None, {"X": Z})[0].ravel()
        np.testing.assert_allclose(scores, ranker.predict(Z), atol=1e-5, rtol=0)


@pytest.mark.parametrize("kind", ["lightgbm", "xgboost"])
def test_treelite_loads_booster_with_exact_parity(data, kind):
    treelite = pytest.importorskip("treelite")
    X, Xn, y, qid, _ = data
    if kind == "lightgbm":
        ranker = so.StochasticLGBMRanker(so.LambdaMART(), n_estimators=8, num_leaves=7)
        frontend = treelite.frontend.from_lightgbm
    else:
        ranker = so.StochasticXGBRanker(so.LambdaMART(), n_estimators=8, max_depth=3)
        frontend = treelite.frontend.from_xgboost
    ranker.fit(Xn, y, qid=qid)
    model = frontend(ranker.booster_)
    for Z in (X, Xn):
        np.testing.assert_allclose(treelite.gtil.predict(model, Z).ravel(), ranker.predict(Z),
                                   atol=1e-6, rtol=0)
