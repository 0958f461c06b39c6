"""Every objective of the package trains through all three adapters (LightGBM, XGBoost, CatBoost)
on MQ2008 Fold 1 and beats a constant model on the validation queries (NDCG@5).

Small on purpose (a subset of the training queries, a few shallow trees): the point is that each
objective's gradients drive each booster in the right direction, not the final accuracy.
"""

import numpy as np
import pytest

from stochrank_objectives import metrics
from stochrank_objectives.baselines import (
    ApproxNDCG,
    Gumbel,
    LambdaLoss,
    LambdaMART,
    ListNet,
    SmoothNDCG,
    SoftRank,
)
from stochrank_objectives.objectives import StochasticRank

N_TREES = 8
# unit-hessian objectives take gradient-step leaves: a larger learning rate
OBJECTIVES = {
    "StochasticRank": (StochasticRank(top=5, seed=0), 1.0),
    "LambdaMART": (LambdaMART(top=5), 0.3),
    "LambdaLoss": (LambdaLoss(), 0.3),
    "Gumbel(LambdaMART)": (Gumbel(LambdaMART(top=5), n_samples=2, seed=1), 0.3),
    "Gumbel(LambdaLoss)": (Gumbel(LambdaLoss(), n_samples=2, seed=1), 0.3),
    "SoftRank": (SoftRank(top=5, seed=0), 1.0),
    "ApproxNDCG": (ApproxNDCG(), 1.0),
    "Gumbel(ApproxNDCG)": (Gumbel(ApproxNDCG(), n_samples=2, seed=1), 1.0),
    "SmoothNDCG": (SmoothNDCG(smoothing=1.0, anneal_every=2, min_smoothing=0.25,
                              start_iterations=2), 1.0),
    "ListNet": (ListNet(), 0.3),
    "Gumbel(ListNet)": (Gumbel(ListNet(), n_samples=2, seed=1), 0.3),
}


@pytest.fixture(scope="module")
def data(mq2008_train_vali):
    tr, va = mq2008_train_vali
    tr = tr.subset_queries(250)
    constant = metrics.ndcg_at_k(np.zeros(va.y.size), va.y, va.query_offsets, 5)
    return tr, va, constant


def _train_lightgbm(obj, lr, tr):
    lgb = pytest.importorskip("lightgbm")
    from stochrank_objectives.adapters.lightgbm import LGBMObjective

    params = dict(objective=LGBMObjective(obj), learning_rate=lr, num_leaves=7,
                  min_data_in_leaf=20, verbose=-1, num_threads=2, deterministic=True, seed=0)
    booster = lgb.train(params, lgb.Dataset(tr.X, tr.y, group=tr.group_sizes), N_TREES)
    return booster.predict


def _train_xgboost(obj, lr, tr):
    xgb = pytest.importorskip("xgboost")
    from stochrank_objectives.adapters.xgboost import DEFAULT_PARAMS, XGBObjective

    qid = np.repeat(np.arange(tr.n_queries), tr.group_sizes)
    params = dict(DEFAULT_PARAMS, learning_rate=lr, max_depth=3, nthread=2, tree_method="hist",
                  seed=0)
    booster = xgb.train(params, xgb.DMatrix(tr.X, tr.y, qid=qid), N_TREES, obj=XGBObjective(obj))
    return lambda X: booster.predict(xgb.DMatrix(X))


def _train_catboost(obj, lr, tr):
    pytest.importorskip("catboost")
    from stochrank_objectives.adapters.catboost import StochasticCatBoostRanker

    ranker = StochasticCatBoostRanker(obj, n_estimators=N_TREES, learning_rate=lr, depth=3,
                                      n_jobs=2, eval_metric="NDCG:top=5;type=Exp")
    ranker.fit(tr.X, tr.y, group=tr.group_sizes)
    return ranker.predict


TRAIN = {"lightgbm": _train_lightgbm, "xgboost": _train_xgboost, "catboost": _train_catboost}


@pytest.mark.slow
@pytest.mark.parametrize("booster", list(TRAIN))
@pytest.mark.parametrize("name", list(OBJECTIVES))
def test_objective_trains_and_beats_constant(data, name, booster):
    tr, va, constant = data
    obj, lr = OBJECTIVES[name]
    predict = TRAIN[booster](obj, lr, tr)
    scores = np.asarray(predict(va.X), dtype=np.float64)
    assert np.all(np.isfinite(scores))
    trained = metrics.ndcg_at_k(scores, va.y, va.query_offsets, 5)
    assert trained > constant + 0.2, (trained, constant)
    assert trained > 0.6, trained


@pytest.mark.slow
def test_smooth_ndcg_stage_improves_on_its_regression_start(data):
    """The trees after ``start_iterations`` (SmoothNDCG proper, annealed) lower the smoothed loss
    and raise train NDCG@5 relative to the regression starting point alone."""
    lgb = pytest.importorskip("lightgbm")
    from stochrank_objectives.adapters.lightgbm import LGBMObjective

    tr, _, _ = data
    obj = SmoothNDCG(smoothing=1.0, anneal_every=5, min_smoothing=0.25, start_iterations=2)
    params = dict(objective=LGBMObjective(obj), learning_rate=1.0, num_leaves=7,
                  min_data_in_leaf=20, verbose=-1, num_threads=2, deterministic=True, seed=0)
    booster = lgb.train(params, lgb.Dataset(tr.X, tr.y, group=tr.group_sizes), 22)
    start, end = booster.predict(tr.X, num_iteration=2), booster.predict(tr.X)
    for it in (2, 21):
        assert obj.loss(end, tr.y, tr.query_offsets, it) < obj.loss(start, tr.y, tr.query_offsets,
                                                                      it)
    ndcg = lambda s: metrics.ndcg_at_k(s, tr.y, tr.query_offsets, 5)  # noqa: E731
    assert ndcg(end) > ndcg(start) + 0.02, (ndcg(end), ndcg(start))
