"""The two CatBoost training routes: one fit reading the whole approx buffer ("pointer") and
one ``CatBoost(iterations=1).fit`` per tree ("per_tree"); how each works and when "auto" falls
back: docs/guide/catboost.md, "How the adapter works"."""

from __future__ import annotations

import os
import tempfile

import numpy as np
from catboost import CatBoost, CatBoostError, Pool, sum_models
from catboost.utils import eval_metric as _catboost_eval_metric

from ...sglb import tree_weights
from ._params import QUANTIZATION_PARAMS
from ._sglb import catboost_shrink_factor

__all__ = ["fit_pointer", "fit_per_tree", "detached"]


def fit_pointer(adapter, learn, eval_pools, params, early_stopping_rounds,
                 use_best_model, callbacks):
    """One ``CatBoost.fit`` with ``adapter`` (route "pointer") as objective and callback.

    Returns:
      ``(model, evals history, (best iteration or None, best scores))``.
    """
    model = CatBoost(dict(params, loss_function=adapter))
    adapter.total_iterations = params.get("iterations")
    model.fit(learn, eval_set=eval_pools or None, early_stopping_rounds=early_stopping_rounds,
              use_best_model=use_best_model, callbacks=[adapter] + list(callbacks or []))
    history = {k: v for k, v in model.get_evals_result().items()
               if k != "learn" or any(v.values())}  # learn values are skipped (hints)
    if not eval_pools:
        return model, history, (None, {})
    best_it = model.get_best_iteration()
    last = "validation" if len(eval_pools) == 1 else f"validation_{len(eval_pools) - 1}"
    best_score = {last: {k: v[best_it] for k, v in history.get(last, {}).items()}}
    return model, history, (best_it, best_score)


def fit_per_tree(adapter, X, learn, cat_features, eval_pools, params,
                 early_stopping_rounds, use_best_model, eval_weights=None):
    """One ``CatBoost(iterations=1).fit`` per tree with the scores as baseline (route
    "per_tree"); shrinkage (SGLB) is applied here, as CatBoost would, and the trees are
    combined with ``sum_models``. ``eval_weights``: each eval pool's per-row group weights
    (or None), for its metric. Returns what :func:`fit_pointer` returns."""
    p = dict(params)
    n_trees = int(p.pop("iterations"))
    rate = float(p.pop("model_shrink_rate", 0.0) or 0.0)
    mode = p.pop("model_shrink_mode", "Constant")
    seed = int(p.pop("random_seed"))
    verbose = p.get("verbose", False)
    p["verbose"] = False
    p.pop("metric_period", None)
    od_wait = early_stopping_rounds
    for key in ("od_wait", "od_type", "od_pval"):
        value = p.pop(key, None)
        if key == "od_wait" and od_wait is None:
            od_wait = value
    if int(p.get("leaf_estimation_iterations", 1)) != 1:
        raise ValueError("the per-tree route supports leaf_estimation_iterations=1 only")
    metric = p["eval_metric"]
    if eval_pools and not isinstance(metric, str):
        raise ValueError("the per-tree route evaluates string eval_metrics only")
    maximize = _is_maximizable(metric)
    feature_pool = Pool(X, cat_features=cat_features)
    # Quantise the learn pool once (halves each fit's cost); same borders as a single fit.
    quantization = {k: p[k] for k in QUANTIZATION_PARAMS if k in p}
    try:
        learn.quantize(random_seed=seed, **quantization)
    except CatBoostError:  # pragma: no cover - CatBoost then quantises in every fit
        pass
    eval_labels = [np.asarray(e.get_label(), dtype=np.float64) for e in eval_pools]
    eval_groups = [np.asarray(e.get_group_id_hash()) for e in eval_pools]
    eval_weights = list(eval_weights or [None] * len(eval_pools))
    scores = np.zeros(adapter.n_rows)
    eval_scores = [np.zeros(e.num_row()) for e in eval_pools]
    names = (["validation"] if len(eval_pools) == 1
             else [f"validation_{i}" for i in range(len(eval_pools))])
    p.pop("custom_metric", None)  # only the eval metric is tracked on this route
    metric_name = None  # CatBoost's name for it, read from the first fit
    history = {name: {} for name in names}
    models, factors = [], []
    best_it, best_value = None, None
    for t in range(n_trees):
        factor = catboost_shrink_factor(rate, p["learning_rate"], mode, t)
        if factor != 1.0:
            scores *= factor
            for es in eval_scores:
                es *= factor
        factors.append(factor)
        adapter.iteration = t
        adapter.serve(scores)
        if t > 0:  # tree 0 starts from 0 without a baseline (so eval sets need none)
            learn.set_baseline(adapter.served_baseline)
        tree = CatBoost(dict(p, iterations=1, random_seed=(seed + t) % 2 ** 32,
                             loss_function=adapter))
        tree.fit(learn, eval_set=eval_pools if (t == 0 and eval_pools) else None)
        scores += tree.predict(feature_pool, prediction_type="RawFormulaVal")
        models.append(tree)
        if t == 0 and eval_pools:
            metric_name = next(iter(tree.get_evals_result()[names[-1]]))
            history = {name: {metric_name: []} for name in names}
        for name, pool, es, ye, ge, we in zip(names, eval_pools, eval_scores, eval_labels,
                                              eval_groups, eval_weights):
            es += tree.predict(pool, prediction_type="RawFormulaVal")
            value = _catboost_eval_metric(ye, es, metric, group_id=ge, group_weight=we)[0]
            history[name][metric_name].append(value)
        if eval_pools:
            value = history[names[-1]][metric_name][-1]
            if best_value is None or (value > best_value if maximize else value < best_value):
                best_it, best_value = t, value
            if verbose and (t % max(1, int(verbose)) == 0 or t == n_trees - 1):
                print(f"{t}:\t{metric_name} = {value:.6g}\tbest = {best_value:.6g} ({best_it})")
            if od_wait is not None and t - best_it >= int(od_wait):
                break
    adapter.iteration = len(models)
    keep = len(models)
    if eval_pools and (use_best_model is None or use_best_model):
        keep = best_it + 1
    model = sum_models(models[:keep], weights=tree_weights(factors, keep))
    best = (best_it, {names[-1]: {metric_name: best_value}} if eval_pools else {})
    return model, history, best


def _is_maximizable(metric) -> bool:
    from catboost.core import is_maximizable_metric

    return bool(is_maximizable_metric(metric))


def detached(model: CatBoost) -> CatBoost:
    """A copy of ``model`` loaded from its serialised form: no Python objective attached."""
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "model.cbm")
        model.save_model(path)
        clean = CatBoost()
        clean.load_model(path)
    return clean
