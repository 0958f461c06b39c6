"""The three scikit-learn rankers pass the same checks (one parametrised suite)."""

from __future__ import annotations

import pickle
import subprocess
import sys

import numpy as np
import pytest
from _rankers import graded_queries
from _reference import predict_without_the_package

from stochrank_objectives import SGLB, StochasticRank, metrics, query_offsets_from_qid

BOOSTERS = {
    "lightgbm": ("StochasticLGBMRanker", dict(num_leaves=7, min_data_in_leaf=5)),
    "xgboost": ("StochasticXGBRanker", dict(max_depth=3)),
    "catboost": ("StochasticCatBoostRanker", dict(depth=3)),
}
# the same model saved by booster_.save_model, reloaded and predicted with the booster alone
RELOAD = {
    "lightgbm": ("import lightgbm as lgb\nb = lgb.Booster(model_file='model')\n"
                 "pred = b.predict(X, raw_score=True)\n"),
    "xgboost": ("import xgboost as xgb\nb = xgb.Booster(model_file='model.json')\n"
                "pred = b.predict(xgb.DMatrix(X), output_margin=True)\n"),
    "catboost": ("from catboost import CatBoost\nb = CatBoost().load_model('model')\n"
                 "pred = b.predict(X, prediction_type='RawFormulaVal')\n"),
}


X, Y, QID = graded_queries()
XV, YV, QV = graded_queries(20, seed=1)


@pytest.fixture(params=list(BOOSTERS))
def make(request):
    booster = request.param
    pytest.importorskip(booster)
    import stochrank_objectives

    cls = getattr(stochrank_objectives, BOOSTERS[booster][0])

    def make_ranker(objective=None, **kwargs):
        params = dict(n_estimators=8, n_jobs=1, **BOOSTERS[booster][1])
        params.update(kwargs)
        return cls(objective if objective is not None else StochasticRank(top=5, seed=1),
                   **params)

    make_ranker.booster = booster
    make_ranker.cls = cls
    return make_ranker


def _ndcg5(pred, y, qid):
    return metrics.ndcg_at_k(pred, y, query_offsets_from_qid(qid), 5)


def test_fit_predict_score(make):
    ranker = make()
    assert ranker.fit(X, Y, qid=QID) is ranker
    pred = ranker.predict(XV)
    # XGBoost: XGBRanker's float32 predictions
    dtype = np.float32 if make.booster == "xgboost" else np.float64
    assert isinstance(pred, np.ndarray) and pred.dtype == dtype and pred.shape == YV.shape
    assert ranker.score(XV, YV, qid=QV) == pytest.approx(_ndcg5(pred, YV, QV), abs=1e-12)
    assert ranker.score(XV, YV, qid=QV) > _ndcg5(np.zeros_like(YV), YV, QV) + 0.1
    sizes = np.diff(query_offsets_from_qid(QID))
    np.testing.assert_array_equal(make().fit(X, Y, group=sizes).predict(XV), pred)
    assert ranker.n_features_in_ == 5 and not hasattr(ranker, "feature_names_in_")
    # LightGBM's best_iteration_ is LGBMRanker's: 0 without early stopping
    no_best = 0 if make.booster == "lightgbm" else None
    assert ranker.best_iteration_ == no_best
    if make.booster == "xgboost":  # XGBRanker: evals_result_ only after an eval_set
        assert not hasattr(ranker, "evals_result_")
    elif make.booster == "catboost":  # CatBoostRanker's always has its "learn" entry
        assert ranker.evals_result_ == {"learn": {}}
    else:
        assert ranker.evals_result_ == {}
    assert type(make.cls()).__init__ is type(ranker).__init__


def test_same_defaults_in_every_booster(make):
    params = make.cls().get_params()
    if make.booster == "lightgbm":  # LGBMRanker's parameters and defaults, and sglb
        import lightgbm as lgb

        assert params == {**lgb.LGBMRanker().get_params(), "sglb": None}
        return
    if make.booster == "xgboost":  # XGBRanker's parameters and defaults, and sglb
        import xgboost as xgb

        assert params == {**xgb.XGBRanker().get_params(), "objective": None, "sglb": None}
        return
    if make.booster == "catboost":  # CatBoostRanker's get_params: the parameters given
        assert params == {}
        return
    assert params == dict(objective=None, sglb=None, n_estimators=100, learning_rate=0.1,
                          random_state=None, eval_metric=None, early_stopping_rounds=None,
                          n_jobs=None, verbose=False)


def test_eval_sets_and_early_stopping_on_a_worst_tie_metric(make):
    ranker = make(n_estimators=40, learning_rate=0.3, eval_metric="NDCG@5",
                  early_stopping_rounds=3)
    ranker.fit(X, Y, qid=QID, eval_set=[(X, Y, QID), (XV, YV, QV)])
    history = ranker.evals_result_
    # LightGBM: LGBMRanker's 1-based best_iteration_ (the number of trees kept)
    lgbm = make.booster == "lightgbm"
    if make.booster == "catboost":  # CatBoostRanker's names ("learn": none, row indices)
        assert sorted(history) == ["learn", "validation_0", "validation_1"]
        curve = history["validation_1"]["NDCG:top=5;type=Exp"]
    else:
        assert sorted(history) == ["validation_0", "validation_1"]
        curve = history["validation_1"]["NDCG@5"]
    best = ranker.best_iteration_ - lgbm
    assert best is not None and len(curve) >= best + 1 and curve[best] == max(curve)
    assert len(curve) < 40 or best <= 36  # stopped early, or the best was late
    # the fitted model is cut to the best round: its metric is the best logged value
    value = _ndcg5(ranker.predict(XV), YV, QV)
    assert value == pytest.approx(curve[best], abs=1e-5)  # XGBoost logs 6 decimals
    # worst-order ties: a constant model gets the pessimistic value, not a lucky one
    constant = metrics.ndcg_at_k(np.zeros_like(YV), YV, query_offsets_from_qid(QV), 5,
                                 ties="worst")
    assert value > constant


def test_sglb(make):
    sglb = SGLB(learning_rate=0.2, model_shrink_rate=0.5, diffusion_temperature=50.0, seed=3)
    first = make(sglb=sglb, learning_rate=0.2).fit(X, Y, qid=QID).predict(XV)
    again = make(sglb=sglb, learning_rate=0.2).fit(X, Y, qid=QID).predict(XV)
    np.testing.assert_array_equal(first, again)  # seeded noise: reproducible
    plain = make(learning_rate=0.2).fit(X, Y, qid=QID).predict(XV)
    assert not np.allclose(first, plain)
    other = make(sglb=SGLB(0.2, 0.5, 50.0, seed=4), learning_rate=0.2)
    assert not np.allclose(first, other.fit(X, Y, qid=QID).predict(XV))
    # (XGBoost: an unset learning_rate is the schedule's, so the test sets it)
    xgb_rate = {"learning_rate": 0.1} if make.booster == "xgboost" else {}
    with pytest.raises(ValueError, match=r"learning_rate=0.1 differs from sglb.learning_rate"):
        make(sglb=sglb, **xgb_rate).fit(X, Y, qid=QID)


def test_clone_gives_independent_objects_and_set_params_routes(make):
    from sklearn.base import clone

    ranker = make(sglb=SGLB(0.1, 0.0, 100.0))
    copy = clone(ranker)
    assert copy.objective is not ranker.objective and copy.sglb is not ranker.sglb
    assert copy.get_params()["objective__top"] == 5
    copy.set_params(objective__top=10, sglb__diffusion_temperature=7.0, n_estimators=3)
    assert (copy.objective.top, ranker.objective.top) == (10, 5)
    assert (copy.sglb.diffusion_temperature, ranker.sglb.diffusion_temperature) == (7.0, 100.0)
    assert copy.n_estimators == 3 and ranker.n_estimators == 8
    deep = ranker.get_params(deep=True)
    assert {"objective__sigma", "sglb__model_shrink_rate"} <= set(deep)
    booster_param = next(iter(BOOSTERS[make.booster][1]))
    assert deep[booster_param] == BOOSTERS[make.booster][1][booster_param]
    # objective=None: nested parameters materialise the default objective
    default = make.cls().set_params(objective__sigma=0.5)
    assert (default.objective.sigma, default.objective.top) == (0.5, 5)
    with pytest.raises(ValueError, match="sglb__.*sglb=SGLB"):
        make.cls().set_params(sglb__seed=1)
    with pytest.raises(ValueError, match="sigma"):
        clone(ranker).set_params(objective__sigma=-1.0)


def test_pickling_unfitted_and_fitted(make):
    unfitted = pickle.loads(pickle.dumps(make()))
    assert unfitted.get_params()["objective__top"] == 5
    ranker = make().fit(X, Y, qid=QID)
    again = pickle.loads(pickle.dumps(ranker))
    np.testing.assert_array_equal(again.predict(XV), ranker.predict(XV))
    assert again.score(XV, YV, qid=QV) == ranker.score(XV, YV, qid=QV)


# Loads a pickled ranker in an interpreter that has imported nothing of this package: the
# class is found by its module path alone, as in a process pool's worker.
UNPICKLE_AND_PREDICT = """
import pickle, sys
import numpy as np
assert "stochrank_objectives" not in sys.modules
with open("ranker.pkl", "rb") as f:
    ranker = pickle.load(f)
np.save("pred.npy", ranker.predict(np.load("X.npy")))
"""


@pytest.mark.slow
def test_a_fitted_ranker_unpickles_in_a_fresh_process(make, tmp_path):
    ranker = make().fit(X, Y, qid=QID)
    (tmp_path / "ranker.pkl").write_bytes(pickle.dumps(ranker))
    np.save(tmp_path / "X.npy", XV)
    done = subprocess.run([sys.executable, "-c", UNPICKLE_AND_PREDICT], cwd=tmp_path,
                          env=_env(), capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    np.testing.assert_array_equal(np.load(tmp_path / "pred.npy"), ranker.predict(XV))


def test_save_and_reload_without_the_package(make, tmp_path):
    ranker = make(sglb=SGLB(0.1, 0.3, 100.0)).fit(X, Y, qid=QID)
    name = "model.json" if make.booster == "xgboost" else "model"
    ranker.booster_.save_model(str(tmp_path / name))
    pred = predict_without_the_package(tmp_path, XV, RELOAD[make.booster])
    np.testing.assert_allclose(pred, ranker.predict(XV), rtol=0, atol=1e-12)


def test_dataframe_in_ndarray_out(make):
    pd = pytest.importorskip("pandas")
    names = ["a", "b", "c", "d", "e"]
    ranker = make().fit(pd.DataFrame(X, columns=names), Y, qid=QID,
                        eval_set=[(pd.DataFrame(XV, columns=names), YV, QV)])
    assert list(ranker.feature_names_in_) == names and ranker.n_features_in_ == 5
    pred = ranker.predict(pd.DataFrame(XV, columns=names))
    assert type(pred) is np.ndarray
    np.testing.assert_array_equal(ranker.predict(XV), pred)
    with pytest.raises(ValueError, match="feature_names mismatch"):
        ranker.predict(pd.DataFrame(XV, columns=list("vwxyz")))
    with pytest.raises(ValueError, match="5 features|expected: 5, got 4"):  # XGBoost's
        ranker.predict(XV[:, :4])


def test_feature_importances(make):
    ranker = make().fit(X, Y, qid=QID)
    imp = ranker.feature_importances_
    assert imp.shape == (5,) and np.all(imp >= 0) and imp.sum() > 0
    assert np.argmax(imp) in (0, 1)  # the label is built from features 0 and 1
    with pytest.raises(AttributeError, match="not fitted|fit beforehand|need to call fit"):
        make().feature_importances_  # LightGBM's, XGBoost's messages


@pytest.mark.parametrize("alias,value,argument", [
    ("eta", 0.3, "learning_rate"), ("num_boost_round", 5, "n_estimators"),
    ("iterations", 5, "n_estimators"), ("num_iterations", 5, "n_estimators"),
    ("n_iter", 5, "n_estimators"), ("seed", 1, "random_state"),
    ("random_seed", 1, "random_state"), ("nthread", 1, "n_jobs"),
    ("thread_count", 1, "n_jobs"), ("num_threads", 1, "n_jobs"),
    ("early_stopping_round", 3, "early_stopping_rounds"), ("metric", "ndcg", "eval_metric"),
    ("loss_function", "RMSE", "objective"), ("verbosity", 1, "verbose"),
])
def test_aliases_are_refused_with_the_argument_to_use(make, alias, value, argument):
    if make.booster == "lightgbm":
        pytest.skip("LGBMRanker's **kwargs take LightGBM's aliases as LightGBM does "
                    "(tests/adapters/test_conformance_lightgbm.py)")
    if make.booster == "xgboost":
        pytest.skip("XGBRanker's **kwargs take XGBoost's parameters as XGBoost does "
                    "(tests/adapters/test_conformance_xgboost.py)")
    if make.booster == "catboost":
        pytest.skip("CatBoostRanker's names (iterations, random_seed, thread_count, "
                    "loss_function, ...) mean what they mean in CatBoost "
                    "(tests/adapters/test_conformance_catboost.py)")
    with pytest.raises(ValueError, match=rf"^{alias}=.* alias of the ranker's {argument}.*"
                                         rf"pass {argument}="):
        make(**{alias: value}).fit(X, Y, qid=QID)


#: LightGBM: the arguments LGBMRanker defines, with its errors (None: it accepts the value)
LIGHTGBM_NATIVE = {
    "n_estimators must be an integer >= 1": (ValueError, "boosting rounds must be greater"),
    "learning_rate must be a positive number": (Exception, r"\(learning_rate\) > \(0.0\)"),
    "random_state must be None": (None, None),
    "early_stopping_rounds needs an eval_set": (ValueError, "at least one dataset"),
    "n_jobs must be None": (None, None),
}


#: XGBoost: the arguments XGBRanker defines, with its errors (None: it accepts the value)
XGBOOST_NATIVE = {
    "n_estimators must be an integer >= 1": (None, None),  # 0 trees
    "learning_rate must be a positive number": (Exception, "learning_rate should be greater"),
    "random_state must be None": (None, None),
    "early_stopping_rounds needs an eval_set": (ValueError, "at least 1 validation dataset"),
    "eval_metric must be None": (TypeError, "Invalid type for the `eval_metric`"),
    "n_jobs must be None": (None, None),
}


@pytest.mark.parametrize("kwargs,error,match", [
    (dict(n_estimators=0), ValueError, "n_estimators must be an integer >= 1"),
    (dict(learning_rate=-0.1), ValueError, "learning_rate must be a positive number"),
    (dict(random_state=np.random.RandomState(0)), ValueError, "random_state must be None"),
    (dict(early_stopping_rounds=2), ValueError, "early_stopping_rounds needs an eval_set"),
    (dict(eval_metric=3), TypeError, "eval_metric must be None"),
    (dict(eval_metric="NDCG@x"), ValueError, "positive integer"),
    (dict(n_jobs=0), ValueError, "n_jobs must be None"),
    (dict(objective=object()), TypeError, "grad_hess"),
    (dict(sglb="yes"), TypeError, "sglb must be an SGLB"),
])
def test_bad_arguments_are_named_at_fit(make, kwargs, error, match):
    ranker = make(**kwargs)  # __init__ only stores
    if make.booster == "xgboost" and match in XGBOOST_NATIVE:  # XGBRanker's own answer
        error, match = XGBOOST_NATIVE[match]
        if error is None:
            ranker.fit(X, Y, qid=QID)
            return
    if make.booster == "lightgbm" and match in LIGHTGBM_NATIVE:  # LGBMRanker's own answer
        error, match = LIGHTGBM_NATIVE[match]
        if error is None:
            ranker.fit(X, Y, qid=QID)
            return
    with pytest.raises(error, match=match):
        ranker.fit(X, Y, qid=QID)


def test_bad_fit_inputs(make):
    ranker = make()
    with pytest.raises(ValueError, match="exactly one of qid"):
        ranker.fit(X, Y)
    with pytest.raises(ValueError, match="contiguous"):
        ranker.fit(X, Y, qid=np.r_[QID[1:], QID[:1]])
    with pytest.raises(ValueError, match="sum to"):
        ranker.fit(X, Y, group=[3, 4])
    if make.booster == "lightgbm":  # an (X, y) pair is LGBMRanker's, with eval_group
        with pytest.raises(ValueError, match="eval_group cannot be None"):
            ranker.fit(X, Y, qid=QID, eval_set=[(XV, YV)])
    elif make.booster == "xgboost":  # an (X, y) pair is XGBRanker's, with eval_qid
        with pytest.raises(ValueError, match=r"eval_set\[0\]: pass exactly one of qid"):
            ranker.fit(X, Y, qid=QID, eval_set=[(XV, YV)])
    elif make.booster == "catboost":  # an (X, y) pair is CatBoostRanker's: no groups
        from catboost import CatBoostError

        with pytest.raises(CatBoostError, match="nontrivial groups"):
            ranker.fit(X, Y, qid=QID, eval_set=[(XV, YV)])
    else:
        with pytest.raises(TypeError, match=r"eval_set\[0\] must be an \(X, y, qid\) tuple"):
            ranker.fit(X, Y, qid=QID, eval_set=[(XV, YV)])
    with pytest.raises(ValueError, match=r"eval_set\[0\] X has 4 features"):
        ranker.fit(X, Y, qid=QID, eval_set=[(XV[:, :4], YV, QV)])
    with pytest.raises(ValueError, match="non-negative"):
        ranker.fit(X, -Y, qid=QID)
    if make.booster == "catboost":  # CatBoostRanker's error
        from catboost import CatBoostError

        with pytest.raises(CatBoostError, match="no trained model"):
            make().predict(X)
        return
    with pytest.raises(AttributeError, match="not fitted|need to call fit"):  # XGBoost's
        make().predict(X)


# -- model selection on MQ2008 Fold 1 --------------------------------------------------------
@pytest.fixture(scope="module")
def mq2008_subset():
    from stochrank_objectives.data import load_mq2008

    train = load_mq2008("train")
    stop = int(train.query_offsets[150])  # the first 150 queries: a few seconds per search
    return train.X[:stop], train.y[:stop], train.qid[:stop]


@pytest.fixture
def routing():
    import sklearn

    with sklearn.config_context(enable_metadata_routing=True):
        yield


def test_grid_search_with_group_kfold_and_qid_routing(make, mq2008_subset, routing):
    from sklearn.model_selection import GridSearchCV, GroupKFold

    from stochrank_objectives import ranking_scorer

    X_, y_, qid = mq2008_subset
    search = GridSearchCV(make(n_estimators=4), {"objective__sigma": [0.1, 0.5]},
                          cv=GroupKFold(3), scoring=ranking_scorer("NDCG", 5),
                          error_score="raise")
    search.fit(X_, y_, qid=qid, groups=qid)
    scores = search.cv_results_["mean_test_score"]
    assert scores.shape == (2,) and np.all((0.3 < scores) & (scores < 1))
    assert search.best_estimator_.objective.sigma == search.best_params_["objective__sigma"]
    # the ranker's own score (worst-tie NDCG@5 of the objective) as the default scoring
    search = GridSearchCV(make(n_estimators=4), {"learning_rate": [0.1, 0.3]},
                          cv=GroupKFold(3), error_score="raise")
    search.fit(X_, y_, qid=qid, groups=qid)
    assert np.all(search.cv_results_["mean_test_score"] > 0.3)


def test_randomized_search_with_group_kfold_and_qid_routing(make, mq2008_subset, routing):
    from scipy.stats import loguniform
    from sklearn.model_selection import GroupKFold, RandomizedSearchCV

    from stochrank_objectives import ranking_scorer

    X_, y_, qid = mq2008_subset
    search = RandomizedSearchCV(
        make(n_estimators=4),
        {"objective__sigma": loguniform(0.1, 1.0), "learning_rate": [0.1, 0.3]}, n_iter=2,
        cv=GroupKFold(3), scoring=ranking_scorer("MRR", None), random_state=0,
        error_score="raise")
    search.fit(X_, y_, qid=qid, groups=qid)
    assert np.all(search.cv_results_["mean_test_score"] > 0.3)
    assert 0.1 <= search.best_estimator_.objective.sigma <= 1.0


def test_cross_validate_with_qid_routing(make, mq2008_subset, routing):
    from sklearn.model_selection import GroupKFold, cross_validate

    from stochrank_objectives import ranking_scorer

    X_, y_, qid = mq2008_subset
    result = cross_validate(make(n_estimators=4), X_, y_, cv=GroupKFold(3),
                            params={"qid": qid, "groups": qid}, error_score="raise",
                            scoring={"ndcg5": ranking_scorer("NDCG", 5),
                                     "mrr": ranking_scorer("MRR", None)})
    assert result["test_ndcg5"].shape == (3,) and np.all(result["test_ndcg5"] > 0.3)
    assert np.all(result["test_mrr"] > 0.3)


@pytest.mark.slow
def test_model_selection_in_worker_processes(make, mq2008_subset, routing):
    """n_jobs=2 with scikit-learn's default (process-based, loky) backend: every worker
    unpickles the ranker in a fresh interpreter and receives qid through metadata routing."""
    from sklearn.model_selection import GridSearchCV, GroupKFold, cross_validate

    from stochrank_objectives import ranking_scorer

    X_, y_, qid = mq2008_subset
    result = cross_validate(make(n_estimators=4), X_, y_, cv=GroupKFold(2), n_jobs=2,
                            params={"qid": qid, "groups": qid}, error_score="raise",
                            scoring=ranking_scorer("NDCG", 5))
    serial = cross_validate(make(n_estimators=4), X_, y_, cv=GroupKFold(2), n_jobs=1,
                            params={"qid": qid, "groups": qid}, error_score="raise",
                            scoring=ranking_scorer("NDCG", 5))
    np.testing.assert_allclose(result["test_score"], serial["test_score"], rtol=1e-12)
    search = GridSearchCV(make(n_estimators=4), {"learning_rate": [0.1, 0.3]},
                          cv=GroupKFold(2), n_jobs=2, error_score="raise")
    search.fit(X_, y_, qid=qid, groups=qid)
    assert np.all(search.cv_results_["mean_test_score"] > 0.3)


def test_ranking_scorer_without_routing_says_how_to_enable_it(mq2008_subset):
    pytest.importorskip("xgboost")
    from sklearn.model_selection import GroupKFold, cross_validate

    from stochrank_objectives import StochasticXGBRanker, ranking_scorer

    X_, y_, qid = mq2008_subset
    with pytest.raises(ValueError, match="enable_metadata_routing=True"):
        cross_validate(StochasticXGBRanker(n_estimators=2, n_jobs=1), X_, y_, groups=qid,
                       params={"qid": qid}, cv=GroupKFold(3), error_score="raise",
                       scoring=ranking_scorer("NDCG", 5))
    with pytest.raises(ValueError, match="unknown metric"):
        ranking_scorer("AUC")


def test_importing_the_package_imports_no_booster():
    code = ("import sys, stochrank_objectives as s\n"
            "assert not {'lightgbm', 'xgboost', 'catboost'} & set(sys.modules)\n"
            "assert 'StochasticCatBoostRanker' in dir(s)\n")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120,
                   env=_env())


def _env():
    import os

    import stochrank_objectives

    root = os.path.dirname(os.path.dirname(stochrank_objectives.__file__))
    return {**os.environ, "PYTHONPATH": os.pathsep.join([root, os.environ.get("PYTHONPATH", "")])}
