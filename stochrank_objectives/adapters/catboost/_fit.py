"""The two CatBoost training routes: one fit reading the whole approx buffer ("pointer") and
one ``CatBoost(iterations=1).fit`` per tree ("per_tree"); how each works and when "auto" falls
back: docs/guide/catboost.md, "How the adapter works"."""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from types import SimpleNamespace

from typing import TYPE_CHECKING, Any

import numpy as np
from catboost import CatBoost, CatBoostError, Pool, sum_models
from catboost.utils import eval_metric as _catboost_eval_metric

from ...sglb import tree_weights
from .._interrupts import sigints_recorded
from ._params import QUANTIZATION_PARAMS
from ._sglb import catboost_shrink_factor

if TYPE_CHECKING:  # only the type checker needs it
    from ._objective import CatBoostObjective

__all__ = ["fit_pointer", "fit_per_tree", "detached", "catboost_fit", "checked_fit",
           "UserCallback", "with_objective_metric"]


def _outcome(call):
    """``(True, call())`` or ``(False, the exception it raised)``, run in a generator's frame.

    After a Python objective or callback raised, CatBoost (1.2.10) leaves that exception as the
    thread's "exception being handled" (``sys.exc_info()``) after ``fit`` has returned or
    raised; every later exception on the thread then shows it as its context ("During handling
    of the above exception, another exception occurred"), and CatBoost's text of the next
    failed fit includes the previous fit's traceback. A generator has its own handled-exception
    state, dropped with the generator, so the leftover never reaches the caller's thread.
    """
    def frame():
        try:
            result = (True, call())
        except BaseException as exc:  # handed to the caller, which raises it
            result = (False, exc)
        yield result

    return next(frame())


def _sigint_recorded(adapter):
    """:func:`~.._interrupts.sigints_recorded` that also sets ``adapter.sigint_received``, so
    that its next ``after_iteration`` stops training.

    CatBoost can lose that ``KeyboardInterrupt`` for good (e.g. when it lands in the Python
    function CatBoost logs through, an error CatBoost never checks): training then goes on as
    if there had been no Ctrl-C.
    """
    return sigints_recorded(on_signal=lambda: setattr(adapter, "sigint_received", True))


def catboost_fit(model: CatBoost, pool: Pool, adapter: CatBoostObjective,
                 **fit_kwargs: Any) -> CatBoost:
    """``model.fit(pool, **fit_kwargs)`` for a model whose ``loss_function`` is the
    :class:`CatBoostObjective` ``adapter``: the low-level route with the ranker's error handling.

    Example::

        adapter = CatBoostObjective(obj, labels, query_offsets)
        model = CatBoost(dict(loss_function=adapter, eval_metric="NDCG:top=5",
                              iterations=100, bootstrap_type="Bernoulli"))
        catboost_fit(model, Pool(X, label=encode_row_index(len(labels)), group_id=groups),
                     adapter, eval_set=eval_pool)

    The adapter is reset first and put first among the callbacks (its ``after_iteration``
    counts the trees). Errors are the adapter's own: the objective's
    ``ValueError`` (also the one refusing a weighted learn Pool), ``LayoutError`` or
    ``KeyboardInterrupt``, never a ``CatBoostError`` wrapping a traceback.

    Returns:
      the fitted ``model``.
    """
    with one_training(adapter):  # before the reset: it must not touch a running training
        adapter.reset()
        params = model.get_params()
        adapter.total_iterations = next((params[k] for k in ("iterations", "n_estimators",
                                                             "num_boost_round", "num_trees")
                                         if k in params), None)
        others = [cb for cb in fit_kwargs.pop("callbacks", None) or () if cb is not adapter]
        return checked_fit(adapter, model, pool, callbacks=[adapter] + others, **fit_kwargs)


@contextlib.contextmanager
def one_training(adapter):
    """Hold ``adapter`` for one training: its state (iteration, derivatives, the learn rows'
    buffers) is one training's, and a second fit at the same time, e.g. from another thread,
    would corrupt both. Re-entrant in the holding thread (the per-tree route fits tree by
    tree); another thread gets a ``RuntimeError`` naming the fix."""
    if not adapter.fitting.acquire(blocking=False):
        raise RuntimeError("this CatBoostObjective is already training a model in another "
                           "thread: it serves one training at a time; build one adapter per "
                           "training (the rankers do)")
    try:
        yield adapter
    finally:
        adapter.fitting.release()


def checked_fit(adapter, model, *args, **kwargs):
    """``model.fit(*args, **kwargs)`` for a model whose ``loss_function`` is ``adapter``,
    raising what actually went wrong instead of CatBoost's view of it.

    - an exception raised in the adapter's code (the objective's ``ValueError``, a
      ``LayoutError``, a ``KeyboardInterrupt`` that landed in Python code) is raised itself, not
      the ``CatBoostError`` holding its traceback as text;
    - a ``KeyboardInterrupt`` that CatBoost wrapped (it landed in another Python callback or in
      CatBoost's Cython glue) is raised as ``KeyboardInterrupt``;
    - a SIGINT delivered during the fit (with Python's default handler, in the main thread)
      raises ``KeyboardInterrupt`` even when CatBoost lost it or stopped as if asked to;
    - with ``adapter`` among the callbacks: a fit that returns after a tree whose
      ``after_iteration`` never ran raises ``KeyboardInterrupt``. CatBoost prints an exception
      raised while it builds the callbacks' argument ("Exception ignored in
      _CallbackAfterIteration"; in practice Ctrl-C landing there) and stops training as if a
      callback had asked to: the model would look complete with a fraction of its trees.

    Raises ``RuntimeError`` when ``adapter`` is already in a fit (one training at a time).

    Returns:
      the fitted ``model``.
    """
    with one_training(adapter):
        # a record of this fit only: an earlier fit's error must not resurface
        adapter.error, adapter.sigint_received = None, False
        with _sigint_recorded(adapter) as sigints:
            ok, outcome = _outcome(lambda: model.fit(*args, **kwargs))
    recorded = adapter.error
    if isinstance(recorded, KeyboardInterrupt):
        raise recorded
    if not ok:
        if isinstance(outcome, KeyboardInterrupt):
            raise outcome
        if isinstance(outcome, CatBoostError):
            if isinstance(outcome.__context__, KeyboardInterrupt):
                # CatBoost wraps the exception of a Python call it made while that exception is
                # still being handled: the context is the interrupt itself
                raise outcome.__context__ from None
            if sigints:
                raise KeyboardInterrupt from None
            if recorded is not None:
                raise recorded
        raise outcome
    if sigints:
        raise KeyboardInterrupt("Ctrl-C during the CatBoost fit, which CatBoost did not "
                                "pass on: the model may lack trees")
    if adapter.trees_started > adapter.iteration and _callbacks_include(kwargs, adapter):
        raise KeyboardInterrupt(
            f"CatBoost stopped training after {adapter.trees_started} of "
            f"{adapter.total_iterations} trees: it ignored an exception raised between two "
            "trees (printed above as 'Exception ignored in _CallbackAfterIteration'; with "
            "Ctrl-C, a KeyboardInterrupt), which it treats as a request to stop")
    return model


def _callbacks_include(kwargs, adapter) -> bool:
    return any(cb is adapter for cb in kwargs.get("callbacks") or ())


class UserCallback:
    """A user's CatBoost callback, run after the adapter's: an exception it raises is recorded
    on the adapter, so that the package's fit raises it as itself (not CatBoost's
    ``CatBoostError`` holding its traceback as text). Its return value is passed on unchanged:
    a false one stops training (CatBoost's protocol)."""

    def __init__(self, callback, adapter):
        self.callback = callback
        self.adapter = adapter

    def after_iteration(self, info):
        with self.adapter._recorded():
            return self.callback.after_iteration(info)


def fit_pointer(adapter, learn, eval_pools, params, early_stopping_rounds,
                 use_best_model, callbacks, init_model=None, **fit_kwargs):
    """One ``CatBoost.fit`` with ``adapter`` (route "pointer") as objective and callback.

    ``callbacks``: the user's CatBoost callbacks, run after the adapter's every round.
    ``init_model``: a CatBoost model to continue (CatBoost's ``fit(init_model=...)``); the
    adapter's iteration, which keys the objective's noise, continues from its tree count.
    ``fit_kwargs``: more of ``CatBoost.fit``'s arguments (``plot``, ``log_cout``, ...).

    Returns:
      ``(model, evals history, (best iteration of this fit or None, best scores))``.
    """
    model = CatBoost(dict(params, loss_function=adapter))
    start = 0 if init_model is None else int(init_model.tree_count_)
    adapter.iteration = start
    adapter.total_iterations = start + int(params["iterations"])
    checked_fit(adapter, model, learn, eval_set=eval_pools or None,
                early_stopping_rounds=early_stopping_rounds, use_best_model=use_best_model,
                callbacks=[adapter] + [UserCallback(cb, adapter) for cb in callbacks or ()],
                init_model=init_model, **fit_kwargs)
    history = {k: v for k, v in model.get_evals_result().items()
               if k != "learn" or any(v.values())}  # learn values are skipped (hints)
    if not eval_pools:
        return model, history, (None, {})
    best_it = model.get_best_iteration()
    last = "validation" if len(eval_pools) == 1 else f"validation_{len(eval_pools) - 1}"
    best_score = {last: {k: v[best_it] for k, v in history.get(last, {}).items()}}
    return model, history, (best_it, best_score)


def fit_per_tree(adapter, X, learn, cat_features, eval_pools, params,
                 early_stopping_rounds, use_best_model, eval_weights=None, *, init_scores=None,
                 eval_init_scores=None, init_model=None, callbacks=(), feature_names=None):
    """One ``CatBoost(iterations=1).fit`` per tree with the scores as baseline (route
    "per_tree"); shrinkage (SGLB) is applied here, as CatBoost would, and the trees are
    combined with ``sum_models``. Returns what :func:`fit_pointer` returns.

    Args:
      eval_weights: each eval pool's per-row group weights (or None), for its metric.
      init_scores: the learn rows' initial scores (float64, already rounded as CatBoost keeps a
        baseline) or None; eval_init_scores: the same per eval pool.
      init_model: a CatBoost model to continue: its predictions start the scores, the new
        trees are added to its trees, and tree ``t`` of this fit is tree ``start + t`` of the
        model (``start`` = its tree count) for the objective's iteration, the per-tree seed
        and the shrink factor, so that continuing is one longer training.
      callbacks: the user's CatBoost callbacks, called after every tree with an ``info`` as
        CatBoost's (``iteration``: trees of this fit, 1-based; ``metrics``: ``{"learn": {},
        "validation": {metric: [values]}}``, ``validation_i`` for several eval sets); a false
        return stops training.
      feature_names: the learn Pool's feature names (for a learn set given as a Pool).

    Under shrinkage the initial scores and the init model are the model's start ``F_0``, shrunk
    with it: before tree ``g`` (of the whole model) the scores are multiplied by the shrink
    factor of ``g``, which for ``g = 0`` is ``c`` when initial scores are given (CatBoost's own
    factor, 1, only differs for ``F_0 = 0``).
    """
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
    feature_pool = Pool(X, cat_features=cat_features, feature_names=feature_names)
    # Quantise the learn pool once (halves each fit's cost); same borders as a single fit.
    quantization = {k: p[k] for k in QUANTIZATION_PARAMS if k in p}
    try:
        learn.quantize(random_seed=seed, **quantization)
    except CatBoostError:  # pragma: no cover - CatBoost then quantises in every fit
        pass
    eval_labels = [np.asarray(e.get_label(), dtype=np.float64) for e in eval_pools]
    eval_groups = [None if e.get_group_id_hash() is None else np.asarray(e.get_group_id_hash())
                   for e in eval_pools]  # None: the Pool is one query, as CatBoost reads it
    eval_weights = list(eval_weights or [None] * len(eval_pools))
    eval_init_scores = list(eval_init_scores or [None] * len(eval_pools))
    start = 0 if init_model is None else int(init_model.tree_count_)
    offset = init_scores is not None or any(e is not None for e in eval_init_scores)
    if offset and start == 0 and rate and mode != "Constant":
        raise ValueError(f"model_shrink_mode={mode!r} with init_score/eval_init_score: the "
                         "initial scores are shrunk before tree 0, where Decreasing mode's "
                         "factor 1 - model_shrink_rate / 0 is undefined; use "
                         "model_shrink_mode='Constant'")
    # the scores F (initial scores + init model + the trees so far), learn and eval rows
    scores = np.zeros(adapter.n_rows) if init_scores is None else np.array(init_scores,
                                                                          dtype=np.float64)
    eval_scores = [np.zeros(e.num_row()) if s is None else np.array(s, dtype=np.float64)
                   for e, s in zip(eval_pools, eval_init_scores)]
    started = offset or init_model is not None  # tree 0 starts from a baseline
    if started:  # the learn pool has a baseline from tree 0 on: so must the eval pools
        for pool in eval_pools:
            pool.set_baseline(np.zeros(pool.num_row()))  # the scores are kept here
    if init_model is not None:  # CatBoost's predict: CatBoostRanker's has no prediction_type
        scores += CatBoost.predict(init_model, feature_pool, prediction_type="RawFormulaVal")
        for pool, es in zip(eval_pools, eval_scores):
            es += CatBoost.predict(init_model, pool, prediction_type="RawFormulaVal")
    names = (["validation"] if len(eval_pools) == 1
             else [f"validation_{i}" for i in range(len(eval_pools))])
    p.pop("custom_metric", None)  # only the eval metric is tracked on this route
    metric_name = None  # CatBoost's name for it, read from the first fit
    history = {name: {} for name in names}
    models, factors = [], []
    best_it, best_value = None, None
    for t in range(n_trees):
        g = start + t  # the tree's index in the whole model
        # before tree 0 the initial scores are shrunk too (Constant mode's factor c)
        factor = catboost_shrink_factor(rate, p["learning_rate"], mode, max(g, int(offset)))
        if factor != 1.0:
            scores *= factor
            for es in eval_scores:
                es *= factor
        factors.append(factor)
        adapter.iteration = g
        adapter.serve(scores)
        if t > 0 or started:  # otherwise tree 0 starts from 0 without a baseline
            learn.set_baseline(adapter.served_baseline)
        tree = CatBoost(dict(p, iterations=1, random_seed=(seed + g) % 2 ** 32,
                             loss_function=adapter))
        checked_fit(adapter, tree, learn,
                    eval_set=eval_pools if (t == 0 and eval_pools) else None)
        scores += tree.predict(feature_pool, prediction_type="RawFormulaVal")
        models.append(tree)
        if t == 0 and eval_pools:
            metric_name = next(iter(tree.get_evals_result()[names[-1]]))
            history = {name: {metric_name: []} for name in names}
        for name, pool, es, ye, ge, we in zip(names, eval_pools, eval_scores, eval_labels,
                                              eval_groups, eval_weights):
            es += tree.predict(pool, prediction_type="RawFormulaVal")  # its baseline is 0
            value = _catboost_eval_metric(ye, es, metric, group_id=ge, group_weight=we)[0]
            history[name][metric_name].append(value)
        if eval_pools:
            value = history[names[-1]][metric_name][-1]
            if best_value is None or (value > best_value if maximize else value < best_value):
                best_it, best_value = t, value
            if verbose and (t % max(1, int(verbose)) == 0 or t == n_trees - 1):
                print(f"{t}:\t{metric_name} = {value:.6g}\tbest = {best_value:.6g} ({best_it})")
        if not _callbacks_continue(callbacks, t + 1, history):
            break
        if eval_pools and od_wait is not None and t - best_it >= int(od_wait):
            break
    adapter.iteration = start + len(models)
    keep = len(models)
    if eval_pools and (use_best_model is None or use_best_model):
        keep = best_it + 1
    weights = tree_weights(factors, keep)
    kept = models[:keep]
    if init_model is not None:  # shrunk by every factor of the kept trees
        kept, weights = [init_model] + kept, [float(np.prod(factors[:keep]))] + weights
    model = sum_models(kept, weights=weights)
    best = (best_it, {names[-1]: {metric_name: best_value}} if eval_pools else {})
    return model, history, best


def _callbacks_continue(callbacks, iteration, history) -> bool:
    """Call the user's callbacks as CatBoost would after a tree (in order, until one returns
    a false value); False = stop training."""
    if not callbacks:
        return True
    info = SimpleNamespace(iteration=iteration, metrics={"learn": {}, **{
        name: {metric: list(values) for metric, values in by_metric.items()}
        for name, by_metric in history.items()}})
    return all(cb.after_iteration(info) for cb in callbacks)


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


def metric_description(metric: str) -> dict:
    """CatBoost's JSON description of a metric string, as its saved training parameters hold
    it: ``"NDCG:top=5;type=Exp;hints=skip_train~true"`` -> ``{"type": "NDCG", "params":
    {"top": "5", "type": "Exp"}}`` (the ``hints`` are dropped)."""
    name, _, options = metric.partition(":")
    params = dict(part.split("=", 1) for part in options.split(";") if "=" in part)
    params.pop("hints", None)
    return {"type": name, "params": params}


def with_objective_metric(model: CatBoost, metric: str) -> CatBoost:
    """``model`` (changed in place) with the CatBoost metric string ``metric`` as the objective
    metric of its saved training parameters (``get_metadata()["params"]``).

    Example::

        booster = with_objective_metric(detached(model), "NDCG:top=5;type=Exp")
        booster.get_feature_importance(type="LossFunctionChange", data=Pool(X, y, group_id=q))

    CatBoost's ``LossFunctionChange`` importances compute that metric (catboost 1.2.10); a
    model trained with a Python objective names the Python objective there, which CatBoost
    cannot compute ("Not implemented for TUserDefinedPerObjectMetric"). The loss function
    (``PythonUserDefinedPerObject``) and the trees are left as they are.

    Returns:
      ``model``.
    """
    metadata = model.get_metadata()
    saved = metadata["params"] if "params" in metadata else ""  # "" in a sum of models
    params = json.loads(saved) if saved else {}
    params.setdefault("metrics", {})["objective_metric"] = metric_description(metric)
    metadata["params"] = json.dumps(params)
    return model
