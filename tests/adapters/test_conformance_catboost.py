"""Conformance: ``StochasticCatBoostRanker`` is a ``catboost.CatBoostRanker``.

Each case runs the same user code on the native class and on the package's (the
``ranker_class`` fixture): a case that passes for ``CatBoostRanker`` must pass for
``StochasticCatBoostRanker``. Written from CatBoost's documented Python API and the ranker
cases of its own test suite (``catboost/python-package/ut/medium/test.py``: Pools with
``group_id``, ``eval_set=Pool``, ``get_best_iteration``, ``get_evals_result``,
``staged_predict``, ``LossFunctionChange`` importances, ``tree_count_``); the code is ours.
Then one case per CatBoost ranking loss string: the package's class trains exactly the
native model with it. Tiny data and 3-4 depth-2 trees on one thread keep the file fast.
"""

from __future__ import annotations

import copy
import pickle

import numpy as np
import pytest

catboost = pytest.importorskip("catboost")
from catboost import CatBoost, CatBoostError, CatBoostRanker, Pool  # noqa: E402
from _rankers import graded_queries  # noqa: E402

from stochrank_objectives import StochasticRank  # noqa: E402
from stochrank_objectives.adapters.catboost import StochasticCatBoostRanker  # noqa: E402

X, Y, QID = graded_queries(20)
XV, YV, QV = graded_queries(10, seed=1)
# CatBoost writes catboost_info/ and logs every tree by default: the cases turn both off
QUIET = dict(allow_writing_files=False, verbose=False)
SMALL = dict(iterations=4, depth=2, thread_count=1, **QUIET)


@pytest.fixture(params=[CatBoostRanker, StochasticCatBoostRanker],
                ids=["native", "ours"])
def ranker_class(request):
    return request.param


def _fitted(ranker_class, **params):
    return ranker_class(**{**SMALL, **params}).fit(X, Y, group_id=QID)


# -- the class ---------------------------------------------------------------------------------

def test_is_a_catboost_ranker(ranker_class):
    ranker = ranker_class()
    assert isinstance(ranker, CatBoostRanker) and isinstance(ranker, CatBoost)
    assert ranker._estimator_type == "ranker"
    assert not ranker.is_fitted()


# -- constructor values ------------------------------------------------------------------------

@pytest.mark.parametrize("params", [
    dict(iterations=3, learning_rate=0.2, random_seed=1, thread_count=1),
    dict(n_estimators=3, eta=0.2, random_state=1, max_depth=2, reg_lambda=2.0),
    dict(num_boost_round=3, l2_leaf_reg=1.0, border_count=32, rsm=1.0),
    dict(iterations=3, random_strength=0, bootstrap_type="No", one_hot_max_size=2),
    dict(iterations=3, grow_policy="Depthwise", min_data_in_leaf=2),
    dict(iterations=3, logging_level="Silent"),
    dict(iterations=3, silent=True),
    dict(iterations=3, metric_period=2, custom_metric=["NDCG:top=3"]),
], ids=["canonical", "sklearn-names", "num_boost_round", "bootstrap", "depthwise",
        "logging_level", "silent", "custom_metric"])
def test_constructor_values(ranker_class, params):
    params = {**params, "allow_writing_files": False}
    if not {"logging_level", "silent"} & set(params):
        params["verbose"] = False
    ranker = ranker_class(**params)
    for name, value in params.items():
        assert ranker.get_params()[name] == value
        assert ranker.get_param(name) == value
    ranker.fit(X, Y, group_id=QID)
    assert ranker.tree_count_ == 3


def test_unknown_constructor_name_is_a_type_error(ranker_class):
    with pytest.raises(TypeError, match="depht"):
        ranker_class(depht=3)


def test_two_synonyms_are_refused_at_fit(ranker_class):
    with pytest.raises(CatBoostError, match="only one of the parameters"):
        ranker_class(iterations=3, n_estimators=4, **QUIET).fit(X, Y, group_id=QID)


def test_set_params_then_fit_and_fitted_set_params_is_refused(ranker_class):
    ranker = ranker_class(**SMALL).set_params(iterations=2, depth=3)
    assert ranker.get_params()["iterations"] == 2
    ranker.fit(X, Y, group_id=QID)
    assert ranker.tree_count_ == 2
    with pytest.raises(CatBoostError, match="fitted"):
        ranker.set_params(depth=4)


# -- data forms --------------------------------------------------------------------------------

def test_fit_a_pool(ranker_class):
    ranker = ranker_class(**SMALL).fit(Pool(X, Y, group_id=QID))
    assert ranker.tree_count_ == 4
    np.testing.assert_array_equal(
        ranker.predict(XV), _fitted(ranker_class).predict(XV))  # Pool or arrays: one model


def test_fit_a_pool_with_y_too_is_refused(ranker_class):
    with pytest.raises(CatBoostError):
        ranker_class(**SMALL).fit(Pool(X, Y, group_id=QID), Y)


def test_fit_lists_and_dataframes(ranker_class):
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame(X, columns=list("abcde"))
    ranker = ranker_class(**SMALL).fit(frame, pd.Series(Y), group_id=pd.Series(QID))
    assert ranker.feature_names_ == list("abcde")
    from_lists = ranker_class(**SMALL).fit(X.tolist(), Y.tolist(), group_id=QID.tolist())
    np.testing.assert_allclose(from_lists.predict(XV), ranker.predict(XV), atol=1e-12)
    assert ranker.predict(pd.DataFrame(XV, columns=list("abcde"))).shape == (len(YV),)


def test_categorical_features(ranker_class):
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame(X, columns=list("abcde"))
    frame["kind"] = np.where(X[:, 0] > 0, "hi", "lo")
    ranker = ranker_class(**SMALL, has_time=True).fit(frame, Y, group_id=QID,
                                                      cat_features=["kind"])
    assert ranker.get_cat_feature_indices() == [5]
    valid = pd.DataFrame(XV, columns=list("abcde"))
    valid["kind"] = np.where(XV[:, 0] > 0, "hi", "lo")
    assert np.isfinite(ranker.predict(valid)).all()
    assert ranker.predict(Pool(valid, cat_features=["kind"])).shape == (len(YV),)


def test_cat_features_in_the_constructor(ranker_class):
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame(X, columns=list("abcde"))
    frame["kind"] = np.where(X[:, 1] > 0, "hi", "lo")
    ranker = ranker_class(**SMALL, has_time=True, cat_features=["kind"])
    assert ranker.fit(frame, Y, group_id=QID).get_cat_feature_indices() == [5]


# -- fit arguments -----------------------------------------------------------------------------

def test_group_weight_and_sample_weight(ranker_class):
    weights = np.repeat(np.linspace(0.5, 2.0, 20), np.diff(np.r_[0, np.flatnonzero(
        np.diff(QID)) + 1, len(QID)]))
    by_group = ranker_class(**SMALL).fit(X, Y, group_id=QID, group_weight=weights)
    assert by_group.tree_count_ == 4
    by_object = ranker_class(**SMALL).fit(X, Y, group_id=QID, sample_weight=weights)
    assert by_object.tree_count_ == 4
    with pytest.raises(CatBoostError, match="weight"):
        ranker_class(**SMALL).fit(X, Y, group_id=QID, group_weight=weights,
                                  sample_weight=weights)


def test_baseline(ranker_class):
    start = X[:, 0].copy()
    ranker = ranker_class(**SMALL).fit(X, Y, group_id=QID, baseline=start)
    assert ranker.tree_count_ == 4
    pool = Pool(X, Y, group_id=QID, baseline=start)
    assert ranker_class(**SMALL).fit(pool).tree_count_ == 4


def test_eval_set_pool_early_stopping_and_best_model(ranker_class):
    ranker = ranker_class(**{**SMALL, "iterations": 30, "learning_rate": 0.5})
    ranker.fit(Pool(X, Y, group_id=QID), eval_set=Pool(XV, YV, group_id=QV),
               early_stopping_rounds=2)
    result = ranker.get_evals_result()
    assert result is ranker.evals_result_ or result == ranker.evals_result_
    assert set(result) == {"learn", "validation"}
    (name, curve), = result["validation"].items()
    assert name.startswith("NDCG")
    best = ranker.get_best_iteration()
    assert ranker.best_iteration_ == best and curve[best] == max(curve)
    assert ranker.tree_count_ == best + 1  # use_best_model: the default with an eval set
    assert isinstance(ranker.get_best_score(), dict)
    assert len(curve) <= best + 3


def test_eval_sets_as_a_list_of_pools(ranker_class):
    ranker = ranker_class(**SMALL, eval_metric="NDCG:top=3")
    ranker.fit(X, Y, group_id=QID, eval_set=[Pool(XV, YV, group_id=QV),
                                             Pool(X, Y, group_id=QID)])
    assert {"validation_0", "validation_1"} <= set(ranker.evals_result_)
    assert len(ranker.evals_result_["validation_1"]["NDCG:top=3;type=Base"]) == 4
    with pytest.raises(CatBoostError, match="nontrivial groups"):  # an (X, y) pair: no groups
        ranker_class(**SMALL).fit(X, Y, group_id=QID, eval_set=(XV, YV))


def test_use_best_model_false_keeps_every_tree(ranker_class):
    ranker = ranker_class(**SMALL).fit(X, Y, group_id=QID, use_best_model=False,
                                       eval_set=Pool(XV, YV, group_id=QV))
    assert ranker.tree_count_ == 4


def test_constructor_early_stopping_rounds(ranker_class):
    ranker = ranker_class(**{**SMALL, "iterations": 40, "learning_rate": 0.8},
                          early_stopping_rounds=1)
    ranker.fit(X, Y, group_id=QID, eval_set=Pool(XV, YV, group_id=QV))
    assert ranker.tree_count_ == ranker.get_best_iteration() + 1
    assert len(next(iter(ranker.evals_result_["validation"].values()))) < 40


def test_fit_verbosity_arguments(ranker_class, capsys):
    ranker_class(**{**SMALL, "verbose": None}).fit(X, Y, group_id=QID, logging_level="Silent")
    ranker_class(**{**SMALL, "verbose": None}).fit(X, Y, group_id=QID, verbose=False)
    assert capsys.readouterr().out == ""
    ranker_class(**{**SMALL, "verbose": None}).fit(
        X, Y, group_id=QID, verbose=1, eval_set=Pool(XV, YV, group_id=QV))
    assert capsys.readouterr().out.count("\n") >= 4  # a line per tree


class _Recording:
    def __init__(self, stop_after=None):
        self.iterations, self.stop_after = [], stop_after

    def after_iteration(self, info):
        self.iterations.append(info.iteration)
        return self.stop_after is None or info.iteration < self.stop_after


def test_callbacks(ranker_class):
    seen = _Recording()
    ranker_class(**SMALL).fit(X, Y, group_id=QID, callbacks=[seen],
                              eval_set=Pool(XV, YV, group_id=QV))
    assert seen.iterations == [1, 2, 3, 4]
    stopper = _Recording(stop_after=2)
    stopped = ranker_class(**SMALL).fit(X, Y, group_id=QID, callbacks=[stopper])
    assert stopped.tree_count_ == 2


def test_init_model_continues_training(ranker_class, tmp_path):
    first = _fitted(ranker_class, iterations=2)
    more = ranker_class(**{**SMALL, "iterations": 3}).fit(X, Y, group_id=QID, init_model=first)
    assert more.tree_count_ == 5
    first.save_model(str(tmp_path / "first.cbm"))
    from_file = ranker_class(**{**SMALL, "iterations": 3}).fit(
        X, Y, group_id=QID, init_model=str(tmp_path / "first.cbm"))
    assert from_file.tree_count_ == 5


# -- predict arguments -------------------------------------------------------------------------

def test_predict_arguments(ranker_class):
    ranker = _fitted(ranker_class)
    full = ranker.predict(XV)
    assert full.dtype == np.float64 and full.shape == (len(YV),)
    first_two = ranker.predict(XV, ntree_end=2)
    last_two = ranker.predict(XV, ntree_start=2, ntree_end=4)
    np.testing.assert_allclose(first_two + last_two, full, atol=1e-12)
    np.testing.assert_array_equal(ranker.predict(Pool(XV)), full)
    np.testing.assert_array_equal(ranker.predict(XV, thread_count=1, verbose=False), full)
    assert np.ndim(ranker.predict(XV[0])) == 0  # one object: one value


def test_staged_predict(ranker_class):
    ranker = _fitted(ranker_class)
    stages = list(ranker.staged_predict(XV))
    assert len(stages) == 4
    np.testing.assert_allclose(stages[-1], ranker.predict(XV), atol=1e-12)
    np.testing.assert_allclose(stages[0], ranker.predict(XV, ntree_end=1), atol=1e-12)
    assert len(list(ranker.staged_predict(XV, eval_period=2))) == 2


def test_predict_before_fit_is_refused(ranker_class):
    with pytest.raises(CatBoostError):
        ranker_class().predict(XV)


# -- fitted attributes and methods ---------------------------------------------------------------

def test_fitted_attributes(ranker_class):
    ranker = _fitted(ranker_class, learning_rate=0.3, random_seed=7)
    assert ranker.is_fitted() and ranker.tree_count_ == 4
    assert ranker.feature_names_ == ["0", "1", "2", "3", "4"]
    assert ranker.n_features_in_ == 5
    assert ranker.learning_rate_ == pytest.approx(0.3) and ranker.random_seed_ == 7
    assert ranker.best_iteration_ is None and ranker.get_best_iteration() is None
    assert ranker.get_all_params()["depth"] == 2


def test_feature_importance_types(ranker_class):
    ranker = _fitted(ranker_class)
    pool = Pool(X, Y, group_id=QID)
    loss_change = ranker.get_feature_importance(type="LossFunctionChange", data=pool)
    assert np.shape(loss_change) == (5,) and np.all(np.isfinite(loss_change))
    values = ranker.get_feature_importance(type="PredictionValuesChange")
    assert np.shape(values) == (5,)
    shap_values = ranker.get_feature_importance(type="ShapValues", data=Pool(XV))
    np.testing.assert_allclose(shap_values.sum(axis=1), ranker.predict(XV), atol=1e-9)
    pretty = ranker.get_feature_importance(type="PredictionValuesChange", prettified=True)
    assert list(pretty.columns) == ["Feature Id", "Importances"]


def test_eval_metrics(ranker_class):
    ranker = _fitted(ranker_class)
    result = ranker.eval_metrics(Pool(XV, YV, group_id=QV), ["NDCG:top=3", "DCG"])
    assert set(result) == {"NDCG:top=3;type=Base", "DCG:type=Base"}
    assert all(len(values) == 4 for values in result.values())


def test_score_is_catboosts_ndcg(ranker_class):
    ranker = _fitted(ranker_class)
    value = ranker.score(XV, YV, group_id=QV)
    assert 0.0 < value <= 1.0
    assert ranker.score(Pool(XV, YV, group_id=QV)) == pytest.approx(value)
    assert ranker.score(XV, YV, group_id=QV, top=3, type="Exp") != value


def test_save_and_load_model(ranker_class, tmp_path):
    ranker = _fitted(ranker_class)
    ranker.save_model(str(tmp_path / "model.cbm"))
    loaded = ranker_class().load_model(str(tmp_path / "model.cbm"))
    np.testing.assert_array_equal(loaded.predict(XV), ranker.predict(XV))
    again = CatBoost().load_model(str(tmp_path / "model.cbm"))
    np.testing.assert_array_equal(again.predict(XV), ranker.predict(XV))
    ranker.save_model(str(tmp_path / "model.json"), format="json")
    assert (tmp_path / "model.json").stat().st_size > 0


def test_copy_shrink_and_leaf_values(ranker_class):
    ranker = _fitted(ranker_class)
    twin = ranker.copy()
    np.testing.assert_array_equal(twin.predict(XV), ranker.predict(XV))
    assert twin == ranker
    twin.shrink(2)
    assert twin.tree_count_ == 2 and ranker.tree_count_ == 4
    assert len(ranker.get_leaf_values()) == 4 * 4  # 4 trees of depth 2


# -- scikit-learn --------------------------------------------------------------------------------

def test_sklearn_clone_pickle_and_tags(ranker_class):
    from sklearn.base import clone

    ranker = ranker_class(**SMALL)
    twin = clone(ranker)
    assert type(twin) is ranker_class and twin.get_params() == ranker.get_params()
    ranker.fit(X, Y, group_id=QID)
    restored = pickle.loads(pickle.dumps(ranker))
    np.testing.assert_array_equal(restored.predict(XV), ranker.predict(XV))
    assert restored.get_params() == ranker.get_params()
    np.testing.assert_array_equal(copy.deepcopy(ranker).predict(XV), ranker.predict(XV))
    tags = ranker.__sklearn_tags__()
    assert tags.estimator_type == "regressor" and tags.input_tags.allow_nan
    assert tags.target_tags.required


# -- tools that recognise a native ranker ----------------------------------------------------------

def test_shap_tree_explainer(ranker_class):
    shap = pytest.importorskip("shap")
    ranker = _fitted(ranker_class)
    explanation = shap.TreeExplainer(ranker)(XV)
    np.testing.assert_allclose(explanation.base_values + explanation.values.sum(axis=1),
                               ranker.predict(XV), atol=1e-9)


def test_sum_models_and_to_ranker(ranker_class):
    first, second = _fitted(ranker_class), _fitted(ranker_class, random_seed=3)
    total = catboost.sum_models([first, second], weights=[1.0, 0.5])
    np.testing.assert_allclose(total.predict(XV, prediction_type="RawFormulaVal"),
                               first.predict(XV) + 0.5 * second.predict(XV), atol=1e-9)
    assert catboost.to_ranker(first) is first


# -- CatBoost's own losses: the package's class trains exactly the native model -----------------

LOSSES = ["YetiRank", "YetiRankPairwise", "PairLogit", "PairLogitPairwise", "QueryRMSE",
          "QuerySoftMax", "StochasticFilter",
          "StochasticRank:metric=NDCG;top=5", "LambdaMart", "YetiRank:top=3"]


@pytest.mark.parametrize("loss", LOSSES)
@pytest.mark.parametrize("name", ["loss_function", "objective"])
def test_a_catboost_loss_gives_the_native_model(loss, name):
    params = {**SMALL, name: loss, "random_seed": 5}
    native = CatBoostRanker(**params).fit(X, Y, group_id=QID,
                                          eval_set=Pool(XV, YV, group_id=QV))
    ours = StochasticCatBoostRanker(**params).fit(X, Y, group_id=QID,
                                                  eval_set=Pool(XV, YV, group_id=QV))
    np.testing.assert_array_equal(ours.predict(XV), native.predict(XV))
    assert ours.evals_result_ == native.evals_result_
    assert ours.get_best_iteration() == native.get_best_iteration()


def test_pairs_with_a_pairwise_loss_give_the_native_model():
    pairs = [(i, i + 1) for i in range(0, len(Y) - 1, 2) if QID[i] == QID[i + 1]]
    params = {**SMALL, "loss_function": "PairLogit"}
    native = CatBoostRanker(**params).fit(X, Y, group_id=QID, pairs=pairs)
    ours = StochasticCatBoostRanker(**params).fit(X, Y, group_id=QID, pairs=pairs)
    np.testing.assert_array_equal(ours.predict(XV), native.predict(XV))


def test_the_package_forms_with_a_catboost_loss_give_the_native_model():
    params = {**SMALL, "loss_function": "YetiRank"}
    native = CatBoostRanker(**params).fit(X, Y, group_id=QID,
                                          eval_set=Pool(XV, YV, group_id=QV))
    ours = StochasticCatBoostRanker(**params).fit(X, Y, qid=QID, eval_set=[(XV, YV, QV)])
    np.testing.assert_array_equal(ours.predict(XV), native.predict(XV))


# -- the package's objective: what differs, as documented ----------------------------------------

def test_the_default_objective_is_the_packages():
    ranker = StochasticCatBoostRanker(**SMALL).fit(X, Y, group_id=QID)
    assert isinstance(ranker.objective_, StochasticRank) and ranker.objective_.top == 5
    native = CatBoostRanker(**SMALL).fit(X, Y, group_id=QID)
    assert not np.array_equal(ranker.predict(XV), native.predict(XV))
    assert "objective" not in ranker.get_params() and "loss_function" not in ranker.get_params()


@pytest.mark.parametrize("argument", ["pairs", "subgroup_id"])
def test_arguments_meaningless_for_the_package_objective_are_refused(argument):
    value = [(0, 1)] if argument == "pairs" else QID
    with pytest.raises(ValueError, match=rf"^{argument}= cannot be used with the package"):
        StochasticCatBoostRanker(**SMALL).fit(X, Y, group_id=QID, **{argument: value})


def test_a_pool_with_categorical_features_is_refused_with_the_fix():
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame(X, columns=list("abcde"))
    frame["kind"] = np.where(X[:, 0] > 0, "hi", "lo")
    with pytest.raises(ValueError, match=r"cat_features=\[\.\.\.\]"):
        StochasticCatBoostRanker(**SMALL).fit(Pool(frame, Y, group_id=QID,
                                                   cat_features=["kind"]))


def test_the_package_extras_beside_catboosts_forms():
    ours = StochasticCatBoostRanker(StochasticRank(top=3), **SMALL, eval_metric="NDCG@3")
    ours.fit(X, Y, qid=QID, eval_set=[(XV, YV, QV)])
    pool_fit = StochasticCatBoostRanker(StochasticRank(top=3), **SMALL, eval_metric="NDCG@3")
    pool_fit.fit(Pool(X, Y, group_id=QID), eval_set=Pool(XV, YV, group_id=QV))
    np.testing.assert_array_equal(ours.predict(XV), pool_fit.predict(XV))
    assert ours.evals_result_ == pool_fit.evals_result_
    assert list(ours.evals_result_["validation"]) == ["NDCG:top=3;type=Exp"]
    assert ours.score(XV, YV, qid=QV) == pytest.approx(
        ours.evals_result_["validation"]["NDCG:top=3;type=Exp"][ours.best_iteration_])
