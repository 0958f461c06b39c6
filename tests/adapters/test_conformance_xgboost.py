"""Conformance of ``StochasticXGBRanker`` with ``xgboost.XGBRanker`` (issue 42).

Each case runs the same user code on the native class and on ours (``ranker_class``): what
passes for ``XGBRanker`` passes for ``StochasticXGBRanker``. The cases follow XGBoost's
documented scikit-learn API and its ranking tests (constructor values, eval sets in XGBoost's
form, fit arguments, DataFrame ``qid`` columns, predict arguments, fitted attributes, methods,
scikit-learn tags / clone / pickle, the tools that recognise an ``XGBRanker``). Ours trains with
its default objective (the package's) unless a case names an XGBoost objective; the last
cases check that an XGBoost objective string gives XGBoost's own model, prediction for
prediction.
"""

from __future__ import annotations

import pickle

import numpy as np
import pytest
from _rankers import graded_queries

xgb = pytest.importorskip("xgboost")

from stochrank_objectives import StochasticRank, StochasticXGBRanker  # noqa: E402

X, Y, QID = graded_queries(20)
XV, YV, QV = graded_queries(10, seed=1)
SIZES = np.diff(np.flatnonzero(np.r_[True, np.diff(QID) != 0, True]))
SMALL = dict(n_estimators=4, max_depth=3, n_jobs=1, random_state=0)

RANKERS = pytest.mark.parametrize("ranker_class", [xgb.XGBRanker, StochasticXGBRanker],
                                  ids=["native", "ours"])


def _frame(X, qid=None):
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame(X, columns=[f"f{i}" for i in range(X.shape[1])])
    if qid is not None:
        frame.insert(0, "qid", qid)
    return frame


class Rounds(xgb.callback.TrainingCallback):
    """Records the rounds it sees."""

    def __init__(self):
        super().__init__()
        self.rounds = []

    def after_iteration(self, model, epoch, evals_log):
        self.rounds.append(epoch)
        return False


# -- constructor values ---------------------------------------------------------------------
@RANKERS
def test_constructor_values_the_native_takes(ranker_class):
    ranker = ranker_class(verbosity=0, importance_type="gain", learning_rate="0.3",
                          tree_method="hist", max_bin=32, **SMALL)
    ranker.fit(X, Y, qid=QID)
    assert ranker.get_params()["learning_rate"] == "0.3"
    assert ranker.feature_importances_.shape == (5,)


@RANKERS
def test_xgboost_aliases_and_ranking_parameters_are_accepted(ranker_class):
    ranker = ranker_class(eta=0.2, nthread=1, seed=3, lambdarank_pair_method="topk",
                          lambdarank_num_pair_per_sample=4, ndcg_exp_gain=True, n_estimators=3,
                          max_depth=2)
    with pytest.warns(UserWarning) if ranker_class is StochasticXGBRanker else _no_warning():
        ranker.fit(X, Y, qid=QID)
    params = ranker.get_params()
    assert params["eta"] == 0.2 and params["lambdarank_num_pair_per_sample"] == 4
    assert ranker.predict(XV).shape == YV.shape


class _no_warning:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


@RANKERS
def test_eval_metric_as_a_list_and_early_stopping(ranker_class):
    ranker = ranker_class(eval_metric=["ndcg@10", "ndcg@3"], early_stopping_rounds=2,
                          n_estimators=30, max_depth=3, n_jobs=1, learning_rate=0.3)
    ranker.fit(X, Y, qid=QID, eval_set=[(XV, YV)], eval_qid=[QV])
    history = ranker.evals_result()["validation_0"]
    assert list(history) == ["ndcg@10", "ndcg@3"]
    best = ranker.best_iteration
    assert history["ndcg@3"][best] == max(history["ndcg@3"])  # the last metric, maximised
    assert ranker.best_score == pytest.approx(history["ndcg@3"][best])
    assert ranker.get_booster().num_boosted_rounds() == best + 1 + 2
    np.testing.assert_array_equal(
        ranker.predict(XV), ranker.predict(XV, iteration_range=(0, best + 1)))


@RANKERS
def test_eval_metric_as_a_callable(ranker_class):
    def top_score(y_true, y_score):  # per query, as XGBRanker calls it
        return float(y_true[np.argmax(y_score)])

    ranker = ranker_class(eval_metric=top_score, **SMALL)
    ranker.fit(X, Y, qid=QID, eval_set=[(XV, YV)], eval_qid=[QV])
    values = ranker.evals_result()["validation_0"]["top_score"]
    assert len(values) == 4 and all(0 <= v <= 3 for v in values)


@RANKERS
def test_callbacks_in_the_constructor(ranker_class):
    rounds = Rounds()
    ranker_class(callbacks=[rounds], **SMALL).fit(X, Y, qid=QID)
    assert rounds.rounds == [0, 1, 2, 3]


@RANKERS
def test_a_plain_callable_objective_is_refused_as_xgbranker_refuses_it(ranker_class):
    with pytest.raises(ValueError, match="custom objective function not supported"):
        ranker_class(objective=lambda y, p: (p, p))
    with pytest.raises(ValueError, match="please use XGBRanker for ranking task"):
        ranker_class(objective="reg:squarederror")


# -- eval sets and fit arguments in XGBoost's form --------------------------------------------
@RANKERS
def test_eval_group_weights_margins_and_verbose(ranker_class, capsys):
    eval_sizes = np.diff(np.flatnonzero(np.r_[True, np.diff(QV) != 0, True]))
    margin, margin_v = 0.1 * Y, 0.1 * YV
    ranker = ranker_class(eval_metric="ndcg@5", **SMALL)
    ranker.fit(X, Y, group=SIZES, sample_weight=np.linspace(1, 2, SIZES.size),
               base_margin=margin, eval_set=[(X, Y), (XV, YV)], eval_group=[SIZES, eval_sizes],
               sample_weight_eval_set=[None, np.ones(eval_sizes.size)],
               base_margin_eval_set=[margin, margin_v], verbose=2)
    printed = capsys.readouterr().out
    assert "validation_1-ndcg@5" in printed and "[2]" in printed
    assert sorted(ranker.evals_result_) == ["validation_0", "validation_1"]
    # predict's base_margin adds the first stage, as fit's does
    np.testing.assert_allclose(ranker.predict(XV, base_margin=margin_v),
                               ranker.predict(XV) + margin_v, rtol=0, atol=1e-5)


@RANKERS
def test_continued_training_with_xgb_model(ranker_class):
    first = ranker_class(**SMALL).fit(X, Y, qid=QID)
    more = ranker_class(**{**SMALL, "n_estimators": 2}).fit(X, Y, qid=QID, xgb_model=first)
    assert more.get_booster().num_boosted_rounds() == 6
    again = ranker_class(**{**SMALL, "n_estimators": 2}).fit(
        X, Y, qid=QID, xgb_model=first.get_booster())
    np.testing.assert_array_equal(again.predict(XV), more.predict(XV))


@RANKERS
def test_feature_weights_at_fit(ranker_class):
    ranker = ranker_class(colsample_bynode=0.5, **SMALL)
    ranker.fit(X, Y, qid=QID, feature_weights=np.array([1.0, 1.0, 1e-6, 1e-6, 1e-6]))
    assert ranker.predict(XV).shape == YV.shape


# -- data forms -------------------------------------------------------------------------------
@RANKERS
def test_a_qid_column_of_a_dataframe(ranker_class):
    train, valid = _frame(X, QID), _frame(XV, QV)
    ranker = ranker_class(eval_metric="ndcg@5", **SMALL)
    ranker.fit(train, Y, eval_set=[(valid, YV)])
    assert list(ranker.feature_names_in_) == [f"f{i}" for i in range(5)]
    assert ranker.n_features_in_ == 5
    np.testing.assert_array_equal(ranker.predict(valid), ranker.predict(_frame(XV)))
    assert 0.0 <= ranker.score(valid, YV) <= 1.0  # the queries from the column
    assert ranker.apply(valid).shape == (XV.shape[0], 4)


@RANKERS
def test_dataframe_names_are_validated_at_predict(ranker_class):
    ranker = ranker_class(**SMALL).fit(_frame(X), Y, qid=QID)
    renamed = _frame(XV).rename(columns={"f0": "z"})
    with pytest.raises(ValueError, match="feature_names mismatch"):
        ranker.predict(renamed)
    assert ranker.predict(renamed, validate_features=False).shape == YV.shape


# -- predict arguments, fitted attributes, methods ------------------------------------------
@RANKERS
def test_predict_arguments_and_apply(ranker_class):
    ranker = ranker_class(**SMALL).fit(X, Y, qid=QID)
    booster = ranker.get_booster()
    assert isinstance(booster, xgb.Booster) and booster.num_boosted_rounds() == 4
    np.testing.assert_array_equal(ranker.predict(XV, output_margin=True), ranker.predict(XV))
    first_two = booster.predict(xgb.DMatrix(XV), iteration_range=(0, 2))
    np.testing.assert_allclose(ranker.predict(XV, iteration_range=(0, 2)), first_two,
                               rtol=0, atol=1e-6)
    leaves = ranker.apply(XV)
    assert leaves.shape == (XV.shape[0], 4)
    np.testing.assert_array_equal(leaves, ranker.apply(XV, iteration_range=(0, 4)))


@RANKERS
def test_fitted_attributes(ranker_class):
    ranker = ranker_class(importance_type="weight", **SMALL)
    assert not ranker.__sklearn_is_fitted__()
    with pytest.raises(AttributeError, match="need to call fit"):
        ranker.get_booster()
    ranker.fit(X, Y, qid=QID)
    assert ranker.__sklearn_is_fitted__() and ranker.n_features_in_ == 5
    assert not hasattr(ranker, "feature_names_in_")  # an array has no names
    imp = ranker.feature_importances_
    assert imp.shape == (5,) and imp.sum() == pytest.approx(1.0)
    with pytest.raises(xgb.core.XGBoostError, match="No evaluation result"):
        ranker.evals_result()


@RANKERS
def test_save_model_and_load_model(ranker_class, tmp_path):
    ranker = ranker_class(**SMALL).fit(X, Y, qid=QID)
    ranker.save_model(tmp_path / "model.json")
    loaded = ranker_class()
    loaded.load_model(tmp_path / "model.json")
    np.testing.assert_array_equal(loaded.predict(XV), ranker.predict(XV))
    booster = xgb.Booster(model_file=str(tmp_path / "model.json"))
    np.testing.assert_array_equal(booster.predict(xgb.DMatrix(XV)), ranker.predict(XV))


@RANKERS
def test_set_params_after_fit_reaches_the_booster(ranker_class):
    ranker = ranker_class(**SMALL).fit(X, Y, qid=QID)
    assert ranker.set_params(max_depth=2) is ranker and ranker.max_depth == 2
    assert ranker.get_params()["max_depth"] == 2
    config = ranker.get_booster().save_config()
    assert '"max_depth":"2"' in config


# -- scikit-learn: tags, clone, pickle ------------------------------------------------------
@RANKERS
def test_sklearn_tags_clone_and_pickle(ranker_class):
    from sklearn.base import clone

    ranker = ranker_class(**SMALL)
    assert ranker.__sklearn_tags__() == xgb.XGBRanker(**SMALL).__sklearn_tags__()
    assert ranker._estimator_type == "ranker"  # XGBRanker's mixin
    copy = clone(ranker)
    assert type(copy) is ranker_class and copy.get_params()["max_depth"] == 3
    ranker.fit(X, Y, qid=QID)
    again = pickle.loads(pickle.dumps(ranker))
    np.testing.assert_array_equal(again.predict(XV), ranker.predict(XV))
    assert set(xgb.XGBRanker().get_params()) <= set(ranker.get_params())


# -- tools that recognise an XGBRanker --------------------------------------------------------
@RANKERS
def test_shap_tree_explainer_takes_the_ranker(ranker_class):
    shap = pytest.importorskip("shap")
    ranker = ranker_class(**SMALL).fit(X, Y, qid=QID)
    explanation = shap.TreeExplainer(ranker)(XV)
    total = explanation.base_values + explanation.values.sum(axis=1)
    np.testing.assert_allclose(total, ranker.predict(XV), rtol=0, atol=1e-5)


@RANKERS
def test_mlflow_autolog_logs_the_ranker(ranker_class, tmp_path, monkeypatch):
    mlflow = pytest.importorskip("mlflow")
    pytest.importorskip("mlflow.xgboost")
    # a file: store under tmp_path (MLflow 3 asks for this variable; a database store would
    # spend 20 s creating its tables)
    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")
    uri = (tmp_path / "runs").as_uri()
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    previous = mlflow.get_tracking_uri()
    mlflow.set_tracking_uri(uri)
    mlflow.xgboost.autolog(log_models=True, log_input_examples=False, log_datasets=False,
                           silent=True)
    try:
        ranker = ranker_class(**SMALL).fit(X, Y, qid=QID)
        (run,) = mlflow.search_runs(search_all_experiments=True, output_format="list")
        (model,) = mlflow.search_logged_models(output_format="list")
        logged = mlflow.xgboost.load_model(model.model_uri)
    finally:
        mlflow.xgboost.autolog(disable=True)
        mlflow.set_tracking_uri(previous)
    assert type(logged) is ranker_class
    np.testing.assert_array_equal(logged.predict(XV), ranker.predict(XV))
    # the booster's parameters, as XGBRanker.fit hands them to xgboost.train (ours names the
    # booster's objective rank:pairwise there, and its metric)
    assert run.data.params["max_depth"] == "3" and run.data.params["num_boost_round"] == "4"


# -- an XGBoost objective string trains XGBoost's own model ---------------------------------
@pytest.mark.parametrize("objective, params", [
    ("rank:ndcg", {}),
    ("rank:pairwise", {}),
    ("rank:map", {}),
    ("rank:ndcg", dict(lambdarank_pair_method="mean", lambdarank_num_pair_per_sample=2,
                       ndcg_exp_gain=False)),
], ids=["ndcg", "pairwise", "map", "ndcg-mean-pairs"])
def test_an_xgboost_objective_gives_the_native_model(objective, params):
    fits = []
    y, yv = (Y >= 2, YV >= 2) if objective == "rank:map" else (Y, YV)  # map: binary labels
    for ranker_class in (xgb.XGBRanker, StochasticXGBRanker):
        ranker = ranker_class(objective=objective, eval_metric="ndcg@5", **SMALL, **params)
        fits.append(ranker.fit(X, y, qid=QID, eval_set=[(XV, yv)], eval_qid=[QV]))
    native, ours = fits
    np.testing.assert_array_equal(ours.predict(XV), native.predict(XV))
    assert ours.evals_result() == native.evals_result()
    assert ours.get_booster().save_raw("json") == native.get_booster().save_raw("json")
    assert ours.get_params()["objective"] == objective == ours.objective_
    assert ours.score(_frame(XV, QV), yv) == native.score(_frame(XV, QV), yv)


# -- what the package adds (ours only) ------------------------------------------------------
def test_the_package_objective_and_metric_beside_the_native_form():
    objective = StochasticRank(metric="NDCG", top=5, seed=1)
    ranker = StochasticXGBRanker(objective, eval_metric=["ndcg@5", "NDCG@5"],
                                 early_stopping_rounds=2, n_estimators=30, max_depth=3,
                                 n_jobs=1, learning_rate=0.3)
    ranker.fit(X, Y, qid=QID, eval_set=[(XV, YV, QV)])  # the package's triple
    history = ranker.evals_result()["validation_0"]
    assert list(history) == ["ndcg@5", "NDCG@5"]  # XGBoost's metric, then the package's
    best = ranker.best_iteration_
    assert best == ranker.best_iteration and history["NDCG@5"][best] == max(history["NDCG@5"])
    assert ranker.get_params()["objective"] is objective is ranker.objective_
    assert '"name":"rank:pairwise"' in ranker.get_booster().save_config()
    # set_params on the fitted ranker hands XGBoost its own metric names only
    predicted = ranker.set_params(max_depth=2).predict(XV)
    np.testing.assert_array_equal(pickle.loads(pickle.dumps(ranker)).predict(XV), predicted)


def test_ranking_parameters_warn_with_the_package_objective():
    with pytest.warns(UserWarning, match="lambdarank_pair_method='mean'.*no effect"):
        StochasticXGBRanker(lambdarank_pair_method="mean", n_estimators=1,
                            n_jobs=1).fit(X, Y, qid=QID)


def test_the_previous_forms_work_with_a_deprecation_warning():
    ranker = StochasticXGBRanker(StochasticRank(top=5, seed=1), verbose=False, **SMALL)
    with pytest.warns(DeprecationWarning) as caught:
        ranker.fit(X, Y, qid=QID, init_score=0.1 * Y, eval_set=[(XV, YV, QV)],
                   eval_init_score=[0.1 * YV], callbacks=[Rounds()])
    text = " ".join(str(w.message) for w in caught)
    for twin in ("base_margin=", "base_margin_eval_set=", "constructor", "verbose= to fit"):
        assert twin in text
    reference = StochasticXGBRanker(StochasticRank(top=5, seed=1), **SMALL).fit(
        X, Y, qid=QID, base_margin=0.1 * Y)
    np.testing.assert_array_equal(ranker.predict(XV), reference.predict(XV))


def test_the_private_hook_is_on_a_tested_xgboost_version():
    """StochasticXGBRanker overrides XGBModel._configure_fit (private, below XGBoost's public
    API): re-check it, and the cases above, before adding a version to TESTED_XGBOOST."""
    from stochrank_objectives.adapters.xgboost._ranker import TESTED_XGBOOST

    assert xgb.__version__.startswith(TESTED_XGBOOST), xgb.__version__
    assert callable(getattr(xgb.XGBModel, "_configure_fit", None))
