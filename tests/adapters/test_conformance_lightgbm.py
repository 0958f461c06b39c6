"""StochasticLGBMRanker is an ``lgb.LGBMRanker``: the same user code runs on both.

Every case runs on ``[lightgbm.LGBMRanker, StochasticLGBMRanker]`` (``ranker_class``) and is
written from LightGBM's documented scikit-learn API (lightgbm 4.7.0: ``LGBMRanker`` and
``LGBMModel``'s constructor, ``fit``, ``predict`` and fitted attributes, as its own ranker tests
exercise them). Ours trains the package's default objective (StochasticRank NDCG@5) where the
native trains ``lambdarank``; what differs by design is tested apart at the end (objective
strings give the native model, onnxmltools' exact-class table).
"""

from __future__ import annotations

import pickle
import warnings

import numpy as np
import pytest

lgb = pytest.importorskip("lightgbm")

from sklearn.base import clone  # noqa: E402

from stochrank_objectives import StochasticLGBMRanker, query_offsets_from_qid  # noqa: E402
from _rankers import graded_queries  # noqa: E402

X, Y, QID = graded_queries(20, seed=0)
XV, YV, QV = graded_queries(10, seed=1)
G = np.diff(query_offsets_from_qid(QID))
GV = np.diff(query_offsets_from_qid(QV))
SMALL = dict(n_estimators=4, num_leaves=7, min_child_samples=5, n_jobs=1, verbose=-1,
             random_state=0)
RANKERS = [lgb.LGBMRanker, StochasticLGBMRanker]
NDCG_AT = [f"ndcg@{k}" for k in range(1, 6)]

ranker_classes = pytest.mark.parametrize("ranker_class", RANKERS,
                                         ids=["LGBMRanker", "StochasticLGBMRanker"])


def _fit(ranker_class, **fit):
    params = {**SMALL, **fit.pop("params", {})}
    return ranker_class(**params).fit(X, Y, group=G, **fit)


# -- constructor values ----------------------------------------------------------------------
@ranker_classes
def test_constructor_is_keyword_and_defaults_are_lgbmrankers(ranker_class):
    params = ranker_class().get_params()
    native = lgb.LGBMRanker().get_params()
    assert {k: params[k] for k in native} == native
    assert params["objective"] is None and params["importance_type"] == "split"


@ranker_classes
@pytest.mark.parametrize("kwargs", [
    dict(verbose=-1), dict(verbosity=-1), dict(importance_type="gain"),
    dict(learning_rate="0.1"), dict(eta=0.2), dict(num_iterations=3),
    dict(boosting_type="goss"), dict(subsample=0.8, subsample_freq=1),
    dict(reg_lambda=1.0, reg_alpha=0.1, colsample_bytree=0.8, min_split_gain=0.0),
    dict(max_depth=3, min_child_weight=1e-2, subsample_for_bin=1000),
    dict(random_state=np.random.RandomState(0)), dict(n_jobs=-1), dict(deterministic=True),
], ids=lambda kw: ",".join(kw))
def test_constructor_values_lightgbm_takes(ranker_class, kwargs):
    ranker = ranker_class(**{**SMALL, **kwargs}).fit(X, Y, group=G)
    assert ranker.get_params()[next(iter(kwargs))] is not None
    assert np.isfinite(ranker.predict(XV)).all()
    if "num_iterations" in kwargs:  # the alias wins over n_estimators, as LightGBM logs
        assert ranker.n_estimators_ == 3
    if "importance_type" in kwargs:
        np.testing.assert_allclose(ranker.feature_importances_,
                                   ranker.booster_.feature_importance("gain"))


# -- eval sets in LightGBM's own forms -------------------------------------------------------
@ranker_classes
def test_eval_X_eval_y_eval_group_and_default_metric(ranker_class):
    ranker = _fit(ranker_class, eval_X=(XV,), eval_y=(YV,), eval_group=[GV])
    assert list(ranker.evals_result_) == ["valid_0"]
    assert list(ranker.evals_result_["valid_0"]) == NDCG_AT
    assert all(len(v) == 4 for v in ranker.evals_result_["valid_0"].values())
    assert list(ranker.best_score_["valid_0"]) == NDCG_AT


@ranker_classes
def test_eval_set_pairs_are_deprecated_as_in_lightgbm(ranker_class):
    with pytest.warns(lgb.basic.LGBMDeprecationWarning, match="eval_set"):
        ranker = _fit(ranker_class, eval_set=[(XV, YV)], eval_group=[GV])
    assert list(ranker.evals_result_) == ["valid_0"]


@ranker_classes
def test_eval_at_eval_names_and_several_sets(ranker_class):
    ranker = _fit(ranker_class, eval_X=(XV, X), eval_y=(YV, Y), eval_group=[GV, G],
                  eval_names=["vali", "train"], eval_at=[3, 10])
    assert sorted(ranker.evals_result_) == ["train", "vali"]
    assert list(ranker.evals_result_["vali"]) == ["ndcg@3", "ndcg@10"]


@ranker_classes
def test_eval_metric_strings_and_callables_at_fit(ranker_class):
    def mean_score(y_true, y_pred, weight, group):
        return "mean_score", float(np.mean(y_pred)), True

    ranker = _fit(ranker_class, eval_X=(XV,), eval_y=(YV,), eval_group=[GV],
                  eval_metric=["map", mean_score], eval_at=[5])
    assert set(ranker.evals_result_["valid_0"]) == {"map@5", "ndcg@5", "mean_score"}
    ranker = _fit(ranker_class, eval_X=(XV,), eval_y=(YV,), eval_group=[GV],
                  params=dict(metric="None"), eval_metric=mean_score)
    assert list(ranker.evals_result_["valid_0"]) == ["mean_score"]


@ranker_classes
def test_eval_sample_weight_and_eval_init_score(ranker_class):
    ranker = _fit(ranker_class, eval_X=(XV,), eval_y=(YV,), eval_group=[GV],
                  eval_sample_weight=[np.ones(YV.size)], eval_init_score=[np.zeros(YV.size)])
    assert len(ranker.evals_result_["valid_0"]["ndcg@1"]) == 4


@ranker_classes
def test_missing_group_and_eval_group_are_errors(ranker_class):
    with pytest.raises(ValueError):
        ranker_class(**SMALL).fit(X, Y)
    with pytest.raises(ValueError, match="eval_group"):
        ranker_class(**SMALL).fit(X, Y, group=G, eval_X=(XV,), eval_y=(YV,))


# -- fit arguments -----------------------------------------------------------------------------
@ranker_classes
def test_early_stopping_callback_and_one_based_best_iteration(ranker_class):
    ranker = _fit(ranker_class, params=dict(n_estimators=30), eval_X=(XV,), eval_y=(YV,),
                  eval_group=[GV], eval_at=[5],
                  callbacks=[lgb.early_stopping(3, verbose=False)])
    curve = ranker.evals_result_["valid_0"]["ndcg@5"]
    assert 1 <= ranker.best_iteration_ <= len(curve)
    assert ranker.best_score_["valid_0"]["ndcg@5"] == curve[ranker.best_iteration_ - 1]
    assert ranker.booster_.num_trees() == ranker.best_iteration_ == ranker.n_estimators_


@ranker_classes
def test_early_stopping_rounds_parameter(ranker_class):
    ranker = _fit(ranker_class, params=dict(n_estimators=30, early_stopping_rounds=3),
                  eval_X=(XV,), eval_y=(YV,), eval_group=[GV])
    assert ranker.best_iteration_ >= 1
    assert ranker.booster_.num_trees() == ranker.best_iteration_
    with pytest.raises(ValueError, match="at least one dataset"):
        _fit(ranker_class, params=dict(early_stopping_rounds=3))


@ranker_classes
def test_callbacks_log_and_record(ranker_class, capsys):
    record = {}
    _fit(ranker_class, eval_X=(XV,), eval_y=(YV,), eval_group=[GV], eval_at=[5],
         callbacks=[lgb.log_evaluation(1), lgb.record_evaluation(record)])
    assert capsys.readouterr().out.count("valid_0's ndcg@5") == 4
    assert len(record["valid_0"]["ndcg@5"]) == 4


@ranker_classes
def test_reset_parameter_callback(ranker_class):
    slow = _fit(ranker_class, callbacks=[lgb.reset_parameter(learning_rate=[1e-9] * 4)])
    assert np.ptp(slow.predict(XV)) < 1e-6  # tiny steps: every tree adds almost 0


@ranker_classes
def test_sample_weight_and_init_score(ranker_class):
    plain = _fit(ranker_class)
    weighted = _fit(ranker_class, sample_weight=np.repeat(np.arange(1.0, G.size + 1), G))
    assert not np.allclose(plain.predict(XV), weighted.predict(XV))
    on_scores = _fit(ranker_class, init_score=plain.predict(X))
    assert on_scores.booster_.num_trees() == 4  # predict leaves the init score out


@ranker_classes
def test_init_model_forms(ranker_class, tmp_path):
    first = _fit(ranker_class)
    path = tmp_path / "first.txt"
    first.booster_.save_model(path)
    for form in (first, first.booster_, str(path), path):
        assert _fit(ranker_class, init_model=form).booster_.num_trees() == 8
    # the other class's model too (both are LGBMModels)
    other = _fit(RANKERS[1 - RANKERS.index(ranker_class)])
    assert _fit(ranker_class, init_model=other).n_estimators_ == 8


@ranker_classes
def test_feature_name_and_categorical_feature_at_fit(ranker_class):
    Xc = X.copy()
    Xc[:, 4] = np.arange(Y.size) % 3
    names = ["a", "b", "c", "d", "cat"]
    ranker = ranker_class(**SMALL).fit(Xc, Y, group=G, feature_name=names,
                                       categorical_feature=[4])
    assert ranker.feature_name_ == names
    infos = ranker.booster_.dump_model()["feature_infos"]
    assert infos["cat"]["values"] and not infos["a"]["values"]  # read as categories


# -- data forms --------------------------------------------------------------------------------
@ranker_classes
def test_pandas_frames_and_category_columns(ranker_class):
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame(X, columns=list("abcde"))
    frame["e"] = pd.Categorical(np.arange(Y.size) % 3)
    ranker = ranker_class(**SMALL).fit(frame, pd.Series(Y), group=pd.Series(G))
    assert ranker.feature_name_ == list("abcde")
    assert list(ranker.feature_names_in_) == list("abcde") and ranker.n_features_in_ == 5
    vframe = pd.DataFrame(XV, columns=list("abcde"))
    vframe["e"] = pd.Categorical(np.arange(YV.size) % 3)
    assert ranker.predict(vframe).shape == (YV.size,)


@ranker_classes
def test_sparse_and_list_inputs(ranker_class):
    sp = pytest.importorskip("scipy.sparse")
    dense = _fit(ranker_class).predict(XV)
    sparse = ranker_class(**SMALL).fit(sp.csr_matrix(X), Y, group=G)
    np.testing.assert_allclose(sparse.predict(sp.csr_matrix(XV)), dense, atol=1e-12)
    rows = ranker_class(**SMALL).fit(X.tolist(), Y.tolist(), group=G.tolist())
    np.testing.assert_allclose(rows.predict(XV.tolist()), dense, atol=1e-12)
    assert not hasattr(rows, "feature_names_in_")


# -- predict arguments -------------------------------------------------------------------------
@ranker_classes
def test_predict_arguments(ranker_class):
    ranker = _fit(ranker_class)
    raw = ranker.predict(XV, raw_score=True)
    np.testing.assert_array_equal(ranker.predict(XV), raw)  # a ranker has no link
    first_two = ranker.predict(XV, num_iteration=2)
    last_two = ranker.predict(XV, start_iteration=2)
    np.testing.assert_allclose(first_two + last_two, raw, atol=1e-12)
    assert ranker.predict(XV, pred_leaf=True).shape == (YV.size, 4)
    contrib = ranker.predict(XV, pred_contrib=True)
    assert contrib.shape == (YV.size, 6)
    np.testing.assert_allclose(contrib.sum(axis=1), raw, atol=1e-9)
    ranker.predict(XV, validate_features=False)
    with pytest.raises(ValueError, match="4 features"):
        ranker.predict(XV[:, :4])


@ranker_classes
def test_predict_before_fit_is_lightgbms_error(ranker_class):
    with pytest.raises(lgb.compat.LGBMNotFittedError):
        ranker_class().predict(XV)
    for name in ("booster_", "best_iteration_", "evals_result_", "n_features_",
                 "feature_importances_", "objective_"):
        assert not hasattr(ranker_class(), name)


# -- fitted attributes -------------------------------------------------------------------------
@ranker_classes
def test_fitted_attributes(ranker_class):
    ranker = _fit(ranker_class)
    assert isinstance(ranker.booster_, lgb.Booster)
    assert ranker.n_features_ == ranker.n_features_in_ == 5
    assert ranker.n_estimators_ == ranker.n_iter_ == 4
    assert ranker.best_iteration_ == 0 and ranker.evals_result_ == {}
    assert ranker.feature_name_ == [f"Column_{j}" for j in range(5)]
    assert ranker.feature_importances_.shape == (5,)
    assert ranker.__sklearn_is_fitted__() and ranker.fitted_
    objective = ranker.objective_
    assert objective == "lambdarank" or hasattr(objective, "grad_hess")


# -- methods: scikit-learn ---------------------------------------------------------------------
@ranker_classes
def test_get_set_params_and_clone(ranker_class):
    ranker = ranker_class(**SMALL, max_bin=63)
    assert ranker.get_params()["max_bin"] == 63
    copy = clone(ranker).set_params(num_leaves=3, min_data_in_leaf=2)
    assert copy.get_params()["num_leaves"] == 3 and ranker.num_leaves == 7
    assert copy.get_params()["min_data_in_leaf"] == 2
    copy.fit(X, Y, group=G)
    assert all(t["num_leaves"] <= 3 for t in copy.booster_.dump_model()["tree_info"])


@ranker_classes
def test_pickle_round_trip(ranker_class):
    ranker = _fit(ranker_class, eval_X=(XV,), eval_y=(YV,), eval_group=[GV])
    again = pickle.loads(pickle.dumps(ranker))
    np.testing.assert_array_equal(again.predict(XV), ranker.predict(XV))
    assert again.evals_result_ == ranker.evals_result_
    assert again.best_iteration_ == ranker.best_iteration_


@ranker_classes
def test_sklearn_tags(ranker_class):
    tags = ranker_class().__sklearn_tags__()
    native = lgb.LGBMRanker().__sklearn_tags__()
    assert tags.input_tags.allow_nan == native.input_tags.allow_nan is True
    assert tags.input_tags.sparse == native.input_tags.sparse
    assert tags.estimator_type == native.estimator_type


@ranker_classes
def test_nan_is_a_missing_value(ranker_class):
    Xn = X.copy()
    Xn[::7, 0] = np.nan
    assert np.isfinite(ranker_class(**SMALL).fit(Xn, Y, group=G).predict(Xn)).all()


# -- tools that recognise a native ranker ------------------------------------------------------
@ranker_classes
def test_shap_tree_explainer_takes_the_ranker(ranker_class):
    shap = pytest.importorskip("shap")
    ranker = _fit(ranker_class)
    explanation = shap.TreeExplainer(ranker)(XV)
    np.testing.assert_allclose(explanation.base_values + explanation.values.sum(axis=1),
                               ranker.predict(XV), atol=1e-9)


@ranker_classes
@pytest.mark.filterwarnings("ignore::DeprecationWarning")
@pytest.mark.filterwarnings("ignore::FutureWarning")
def test_mlflow_autolog_around_fit(ranker_class, tmp_path, monkeypatch):
    mlflow = pytest.importorskip("mlflow")
    pytest.importorskip("mlflow.lightgbm")
    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")
    uri = f"file:{tmp_path / 'mlruns'}"
    mlflow.set_tracking_uri(uri)
    mlflow.lightgbm.autolog(log_input_examples=False, log_model_signatures=False,
                            log_datasets=False, silent=True)
    try:
        with mlflow.start_run() as run:
            ranker = _fit(ranker_class, eval_X=(XV,), eval_y=(YV,), eval_group=[GV])
    finally:
        mlflow.lightgbm.autolog(disable=True)
        mlflow.set_tracking_uri(None)
    data = mlflow.MlflowClient(uri).get_run(run.info.run_id).data
    assert data.params["num_leaves"] == "7" and data.params["num_boost_round"] == "4"
    assert data.metrics["valid_0-ndcg_at_5"] == pytest.approx(
        ranker.evals_result_["valid_0"]["ndcg@5"][-1])
    # the model MLflow logs is the fitted estimator; MLflow 3.17 serialises it with skops,
    # whose trusted types lack LGBMRanker, so it fails alike for the native: when it is
    # logged, it predicts what the ranker predicts
    try:
        logged = mlflow.lightgbm.load_model(f"runs:/{run.info.run_id}/model")
    except Exception:
        return
    np.testing.assert_array_equal(logged.predict(XV), ranker.predict(XV))


@ranker_classes
def test_onnxmltools_converts_the_booster(ranker_class):
    onnxmltools = pytest.importorskip("onnxmltools")
    from onnxmltools.convert.common.data_types import FloatTensorType

    ranker = _fit(ranker_class)
    model = onnxmltools.convert_lightgbm(ranker.booster_,
                                         initial_types=[("X", FloatTensorType([None, 5]))])
    assert model.graph.node


def test_onnxmltools_refuses_the_subclass_by_its_exact_class():
    """The documented exception: convert_lightgbm looks type(model) up in a table."""
    onnxmltools = pytest.importorskip("onnxmltools")
    from onnxmltools.convert.common.data_types import FloatTensorType

    types = [("X", FloatTensorType([None, 5]))]
    onnxmltools.convert_lightgbm(_fit(lgb.LGBMRanker), initial_types=types)
    with pytest.raises(Exception):
        onnxmltools.convert_lightgbm(_fit(StochasticLGBMRanker), initial_types=types)


# -- LightGBM's objectives by name: the native model ------------------------------------------
@pytest.mark.parametrize("objective", ["lambdarank", "rank_xendcg"])
def test_a_native_objective_string_trains_the_native_model(objective):
    kwargs = dict(SMALL, objective=objective, deterministic=True, force_row_wise=True)
    fit = dict(eval_X=(XV,), eval_y=(YV,), eval_group=[GV])
    native = lgb.LGBMRanker(**kwargs).fit(X, Y, group=G, **fit)
    ours = StochasticLGBMRanker(**kwargs).fit(X, Y, group=G, **fit)
    np.testing.assert_array_equal(ours.predict(XV), native.predict(XV))
    assert ours.evals_result_ == native.evals_result_
    assert ours.objective_ == native.objective_ == objective
    assert ours.booster_.model_to_string() == native.booster_.model_to_string()


def test_ours_is_an_lgbmranker_with_the_package_objective():
    ours = StochasticLGBMRanker(**SMALL)
    assert isinstance(ours, lgb.LGBMRanker) and isinstance(ours, lgb.LGBMModel)
    ours.fit(X, Y, group=G)
    assert type(ours.objective_).__name__ == "StochasticRank"
    assert "objective=lambdarank" in ours.booster_.model_to_string()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert ours.score(XV, YV, group=GV) > 0
