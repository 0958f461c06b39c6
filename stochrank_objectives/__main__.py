"""Main job: our objectives at their defaults vs each booster's built-in rankers on MQ2008.

    python -m stochrank_objectives [--boosters lightgbm xgboost catboost] [--iterations 500]

For every booster installed, trains its LambdaMART and its strongest built-in ranker -- LightGBM
``lambdarank`` and XGBoost ``rank:ndcg`` (each is both), CatBoost ``LambdaMart:metric=NDCG;top=5``
and ``YetiRank`` -- and, through the package's ranker of that booster, the package's objectives for
NDCG@5 at their defaults, as ``benchmarks.defaults`` configures them: SR-R1soft is
``StochasticRank(metric="NDCG", top=5)`` with nothing else set, SR-R1 the same with ``mu=0.1``,
YetiLoss ``YetiRank(mode="NDCG", top=5, dcg_type="Exp", num_neighbors=-1)`` (every later partner),
E-lambda-MART ``e_lambda_mart(beta=0.25, n_samples=8, metric="NDCG", top=5)`` (LambdaMART under
Gumbel noise) and LambdaLoss ``LambdaLoss()`` (NDCG-Loss2++, mu = 5) -- on the bundled MQ2008
Fold 1. Every method has the same trees (``TREES``) and the booster's L2, except YetiLoss, which
trains with L2 = 0 and a minimum leaf hessian of 1e-3 (``SETTINGS``), as in ``benchmarks.defaults``
and CatBoost's YetiRank: its exact pairwise-logistic hessian is about 0.01-0.1 per document, so
XGBoost's ``min_child_weight=1`` would forbid leaves of fewer than 10-100 documents and an L2 of 1
(XGBoost) or 3 (CatBoost) would shrink its leaves towards 0 (LightGBM's defaults are already 0 and
1e-3). All are early-stopped on validation NDCG@5 (worst-permutation ties); the job prints test
NDCG@5, NDCG@10, MRR and ERR@10 -- all with worst-permutation ties, queries without relevant
documents left out ("skip") -- and the wall time of the training.

Before anything is timed, two trees of each of our rankers compile the Numba kernels the job
uses (first run) or load them from Numba's cache (later runs), so no time printed includes
compilation; a first run says so when the compilation starts. A training that compiled a kernel
all the same (one the warm-up missed) is marked with ``*``.
"""

from __future__ import annotations

import argparse
import functools
import importlib.util
import time
from collections.abc import Callable

import numpy as np

from . import metrics
from ._compile_watch import CompileWatch
from .data import load_mq2008
from .objectives import LambdaLoss, StochasticRank, YetiRank, e_lambda_mart

BOOSTERS = ("lightgbm", "xgboost", "catboost")
# Our objectives for NDCG@5 at their defaults (benchmarks.defaults), in the table's order:
# name -> the objective for a seed. Each exists in every booster.
METHODS: dict[str, Callable] = {
    "SR-R1soft": lambda seed: StochasticRank(metric="NDCG", top=5, seed=seed),
    "SR-R1": lambda seed: StochasticRank(metric="NDCG", top=5, mu=0.1, seed=seed),
    "YetiLoss": lambda seed: YetiRank(mode="NDCG", top=5, dcg_type="Exp", num_neighbors=-1,
                                      seed=seed),
    "E-lambda-MART": lambda seed: e_lambda_mart(beta=0.25, n_samples=8, seed=seed,
                                                metric="NDCG", top=5),
    "LambdaLoss": lambda seed: LambdaLoss(),
}


# Our objectives: one ranker call per booster, differing only in the class and the tree shape.
RANKERS = {"lightgbm": "StochasticLGBMRanker", "xgboost": "StochasticXGBRanker",
           "catboost": "StochasticCatBoostRanker"}
TREES = {"lightgbm": dict(num_leaves=15, min_data_in_leaf=20, deterministic=True, verbose=-1,
                          metric="None"),
         "xgboost": dict(max_depth=4, min_child_weight=1.0, tree_method="hist"),
         "catboost": dict(depth=4)}
# Settings of a method over TREES: YetiLoss's hessian is about 0.01-0.1 per document, so it gets
# L2 = 0 and a minimum leaf hessian of 1e-3, as in benchmarks.defaults (LightGBM: its defaults).
SMALL_HESSIAN = {"lightgbm": dict(lambda_l2=0.0, min_sum_hessian_in_leaf=1e-3),
                 "xgboost": dict(reg_lambda=0.0, min_child_weight=1e-3),
                 "catboost": dict(l2_leaf_reg=0.0)}
SETTINGS = {"YetiLoss": SMALL_HESSIAN}


def run_ours(booster, method, train, vali, args):
    import stochrank_objectives

    ranker_class = getattr(stochrank_objectives, RANKERS[booster])  # imports only that booster
    trees = {**TREES[booster], **SETTINGS.get(method, {}).get(booster, {})}
    fit = dict(qid=train.qid, eval_set=[(vali.X, vali.y, vali.qid)])
    # the metric early stopping watches: LightGBM's rankers take it at fit, the others at
    # construction (each as its native ranker does)
    metric = {"eval_metric": "NDCG@5"}
    ranker = ranker_class(METHODS[method](args.seed), n_estimators=args.iterations,
                          learning_rate=args.learning_rate, random_state=args.seed,
                          early_stopping_rounds=args.patience, **trees,
                          **({} if booster == "lightgbm" else metric))
    ranker.fit(train.X, train.y, **fit, **(metric if booster == "lightgbm" else {}))
    return ranker.predict


def compile_kernels(boosters, train, vali, test, args) -> None:
    """Two trees of each of our rankers in every booster: the same data, adapters and metrics
    as the timed runs, so every Numba kernel they call is compiled (or loaded) here; and the
    test metrics, so that the table is not held up between rows either."""
    short = argparse.Namespace(**{**vars(args), "iterations": 2, "patience": 1})
    for booster in boosters:
        for method in METHODS:
            run_ours(booster, method, train, vali, short)
    evaluate(np.zeros(test.y.size), test)


# The boosters' own rankers, with the same trees and early stopping.
def native_lightgbm(train, vali, args):
    import lightgbm as lgb

    from .adapters.lightgbm import LGBMMetric

    params = dict(TREES["lightgbm"], objective="lambdarank", learning_rate=args.learning_rate,
                  verbose=-1, seed=args.seed, metric="None")
    dtrain = lgb.Dataset(train.X, train.y, group=train.group_sizes)
    dvali = lgb.Dataset(vali.X, vali.y, group=vali.group_sizes, reference=dtrain)
    booster = lgb.train(params, dtrain, args.iterations, valid_sets=[dvali],
                        feval=LGBMMetric("NDCG", 5),
                        callbacks=[lgb.early_stopping(args.patience, verbose=False)])
    return lambda X: booster.predict(X, raw_score=True)


def native_xgboost(train, vali, args):
    import xgboost as xgb

    from .adapters.xgboost import XGBMetric

    dtrain = xgb.DMatrix(train.X, train.y, qid=train.qid)
    dvali = xgb.DMatrix(vali.X, vali.y, qid=vali.qid)
    params = dict(TREES["xgboost"], objective="rank:ndcg", eta=args.learning_rate,
                  seed=args.seed, disable_default_eval_metric=1)
    booster = xgb.train(params, dtrain, args.iterations, evals=[(dvali, "vali")],
                        custom_metric=XGBMetric("NDCG", 5), maximize=True,
                        early_stopping_rounds=args.patience, verbose_eval=False)
    best = (0, booster.best_iteration + 1)
    return lambda X: booster.predict(xgb.DMatrix(X), output_margin=True, iteration_range=best)


def native_catboost(train, vali, args, loss):
    from catboost import CatBoost, Pool

    model = CatBoost(dict(TREES["catboost"], iterations=args.iterations,
                          learning_rate=args.learning_rate, random_seed=args.seed,
                          verbose=False, allow_writing_files=False, od_type="Iter",
                          od_wait=args.patience, use_best_model=True,
                          loss_function=loss,
                          eval_metric="NDCG:top=5;type=Exp"))
    model.fit(Pool(train.X, train.y, group_id=train.qid),
              eval_set=Pool(vali.X, vali.y, group_id=vali.qid))
    return lambda X: model.predict(X, prediction_type="RawFormulaVal")


# Each booster's LambdaMART and its strongest built-in ranker, by the name the booster gives it.
BUILT_IN: dict[str, dict[str, Callable]] = {
    "lightgbm": {"lambdarank": native_lightgbm},
    "xgboost": {"rank:ndcg": native_xgboost},
    "catboost": {"LambdaMart": functools.partial(native_catboost,
                                                 loss="LambdaMart:metric=NDCG;top=5"),
                 "YetiRank": functools.partial(native_catboost, loss="YetiRank")},
}
BUILT_IN_NOTE = ("lambdarank (LightGBM) and rank:ndcg (XGBoost) are each booster's LambdaMART and "
                 "also its strongest built-in ranker; CatBoost's LambdaMART is LambdaMart, its "
                 "strongest built-in ranker YetiRank.")
OURS_NOTE = ("Ours have the same trees and early stopping, except that YetiLoss, whose "
             "pairwise-logistic hessian is about 0.01-0.1 per document, trains with L2 = 0 and a "
             "minimum leaf hessian of 1e-3 (XGBoost reg_lambda=0, min_child_weight=1e-3 instead "
             "of 1; CatBoost l2_leaf_reg=0; LightGBM's defaults), as in benchmarks.defaults.")
COMPILING = "compiling the Numba kernels (first run only; later runs load them from Numba's " \
            "cache) ..."


def run(booster, method, train, vali, args):
    """Train ``method`` (a key of ``BUILT_IN[booster]`` or of METHODS) in ``booster``; returns
    the model's predict function."""
    if method in BUILT_IN[booster]:
        return BUILT_IN[booster][method](train, vali, args)
    return run_ours(booster, method, train, vali, args)


def evaluate(scores, data) -> dict:
    args = (scores, data.y, data.query_offsets)
    return {
        "NDCG@5": metrics.ndcg_at_k(*args, 5, no_relevant="skip"),
        "NDCG@10": metrics.ndcg_at_k(*args, 10, no_relevant="skip"),
        "MRR": metrics.mrr(*args, no_relevant="skip"),
        "ERR@10": metrics.err_at_k(*args, 10, grade_max=2, no_relevant="skip"),
    }


def main(argv=None) -> list[dict]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--boosters", nargs="+", choices=BOOSTERS, default=list(BOOSTERS))
    parser.add_argument("--iterations", type=int, default=500)
    parser.add_argument("--learning-rate", type=float, default=0.1)
    parser.add_argument("--patience", type=int, default=50)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    train, vali, test = (load_mq2008(split, fold=1) for split in ("train", "vali", "test"))
    print(f"MQ2008 Fold 1 (bundled): train {train.y.size} docs / {train.n_queries} queries, "
          f"vali {vali.n_queries}, test {test.n_queries} queries. Test metrics below use "
          "worst-permutation ties and skip queries without a relevant document.")
    print(f"SR-R1soft: {METHODS['SR-R1soft'](args.seed)!r}")
    print("SR-R1: the same with mu=0.1")
    for method in ("YetiLoss", "E-lambda-MART", "LambdaLoss"):
        print(f"{method}: {METHODS[method](args.seed)!r}")
    print()
    boosters = [b for b in args.boosters if importlib.util.find_spec(b) is not None]
    start = time.perf_counter()
    with CompileWatch(COMPILING) as compiling:
        compile_kernels(boosters, train, vali, test, args)
    if compiling.count:
        print(f"compiled in {time.perf_counter() - start:.1f} s; no time below includes it\n")
    header = f"{'booster':9s} {'method':13s} {'NDCG@5':>7s} {'NDCG@10':>8s} {'MRR':>7s} " \
             f"{'ERR@10':>7s} {'seconds':>8s}"
    print(header)
    print("-" * len(header))
    rows = []
    for booster in args.boosters:
        if booster not in boosters:
            print(f"{booster:9s} (not installed: pip install '.[boosters]')")
            continue
        for method in (*BUILT_IN[booster], *METHODS):
            with CompileWatch() as during:
                start = time.perf_counter()
                predict = run(booster, method, train, vali, args)
                seconds = time.perf_counter() - start
            result = evaluate(np.asarray(predict(test.X), dtype=np.float64), test)
            rows.append(dict(booster=booster, method=method, built_in=method in BUILT_IN[booster],
                             seconds=seconds, compiled=during.count, **result))
            mark = "*" if during.count else ""
            print(f"{booster:9s} {method:13s} {result['NDCG@5']:7.4f} {result['NDCG@10']:8.4f} "
                  f"{result['MRR']:7.4f} {result['ERR@10']:7.4f} {seconds:8.1f}{mark}", flush=True)
    print(f"\n{BUILT_IN_NOTE}\n{OURS_NOTE}")
    if any(row["compiled"] for row in rows):
        print("* this time includes Numba compiling a kernel that the warm-up did not reach")
    return rows


if __name__ == "__main__":
    main()
