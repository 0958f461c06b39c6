"""Inputs a new user tries first (finalising boosters, seeds, exports, DataFrames and lists,
label domains): each gets a clear answer; each test failed before its fix."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from stochrank_objectives import SGLB, StochasticRank

RNG = np.random.default_rng(11)
X = RNG.normal(size=(120, 4))
Y = RNG.integers(0, 3, 120).astype(float)
QID = np.repeat(np.arange(6), 20)
GROUP = [20] * 6


# -- 1. LightGBM: finalize() must not scale a reloaded (already final) model again -------------
def _lgb_sglb_booster(**train_kwargs):
    lgb = pytest.importorskip("lightgbm")
    from stochrank_objectives.adapters.lightgbm import LGBMObjective

    obj = LGBMObjective(StochasticRank(top=5, seed=1), sglb=SGLB(0.3, 0.6, 300.0, seed=5))
    params = dict(objective=obj, num_leaves=7, min_data_in_leaf=5, verbose=-1, num_threads=1,
                  learning_rate=0.3, deterministic=True, force_row_wise=True)
    ds = lgb.Dataset(X, Y, group=GROUP, free_raw_data=False)
    booster = lgb.train(params, ds, 5, callbacks=[obj.callback()], **train_kwargs)
    return obj, booster


@pytest.mark.parametrize("how", ["model_file", "model_str"])
def test_lightgbm_finalize_refuses_a_reloaded_model(how, tmp_path):
    lgb = pytest.importorskip("lightgbm")
    obj, booster = _lgb_sglb_booster()
    obj.finalize(booster)
    final = booster.predict(X)
    if how == "model_file":
        booster.save_model(str(tmp_path / "model.txt"))
        reloaded = lgb.Booster(model_file=str(tmp_path / "model.txt"))
    else:
        reloaded = lgb.Booster(model_str=booster.model_to_string())
    with pytest.raises(RuntimeError, match="already final"):
        obj.finalize(reloaded)
    np.testing.assert_array_equal(reloaded.predict(X), final)  # not scaled a second time


def test_lightgbm_finalize_refuses_a_booster_of_another_adapter():
    from stochrank_objectives.adapters.lightgbm import LGBMObjective

    _, booster = _lgb_sglb_booster()
    other = LGBMObjective(StochasticRank(top=5, seed=1), sglb=SGLB(0.3, 0.6, 300.0, seed=5))
    with pytest.raises(RuntimeError, match="not trained by this adapter"):
        other.finalize(booster)


def test_lightgbm_finalize_of_a_kept_booster_truncated_in_place():
    obj, kept = _lgb_sglb_booster(keep_training_booster=True)
    kept.best_iteration = 3  # as lgb.early_stopping leaves it with keep_training_booster=True
    with pytest.raises(ValueError, match="model_from_string"):
        obj.finalize(kept)
    raw = kept.predict(X, raw_score=True, num_iteration=3)
    kept.model_from_string(kept.model_to_string(num_iteration=kept.best_iteration))  # suggested
    obj.finalize(kept)
    np.testing.assert_allclose(kept.predict(X, raw_score=True),
                               obj.sglb.final_scale(3) * raw, rtol=1e-12, atol=1e-15)



# -- 3. seeds beyond the noise kernels' int64 range: a ValueError naming the field ---------------
SEED_MAX = 2 ** 63 - 1


@pytest.mark.parametrize("seed", [2 ** 63, 2 ** 64 - 1, 2 ** 64])
def test_seed_out_of_range_names_the_field(seed):
    from stochrank_objectives import draw_noise, stochastic_rank_gradient
    from stochrank_objectives.baselines import Gumbel, StochasticRankDCGRR

    message = r"seed must be in \[0, 2\*\*63 - 1\] \(<= 9223372036854775807\)"
    labels, offs2 = np.array([1.0, 0.0]), np.array([0, 2])  # checked at first use
    with pytest.raises(ValueError, match=message):
        StochasticRank(seed=seed).grad_hess(np.zeros(2), labels, offs2)
    for make in (lambda: Gumbel(StochasticRank(), seed=seed),
                 lambda: StochasticRankDCGRR(seed=seed)):
        with pytest.raises(ValueError, match="seed must be in"):
            make().grad_hess(np.zeros(2), labels, offs2)
    offs = np.array([0, 3, 6])
    with pytest.raises(ValueError, match="seed must be in"):
        draw_noise(offs, 1, seed)
    with pytest.raises(ValueError, match="seed must be in"):
        stochastic_rank_gradient(np.zeros(6), np.arange(6.0) % 3, offs, seed=seed)


def test_largest_seed_still_works():
    offs = np.array([0, 3, 6])
    g, _ = StochasticRank(seed=SEED_MAX).grad_hess(np.linspace(0, 1, 6), np.arange(6.0) % 3,
                                                   offs, 0)
    assert np.all(np.isfinite(g))


# -- 4. precision_at_k defaults k=None like every other metric ----------------------------------
def test_precision_at_k_defaults_to_the_whole_list():
    from stochrank_objectives import metrics as M

    scores = np.array([3.0, 2.0, 1.0, 0.5, 2.0, 1.0, 0.0])
    labels = np.array([1.0, 0.0, 2.0, 0.0, 0.0, 0.0, 1.0])
    offs = np.array([0, 4, 4, 7])  # an empty query in the middle: never part of the mean
    expected = np.array([2 / 4, np.nan, 1 / 3])
    np.testing.assert_allclose(M.precision_at_k(scores, labels, offs, per_query=True), expected)
    assert M.precision_at_k(scores, labels, offs) == pytest.approx((2 / 4 + 1 / 3) / 2)
    assert M.precision_at_k(scores, labels, offs, None, threshold=1.0) == pytest.approx(1 / 8)
    assert M.evaluate("precision", scores, labels, offs) == M.precision_at_k(scores, labels, offs)
    # a cutoff divides by k even for a shorter query, k=None by the query's length
    np.testing.assert_allclose(M.precision_at_k(scores, labels, offs, 4, per_query=True),
                               [2 / 4, np.nan, 1 / 4])  # trec_eval's P_k
    # with k given nothing changed
    assert M.precision_at_k(scores, labels, offs, 2) == pytest.approx((1 / 2 + 0.0) / 2)
    with pytest.raises(TypeError, match="k"):
        M.precision_at_k(scores, labels, offs, 1.5)


# -- 5. top-level API: baselines and metrics, without importing any booster --------------------
TOP_LEVEL = ["LambdaMART", "LambdaLoss", "SoftRank", "Gumbel", "ApproxNDCG", "SmoothNDCG",
             "ListNet", "StochasticRankDCGRR", "e_lambda_mart", "ndcg_at_k", "dcg_at_k",
             "err_at_k", "mrr", "precision_at_k", "average_precision", "pfound", "filtered_dcg"]


def test_top_level_exports_baselines_and_metrics_without_boosters():
    code = (
        "import sys\n"
        "import stochrank_objectives as sro\n"
        f"from stochrank_objectives import {', '.join(TOP_LEVEL)}\n"
        "from stochrank_objectives import baselines, metrics\n"
        f"names = {TOP_LEVEL!r}\n"
        "assert all(n in sro.__all__ for n in names), set(names) - set(sro.__all__)\n"
        "for n in names:\n"
        "    assert getattr(sro, n) is getattr(baselines if n[0].isupper() or n == "
        "'e_lambda_mart' else metrics, n), n\n"
        "loaded = [m for m in ('lightgbm', 'xgboost', 'catboost') if m in sys.modules]\n"
        "assert not loaded, loaded\n"
    )
    import os

    import stochrank_objectives

    root = os.path.dirname(os.path.dirname(stochrank_objectives.__file__))  # this checkout
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([root, os.environ.get("PYTHONPATH", "")])}
    subprocess.run([sys.executable, "-c", code], check=True, timeout=300, env=env)


# -- 6./7. XGBoost ranker: DataFrame in, ndarray at predict; feature_importances_ -----------------
def _xgb_ranker(**kwargs):
    pytest.importorskip("xgboost")
    from stochrank_objectives.adapters.xgboost import StochasticXGBRanker

    return StochasticXGBRanker(StochasticRank(top=5, seed=1), n_estimators=5, max_depth=3,
                               n_jobs=1, **kwargs)


def test_xgboost_ranker_fitted_on_a_dataframe_predicts_an_ndarray():
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame(X, columns=["a", "b", "c", "d"])
    ranker = _xgb_ranker().fit(frame, Y, qid=QID)
    expected = ranker.predict(frame)
    np.testing.assert_array_equal(ranker.predict(X), expected)  # as XGBRanker accepts it
    with pytest.raises(ValueError, match="Feature shape mismatch"):  # XGBoost's own
        ranker.predict(X[:, :3])
    with pytest.raises(ValueError, match="feature_names mismatch"):  # names still checked
        ranker.predict(frame.rename(columns={"a": "z"}))


def test_xgboost_ranker_feature_importances():
    xgb = pytest.importorskip("xgboost")
    ranker = _xgb_ranker().fit(X, Y, qid=QID)
    imp = ranker.feature_importances_
    assert imp.shape == (ranker.n_features_in_,) == (4,)
    assert imp.sum() == pytest.approx(1.0) and np.all(imp >= 0)
    # XGBRanker's default: normalised "gain"
    gain = ranker.booster_.get_score(importance_type="gain")
    raw = np.array([gain.get(f"f{i}", 0.0) for i in range(4)], dtype=np.float32)
    np.testing.assert_allclose(imp, raw / raw.sum(), rtol=1e-6)
    assert xgb.XGBRanker().importance_type is None  # None means "gain" for tree models
    with pytest.raises(AttributeError, match="need to call fit"):  # XGBRanker's NotFittedError
        _xgb_ranker().feature_importances_


# -- 2./7. CatBoost ranker: array-likes, early label-domain errors, feature_importances_ ----------
def _cb_ranker(objective=None, **kwargs):
    pytest.importorskip("catboost")
    from stochrank_objectives.adapters.catboost import StochasticCatBoostRanker

    return StochasticCatBoostRanker(objective or StochasticRank(top=5, seed=1), n_estimators=4,
                                    depth=3, n_jobs=1, **kwargs)


def test_catboost_ranker_fits_python_lists():
    from_lists = _cb_ranker().fit(X.tolist(), Y.tolist(), qid=QID.tolist())
    from_arrays = _cb_ranker().fit(X, Y, qid=QID)
    np.testing.assert_array_equal(from_lists.predict(X.tolist()), from_arrays.predict(X))
    eval_set = (X[:40].tolist(), Y[:40].tolist(), QID[:40].tolist())
    _cb_ranker().fit(X.tolist(), Y.tolist(), qid=QID.tolist(), eval_set=[eval_set])
    with pytest.raises(TypeError, match="X"):
        _cb_ranker().fit(object(), Y, qid=QID)


@pytest.mark.parametrize("metric,labels,field", [
    ("ERR", Y, "y"),           # ERR takes probabilities in [0, 1]; Y has grades 0..2
    ("PFound", Y, "y"),
])
def test_catboost_label_domain_errors_before_training(metric, labels, field):
    catboost = pytest.importorskip("catboost")
    ranker = _cb_ranker(StochasticRank(metric=metric, top=5))
    with pytest.raises(ValueError, match=rf"^{field}: .*\[0, 1\]") as info:
        ranker.fit(X, labels, qid=QID)
    assert not isinstance(info.value, catboost.CatBoostError)
    assert "Traceback" not in str(info.value)
    assert not hasattr(ranker, "booster_")


def test_catboost_eval_label_domain_error_names_the_eval_set():
    catboost = pytest.importorskip("catboost")
    ranker = _cb_ranker(StochasticRank(metric="ERR", top=5))
    with pytest.raises(ValueError, match=r"^eval_set\[0\] y: .*\[0, 1\]") as info:
        ranker.fit(X, Y / 2, qid=QID, eval_set=[(X, Y, QID)])  # the default ERR eval metric
    assert not isinstance(info.value, catboost.CatBoostError)
    nan = Y.copy()
    nan[7] = np.nan
    with pytest.raises(ValueError, match="y contains NaN"):
        _cb_ranker().fit(X, nan, qid=QID)


def test_catboost_ranker_feature_importances():
    ranker = _cb_ranker().fit(X, Y, qid=QID)
    imp = ranker.feature_importances_
    assert ranker.n_features_in_ == 4 and imp.shape == (4,)
    np.testing.assert_array_equal(imp, ranker.booster_.get_feature_importance())
    assert np.all(imp >= 0) and imp.sum() > 0
    with pytest.raises(AttributeError, match="fit"):
        _cb_ranker().feature_importances_


def test_catboost_unknown_eval_metric_is_named_briefly():
    # was CatBoost's error listing every loss it has
    ranker = _cb_ranker(eval_metric="NDGC")
    with pytest.raises(ValueError, match=r"eval_metric='NDGC': unknown metric .*'NDCG'.*"
                                         r"CatBoost metric string") as info:
        ranker.fit(X, Y, qid=QID)
    assert "YetiRank" not in str(info.value) and len(str(info.value)) < 300
    _cb_ranker(eval_metric="PFound:decay=0.8").fit(X, Y / 2, qid=QID)  # CatBoost's own names


def test_catboost_pool_input_is_taken_as_catboost_takes_it():
    # a CatBoostRanker now: fit(Pool) and eval_set=Pool (once refused), with CatBoost's errors
    from catboost import CatBoostError, Pool

    pool = Pool(X, label=Y, group_id=QID)
    from_pool = _cb_ranker().fit(pool, eval_set=pool, use_best_model=False)
    from_arrays = _cb_ranker().fit(X, Y, qid=QID, eval_set=[(X, Y, QID)], use_best_model=False)
    np.testing.assert_array_equal(from_pool.predict(X), from_arrays.predict(X))
    assert from_pool.evals_result_ == from_arrays.evals_result_
    with pytest.raises(CatBoostError, match="should have the None type"):
        _cb_ranker().fit(pool, Y, qid=QID)
