"""Every objective of the package trains through all three boosters (LightGBM, XGBoost, CatBoost;
their rankers) on MQ2008 Fold 1 and beats a constant model on the validation queries (NDCG@5).

Small on purpose (a subset of the training queries, a few shallow trees): the point is that each
objective's gradients drive each booster in the right direction, not the final accuracy.
"""

from functools import partial

import numpy as np
import pytest
from _rankers import RANKERS, SHALLOW, fit_ranker

import stochrank_objectives as sro
from stochrank_objectives import metrics

N_TREES = 8
# unit-hessian objectives take gradient-step leaves: a larger learning rate
OBJECTIVES = {
    "StochasticRank": (sro.StochasticRank(top=5, seed=0), 1.0),
    "LambdaMART": (sro.LambdaMART(top=5), 0.3),
    "LambdaLoss": (sro.LambdaLoss(), 0.3),
    "Gumbel(LambdaMART)": (sro.Gumbel(sro.LambdaMART(top=5), n_samples=2, seed=1), 0.3),
    "Gumbel(LambdaLoss)": (sro.Gumbel(sro.LambdaLoss(), n_samples=2, seed=1), 0.3),
    "SoftRank": (sro.SoftRank(top=5, seed=0), 1.0),
    "ApproxNDCG": (sro.ApproxNDCG(), 1.0),
    "Gumbel(ApproxNDCG)": (sro.Gumbel(sro.ApproxNDCG(), n_samples=2, seed=1), 1.0),
    "SmoothNDCG": (sro.SmoothNDCG(smoothing=1.0, anneal_every=2, min_smoothing=0.25,
                              start_iterations=2), 1.0),
    "ListNet": (sro.ListNet(), 0.3),
    "Gumbel(ListNet)": (sro.Gumbel(sro.ListNet(), n_samples=2, seed=1), 0.3),
    "YetiRank": (sro.YetiRank(seed=0), 0.3),
    "YetiRank(NDCG)": (sro.YetiRank(mode="NDCG", top=5, seed=0), 0.3),
}


@pytest.fixture(scope="module")
def data(mq2008_train_vali):
    tr, va = mq2008_train_vali
    tr = tr.subset_queries(250)
    constant = metrics.ndcg_at_k(np.zeros(va.y.size), va.y, va.query_offsets, 5)
    return tr, va, constant


def _train(booster, obj, lr, tr):
    """``obj`` through ``booster``'s ranker: N_TREES shallow trees; returns ``predict``."""
    return fit_ranker(booster, obj, tr.X, tr.y, tr.group_sizes, n_estimators=N_TREES,
                      learning_rate=lr, eval_metric="NDCG@5", **SHALLOW[booster]).predict


TRAIN = {booster: partial(_train, booster) for booster in RANKERS}


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
    tr, _, _ = data
    obj = sro.SmoothNDCG(smoothing=1.0, anneal_every=5, min_smoothing=0.25, start_iterations=2)
    booster = fit_ranker("lightgbm", obj, tr.X, tr.y, tr.group_sizes, n_estimators=22,
                         learning_rate=1.0, **SHALLOW["lightgbm"]).booster_
    start, end = booster.predict(tr.X, num_iteration=2), booster.predict(tr.X)
    for it in (2, 21):
        assert obj.loss(end, tr.y, tr.query_offsets, it) < obj.loss(start, tr.y, tr.query_offsets,
                                                                      it)
    ndcg = lambda s: metrics.ndcg_at_k(s, tr.y, tr.query_offsets, 5)  # noqa: E731
    assert ndcg(end) > ndcg(start) + 0.02, (ndcg(end), ndcg(start))


#: registered objectives this NDCG@5 training check leaves to their own tests, and why
NOT_NDCG_RANKERS = {"StochasticRankDCGRR": "a learning-to-select loss (DCG-RR, documents shown "
                                           "where z > 0), trained in its own tests"}


def test_every_registered_objective_is_trained_here_or_exempt():
    from stochrank_objectives.objectives import OBJECTIVES as REGISTRY

    covered = {type(obj).__name__ for obj, _ in OBJECTIVES.values()}
    assert set(REGISTRY) - set(NOT_NDCG_RANKERS) <= covered
