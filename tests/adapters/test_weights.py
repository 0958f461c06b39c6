"""Query weights (issue 23): one meaning in every booster, adapter and ranker.

The loss is ``sum_q w_q L_q``: the adapters hand the query weights to the objective
(``objectives.weighted_grad_hess``), which multiplies each query's gradient and hessian by its
weight and counts query ``q`` ``w_q`` times in every normalisation over the call, so a weight of
0 removes a query and an integer weight ``w`` is the query ``w`` times
(``tests/objectives/test_query_weights.py`` holds that for every registered objective).
"""

import numpy as np
import pytest
import sklearn

import stochrank_objectives as so
from stochrank_objectives import metrics
from stochrank_objectives.objectives import OBJECTIVES
from stochrank_objectives.sglb import SGLB

lgb = pytest.importorskip("lightgbm")
xgb = pytest.importorskip("xgboost")
catboost = pytest.importorskip("catboost")

from stochrank_objectives.adapters._common import EvalMetric, objective_metric  # noqa: E402
from stochrank_objectives.adapters.catboost import CatBoostObjective  # noqa: E402
from stochrank_objectives.adapters.lightgbm import LGBMObjective  # noqa: E402
from stochrank_objectives.adapters.xgboost import XGBObjective  # noqa: E402

RANKERS = {"lightgbm": so.StochasticLGBMRanker, "xgboost": so.StochasticXGBRanker,
           "catboost": so.StochasticCatBoostRanker}
#: deterministic, small trees; CatBoost without bootstrap and split noise
PARAMS = {"lightgbm": dict(num_leaves=7, min_data_in_leaf=1, min_data_in_bin=1,
                           deterministic=True, force_row_wise=True),
          "xgboost": dict(max_depth=3),
          # CatBoost keeps the best iteration with an eval set by default: every tree here
          "catboost": dict(depth=3, bootstrap_type="No", random_strength=0,
                           use_best_model=False)}
#: every registered objective's examples (the registry, not a hand-kept list)
EVERY_OBJECTIVE = [obj for cls in OBJECTIVES.values() for obj in cls.examples()]
DETERMINISTIC = [obj for obj in EVERY_OBJECTIVE if not obj.draws_noise]


def _letor(n_queries, seed):
    """Integer features (few distinct values: every booster bins them the same way whatever
    the row counts), graded labels from the first two features plus noise."""
    rng = np.random.default_rng(seed)
    sizes = rng.integers(6, 14, size=n_queries)
    qid = np.repeat(np.arange(n_queries), sizes)
    X = rng.integers(0, 8, size=(qid.size, 4)).astype(np.float64)
    y = np.clip(np.round((X[:, 0] + 0.5 * X[:, 1]) / 3 + rng.normal(0, 0.5, qid.size)), 0, 3)
    return X, y, qid, so.query_offsets_from_qid(qid)


@pytest.fixture(scope="module")
def data():
    return _letor(40, 0)


def _duplicated(X, y, offs, counts):
    """Each query ``q`` repeated ``counts[q]`` times (copies adjacent); the rows taken."""
    rows = np.concatenate([np.tile(np.arange(offs[q], offs[q + 1]), int(c))
                           for q, c in enumerate(counts)])
    sizes = np.repeat(np.diff(offs), np.asarray(counts, dtype=int))
    return rows, so.query_offsets_from_sizes(sizes)


def _summed_over_copies(values, rows, n):
    return np.bincount(rows, weights=values, minlength=n)


def _fit(booster, X, y, qid, n_estimators=20, eval_metric=None, **fit):
    ranker = RANKERS[booster](so.LambdaMART(), n_estimators=n_estimators, learning_rate=0.3,
                              random_state=0, n_jobs=1, eval_metric=eval_metric,
                              **PARAMS[booster])
    return ranker.fit(X, y, qid=qid, **fit)


# -- the failures of issue 23 --------------------------------------------------------------------
@pytest.mark.parametrize("booster", sorted(RANKERS))
def test_rankers_accept_sample_weight(booster, data):
    X, y, qid, offs = data
    w = np.repeat(np.linspace(0.5, 2.0, offs.size - 1), np.diff(offs))
    # LightGBM: the package's metric by name (LightGBM's ndcg is its own), and a copy of X,
    # which LightGBM would otherwise evaluate as the training data (with its weights)
    lgbm = booster == "lightgbm"
    ranker = _fit(booster, X, y, qid, n_estimators=3, sample_weight=w,
                  eval_set=[(X.copy() if lgbm else X, y, qid)], eval_sample_weight=[w],
                  eval_metric=objective_metric(so.LambdaMART()) if lgbm else None)
    assert np.isfinite(ranker.predict(X)).all()
    # the eval metric logged is the weighted mean, the one score(sample_weight=) gives
    logged = list(ranker.evals_result_[{"catboost": "validation"}.get(
        booster, "validation_0")].values())[0][-1]  # CatBoostRanker's key for one eval set
    assert logged == pytest.approx(ranker.score(X, y, qid=qid, sample_weight=w), abs=1e-6)


def test_lgb_train_with_a_weighted_dataset(data):
    X, y, qid, offs = data
    w = np.repeat(np.arange(1.0, offs.size), np.diff(offs))
    train = lgb.Dataset(X, y, group=np.diff(offs), weight=w)
    booster = lgb.train({"objective": LGBMObjective(so.LambdaMART()), "verbose": -1,
                         "num_threads": 1}, train, 3)
    assert booster.current_iteration() == 3


def test_xgb_train_with_a_weighted_dmatrix(data):
    X, y, qid, offs = data
    dtrain = xgb.DMatrix(X, y, qid=qid, weight=np.arange(1.0, offs.size))  # one per group
    booster = xgb.train({"base_score": 0.0, "disable_default_eval_metric": 1, "nthread": 1},
                        dtrain, 3, obj=XGBObjective(so.LambdaMART()))
    assert booster.num_boosted_rounds() == 3


# -- gradients: integer weights = duplicated queries, weight 0 = no query ---------------------
def _scores(n):
    # fixed, distinct scores, exact in float32 (XGBoost's margins)
    return np.sin(np.arange(n) * 0.7).astype(np.float32).astype(np.float64)


def _adapter_grads(booster, objective, X, y, offs, qw):
    """(grad, hess) of ``objective`` through ``booster``'s low-level adapter with query
    weights ``qw`` (None: unweighted) carried the booster's own way."""
    scores = _scores(y.size)
    rows_w = None if qw is None else np.repeat(qw, np.diff(offs))
    if booster == "lightgbm":
        ds = lgb.Dataset(X, y, group=np.diff(offs), weight=rows_w, free_raw_data=False)
        return LGBMObjective(objective)(scores, ds.construct())
    if booster == "xgboost":
        qid = np.repeat(np.arange(offs.size - 1), np.diff(offs))
        return XGBObjective(objective)(scores.astype(np.float32),
                                       xgb.DMatrix(X, y, qid=qid, weight=qw))
    ders = CatBoostObjective(objective, y, offs, weights=qw).derivatives(scores)
    return -ders[:, 0], -ders[:, 1]


@pytest.mark.parametrize("booster", sorted(RANKERS))
@pytest.mark.parametrize("objective", DETERMINISTIC, ids=lambda o: type(o).__name__)
def test_integer_weights_are_duplicated_queries(booster, objective, data):
    X, y, _, offs = data
    counts = np.tile([1, 2, 0, 3], (offs.size - 1) // 4 + 1)[:offs.size - 1]
    g, h = _adapter_grads(booster, objective, X, y, offs, counts.astype(float))
    rows, dup_offs = _duplicated(X, y, offs, counts)
    scores = _scores(y.size)[rows]  # the duplicated queries at the same scores
    gd, hd = objective.grad_hess(scores, y[rows], dup_offs)
    np.testing.assert_allclose(g, _summed_over_copies(gd, rows, y.size), rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(h, _summed_over_copies(hd, rows, y.size), rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("booster", sorted(RANKERS))
@pytest.mark.parametrize("objective", EVERY_OBJECTIVE, ids=lambda o: type(o).__name__)
def test_every_objective_gets_the_query_weights(booster, objective, data):
    # stochastic objectives too: the queries (and so the noise streams) are unchanged; the
    # objective weighs its derivatives and its normalisations over the call
    X, y, _, offs = data
    qw = np.tile([0.0, 1.5, 1.0, 4.0], (offs.size - 1) // 4 + 1)[:offs.size - 1]
    g, h = _adapter_grads(booster, objective, X, y, offs, qw)
    g1, h1 = objective.grad_hess(_scores(y.size), y, offs, weights=qw)
    w = np.repeat(qw, np.diff(offs))
    np.testing.assert_allclose(g, g1, rtol=1e-12, atol=0)
    np.testing.assert_allclose(h, h1, rtol=1e-12, atol=0)
    assert not g[w == 0].any() and not h[w == 0].any()  # weight 0: no influence


@pytest.mark.parametrize("booster", sorted(RANKERS))
def test_zero_weight_queries_leave_the_default_model_unchanged(booster):
    """Issue 32, item 1: the default objective (a curvature hessian normalised over the call)
    with weight 0 on every odd query trains the same model whatever those queries' labels."""
    X, y, qid, offs = _letor(30, 3)
    odd = np.repeat(np.arange(offs.size - 1) % 2 == 1, np.diff(offs))
    w = (~odd).astype(float)
    y_reversed = np.where(odd, y.max() - y, y)
    preds = [RANKERS[booster](n_estimators=8, random_state=0, n_jobs=1, **PARAMS[booster])
             .fit(X, labels, qid=qid, sample_weight=w).predict(X) for labels in (y, y_reversed)]
    np.testing.assert_array_equal(preds[0], preds[1])


def test_sglb_noise_is_added_after_weighting_times_sqrt_w(data):
    X, y, _, offs = data
    sglb = SGLB(0.1, 0.0, 1.0, seed=3)
    qw = np.tile([0.0, 1.0, 4.0], (offs.size - 1) // 3 + 1)[:offs.size - 1]
    w = np.repeat(qw, np.diff(offs))
    objective = so.LambdaMART()
    g1, h1 = objective.grad_hess(_scores(y.size), y, offs)
    g, h = sglb.grad_hess(objective, _scores(y.size), y, offs, 2, w)
    # preconditioned by LambdaMART's (unweighted) hessian: sqrt(w h) per document
    np.testing.assert_allclose(g, w * g1 + np.sqrt(w * h1) * sglb.noise(y.size, 2), rtol=1e-12)
    np.testing.assert_allclose(h, w * h1, rtol=1e-12)
    assert not g[w == 0].any()  # a removed query gets no noise either
    ders = CatBoostObjective(objective, y, offs, weights=qw, sglb=sglb)
    ders.iteration = 2
    np.testing.assert_allclose(-ders.derivatives(_scores(y.size))[:, 0], g, rtol=1e-12)


# -- training: weight 0 removes a query, integer weights = duplicated queries -----------------
@pytest.mark.parametrize("booster", sorted(RANKERS))
def test_zero_weight_removes_queries_with_reversed_labels(booster):
    X, y, qid, offs = _letor(80, 1)
    Xt, yt, qid_t, offs_t = _letor(60, 2)
    n_q = offs.size - 1
    reversed_q = np.arange(n_q) % 2 == 1
    reversed_rows = np.repeat(reversed_q, np.diff(offs))
    y_mixed = np.where(reversed_rows, y.max() - y, y)
    w = (~reversed_rows).astype(float)

    def test_ndcg(ranker):
        return metrics.ndcg_at_k(ranker.predict(Xt), yt, offs_t, 5)

    weighted = test_ndcg(_fit(booster, X, y_mixed, qid, sample_weight=w))
    clean_half = test_ndcg(_fit(booster, X[~reversed_rows], y[~reversed_rows],
                                qid[~reversed_rows]))
    everything = test_ndcg(_fit(booster, X, y_mixed, qid))
    assert weighted == pytest.approx(clean_half, abs=0.02)
    assert weighted > everything + 0.1


@pytest.mark.parametrize("booster", sorted(RANKERS))
def test_integer_weights_train_like_duplicated_queries(booster, data):
    X, y, qid, offs = data
    counts = np.tile([1, 2, 3], (offs.size - 1) // 3 + 1)[:offs.size - 1]
    rows, dup_offs = _duplicated(X, y, offs, counts)
    dup_qid = np.repeat(np.arange(dup_offs.size - 1), np.diff(dup_offs))
    weighted = _fit(booster, X, y, qid, sample_weight=np.repeat(counts, np.diff(offs)))
    duplicated = _fit(booster, X[rows], y[rows], dup_qid)
    if booster != "catboost":
        np.testing.assert_allclose(weighted.predict(X), duplicated.predict(X), atol=1e-5)
        return
    # CatBoost: the same derivatives and Newton leaf values, but its split scores count rows
    # (a weight-3 query is 3 times fewer rows than its 3 copies), so an approximate agreement:
    # closer to the duplicated-query model than to the unweighted one
    unweighted = _fit(booster, X, y, qid)
    p_w, p_d, p_u = (m.predict(X) for m in (weighted, duplicated, unweighted))
    assert np.corrcoef(p_w, p_d)[0, 1] > max(0.99, np.corrcoef(p_w, p_u)[0, 1])


# -- weighted metrics ---------------------------------------------------------------------------
def _brute_force(metric, scores, y, offs, qw):
    """``sum_q w_q M_q / sum_q w_q`` with ``M_q`` the metric of query ``q`` alone."""
    values = [metric.value(scores[a:b], y[a:b], [0, b - a]) for a, b in zip(offs[:-1], offs[1:])]
    return float(np.dot(qw, values) / qw.sum())


@pytest.mark.parametrize("booster", sorted(RANKERS))
def test_score_and_eval_metrics_are_weighted_means(booster, data):
    X, y, qid, offs = data
    qw = np.tile([0.0, 1.0, 2.5], (offs.size - 1) // 3 + 1)[:offs.size - 1]
    w = np.repeat(qw, np.diff(offs))
    lgbm = booster == "lightgbm"  # LightGBM: a copy of X (else evaluated as the training data)
    ranker = _fit(booster, X, y, qid, n_estimators=3,
                  eval_set=[(X.copy() if lgbm else X, y, qid)], eval_sample_weight=[qw],
                  eval_metric="NDCG@5")
    scores = ranker.predict(X)
    own = _brute_force(objective_metric(ranker.objective_), scores, y, offs, qw)
    assert ranker.score(X, y, qid=qid, sample_weight=w) == pytest.approx(own, rel=1e-12)
    assert ranker.score(X, y, qid=qid, sample_weight=qw) == pytest.approx(own, rel=1e-12)
    expected = _brute_force(EvalMetric("NDCG", 5), scores, y, offs, qw)
    logged = (ranker.evals_result_["validation"]["NDCG:top=5;type=Exp"][-1]  # CatBoost's names
              if booster == "catboost" else
              ranker.evals_result_["validation_0"]["NDCG@5"][-1])
    assert logged == pytest.approx(expected, abs=1e-6)
    scorer = so.ranking_scorer("NDCG", 5)
    with sklearn.config_context(enable_metadata_routing=True):
        value = scorer(ranker, X, y, qid=qid, sample_weight=w)
    assert value == pytest.approx(expected, rel=1e-12)


def test_catboost_eval_metric_weighs_queries(data):
    X, y, qid, offs = data
    qw = np.tile([0.0, 1.0, 2.5], (offs.size - 1) // 3 + 1)[:offs.size - 1]
    ranker = _fit("catboost", X, y, qid, n_estimators=3, eval_set=[(X, y, qid)],
                  eval_sample_weight=[qw])
    # the default eval metric: CatBoost's own, equal to the objective's (worst-order ties)
    logged = list(ranker.evals_result_["validation"].values())[0][-1]
    expected = objective_metric(ranker.objective_).value(ranker.predict(X), y, offs, qw)
    assert logged == pytest.approx(expected, abs=1e-6)


def test_low_level_metrics_read_the_boosters_weights(data):
    X, y, qid, offs = data
    qw = np.tile([0.0, 1.0, 3.0], (offs.size - 1) // 3 + 1)[:offs.size - 1]
    scores = _scores(y.size)
    expected = _brute_force(EvalMetric("NDCG", 5), scores, y, offs, qw)
    ds = lgb.Dataset(X, y, group=np.diff(offs), weight=np.repeat(qw, np.diff(offs))).construct()
    assert so.adapters.lightgbm.LGBMMetric("NDCG", 5)(scores, ds)[1] == pytest.approx(expected)
    dmat = xgb.DMatrix(X, y, qid=qid, weight=qw)
    metric = so.adapters.xgboost.XGBMetric("NDCG", 5)
    assert metric(scores.astype(np.float32), dmat)[1] == pytest.approx(expected, rel=1e-6)


# -- bad weights --------------------------------------------------------------------------------
@pytest.mark.parametrize("weights, message", [
    ("negative", "finite and non-negative, got -1.0 at index 3"),
    ("nan", "finite and non-negative, got nan at index 3"),
    ("zero", "every query's weight is 0"),
    ("mixed", "documents of query 1 .* have different weights"),
    ("length", "expected one weight per document"),
])
@pytest.mark.parametrize("booster", sorted(RANKERS))
def test_bad_sample_weight_is_refused(booster, weights, message, data):
    X, y, qid, offs = data
    w = np.ones(y.size)
    if weights == "negative":
        w[3] = -1.0
    elif weights == "nan":
        w[3] = np.nan
    elif weights == "zero":
        w[:] = 0.0
    elif weights == "mixed":
        w[offs[1] + 1] = 2.0
    else:
        w = w[:-1]
    with pytest.raises(ValueError, match=message):
        _fit(booster, X, y, qid, n_estimators=1, sample_weight=w)
    with pytest.raises(ValueError, match=message):
        _fit(booster, X, y, qid, n_estimators=1, eval_set=[(X, y, qid)],
             eval_sample_weight=[w])


def test_eval_sample_weight_needs_one_entry_per_eval_set(data):
    X, y, qid, _ = data
    with pytest.raises(ValueError, match="one entry .* per eval set"):
        _fit("lightgbm", X, y, qid, n_estimators=1, eval_set=[(X, y, qid)],
             eval_sample_weight=[None, None])


def test_catboost_learn_pool_weights_are_refused_with_the_fix(data):
    X, y, qid, offs = data
    adapter = CatBoostObjective(so.LambdaMART(), y, offs)
    pool = catboost.Pool(X, label=so.adapters.catboost.encode_row_index(y.size), group_id=qid,
                         group_weight=np.full(y.size, 2.0))
    model = catboost.CatBoost(dict(loss_function=adapter, eval_metric="NDCG", iterations=1,
                                   boosting_type="Plain", thread_count=1, verbose=False))
    with pytest.raises(ValueError, match=r"CatBoostObjective\(\.\.\., weights=w\)"):
        so.adapters.catboost.catboost_fit(model, pool, adapter)


def test_lightgbm_sklearn_ranker_passes_weights_to_objective_and_metric(data):
    # LGBMRanker's call form (y_true, y_pred, weight, group), for the objective and the metric
    X, y, qid, offs = data
    qw = np.tile([0.0, 1.0, 2.0], (offs.size - 1) // 3 + 1)[:offs.size - 1]
    w = np.repeat(qw, np.diff(offs))
    ranker = lgb.LGBMRanker(objective=LGBMObjective(so.LambdaMART()), n_estimators=3,
                            metric="None", verbose=-1, n_jobs=1, min_child_samples=1)
    ranker.fit(X, y, group=np.diff(offs), sample_weight=w, eval_X=(X,), eval_y=(y,),
               eval_group=[np.diff(offs)], eval_sample_weight=[w],
               eval_metric=so.adapters.lightgbm.LGBMMetric("NDCG", 5))
    expected = _brute_force(EvalMetric("NDCG", 5), ranker.predict(X, raw_score=True), y, offs,
                            qw)
    assert ranker.evals_result_["training"]["NDCG@5"][-1] == pytest.approx(expected)
    unweighted = lgb.LGBMRanker(objective=LGBMObjective(so.LambdaMART()), n_estimators=3,
                                metric="None", verbose=-1, n_jobs=1, min_child_samples=1)
    unweighted.fit(X, y, group=np.diff(offs))
    assert not np.allclose(unweighted.predict(X), ranker.predict(X))  # the weights mattered
