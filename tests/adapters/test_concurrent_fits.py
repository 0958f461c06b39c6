"""Many threads x many objectives x the three rankers: every concurrent fit equals its
sequential twin, bit for bit (issue 21).

Before the fix, 3-10 of 30 concurrent fits sharing one ``StochasticRank`` differed from the
sequential fit (the objective's per-data cache was read by the wrong thread), and a
``XGBObjective`` / ``LGBMObjective`` shared by trainings in several threads keyed each tree's
noise by another training's iteration. Fits here are small (a few shallow trees on 20-60
queries) and run on one booster thread each, so the threads interleave in the objective.
"""

import sys
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from _rankers import RANKERS, SHALLOW, fit_ranker

import stochrank_objectives as sro

N_TREES = 6
N_TREES_SHARED = 20  # many objective calls per fit: the threads overlap in them
N_WORKERS = 6
N_FITS = 18  # 6 fits of each shared objective, 6 threads


@pytest.fixture(scope="module")
def parts(mq2008_train_vali):
    train, vali = mq2008_train_vali
    return [train.subset_queries(25), vali.subset_queries(15), train.subset_queries(8)]


@pytest.fixture
def fast_switching():
    previous = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    yield
    sys.setswitchinterval(previous)


def _objectives():
    return [sro.StochasticRank(metric="NDCG", top=5, seed=0),
            sro.StochasticRank(metric="MRR", seed=1),
            sro.Gumbel(sro.LambdaMART(top=5), n_samples=2, seed=2)]


def _fit_predict(booster, objective, part, test_X):
    ranker = fit_ranker(booster, objective, part.X, part.y, part.group_sizes,
                        n_estimators=N_TREES_SHARED, learning_rate=0.5, n_jobs=1,
                        **SHALLOW[booster])
    return ranker.predict(test_X)


@pytest.mark.slow
@pytest.mark.parametrize("booster", RANKERS)
def test_concurrent_fits_sharing_objectives_equal_sequential_fits(booster, parts, fast_switching):
    test_X = parts[1].X
    shared = _objectives()  # one instance of each, shared by every fit that uses it
    jobs = [(shared[j % len(shared)], parts[j % len(parts)]) for j in range(N_FITS)]
    with ThreadPoolExecutor(N_WORKERS) as pool:
        concurrent = list(pool.map(lambda job: _fit_predict(booster, *job, test_X), jobs))
    fresh = _objectives()
    sequential = [_fit_predict(booster, fresh[j % len(fresh)], parts[j % len(parts)], test_X)
                  for j in range(len(jobs))]
    differ = [j for j, (a, b) in enumerate(zip(concurrent, sequential)) if not np.array_equal(a, b)]
    assert differ == [], f"{len(differ)} of {len(jobs)} concurrent fits differ: {differ}"


def _xgb_train(adapter, part, callback):
    xgb = pytest.importorskip("xgboost")
    from stochrank_objectives.adapters.xgboost import DEFAULT_PARAMS

    dtrain = xgb.DMatrix(part.X, part.y, qid=part.qid)
    params = {**DEFAULT_PARAMS, "max_depth": 3, "nthread": 1, "learning_rate": 0.5}
    booster = xgb.train(params, dtrain, N_TREES, obj=adapter,
                        callbacks=[adapter.callback()] if callback else None)
    return booster.predict(xgb.DMatrix(part.X))


def _lgb_train(adapter, part, callback):
    lgb = pytest.importorskip("lightgbm")
    dtrain = lgb.Dataset(part.X, part.y, group=part.group_sizes)
    params = {"objective": adapter, "num_leaves": 7, "num_threads": 1, "learning_rate": 0.5,
              "verbose": -1, "deterministic": True}
    booster = lgb.train(params, dtrain, N_TREES,
                        callbacks=[adapter.callback()] if callback else None)
    return booster.predict(part.X)


@pytest.mark.slow
@pytest.mark.parametrize("callback", [True, False], ids=["callback", "own-count"])
@pytest.mark.parametrize("library", ["xgboost", "lightgbm"])
def test_one_low_level_adapter_shared_by_concurrent_trainings(library, callback, parts,
                                                              fast_switching):
    if library == "xgboost":
        from stochrank_objectives.adapters.xgboost import XGBObjective as Adapter
        train = _xgb_train
    else:
        from stochrank_objectives.adapters.lightgbm import LGBMObjective as Adapter
        train = _lgb_train
    shared = Adapter(sro.StochasticRank(top=5, seed=0))
    jobs = [parts[j % len(parts)] for j in range(6)]
    with ThreadPoolExecutor(N_WORKERS) as pool:
        # one training per thread at a time: a thread's own count restarts with its training
        concurrent = list(pool.map(
            lambda part: train(shared if callback else Adapter(shared.objective), part,
                               callback), jobs))
        shared_counting = list(pool.map(lambda part: _own_thread_run(train, shared, part),
                                        jobs)) if not callback else []
    sequential = [train(Adapter(sro.StochasticRank(top=5, seed=0)), part, callback)
                  for part in jobs]
    for j, (a, b) in enumerate(zip(concurrent, sequential)):
        np.testing.assert_array_equal(a, b, err_msg=f"training {j}")
    for j, (a, b) in enumerate(zip(shared_counting, sequential)):
        np.testing.assert_array_equal(a, b, err_msg=f"training {j} (shared adapter, own count)")


def _own_thread_run(train, shared, part):
    # without a callback the adapter counts its own calls: a shared adapter counts per thread,
    # so a training that starts the thread's count at 0 keys its noise like a fresh adapter's
    shared.reset_iteration()
    return train(shared, part, False)


def test_a_catboost_objective_in_a_training_refuses_a_second_one(parts):
    catboost = pytest.importorskip("catboost")
    import threading

    from stochrank_objectives.adapters.catboost import (CatBoostObjective, catboost_fit,
                                                        encode_row_index)

    part = parts[2]
    adapter = CatBoostObjective(sro.StochasticRank(top=5), part.y, part.query_offsets)

    def model():
        return catboost.CatBoost(dict(loss_function=adapter, eval_metric="NDCG:top=5",
                                      iterations=3, depth=2,
                                      boosting_type="Plain", bootstrap_type="No",
                                      thread_count=1, verbose=False, random_seed=0))

    pool = catboost.Pool(part.X, label=encode_row_index(part.y.size), group_id=part.qid)
    holding, release = threading.Event(), threading.Event()

    def training_in_another_thread():  # holds the adapter as a running fit does
        with adapter.fitting:
            holding.set()
            release.wait(30)

    other = threading.Thread(target=training_in_another_thread)
    other.start()
    holding.wait(30)
    adapter.iteration = 7  # the running training's state, which a second fit must not reset
    try:
        with pytest.raises(RuntimeError, match="one training at a time"):
            catboost_fit(model(), pool, adapter)
        assert adapter.iteration == 7
    finally:
        release.set()
        other.join()
    fitted = catboost_fit(model(), pool, adapter)  # free again: trains
    assert fitted.tree_count_ == 3
