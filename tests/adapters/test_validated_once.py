"""The training data is validated once per training, not once per boosting round (issue 45).

Every check of labels, query offsets or weights in the package goes through a few functions of
:mod:`stochrank_objectives.groups` (and :class:`~stochrank_objectives.groups.GroupedData`,
which calls them). The tests count their calls -- wherever a module imported them from -- over
a fit of 4 and of 20 rounds: the counts must be equal, for every ranker and every low-level
adapter, with query weights, and for the package's eval metric on two eval sets. Before, each round validated the labels and offsets once in the
adapter and once or twice in the objective, and the weights three times.
"""

from __future__ import annotations

import dataclasses
import sys
from collections import Counter

import lightgbm as lgb
import numpy as np
import pytest
import xgboost as xgb

from stochrank_objectives import (LambdaMART, StochasticCatBoostRanker, StochasticLGBMRanker,
                                  StochasticRank, StochasticXGBRanker, YetiRank, groups)
from stochrank_objectives.adapters import _ranker_inputs
from stochrank_objectives.adapters.lightgbm import LGBMObjective
from stochrank_objectives.adapters.xgboost import DEFAULT_PARAMS, XGBObjective
from stochrank_objectives.sglb import SGLB

#: the validators of labels, offsets and weights (GroupedData.__post_init__ is counted too)
VALIDATORS = ("validate_grouped", "validate_query_offsets", "query_weights",
              "query_offsets_from_sizes", "query_offsets_from_qid", "check_positions")


@pytest.fixture
def counts(monkeypatch):
    """Counts the validators' calls, through every name any package module bound them to."""
    counter: Counter = Counter()

    def counting(name, function):
        def wrapper(*args, **kwargs):
            counter[name] += 1
            return function(*args, **kwargs)
        return wrapper

    for name in VALIDATORS:
        original = getattr(groups, name)
        wrapper = counting(name, original)
        for module in list(sys.modules.values()):
            if getattr(module, "__name__", "").startswith("stochrank_objectives"):
                for attr, value in list(vars(module).items()):
                    if value is original:
                        monkeypatch.setattr(module, attr, wrapper)
    monkeypatch.setattr(groups.GroupedData, "__post_init__",
                        counting("GroupedData", groups.GroupedData.__post_init__))
    return counter


def _data(seed=0):
    rng = np.random.default_rng(seed)
    sizes = rng.integers(2, 12, 25)
    qid = np.repeat(np.arange(sizes.size), sizes)
    y = rng.integers(0, 4, qid.size).astype(float)
    X = rng.normal(size=(qid.size, 4))
    X[:, 0] += y
    w = np.repeat(rng.uniform(0.5, 2.0, sizes.size), sizes)
    return X, y, qid, sizes, w


def _ranker_fit(cls, objective, rounds, sglb=None, evals=False):
    X, y, qid, _, w = _data()
    extra = {"verbose": -1, "min_child_samples": 1} if cls is StochasticLGBMRanker else (
        {"verbose": False} if cls is StochasticCatBoostRanker else {})
    fit = {}
    if evals:  # two eval sets, each evaluated by the package's metric every round
        fit = {"eval_set": [_data(1)[:3], _data(2)[:3]]}
        (extra if cls is StochasticXGBRanker else fit)["eval_metric"] = "NDCG@5"
    cls(objective=objective, n_estimators=rounds, sglb=sglb, **extra).fit(
        X, y, qid=qid, sample_weight=w, **fit)


def _lgb_train(rounds):
    X, y, _, sizes, w = _data()
    train = lgb.Dataset(X, y, group=sizes, weight=w)
    adapter = LGBMObjective(StochasticRank(top=5))
    lgb.train({"objective": adapter, "verbose": -1, "min_data_in_leaf": 1}, train, rounds,
              callbacks=[adapter.callback()])


def _xgb_train(rounds, callback=True):
    X, y, qid, sizes, w = _data()
    offsets = groups.query_offsets_from_sizes(sizes)
    dtrain = xgb.DMatrix(X, y, qid=qid, weight=groups.query_weights(w, offsets))
    adapter = XGBObjective(StochasticRank(top=5))
    xgb.train(DEFAULT_PARAMS, dtrain, rounds, obj=adapter,
              callbacks=[adapter.callback()] if callback else None)


CASES = {
    "lightgbm ranker, StochasticRank": lambda r: _ranker_fit(StochasticLGBMRanker,
                                                             StochasticRank(top=5), r),
    "lightgbm ranker, YetiLoss, SGLB": lambda r: _ranker_fit(
        StochasticLGBMRanker, YetiRank(mode="NDCG", top=5), r, SGLB()),
    "xgboost ranker, StochasticRank": lambda r: _ranker_fit(StochasticXGBRanker,
                                                            StochasticRank(top=5), r),
    "xgboost ranker, LambdaMART": lambda r: _ranker_fit(StochasticXGBRanker, LambdaMART(top=5),
                                                        r),
    "lightgbm ranker, eval sets": lambda r: _ranker_fit(StochasticLGBMRanker,
                                                        StochasticRank(top=5), r, evals=True),
    "xgboost ranker, eval sets": lambda r: _ranker_fit(StochasticXGBRanker,
                                                       StochasticRank(top=5), r, evals=True),
    "catboost ranker, StochasticRank": lambda r: _ranker_fit(StochasticCatBoostRanker,
                                                             StochasticRank(top=5), r),
    "lgb.train": _lgb_train,
    "xgb.train with the callback": _xgb_train,
    "xgb.train without the callback": lambda r: _xgb_train(r, callback=False),
}


@pytest.mark.parametrize("case", list(CASES))
def test_validations_do_not_grow_with_the_rounds(case, counts):
    CASES[case](4)
    short = dict(counts)
    counts.clear()
    CASES[case](20)
    assert dict(counts) == short, f"{case}: 4 rounds {short}, 20 rounds {dict(counts)}"
    # the ranker's and the adapter's, and twice (the ranker's, the metric's) per eval set
    assert short.get("GroupedData", 0) <= 6


class _SeesPositions(LambdaMART):
    """LambdaMART that records the display positions of the data it is given."""

    seen: list = []

    def _grad_hess(self, scores, data, iteration):
        type(self).seen.append(data.positions)
        return super()._grad_hess(scores, data, iteration)


@pytest.mark.parametrize("cls", [StochasticLGBMRanker, StochasticXGBRanker,
                                 StochasticCatBoostRanker])
def test_the_rankers_positions_reach_the_objective(cls):
    # a per-document input of the ranker's GroupedData travels to the objective inside it (the
    # adapters neither read nor forward it): here the display positions of click data
    X, _, qid, _, _ = _data()
    rng = np.random.default_rng(3)
    position = np.concatenate([np.arange(n) for n in np.bincount(qid)])
    clicks = (rng.uniform(size=qid.size) < 0.5 / (1 + position)).astype(float)
    extra = {"verbose": -1, "min_child_samples": 1} if cls is StochasticLGBMRanker else (
        {"verbose": False} if cls is StochasticCatBoostRanker else {})
    _SeesPositions.seen = []
    cls(objective=_SeesPositions(top=5), n_estimators=3, **extra).fit(
        X, clicks, qid=qid, position=position, propensity=1.0 / (1.0 + np.arange(12)))
    assert len(_SeesPositions.seen) >= 3
    for seen in _SeesPositions.seen:
        assert seen is not None and np.array_equal(seen, position)


@dataclasses.dataclass(frozen=True, eq=False)
class _WithDwell(groups.GroupedData):
    """GroupedData with one more per-document input, as a new field of it would be."""

    dwell: np.ndarray | None = None


class _SeesDwell(LambdaMART):
    seen: list = []

    def _grad_hess(self, scores, data, iteration):
        type(self).seen.append(getattr(data, "dwell", None))
        return super()._grad_hess(scores, data, iteration)


@pytest.mark.parametrize("cls", [StochasticLGBMRanker, StochasticXGBRanker,
                                 StochasticCatBoostRanker])
def test_a_new_grouped_data_field_is_a_fit_argument_that_reaches_the_objective(cls,
                                                                               monkeypatch):
    # a new per-document input = a GroupedData field + the objective that reads it: no
    # ranker, adapter or objective-protocol code changes (here the field is added by a
    # subclass standing in for GroupedData where the rankers build their training data)
    monkeypatch.setattr(_ranker_inputs, "GroupedData", _WithDwell)
    X, y, qid, _, _ = _data()
    dwell = np.linspace(0.0, 1.0, y.size)
    extra = {"verbose": -1, "min_child_samples": 1} if cls is StochasticLGBMRanker else (
        {"verbose": False} if cls is StochasticCatBoostRanker else {})
    _SeesDwell.seen = []
    cls(objective=_SeesDwell(top=5), n_estimators=3, **extra).fit(X, y, qid=qid, dwell=dwell)
    assert len(_SeesDwell.seen) >= 3
    for seen in _SeesDwell.seen:
        assert np.array_equal(seen, dwell)
    with pytest.raises(TypeError, match="unexpected keyword argument 'dwel'.*dwell"):
        cls(objective=_SeesDwell(top=5), n_estimators=1, **extra).fit(X, y, qid=qid,
                                                                      dwel=dwell)
    native = {StochasticLGBMRanker: "lambdarank", StochasticXGBRanker: "rank:ndcg",
              StochasticCatBoostRanker: "YetiRank"}[cls]
    with pytest.raises(ValueError, match="dwell= is read by the package's objectives"):
        cls(objective=native, n_estimators=1, **extra).fit(X, y, qid=qid, dwell=dwell)


@pytest.mark.parametrize("cls", [StochasticLGBMRanker, StochasticXGBRanker,
                                 StochasticCatBoostRanker])
def test_an_unknown_fit_argument_is_refused_as_python_does(cls):
    X, y, qid, _, _ = _data()
    with pytest.raises(TypeError, match=r"fit\(\) got an unexpected keyword argument 'qids'"):
        cls(n_estimators=1).fit(X, y, qids=qid)
