"""``StochasticCatBoostRanker``: the package's scikit-learn ranker on CatBoost."""

from __future__ import annotations

import dataclasses
import inspect
import re
import time
import warnings
from functools import lru_cache

import numpy as np
from catboost import CatBoostError, CatBoostRanker, Pool
from catboost._catboost import _check_train_params as check_train_params

from .._booster_params import check_known_names
from .._common import EvalMetric
from .._ranker import StochasticRankerBase
from ._fit import detached, fit_per_tree, fit_pointer
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
    - ``callbacks``: extra CatBoost callbacks (``after_iteration``), pointer route only.

    ``eval_metric`` may also be a CatBoost metric string (``"NDCG:top=5;type=Base"``). The
    default is CatBoost's own metric equal to the objective's worst-tie metric
    (``NDCG:top=5;type=Exp`` for ``StochasticRank(top=5)``). ``sglb=SGLB(...)`` maps onto
    CatBoost's native ``model_shrink_rate`` (Constant mode) plus this package's gradient noise;
    CatBoost's own names (``langevin``, ``diffusion_temperature``, ``model_shrink_rate``,
    ``model_shrink_mode``, ``posterior_sampling``) are accepted instead and resolved by
    :func:`._sglb.catboost_langevin`. Defaults that differ from CatBoost's:
    ``boosting_type="Plain"``, ``bootstrap_type="Bernoulli"`` with ``subsample=0.8``,
    target-free CTRs, ``allow_writing_files=False``.

    ``booster_`` is a ``catboost.CatBoost`` re-loaded from the trained model (no Python
    objective attached): ``booster_.save_model(path)`` and ``CatBoost().load_model(path)``
    work without this package. Also after ``fit``: ``route_``, ``eval_metric_`` (the CatBoost
    string), ``best_score_``, ``n_gradient_evaluations_``, ``n_iterations_``, ``fit_seconds_``.
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

    def _fit_booster(self, X, train, evals, s):
        y, offsets, weights = train.labels, train.query_offsets, train.weights
        params = dict(s.params)
        route = params.pop("route", "auto")
        cat_features = params.pop("cat_features", None)
        callbacks = params.pop("callbacks", None)
        has_cat = bool(cat_features is not None and len(cat_features))
        check_label_domain(s.objective, y, "y")
        metric, spec, display = catboost_metric(s.eval_metric)
        params, route_used, noise = resolve(dataclasses.replace(s, params=params), metric,
                                            len(y), has_cat, route)
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
            try:
                model, history, best = fit_pointer(adapter, learn, pools, params, rounds,
                                                   use_best, callbacks)
            except LayoutError:  # catboost_fit raises our own errors, not CatBoost's wrapper
                if route == "pointer":
                    raise
                warnings.warn(f"pointer route failed its layout guard ({adapter.layout_error}); "
                              "retraining with one tree per fit", RuntimeWarning, stacklevel=3)
                route_used = "per_tree"
        if route_used == "per_tree":
            if callbacks:
                raise ValueError("callbacks are not supported on the per-tree route")
            adapter = CatBoostObjective(s.objective, y, offsets, sglb=noise, route="per_tree",
                                        weights=weights)
            model, history, best = fit_per_tree(adapter, X, learn, cat_features, pools, params,
                                                rounds, use_best, eval_weights)
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
            self.best_iteration_ = best[0]
        self.best_score_ = best[1]
        self.n_gradient_evaluations_ = adapter.n_evaluations
        self.n_iterations_ = adapter.iteration
        adapter.release()
        self.booster_ = detached(model)

    def _predict_raw(self, X):
        data = X if isinstance(X, Pool) else Pool(X, cat_features=self._cat_features)
        return self.booster_.predict(data, prediction_type="RawFormulaVal")

    def _importances(self):
        return self.booster_.get_feature_importance()


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
