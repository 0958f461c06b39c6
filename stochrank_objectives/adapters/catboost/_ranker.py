"""``StochasticCatBoostRanker``: the package's scikit-learn ranker on CatBoost."""

from __future__ import annotations

import dataclasses
import inspect
import os
import re
import time
import warnings
from functools import lru_cache

import numpy as np
from catboost import CatBoost, CatBoostError, CatBoostRanker, Pool
from catboost._catboost import _check_train_params as check_train_params

from .._booster_params import check_known_names
from .._common import EvalMetric
from .._ranker import StochasticRankerBase
from ._fit import detached, fit_per_tree, fit_pointer, with_objective_metric
from ._layout import LayoutError, encode_row_index
from ._objective import CatBoostObjective
from ._params import (
    catboost_metric,
    check_label_domain,
    eval_labels,
    group_index,
    resolve,
    strip_hints,
)

__all__ = ["StochasticCatBoostRanker"]

#: the ranker's own parameters among the booster parameters (not CatBoost options)
RANKER_ONLY_PARAMS = frozenset({"route", "cat_features", "callbacks"})


@lru_cache(maxsize=1)
def catboost_parameter_names() -> frozenset:
    """CatBoost's option names as its scikit-learn classes spell them (the suggestions offered
    for a misspelt name; CatBoost itself decides which names are unknown)."""
    return frozenset(inspect.signature(CatBoostRanker.__init__).parameters) - {"self"}


class StochasticCatBoostRanker(StochasticRankerBase):
    """A CatBoost ranker trained with one of this package's objectives.

    Example (early stopping on CatBoost's own worst-tie NDCG@10 of the validation queries)::

        ranker = StochasticCatBoostRanker(StochasticRank(metric="NDCG", top=10), depth=6,
                                          n_estimators=500, early_stopping_rounds=30)
        ranker.fit(X, y, qid=qid, eval_set=[(X_val, y_val, qid_val)])
        print(ranker.best_iteration_, ranker.booster_.tree_count_)

    Args: see :class:`~stochrank_objectives.adapters._ranker.StochasticRankerBase`;
    ``**booster_params`` are CatBoost parameters (``depth``, ``l2_leaf_reg``,
    ``random_strength``, ``bootstrap_type``, ``custom_metric``, ...) plus

    - ``route``: ``"auto"`` (default), ``"pointer"`` or ``"per_tree"`` ("auto" takes the fast
      "pointer" route unless a setting breaks its assumptions; see :doc:`/guide/catboost`);
    - ``cat_features``: categorical column indices or names (as in ``CatBoostRanker``);
    - ``callbacks``: deprecated, pass ``fit(..., callbacks=[...])`` (a ``DeprecationWarning``;
      both at once are refused).

    ``eval_metric`` may also be a CatBoost metric string (``"NDCG:top=5;type=Base"``). The
    default is CatBoost's own metric equal to the objective's worst-tie metric
    (``NDCG:top=5;type=Exp`` for ``StochasticRank(top=5)``). ``sglb=SGLB(...)`` maps onto
    CatBoost's native ``model_shrink_rate`` (Constant mode) plus this package's gradient noise;
    CatBoost's own names (``langevin``, ``diffusion_temperature``, ``model_shrink_rate``,
    ``model_shrink_mode``, ``posterior_sampling``) are accepted instead and resolved by
    :func:`._sglb.catboost_langevin`. Defaults that differ from CatBoost's:
    ``boosting_type="Plain"``, ``bootstrap_type="Bernoulli"`` with ``subsample=0.8``,
    target-free CTRs, ``allow_writing_files=False``.

    ``fit`` also takes (e.g. ``ranker.fit(X, y, qid=qid, init_model="first.cbm",
    callbacks=[CatBoostPruningCallback(trial, "NDCG:top=5;type=Exp")])``):

    - ``callbacks``: CatBoost callbacks, objects with ``after_iteration(info) -> bool``, run
      after the ranker's own every round, on both routes (the per-tree route calls them with
      CatBoost's ``info``: ``info.iteration`` = trees of this fit, 1-based; ``info.metrics`` =
      ``{"learn": {}, "validation": {"NDCG:top=5;type=Exp": [...]}}``, CatBoost's names:
      ``validation_i`` with several eval sets). A false return stops training; an exception
      is raised as itself.
    - ``init_score`` (CatBoost's name ``baseline`` is taken too) and ``eval_init_score``: the
      learn and eval Pools' ``baseline``. The objective sees ``init_score + model`` and the
      eval metric ``eval_init_score + model``, the scores rounded to float32 (CatBoost keeps a
      baseline in float32, on both routes); ``predict`` returns the model's own output (add
      the first stage yourself).
    - ``init_model``: a fitted ``StochasticCatBoostRanker``, a fitted ``catboost.CatBoost``
      (``CatBoostRanker``, ...) or a saved model's path: the new trees are added to its trees,
      and the objective's iteration (its noise key), the per-tree route's seeds and the shrink
      schedule continue from its ``tree_count_`` (continuing is one longer training).
      ``best_iteration_`` then counts its trees too (``tree_count_ == best_iteration_ + 1``);
      ``evals_result_`` and ``n_iterations_`` hold this fit's rounds.

    SGLB shrinkage with initial scores or an init model: these are the model's start ``F_0``,
    shrunk with it (``F_T = c^T (init_score + init_model) + the new trees``, as in the other
    rankers; ``c`` is applied before the first new tree too). CatBoost itself cannot train
    that in one fit (it resets ``model_shrink_rate`` to 0 with a baseline or an init model),
    nor an init model with a baseline (refused), so route ``"auto"`` trains one tree per fit
    for these combinations, with a ``RuntimeWarning`` (``route="per_tree"`` chooses it
    silently; ``route="pointer"`` is refused with the reason). ``model_shrink_mode=
    "Decreasing"`` with initial scores and no init model is refused: its factor before tree 0,
    ``1 - rate / 0``, is undefined.

    ``booster_`` is a ``catboost.CatBoost`` re-loaded from the trained model (no Python
    objective attached): ``booster_.save_model(path)`` and ``CatBoost().load_model(path)``
    work without this package. Its saved training parameters name the eval metric as the
    objective metric, so that ``booster_.get_feature_importance(type="LossFunctionChange",
    data=Pool(X, label=y, group_id=qid))`` works (the loss in the importances is that metric,
    e.g. NDCG@5; CatBoost cannot compute a Python objective there). Also after ``fit``:
    ``route_``, ``eval_metric_`` (the CatBoost string), ``best_score_``,
    ``n_gradient_evaluations_``, ``n_iterations_``, ``fit_seconds_``.
    ``feature_importances_`` is CatBoost's default (``PredictionValuesChange``).

    ``best_iteration_`` is 0-based (the index of the best round; ``best_iteration_ + 1`` trees
    are kept), the same convention as CatBoost's own ``get_best_iteration()``.
    """

    _booster_name = "CatBoost"
    _allowed_aliases = ("custom_metric",)  # CatBoost: extra metrics logged, not the eval metric
    _owned_params = {
        "use_best_model": "the model is cut to the best iteration exactly when "
                          "early_stopping_rounds is set",
        "od_type": "use early_stopping_rounds", "od_pval": "use early_stopping_rounds",
    }

    def _eval_metric(self, objective):
        metric = self.eval_metric
        if isinstance(metric, str) and "@" not in metric:
            try:
                return EvalMetric.from_string(metric)
            except ValueError as ours:
                # a CatBoost metric string, e.g. "NDCG:top=5;type=Base": its name is checked
                # now (CatBoost's own error lists every loss it has), its options at fit
                _check_catboost_metric_name(metric, ours)
                return metric
        return super()._eval_metric(objective)

    def _check_fit_inputs(self, X, eval_set) -> None:
        """``X`` and the eval sets' features are arrays, DataFrames or lists of rows, not
        ``catboost.Pool``: the ranker builds its own Pools."""
        given = [("X", X)]
        if isinstance(eval_set, Pool):
            given.append(("eval_set", eval_set))
        elif isinstance(eval_set, (list, tuple)):
            given += [(f"eval_set[{i}]", item[0] if isinstance(item, (list, tuple)) and item
                       else item) for i, item in enumerate(eval_set)]
        for where, data in given:
            if isinstance(data, Pool):
                # the learn Pool's labels must be row indices and a Pool can be neither
                # relabelled nor read back (categorical columns), so it is not taken apart
                raise TypeError(
                    f"{where} is a catboost.Pool: {type(self).__name__} builds its own Pools "
                    "(its learn labels carry row indices); pass the data the Pool was built "
                    "from, fit(X, y, qid=qid, eval_set=[(X_val, y_val, qid_val)]), with "
                    "cat_features= for categorical columns")

    def _valid_booster_params(self):
        return catboost_parameter_names() | RANKER_ONLY_PARAMS

    _categories_how = "list it in cat_features=[{column}] (CatBoost encodes it itself)"

    def _categorical_columns(self, X, params):
        # the cat_features columns (indices or names) hold categories, e.g. strings
        names = list(getattr(X, "columns", []))
        return frozenset(names.index(c) if isinstance(c, str) and c in names else c
                         for c in params.get("cat_features") or ())

    def _check_booster_params(self, params):
        # CatBoost's own check of the option names, before any work (it would raise at fit)
        options = {k: v for k, v in params.items() if k not in RANKER_ONLY_PARAMS}
        try:
            check_train_params(options)
        except CatBoostError as exc:
            unknown = re.search(r"Unknown option \{(\w+)\}", str(exc))
            if unknown is None:
                return  # a bad value: CatBoost's own error at fit names it
            name = unknown.group(1)
            check_known_names({name: params.get(name)}, self._valid_booster_params() - {name},
                              self._booster_name)

    _fit_supports = frozenset({"init_score", "callbacks"})
    _fit_aliases = {"baseline": "init_score"}  # CatBoost's fit name (eval sets: in their Pools)

    def _check_init_model(self, init_model, n_features):
        """The CatBoost model to continue: a fitted ranker's ``booster_``, a fitted
        ``catboost.CatBoost`` (``CatBoostRanker``, ...) or a saved model's path, loaded."""
        if init_model is None:
            return None
        if isinstance(init_model, StochasticCatBoostRanker):
            if not hasattr(init_model, "booster_"):
                raise ValueError("init_model is not fitted: fit the StochasticCatBoostRanker "
                                 "first, or pass init_model=None")
            model = init_model.booster_
        elif isinstance(init_model, CatBoost):
            if not init_model.is_fitted():
                raise ValueError(f"init_model is not fitted: fit the "
                                 f"{type(init_model).__name__} first, or pass init_model=None")
            model = init_model
        elif isinstance(init_model, (str, os.PathLike)):
            path = os.fspath(init_model)
            if not os.path.isfile(path):
                raise FileNotFoundError(f"init_model={path!r}: no such file (a CatBoost model "
                                        "saved with save_model)")
            try:
                model = CatBoost().load_model(path)
            except CatBoostError as exc:
                raise ValueError(f"init_model={path!r} is not a CatBoost model file: "
                                 f"{exc}") from None
        else:
            raise TypeError("init_model must be a fitted StochasticCatBoostRanker, a fitted "
                            "catboost.CatBoost model (CatBoostRanker, ...) or the path of a "
                            f"saved CatBoost model, got {type(init_model).__name__}")
        n_model = len(model.feature_names_ or ())
        if n_model != n_features:
            raise ValueError(f"init_model has {n_model} features, X has {n_features}")
        return model

    def _check_callbacks(self, callbacks):
        callbacks = super()._check_callbacks(callbacks)
        for i, cb in enumerate(callbacks):
            if not callable(getattr(cb, "after_iteration", None)):
                raise TypeError(f"callbacks[{i}] is a {type(cb).__name__}: a CatBoost callback "
                                "is an object with an after_iteration(info) method returning "
                                "False to stop training")
        return callbacks

    def _user_callbacks(self, given: list, parameter) -> list:
        """fit's callbacks, or the deprecated ``callbacks`` booster parameter's."""
        if parameter is None:
            return given
        if given:
            raise ValueError("callbacks given both to fit and as a ranker parameter: pass "
                             "them to fit(..., callbacks=[...]) only")
        warnings.warn("the callbacks= ranker parameter is deprecated: pass "
                      "fit(..., callbacks=[...]) instead", DeprecationWarning, stacklevel=5)
        return self._check_callbacks(parameter)

    def _fit_booster(self, X, train, evals, s):
        y, offsets, weights = train.labels, train.query_offsets, train.weights
        params = dict(s.params)
        route = params.pop("route", "auto")
        cat_features = params.pop("cat_features", None)
        callbacks = self._user_callbacks(s.callbacks, params.pop("callbacks", None))
        has_cat = bool(cat_features is not None and len(cat_features))
        check_label_domain(s.objective, y, "y")
        metric, spec, display = catboost_metric(s.eval_metric)
        params, route_used, noise = resolve(dataclasses.replace(s, params=params), metric,
                                            len(y), has_cat, route)
        # CatBoost keeps a baseline in float32: both routes start from that rounding
        init_scores = _as_baseline(train.init_scores)
        eval_inits = [_as_baseline(data.init_scores) for _, data in evals]
        init_model = s.init_model
        start = 0 if init_model is None else int(init_model.tree_count_)
        given = init_scores is not None or any(e is not None for e in eval_inits)
        shrink = float(params.get("model_shrink_rate") or 0.0) != 0.0
        blocked = _pointer_blocked(shrink, given, init_model is not None)
        if blocked and route_used == "pointer":
            if route == "pointer":
                raise ValueError(f"route='pointer' cannot train {blocked}; pass route='auto' or "
                                 "route='per_tree' (one tree per fit, about 3x slower)")
            warnings.warn(f"{blocked}, so the ranker trains one tree per fit (about 3x "
                          "slower); pass route='per_tree' to choose it yourself",
                          RuntimeWarning, stacklevel=4)
            route_used = "per_tree"
        pools = []
        eval_weights = []  # per row; CatBoost's ranking metrics weigh queries by group_weight
        for i, (Xi, data) in enumerate(evals):
            if spec is not None:
                check_label_domain(_WithSpec(spec), data.labels, f"eval_set[{i}] y")
            eval_weights.append(data.document_weights())
            pools.append(Pool(Xi, label=eval_labels(spec, data.labels),
                              group_id=group_index(data.query_offsets),
                              group_weight=eval_weights[-1], cat_features=cat_features))
        rounds = s.early_stopping_rounds
        use_best = rounds is not None
        learn = Pool(X, label=encode_row_index(len(y)), group_id=group_index(offsets),
                     cat_features=cat_features)
        self._cat_features = cat_features
        started = time.perf_counter()
        # the training weights go to the objective only, never to the learn Pool (see
        # CatBoostObjective's weights)
        adapter = CatBoostObjective(s.objective, y, offsets, sglb=noise, route="pointer",
                                    weights=weights)
        if route_used == "pointer":
            if given:  # CatBoost wants a baseline in every Pool once one has one
                learn.set_baseline(_or_zeros(init_scores, len(y)))
                for pool, scores in zip(pools, eval_inits):
                    pool.set_baseline(_or_zeros(scores, pool.num_row()))
            try:
                model, history, best = fit_pointer(adapter, learn, pools, params, rounds,
                                                   use_best, callbacks, init_model)
            except LayoutError:  # catboost_fit raises our own errors, not CatBoost's wrapper
                if route == "pointer":
                    raise
                if callbacks and adapter.iteration > start:
                    raise LayoutError(
                        f"{adapter.layout_error}; the callbacks have seen "
                        f"{adapter.iteration - start} rounds already, so the fit is not "
                        "restarted with one tree per fit: pass route='per_tree'") from None
                warnings.warn(f"pointer route failed its layout guard ({adapter.layout_error}); "
                              "retraining with one tree per fit", RuntimeWarning, stacklevel=3)
                route_used = "per_tree"
        if route_used == "per_tree":
            adapter = CatBoostObjective(s.objective, y, offsets, sglb=noise, route="per_tree",
                                        weights=weights)
            model, history, best = fit_per_tree(
                adapter, X, learn, cat_features, pools, params, rounds, use_best, eval_weights,
                init_scores=init_scores, eval_init_scores=eval_inits, init_model=init_model,
                callbacks=callbacks)
        self.fit_seconds_ = time.perf_counter() - started
        self.route_ = route_used
        self.eval_metric_ = params["eval_metric"]
        key = strip_hints(params["eval_metric"])
        self.evals_result_ = {
            f"validation_{i}": {(display if name == key else name): values
                                for name, values in history.get(
                                    "validation" if len(pools) == 1 else f"validation_{i}",
                                    {}).items()}
            for i in range(len(pools))}
        if use_best:
            self.best_iteration_ = start + best[0]  # counts the init model's trees
        self.best_score_ = best[1]
        self.n_gradient_evaluations_ = adapter.n_evaluations
        self.n_iterations_ = adapter.iteration - start
        adapter.release()
        # the eval metric as the saved model's objective metric: LossFunctionChange computes it
        self.booster_ = with_objective_metric(detached(model), params["eval_metric"])

    def _predict_raw(self, X):
        data = X if isinstance(X, Pool) else Pool(X, cat_features=self._cat_features)
        return self.booster_.predict(data, prediction_type="RawFormulaVal")

    def _importances(self):
        return self.booster_.get_feature_importance()


def _as_baseline(scores):
    """Initial scores as CatBoost keeps a baseline (float32), as float64; None stays None."""
    return None if scores is None else np.asarray(scores, np.float32).astype(np.float64)


def _or_zeros(scores, n):
    return np.zeros(n) if scores is None else scores


def _pointer_blocked(shrink: bool, given: bool, continued: bool) -> str | None:
    """Why one CatBoost fit (the pointer route) cannot train this combination, or None."""
    if shrink and continued:
        return ("model_shrink_rate (SGLB shrinkage) with init_model: CatBoost's continued "
                "training resets model_shrink_rate to 0")
    if shrink and given:
        return ("model_shrink_rate (SGLB shrinkage) with init_score/eval_init_score: CatBoost "
                "resets model_shrink_rate to 0 when a Pool has a baseline")
    if continued and given:
        return ("init_model with init_score/eval_init_score: CatBoost refuses a baseline when "
                "it continues training")
    return None


def _check_catboost_metric_name(metric: str, ours: ValueError) -> None:
    """Refuse an eval_metric string that is neither this package's metric nor CatBoost's."""
    name = metric.partition(":")[0]
    try:
        check_train_params({"loss_function": "YetiRank", "eval_metric": name})
    except CatBoostError:
        raise ValueError(
            f"eval_metric={metric!r}: {ours}; or a CatBoost metric string such as "
            f"'NDCG:top=5;type=Base' (CatBoost has no metric named {name!r} either)") from None


class _WithSpec:
    """An objective-like holder of a metric definition (for the label-domain check)."""

    def __init__(self, spec):
        self.metric_spec = spec
