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
from stochrank_objectives.objectives import OBJECTIVES as REGISTRY

N_TREES = 8
#: registered objectives this NDCG@5 training check leaves to their own tests, and why
NOT_NDCG_RANKERS = {"StochasticRankDCGRR": "a learning-to-select loss (DCG-RR, documents shown "
                                           "where z > 0), trained in its own tests"}
#: registered objectives whose examples() this check leaves out (their VARIANTS train), and why
EXAMPLES_NOT_TRAINED = {"SmoothNDCG": "the defaults start at a stationary point: the gradient "
                                      "vanishes where a query's scores are equal, as at the "
                                      "first tree (the variant fits start_iterations first)"}
#: unit-hessian objectives take gradient-step leaves: a larger learning rate (registry name ->
#: learning rate; the others take DEFAULT_LR, Gumbel that of the objective it wraps)
LEARNING_RATES = {"StochasticRank": 1.0, "SoftRank": 1.0, "ApproxNDCG": 1.0, "SmoothNDCG": 1.0}
DEFAULT_LR = 0.3
#: registry name -> instances trained beside the class's examples(): the NDCG@5 cutoff, the
#: Gumbel wrappings and SmoothNDCG's annealed stages that no example reaches (case id -> object)
VARIANTS = {
    "StochasticRank": {"StochasticRank": sro.StochasticRank(top=5, seed=0)},
    "LambdaMART": {"LambdaMART": sro.LambdaMART(top=5)},
    "Gumbel": {"Gumbel(LambdaMART)": sro.Gumbel(sro.LambdaMART(top=5), n_samples=2, seed=1),
               "Gumbel(LambdaLoss)": sro.Gumbel(sro.LambdaLoss(), n_samples=2, seed=1),
               "Gumbel(ApproxNDCG)": sro.Gumbel(sro.ApproxNDCG(), n_samples=2, seed=1),
               "Gumbel(ListNet)": sro.Gumbel(sro.ListNet(), n_samples=2, seed=1)},
    "SoftRank": {"SoftRank": sro.SoftRank(top=5, seed=0)},
    "SmoothNDCG": {"SmoothNDCG": sro.SmoothNDCG(smoothing=1.0, anneal_every=2,
                                                min_smoothing=0.25, start_iterations=2)},
    "YetiRank": {"YetiRank(NDCG)": sro.YetiRank(mode="NDCG", top=5, seed=0)},
}


def _learning_rate(obj):
    if isinstance(obj, sro.Gumbel):
        return _learning_rate(obj.objective)
    return LEARNING_RATES.get(type(obj).__name__, DEFAULT_LR)


def _cases():
    """``{case id: (objective, learning rate)}``: every registered objective's examples() (but
    those of NOT_NDCG_RANKERS and EXAMPLES_NOT_TRAINED), and its VARIANTS; an instance met
    twice is trained once."""
    cases, seen = {}, set()
    for name, cls in REGISTRY.items():
        if name in NOT_NDCG_RANKERS:
            continue
        named = [*VARIANTS.get(name, {}).items(),
                 *((f"{name}-{i}", obj) for i, obj in enumerate(cls.examples())
                   if name not in EXAMPLES_NOT_TRAINED)]
        for case, obj in named:
            if repr(obj) not in seen:
                seen.add(repr(obj))
                cases[case] = (obj, _learning_rate(obj))
    return cases


OBJECTIVES = _cases()


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


def test_the_tables_name_registered_objectives():
    # a key that is not (or no longer) a registry name would be a silently unused exception
    for table in (NOT_NDCG_RANKERS, EXAMPLES_NOT_TRAINED, LEARNING_RATES, VARIANTS):
        assert set(table) <= set(REGISTRY), set(table) - set(REGISTRY)
    for name, variants in VARIANTS.items():
        assert all(type(obj) is REGISTRY[name] for obj in variants.values()), name
    assert set(EXAMPLES_NOT_TRAINED) <= set(VARIANTS)  # trained here all the same


def test_every_registered_objective_is_trained_here_or_exempt():
    covered = {type(obj).__name__ for obj, _ in OBJECTIVES.values()}
    assert set(REGISTRY) - set(NOT_NDCG_RANKERS) <= covered
