"""Issue 24, items 2-3: every booster x every target, through the exports' one tree form, with
parity checked by independent evaluators (onnxruntime; the engines' documented rules)."""

import json
import warnings

import numpy as np
import pandas as pd
import pytest
from _export_rows import mq2008_rows_with_nan

import stochrank_objectives as so
from stochrank_objectives.export import (ExportError, ExportWarning, check_export, export,
                                         read_trees, to_elasticsearch, to_onnx, to_solr,
                                         to_vespa)
from stochrank_objectives.export._registry import TARGETS as REGISTRY

pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")
pytest.importorskip("lightgbm")
pytest.importorskip("xgboost")
pytest.importorskip("catboost")

#: the registry's targets, each once (an alias such as "opensearch" names the same target)
TARGETS = [name for name, spec in REGISTRY.items()
           if next(n for n, s in REGISTRY.items() if s is spec) == name]
#: target -> the options it is exported with here (a target not named here: none)
OPTIONS = {"solr": {"missing_value": -1e30}}  # the features' defaultValue, below every value
#: the target whose evaluator (onnxruntime) the others' evaluators are checked against
REFERENCE = "onnx"
BOOSTERS = {"lightgbm": (so.StochasticLGBMRanker, {"num_leaves": 7}),
            "xgboost": (so.StochasticXGBRanker, {"max_depth": 4}),
            "catboost": (so.StochasticCatBoostRanker, {"depth": 4})}
SENTINEL = OPTIONS["solr"]["missing_value"]


@pytest.fixture(scope="module")
def data():
    return mq2008_rows_with_nan(50, 1)[:4]


@pytest.fixture(scope="module")
def rankers(data):
    """Per booster: trained on rows with NaN; under SGLB; on a DataFrame with string names."""
    X, Xn, y, qid = data
    columns = [f"feat_{i}" for i in range(X.shape[1])]
    out = {}
    for kind, (cls, params) in BOOSTERS.items():
        out[kind, "nan"] = cls(so.LambdaMART(), n_estimators=12, **params).fit(Xn, y, qid=qid)
        out[kind, "sglb"] = cls(so.StochasticRank(top=5), sglb=so.SGLB(0.1, 0.5, 1e3, seed=0),
                                n_estimators=12, **params).fit(Xn, y, qid=qid)
        out[kind, "frame"] = cls(so.LambdaMART(), n_estimators=12, **params).fit(
            pd.DataFrame(Xn, columns=columns), y, qid=qid)
    return out


def _options(target):
    return dict(OPTIONS.get(target, {}))


def test_the_tables_name_registered_targets():
    # a key that is not (or no longer) a target would be a silently unused exception
    assert set(OPTIONS) | set(ARTEFACT_NAMES) | {REFERENCE} <= set(TARGETS)
    assert set(ARTEFACT_NAMES) == set(TARGETS)  # every artefact is checked for its names


@pytest.mark.parametrize("variant", ["nan", "sglb", "frame"])
@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("kind", list(BOOSTERS))
def test_parity_of_every_booster_and_target(rankers, data, kind, target, variant):
    X, Xn, _, qid = data
    ranker = rankers[kind, variant]
    for rows in (X, Xn):
        report = check_export(ranker, target, rows, qid=qid, **_options(target))
        assert report.max_abs_diff < 1e-5, report
        assert report.same_ranking, report
        assert report.n_queries == 50


@pytest.mark.parametrize("kind", list(BOOSTERS))
def test_evaluators_agree_with_onnxruntime(rankers, data, kind):
    """The other targets' evaluators, cross-checked against onnxruntime on the same model."""
    _, Xn, _, _ = data
    ranker = rankers[kind, "nan"]
    names = list(read_trees(ranker).feature_names)

    def score(target):
        return REGISTRY[target].score(export(ranker, target, **_options(target)), Xn, names,
                                      **_options(target))

    reference = score(REFERENCE)
    scores = {target: score(target) for target in TARGETS if target != REFERENCE}
    assert scores
    for target, got in scores.items():
        np.testing.assert_allclose(got, reference, atol=1e-5, rtol=0, err_msg=target)


def _onnx_names(model, columns):
    meta = {p.key: p.value for p in model.metadata_props}
    assert json.loads(meta["feature_names"]) == columns


def _elasticsearch_names(body, columns):
    splits = _split_names(json.loads(body["model"]["model"]["definition"]))
    assert splits and splits <= set(columns)


def _vespa_names(vespa, columns):
    assert _split_names(vespa.model) <= set(columns)


def _solr_names(model, columns):
    assert [f["name"] for f in model["features"]] == columns


#: target -> its check that an artefact carries the data frame's column names
ARTEFACT_NAMES = {"onnx": _onnx_names, "elasticsearch": _elasticsearch_names,
                  "vespa": _vespa_names, "solr": _solr_names}


@pytest.mark.parametrize("target", TARGETS)
def test_dataframe_names_are_carried_into_every_artefact(rankers, target):
    ranker = rankers["lightgbm", "frame"]
    columns = [str(c) for c in ranker.feature_names_in_]
    ARTEFACT_NAMES[target](export(ranker, target, **_options(target)), columns)


def _split_names(trees) -> set:
    found, stack = set(), list(trees)
    while stack:
        node = stack.pop()
        if "split" in node:
            found.add(node["split"])
        stack.extend(node.get("children", ()))
    return found


def test_a_mapping_names_the_engine_features(rankers, data):
    X, Xn, _, qid = data
    ranker = rankers["xgboost", "nan"]
    mapping = {f"f{i}": f"feature_{i}" for i in range(X.shape[1])}
    body = to_elasticsearch(ranker, name="m", feature_names=mapping)
    assert body["model"]["name"] == "m"
    assert _split_names(json.loads(body["model"]["model"]["definition"])) <= set(
        mapping.values())
    report = check_export(ranker, "elasticsearch", Xn, qid=qid, feature_names=mapping)
    assert report.max_abs_diff < 1e-5 and report.same_ranking
    with pytest.raises(ValueError, match="does not have"):
        to_elasticsearch(ranker, feature_names={"nope": "x"})
    with pytest.raises(ValueError, match="names, the model"):
        to_solr(ranker, feature_names=["a", "b"])
    with pytest.raises(ValueError, match="unique"):
        to_onnx(ranker, feature_names={"f0": "f1"})


def test_plain_boosters_export_too(data):
    import catboost
    import lightgbm as lgb
    import xgboost as xgb
    from stochrank_objectives.adapters.xgboost import XGBObjective
    X, Xn, y, qid = data
    sizes = np.diff(so.query_offsets_from_qid(qid))
    models = [
        lgb.train({"objective": "lambdarank", "verbose": -1, "num_leaves": 7},
                  lgb.Dataset(Xn, y, group=sizes), 6),
        # base_score 0.5 stays in the model: carried as a constant (stump, profile, ONNX base)
        xgb.train({"disable_default_eval_metric": 1, "max_depth": 3},
                  xgb.DMatrix(Xn, y, qid=qid), 6, obj=XGBObjective(so.LambdaMART())),
        xgb.XGBRanker(n_estimators=6, max_depth=3).fit(Xn, y, qid=qid),
        catboost.CatBoost({"loss_function": "YetiRank", "iterations": 6, "depth": 3,
                           "verbose": False}).fit(catboost.Pool(Xn, y, group_id=qid)),
    ]
    for model in models:
        for target in TARGETS:
            options = _options(target)
            if target == "vespa" and model is models[-1]:
                # CatBoost names an array's features "0", "1", ...: numbers, not rank features
                with pytest.raises(ExportError, match="split name '0'.*feature_names="):
                    to_vespa(model)
                options["feature_names"] = [f"f{i}" for i in range(X.shape[1])]
            report = check_export(model, target, Xn, qid=qid, **options)
            assert report.max_abs_diff < 1e-5 and report.same_ranking, (model, report)


def test_solr_warns_where_absent_features_are_routed_unlike_the_booster(rankers, data):
    _, Xn, _, qid = data
    ranker = rankers["xgboost", "nan"]
    with pytest.warns(ExportWarning, match="defaultValue.*missing_value="):
        model = to_solr(ranker)
    report = check_export(ranker, "solr", Xn, qid=qid, exported=model)
    assert report.max_abs_diff > 1e-3  # what the warning is about
    with warnings.catch_warnings():
        warnings.simplefilter("error", ExportWarning)
        to_solr(ranker, missing_value=SENTINEL)


def test_categorical_splits_are_refused_naming_target_and_feature(data):
    X, _, y, qid = data
    frame = pd.DataFrame(X[:, :5], columns=["a", "b", "c", "d", "e"])
    frame["colour"] = pd.Categorical(np.where(X[:, 39] > 0.5, "red", "blue"))
    lgb_ranker = so.StochasticLGBMRanker(so.LambdaMART(), n_estimators=5, num_leaves=7,
                                         min_data_per_group=5, cat_smooth=1)
    lgb_ranker.fit(frame, y, qid=qid)
    with pytest.raises(ExportError, match="Solr LTR.*categorical split on feature 'colour'"):
        to_solr(lgb_ranker)
    xgb_ranker = so.StochasticXGBRanker(so.LambdaMART(), n_estimators=5, max_depth=3,
                                        enable_categorical=True).fit(frame, y, qid=qid)
    with pytest.raises(ExportError, match="ONNX.*categorical split on feature 'colour'"):
        to_onnx(xgb_ranker)
    cb_ranker = so.StochasticCatBoostRanker(so.LambdaMART(), n_estimators=5, depth=3,
                                            cat_features=["colour"], has_time=True)
    cb_ranker.fit(frame, y, qid=qid)
    with pytest.raises(ExportError, match="Elasticsearch.*categorical features.*'colour'"):
        to_elasticsearch(cb_ranker)


def test_vespa_files_and_profile(rankers, tmp_path):
    vespa = to_vespa(rankers["catboost", "nan"], name="ranker_1")
    path = vespa.save(tmp_path)
    assert path == tmp_path / "models" / "ranker_1.json"
    assert json.loads(path.read_text()) == vespa.model
    assert 'xgboost("ranker_1.json")' in vespa.rank_profile
    assert "rank-profile ranker_1 inherits default" in vespa.rank_profile
    with pytest.raises(ValueError, match="Vespa model name"):
        to_vespa(rankers["catboost", "nan"], name="bad name")


def test_unknown_targets_and_models_are_refused(rankers, data):
    with pytest.raises(ValueError, match="unknown target"):
        check_export(rankers["lightgbm", "nan"], "pmml", data[0])
    with pytest.raises(TypeError, match="cannot export a list"):
        to_onnx([1, 2])
