"""The three boosters as the benchmarks use them, written once: the package's ranker of each,
the parameter names of the shared settings, the native rankers' losses, YetiLoss's leaf
settings, and one trainer per booster for every native (and raw-API) training.

* :func:`ranker_class` -- the package's scikit-learn ranker of a booster (our objectives).
* :func:`common_params` -- learning rate, seed, threads (and quiet logs) in the booster's names.
* :func:`tree_params` -- the tuned studies' tree shape (depth, L2, minimum leaf hessian).
* the natives' losses: :func:`lightgbm_lambdarank`, :func:`xgboost_rank_ndcg`,
  :func:`catboost_loss` (``LambdaMart``, ``YetiRank``, ``StochasticRank`` ...).
* :func:`train` -- ``lgb.train`` / ``xgb.train`` / ``CatBoost.fit`` on grouped rows, with early
  stopping on a validation split when one is given; :class:`Trained` predicts raw scores.

Example::

    params = dict(common_params("lightgbm", 0.1, seed=0, threads=1), **lightgbm_lambdarank(5))
    model = train("lightgbm", params, split.train, 100)
    scores = model.predict(split.test.X)
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

# The package's main job ships the same tables (it runs without the benchmarks): one copy.
from stochrank_objectives.__main__ import BOOSTERS, RANKERS, SMALL_HESSIAN

__all__ = ["BOOSTERS", "DISPLAY_NAMES", "LAMBDAMART_NAMES", "RANKERS", "SMALL_HESSIAN",
           "L2_DEFAULT", "ranker_class", "common_params", "tree_params", "lightgbm_lambdarank",
           "xgboost_rank_ndcg", "catboost_loss", "Trained", "train", "predict", "query_index",
           "tree_count"]

#: the boosters' names in the synthetic table's rows
DISPLAY_NAMES = {"lightgbm": "LightGBM", "xgboost": "XGBoost", "catboost": "CatBoost"}
#: the name each booster gives its native LambdaMART
LAMBDAMART_NAMES = {"lightgbm": "lambdarank", "xgboost": "rank:ndcg", "catboost": "LambdaMart"}
#: the boosters' own L2 leaf regularisation defaults
L2_DEFAULT = {"lightgbm": 0.0, "xgboost": 1.0, "catboost": 3.0}
# SMALL_HESSIAN (from the main job): the leaf settings of objectives whose exact hessian is
# small per document (YetiLoss's pairwise-logistic hessian, about 0.01-0.1): L2 = 0 and a
# minimum leaf hessian of 1e-3 (LightGBM's defaults; XGBoost's min_child_weight = 1 would
# forbid leaves of fewer than 10-100 documents). Passed as ``p["leaves"]`` to tree_params.


def ranker_class(booster: str):
    """The package's ranker of ``booster`` (``StochasticLGBMRanker`` ...); imports only that
    booster."""
    import stochrank_objectives

    return getattr(stochrank_objectives, RANKERS[booster])


def common_params(booster: str, learning_rate: float, seed: int, threads: int) -> dict:
    """Learning rate, seed, threads and quiet logs in the booster's own parameter names."""
    if booster == "lightgbm":
        return {"learning_rate": learning_rate, "num_threads": threads, "verbose": -1,
                "seed": seed}
    if booster == "xgboost":
        return {"learning_rate": learning_rate, "nthread": threads, "seed": seed}
    return {"learning_rate": learning_rate, "random_seed": seed, "thread_count": threads,
            "verbose": False, "allow_writing_files": False}


def tree_params(booster: str, p: dict) -> dict:
    """The tuned studies' tree shape of a trial's settings ``p`` (ours and the natives alike):
    ``depth``, ``l2``, optional ``min_hessian`` (the smallest hessian sum of a leaf; CatBoost's
    symmetric trees have none) and optional ``leaves`` (per booster settings over these, e.g.
    :data:`SMALL_HESSIAN`)."""
    leaves = p.get("leaves", {}).get(booster, {})
    if booster == "lightgbm":
        extra = {"min_sum_hessian_in_leaf": p["min_hessian"]} if "min_hessian" in p else {}
        return {"max_depth": p["depth"], "num_leaves": min(2 ** p["depth"], 255),
                "lambda_l2": p["l2"], "deterministic": True, "force_col_wise": True, **extra,
                **leaves}
    if booster == "xgboost":
        extra = {"min_child_weight": p["min_hessian"]} if "min_hessian" in p else {}
        return {"max_depth": p["depth"], "reg_lambda": p["l2"], "tree_method": "hist", **extra,
                **leaves}
    return {"depth": p["depth"], "l2_leaf_reg": p["l2"], **leaves}


# -- the natives' losses ----------------------------------------------------------------------
def lightgbm_lambdarank(top=None) -> dict:
    """LightGBM's LambdaMART, truncated at ``top`` (``None``: LightGBM's default, 30)."""
    return {"objective": "lambdarank",
            **({} if top is None else {"lambdarank_truncation_level": top})}


def xgboost_rank_ndcg(pairs=None, *, topk=False, **options) -> dict:
    """XGBoost's LambdaMART: ``pairs`` pairs per document (``topk``: the top-k pair method)."""
    return {"objective": "rank:ndcg", **({"lambdarank_pair_method": "topk"} if topk else {}),
            **({} if pairs is None else {"lambdarank_num_pair_per_sample": pairs}), **options}


def catboost_loss(name: str, **options) -> str:
    """CatBoost's loss string: ``catboost_loss("LambdaMart", metric="NDCG", top=5)`` ->
    ``"LambdaMart:metric=NDCG;top=5"`` (options of value ``None`` left out)."""
    given = ";".join(f"{k}={v}" for k, v in options.items() if v is not None)
    return name + (f":{given}" if given else "")


# -- training -----------------------------------------------------------------------------------
def query_index(data) -> np.ndarray:
    """Each row's query index (0, 1, ... in row order): XGBoost needs non-decreasing ``qid``,
    which a LETOR file's ids need not be."""
    return np.repeat(np.arange(data.group_sizes.size), data.group_sizes)


@dataclass
class Trained:
    """A trained booster model: ``predict(X, trees=None)`` gives raw scores (of the first
    ``trees`` trees), ``curve`` the validation values per tree (empty without a validation
    split), ``n_trees`` the trees kept."""

    booster: str
    model: object
    n_trees: int
    curve: list = field(default_factory=list)

    def predict(self, X, trees=None):
        return predict(self.booster, self.model, X, trees)


def tree_count(booster: str, model) -> int:
    """The trees of a trained booster model (one per iteration: ranking has one output)."""
    if booster == "lightgbm":
        return model.current_iteration()
    if booster == "xgboost":
        return model.num_boosted_rounds()
    return model.tree_count_


def predict(booster: str, model, X, trees=None):
    """Raw scores of ``model`` (all trees kept, or the first ``trees``)."""
    if booster == "lightgbm":
        return model.predict(X, num_iteration=trees, raw_score=True)
    if booster == "xgboost":
        import xgboost as xgb

        if trees is None:
            return model.predict(xgb.DMatrix(X), output_margin=True)
        return model.predict(xgb.DMatrix(X), iteration_range=(0, trees), output_margin=True)
    if trees is None:
        return model.predict(X, prediction_type="RawFormulaVal")
    return model.predict(X, ntree_end=trees, prediction_type="RawFormulaVal")


def train(booster: str, params: dict, data, rounds: int, *, labels=None, valid=None,
          valid_labels=None, metric=None, patience=None, callbacks=(), **options) -> Trained:
    """Train ``booster`` with ``params`` on the grouped rows ``data`` (``X``, ``y``,
    ``group_sizes``, ``qid``: a :class:`~stochrank_objectives.data.RankingData` or alike).

    Args:
      booster: ``"lightgbm"``, ``"xgboost"`` or ``"catboost"``.
      params: the booster's parameters (CatBoost: its constructor's, ``iterations`` included).
      rounds: trees at most (LightGBM, XGBoost).
      labels: training labels (default ``data.y``).
      valid, valid_labels: a validation split and its labels: early stopping on ``metric``
        after ``patience`` rounds (CatBoost: its own ``od_*`` and ``eval_metric`` parameters).
      metric: the booster's custom metric object (LightGBM ``feval``, XGBoost
        ``custom_metric``).
      callbacks: the booster's callbacks.
      **options: per booster -- LightGBM ``dataset_params``, ``position``, ``keep_raw_data``,
        ``construct`` (build the dataset before ``lgb.train``); XGBoost ``rows`` (row order),
        ``obj``, ``nthread`` (of the DMatrix); CatBoost ``group_id`` (default ``data.qid``).
    """
    y = data.y if labels is None else labels
    if booster == "lightgbm":
        return _train_lightgbm(params, data, y, rounds, valid, valid_labels, metric, patience,
                               list(callbacks), **options)
    if booster == "xgboost":
        return _train_xgboost(params, data, y, rounds, valid, valid_labels, metric, patience,
                              list(callbacks), **options)
    return _train_catboost(params, data, y, valid, valid_labels, list(callbacks), **options)


def _train_lightgbm(params, data, y, rounds, valid, valid_labels, metric, patience, callbacks,
                    dataset_params=None, position=None, keep_raw_data=False, construct=False):
    import lightgbm as lgb

    dtrain = lgb.Dataset(data.X, y, group=data.group_sizes, params=dataset_params,
                         position=position, free_raw_data=not keep_raw_data)
    if construct:
        dtrain.construct()
    if valid is None:
        model = lgb.train(params, dtrain, rounds, callbacks=callbacks or None)
        return Trained("lightgbm", model, tree_count("lightgbm", model))
    history = {}
    dvalid = lgb.Dataset(valid.X, valid_labels, group=valid.group_sizes, reference=dtrain)
    model = lgb.train(params, dtrain, rounds, valid_sets=[dvalid], valid_names=["valid"],
                      feval=metric, callbacks=[lgb.early_stopping(patience, verbose=False),
                                               lgb.record_evaluation(history), *callbacks])
    return Trained("lightgbm", model, tree_count("lightgbm", model),
                   list(next(iter(history["valid"].values()))))


def _train_xgboost(params, data, y, rounds, valid, valid_labels, metric, patience, callbacks,
                   rows=None, obj=None, nthread=None):
    import xgboost as xgb

    qid = query_index(data)
    X = data.X
    if rows is not None:   # e.g. each query's rows in their displayed order
        X, y, qid = X[rows], y[rows], qid[rows]
    dtrain = xgb.DMatrix(X, y, qid=qid, nthread=nthread)
    if valid is None:
        model = xgb.train(params, dtrain, rounds, obj=obj, callbacks=callbacks or None)
        return Trained("xgboost", model, tree_count("xgboost", model))
    dvalid = xgb.DMatrix(valid.X, valid_labels, qid=query_index(valid))
    history = {}
    model = xgb.train(params, dtrain, rounds, evals=[(dvalid, "valid")], obj=obj,
                      custom_metric=metric, maximize=True, early_stopping_rounds=patience,
                      evals_result=history, verbose_eval=False, callbacks=callbacks or None)
    best = int(model.attr("best_iteration"))
    return Trained("xgboost", model[: best + 1], best + 1,
                   list(next(iter(history["valid"].values()))))


def _train_catboost(params, data, y, valid, valid_labels, callbacks, group_id=None):
    from catboost import CatBoost, Pool

    model = CatBoost(params)
    train_pool = Pool(data.X, y, group_id=data.qid if group_id is None else group_id)
    if valid is None:
        model.fit(train_pool, callbacks=callbacks or None)
        return Trained("catboost", model, tree_count("catboost", model))
    model.fit(train_pool, eval_set=Pool(valid.X, valid_labels, group_id=valid.qid),
              callbacks=callbacks or None)
    curve = list(next(iter(model.get_evals_result()["validation"].values())))
    return Trained("catboost", model, tree_count("catboost", model), curve)
