"""Inputs a new user tries, answered the same way by the three rankers: misspelt booster
parameters, empty or unrankable data, lists of rows, equal labels and a refit that fails."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from stochrank_objectives import SGLB, StochasticRank

BOOSTERS = {
    "lightgbm": ("StochasticLGBMRanker", dict(num_leaves=7, min_data_in_leaf=5)),
    "xgboost": ("StochasticXGBRanker", dict(max_depth=3)),
    "catboost": ("StochasticCatBoostRanker", dict(depth=3)),
}
# a misspelling of each booster's tree-size parameter, and the name it should suggest
MISSPELT = {"lightgbm": ("num_leave", "num_leaves"), "xgboost": ("max_dept", "max_depth"),
            "catboost": ("dept", "depth")}
# ordinary parameters of each booster that must still pass
LEGITIMATE = {
    "lightgbm": dict(min_child_samples=5, reg_lambda=1.0, colsample_bytree=0.9, subsample=0.9,
                     subsample_freq=1, max_bin=63, lambda_l1=0.0, extra_trees=False),
    "xgboost": dict(min_child_weight=1.0, reg_lambda=1.0, subsample=0.9, tree_method="hist",
                    max_bin=63, colsample_bynode=0.9, grow_policy="lossguide", max_leaves=7,
                    gamma=0.0),
    "catboost": dict(l2_leaf_reg=3.0, random_strength=1.0, border_count=63,
                     one_hot_max_size=2, min_data_in_leaf=1, route="auto"),
}


def _data(n_queries=12, seed=0):
    rng = np.random.default_rng(seed)
    qid = np.repeat(np.arange(n_queries), 8)
    X = rng.normal(size=(qid.size, 5))
    y = np.clip(np.round(X[:, 0] + rng.normal(0, 0.5, qid.size) + 1), 0, 3)
    return X, y, qid


X, Y, QID = _data()


@pytest.fixture(params=list(BOOSTERS))
def make(request):
    booster = request.param
    pytest.importorskip(booster)
    import stochrank_objectives

    cls = getattr(stochrank_objectives, BOOSTERS[booster][0])

    def make_ranker(**kwargs):
        params = dict(n_estimators=4, n_jobs=1, **BOOSTERS[booster][1])
        params.update(kwargs)
        return cls(StochasticRank(top=5, seed=1), **params)

    make_ranker.booster = booster
    make_ranker.cls = cls
    return make_ranker


def test_a_misspelt_booster_parameter_is_refused_with_the_closest_names(make):
    # LightGBM logs "Unknown parameter: num_leave" and trains 31-leaf trees: refused here
    if make.booster == "xgboost":  # an XGBRanker: XGBoost's own answer, a warning
        import xgboost

        # at XGBoost's default log level, whatever an earlier test of the process set
        with xgboost.config_context(verbosity=1), \
                pytest.warns(UserWarning, match=r'Parameters: \{ "num_leave" \} are not used'):
            make(num_leave=2).fit(X, Y, qid=QID)
        return
    if make.booster == "catboost":  # a CatBoostRanker: CatBoost's own answer, at __init__
        with pytest.raises(TypeError, match="unexpected keyword argument 'num_leave'"):
            make(num_leave=2)
        return
    with pytest.raises(ValueError, match=r"^num_leave=2 is not a \w+ parameter"):
        make(num_leave=2).fit(X, Y, qid=QID)
    wrong, right = MISSPELT[make.booster]
    with pytest.raises(ValueError, match=rf"^{wrong}=3 is not a \w+ parameter; closest valid "
                                         rf"names: \[[^]]*'{right}'"):
        make(**{wrong: 3}).fit(X, Y, qid=QID)


def test_legitimate_booster_parameters_still_pass(make):
    params = LEGITIMATE[make.booster]
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)  # XGBoost warns on parameters not used
        ranker = make(**params).fit(X, Y, qid=QID)
    assert ranker.predict(X).shape == (X.shape[0],)


def test_lightgbm_parameter_names_come_from_lightgbm():
    pytest.importorskip("lightgbm")
    from stochrank_objectives.adapters.lightgbm._ranker import lightgbm_parameter_names

    names = lightgbm_parameter_names()
    assert {"num_leaves", "min_data_in_leaf", "min_child_samples", "lambda_l2", "reg_lambda",
            "bagging_fraction", "subsample", "max_bin", "categorical_feature"} <= names
    assert "num_leave" not in names


def test_empty_X_is_refused(make):
    with pytest.raises(ValueError, match="X has 0 rows"):
        make().fit(np.zeros((0, 5)), np.zeros(0), qid=np.zeros(0, dtype=int))


def test_one_query_of_one_document_is_refused(make):
    with pytest.raises(ValueError, match="every query of qid/group has a single document"):
        make().fit(X[:1], Y[:1], qid=[0])


def test_X_as_a_list_of_rows_is_accepted(make):
    from_array = make().fit(X, Y, qid=QID)
    from_list = make().fit(X.tolist(), Y.tolist(), qid=QID.tolist())
    assert np.array_equal(from_list.predict(X.tolist()), from_array.predict(X))
    assert from_list.n_features_in_ == 5


def test_all_labels_equal_warns_that_every_gradient_is_zero(make):
    with pytest.warns(UserWarning, match=r"^y: .*every query's gradient is zero"):
        make().fit(X, np.ones_like(Y), qid=QID)


class _Failing:
    """An objective whose gradient raises (a failure inside the booster's training)."""

    def grad_hess(self, scores, labels, offsets, iteration=0):
        raise RuntimeError("gradient failed")


def _assert_unfitted(ranker):
    if type(ranker).__name__ == "StochasticCatBoostRanker":  # CatBoost's attributes and error
        from catboost import CatBoostError

        assert not ranker.is_fitted() and ranker.tree_count_ is None
        for name in ("booster_", "objective_"):
            assert not hasattr(ranker, name), name
        with pytest.raises(CatBoostError, match="no trained model"):
            ranker.predict(X)
        return
    for name in ("booster_", "n_features_in_", "objective_", "best_iteration_",
                 "evals_result_"):
        assert not hasattr(ranker, name), name
    with pytest.raises(AttributeError, match="not fitted|need to call fit"):  # XGBoost's
        ranker.predict(X)


def test_a_failed_refit_leaves_the_ranker_unfitted(make):
    ranker = make().fit(X, Y, qid=QID)
    if make.booster == "catboost":  # CatBoost refuses set_params on a fitted model
        ranker._init_params["objective"] = _Failing()
        ranker._canonized_params = None
    else:
        ranker.set_params(objective=_Failing())
    with pytest.raises(Exception, match="gradient failed"):  # CatBoost wraps it
        ranker.fit(X[:, :3], Y, qid=QID)
    _assert_unfitted(ranker)
    if make.booster == "xgboost":  # XGBRanker trains 0 trees for n_estimators=0
        return
    ranker = make().fit(X, Y, qid=QID)
    if make.booster == "catboost":
        ranker._init_params["n_estimators"] = 0
        ranker._canonized_params = None
    else:
        ranker.set_params(n_estimators=0)
    with pytest.raises(ValueError, match="n_estimators|boosting rounds"):  # LightGBM's
        ranker.fit(X, Y, qid=QID)
    _assert_unfitted(ranker)


def test_best_iteration_convention_is_in_each_ranker_docstring(make):
    doc = make.cls.__doc__
    # LightGBM's is LGBMRanker's: 1-based (the number of trees kept)
    assert "best_iteration_" in doc and ("1-based" if make.booster == "lightgbm"
                                         else "0-based") in doc


# -- issue 21: no silent wrong answers --------------------------------------------------------
def _with_zeros(X):
    # half the entries 0.0: what a scipy sparse matrix leaves implicit
    Xz = X.copy()
    Xz[np.abs(Xz) < 0.7] = 0.0
    return Xz


def test_a_sparse_implicit_zero_is_the_value_zero_in_every_ranker(make):
    sp = pytest.importorskip("scipy.sparse")
    Xz = _with_zeros(X)
    assert 0.3 < np.mean(Xz == 0) < 0.7
    eval_set = [(sp.csr_matrix(Xz[:40]), Y[:40], QID[:40])]
    dense = make().fit(Xz, Y, qid=QID, eval_set=[(Xz[:40], Y[:40], QID[:40])])
    sparse = make().fit(sp.csr_matrix(Xz), Y, qid=QID, eval_set=eval_set)
    expected = dense.predict(Xz)
    np.testing.assert_array_equal(sparse.predict(Xz), expected)
    np.testing.assert_array_equal(sparse.predict(sp.csr_matrix(Xz)), expected)
    np.testing.assert_array_equal(dense.predict(sp.csr_matrix(Xz)), expected)
    np.testing.assert_array_equal(dense.predict(sp.csc_matrix(Xz)), expected)
    assert sparse.evals_result_ == dense.evals_result_


def test_early_stopping_on_an_eval_set_with_nothing_to_rank_is_refused(make):
    flat = (X[:40], np.ones(40), QID[:40])
    with pytest.raises(ValueError, match=r"^eval_set\[0\]: .*labels of every query are all "
                                         r"equal.*early_stopping_rounds"):
        make(early_stopping_rounds=2).fit(X, Y, qid=QID, eval_set=[flat])
    if make.booster == "lightgbm":  # LightGBM's early stopping watches every eval set
        with pytest.raises(ValueError, match=r"^eval_set\[0\]: .*labels of every query"):
            make(early_stopping_rounds=2).fit(X, Y, qid=QID,
                                              eval_set=[flat, (X[40:], Y[40:], QID[40:])])
        return
    # early stopping watches the last set: a flat first set is only a warning
    with pytest.warns(UserWarning, match=r"^eval_set\[0\]: .*labels of every query are all "
                                         r"equal"):
        make(early_stopping_rounds=2).fit(X, Y, qid=QID,
                                          eval_set=[flat, (X[40:], Y[40:], QID[40:])])


def test_an_eval_set_with_nothing_to_rank_warns_without_early_stopping(make):
    with pytest.warns(UserWarning, match=r"^eval_set\[1\]: .*labels of every query are all "
                                         r"equal.*constant"):
        make().fit(X, Y, qid=QID, eval_set=[(X[:40], Y[:40], QID[:40]),
                                            (X[:40], np.zeros(40), QID[:40])])


def test_an_eval_set_with_some_flat_queries_is_accepted(make):
    y = Y[:40].copy()
    y[:16] = 1.0  # the first two queries flat, the other three rankable
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        make(early_stopping_rounds=2).fit(X, Y, qid=QID, eval_set=[(X[:40], y, QID[:40])])


# each booster's name for the eval sets' weights, one entry per set
EVAL_WEIGHTS = {"lightgbm": "eval_sample_weight", "xgboost": "sample_weight_eval_set",
                "catboost": "eval_sample_weight"}


def _weighted_out_eval_set():
    """Five queries: two flat of weight 1, three rankable of weight 0 (per row)."""
    y = Y[:40].copy()
    y[:16] = 1.0
    w = np.where(QID[:40] < 2, 1.0, 0.0)
    return (X[:40], y, QID[:40]), w


def test_early_stopping_on_an_eval_set_whose_rankable_queries_weigh_0_is_refused(make):
    # weight 0 removes a query: left are flat queries, a constant metric (issue 44, case 4)
    evals, w = _weighted_out_eval_set()
    with pytest.raises(ValueError, match=r"^eval_set\[0\]: every query whose documents differ "
                                         r"in relevance has weight 0.*early_stopping_rounds"):
        make(early_stopping_rounds=2).fit(X, Y, qid=QID, eval_set=[evals],
                                          **{EVAL_WEIGHTS[make.booster]: [w]})
    with pytest.warns(UserWarning, match=r"^eval_set\[0\]: every query whose documents "
                                         r"differ in relevance has weight 0"):
        make().fit(X, Y, qid=QID, eval_set=[evals], **{EVAL_WEIGHTS[make.booster]: [w]})


def test_training_rows_whose_rankable_queries_weigh_0_warn_of_a_constant_model(make):
    y = Y.copy()
    y[QID < 2] = 1.0
    w = np.where(QID < 2, 1.0, 0.0)
    with pytest.warns(UserWarning, match=r"^sample_weight: every query whose documents differ "
                                         r"in relevance has weight 0.*constant model"):
        make().fit(X, y, qid=QID, sample_weight=w)


@pytest.mark.parametrize("bad,shown", [(np.nan, "NaN"), (np.inf, "inf"), (-np.inf, "-inf")])
def test_a_non_finite_qid_is_refused_naming_the_row(make, bad, shown):
    qid = QID.astype(np.float64)
    qid[QID == 3] = bad  # rows 24..31, contiguous
    with pytest.raises(ValueError, match=rf"^qid has {shown} at row 24 \(first of 8\): query "
                                         r"ids must be finite"):
        make().fit(X, Y, qid=qid)
    with pytest.raises(ValueError, match=rf"^eval_set\[0\]: qid has {shown} at row 24"):
        make().fit(X, Y, qid=QID, eval_set=[(X, Y, qid)])


@pytest.mark.parametrize("bad", [np.inf, -np.inf])
def test_inf_in_X_is_refused_naming_the_column_and_row(make, bad):
    pd = pytest.importorskip("pandas")
    Xi = X.copy()
    Xi[5, 2] = bad
    fix = r"replace it by a large finite value, or by NaN for a missing value"
    with pytest.raises(ValueError, match=rf"^X column 2 holds {bad} \(first at row 5\).*{fix}"):
        make().fit(Xi, Y, qid=QID)
    frame = pd.DataFrame(Xi, columns=list("abcde"))
    with pytest.raises(ValueError, match=r"^X column 'c' holds .*inf \(first at row 5\)"):
        make().fit(frame, Y, qid=QID)
    with pytest.raises(ValueError, match=r"^eval_set\[0\] X column 2 holds .*inf"):
        make().fit(X, Y, qid=QID, eval_set=[(Xi, Y, QID)])
    ranker = make().fit(X, Y, qid=QID)
    with pytest.raises(ValueError, match=r"^X column 2 holds .*inf \(first at row 5\)"):
        ranker.predict(Xi)
    sp = pytest.importorskip("scipy.sparse")
    with pytest.raises(ValueError, match=r"^X column 2 holds .*inf \(first at row 5\)"):
        ranker.predict(sp.csr_matrix(Xi))


def test_a_string_in_X_is_refused_naming_the_column_and_value(make):
    pd = pytest.importorskip("pandas")
    Xo = X.astype(object)
    Xo[6, 1] = "abc"
    with pytest.raises(ValueError, match=r"^X column 1 holds the non-numeric value 'abc' "
                                         r"\(first at row 6\).*encode it as numbers"):
        make().fit(Xo, Y, qid=QID)
    frame = pd.DataFrame(Xo, columns=list("abcde"))
    with pytest.raises(ValueError, match=r"^X column 'b' holds the non-numeric value 'abc' "
                                         r"\(first at row 6\).*(category|cat_features=\['b'\])"):
        make().fit(frame, Y, qid=QID)
    with pytest.raises(ValueError, match=r"^X column 1 holds the non-numeric value 'abc'"):
        make().fit(Xo.tolist(), Y, qid=QID)  # a list of rows too
    ranker = make().fit(X, Y, qid=QID)
    with pytest.raises(ValueError, match=r"^X column 1 holds the non-numeric value 'abc'"):
        ranker.predict(Xo)


def _with_category(pd):
    frame = pd.DataFrame(X, columns=list("abcde"))
    frame["kind"] = pd.Categorical(np.array(["x", "y", "z"])[np.arange(len(frame)) % 3])
    return frame


# how each booster is told that a pandas category column is categorical
CATEGORICAL = {"lightgbm": ({}, None), "xgboost": (dict(enable_categorical=True),
                                                   "enable_categorical=True"),
               "catboost": (dict(cat_features=["kind"], has_time=True),  # the fast route
                            r"cat_features=\['kind'\]")}


def test_a_category_column_trains_and_predicts_in_every_ranker(make):
    pd = pytest.importorskip("pandas")
    frame = _with_category(pd)
    params, fix = CATEGORICAL[make.booster]
    ranker = make(**params).fit(frame, Y, qid=QID, eval_set=[(frame[:40], Y[:40], QID[:40])])
    scores = ranker.predict(frame)
    assert scores.shape == (len(frame),) and np.all(np.isfinite(scores))
    if fix is not None:  # without the booster's setting: an error naming column and setting
        with pytest.raises(ValueError, match=rf"^X column 'kind' has the pandas category "
                                             rf"dtype.*{fix}"):
            make().fit(frame, Y, qid=QID)


def test_xgboost_max_cat_to_onehot_is_accepted():
    pd = pytest.importorskip("pandas")
    pytest.importorskip("xgboost")
    from stochrank_objectives import StochasticXGBRanker

    ranker = StochasticXGBRanker(StochasticRank(top=5, seed=1), n_estimators=3, n_jobs=1,
                                 enable_categorical=True, max_cat_to_onehot=8)
    assert ranker.fit(_with_category(pd), Y, qid=QID).predict(_with_category(pd)).shape == (96,)


def test_duplicate_column_names_are_refused(make):
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame(X, columns=["a", "b", "a", "d", "b"])
    with pytest.raises(ValueError, match=r"^X has duplicate column names \['a', 'b'\]"):
        make().fit(frame, Y, qid=QID)
    ranker = make().fit(X, Y, qid=QID)
    with pytest.raises(ValueError, match=r"^X has duplicate column names \['a', 'b'\]"):
        ranker.predict(frame)


def test_set_params_takes_the_deep_params_of_a_ranker_with_sglb(make):
    # scikit-learn sets top-level parameters before nested ones: sglb= and sglb__* in one
    # call work on a ranker without SGLB (issue 44, case 8)
    source = make(learning_rate=0.1, sglb=SGLB(0.1, 0.01, 1e4, seed=0))
    target = make(learning_rate=0.1)
    target.set_params(**source.get_params(deep=True))
    assert target.get_params()["sglb"] is source.get_params()["sglb"]
    np.testing.assert_array_equal(target.fit(X, Y, qid=QID).predict(X),
                                  source.fit(X, Y, qid=QID).predict(X))
    with pytest.raises(ValueError, match=r"sglb__\* parameters need an SGLB schedule"):
        make().set_params(sglb__seed=3)


# each booster's name for the model to continue, and its model file's suffix
CONTINUE_FROM = {"lightgbm": ("init_model", "txt"), "xgboost": ("xgb_model", "json"),
                 "catboost": ("init_model", "cbm")}


@pytest.mark.parametrize("damage", ["empty", "text", "cut"])
def test_a_model_file_that_is_not_a_whole_model_is_refused_naming_it(make, tmp_path, damage):
    # "a file that is not what it claims", the same in every ranker: a ValueError naming the
    # argument and the path, never the booster's C++ message or an aborted process (the
    # truncated LightGBM file aborted it: issue 44, cases 7 and 9)
    name, suffix = CONTINUE_FROM[make.booster]
    saved = tmp_path / f"model.{suffix}"
    make().fit(X, Y, qid=QID).save_model(saved)
    whole = saved.read_bytes()
    # cut inside the trees (LightGBM's file may lose its tail after "end of trees" and load
    # the same model)
    end = whole.find(b"end of trees")
    content = {"empty": b"", "text": b"not a model\n",
               "cut": whole[:int(0.6 * (end if end > 0 else len(whole)))]}
    path = tmp_path / f"{damage}.{suffix}"
    path.write_bytes(content[damage])
    with pytest.raises(ValueError, match=rf"^{name}=.*{damage}\.{suffix}"):
        make().fit(X, Y, qid=QID, **{name: str(path)})
    # the whole file continues
    assert make().fit(X, Y, qid=QID, **{name: str(saved)}).predict(X).shape == (X.shape[0],)
