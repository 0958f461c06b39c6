"""``StochasticCatBoostRanker``: a ``catboost.CatBoostRanker`` trained with this package's
objectives (one name changed in a CatBoost user's code)."""

from __future__ import annotations

import os
import time
import warnings
from typing import Any

import numpy as np
from catboost import CatBoost, CatBoostError, CatBoostRanker, Pool
from sklearn.base import BaseEstimator

from ...groups import GroupedData, as_float_array
from .._common import EvalMetric, check_objective, objective_metric
from .._ranker import StochasticRankerBase
from .._ranker_files import unwritable_path_error, packed_state, unpacked_state
from .._ranker_inputs import (
    as_matrix,
    check_eval_queries,
    check_feature_values,
    column_names,
    document_inputs,
    grouped_training_data,
    per_eval_set,
    query_offsets,
    refuse_inputs_without_package_objective,
)
from .._ranker_settings import RANKER_CONSTRAINTS, FitSettings, default_objective
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

#: the package's own constructor arguments: kept in CatBoost's parameter dict (so that
#: get_params, set_params, clone and pickle carry them), never handed to CatBoost
PACKAGE_PARAMS = ("sglb", "route", "callbacks", "n_jobs")
#: the package objective's defaults where CatBoost's differ (1000 trees, a learning rate
#: CatBoost picks for its own losses, a log line per tree)
PACKAGE_DEFAULTS = {"iterations": 100, "learning_rate": 0.1, "random_seed": 0}
#: CatBoost fit arguments the package's objective cannot use -> why
MEANINGLESS = {
    "pairs": "the package's objectives are listwise: they read the labels, not pairs",
    "pairs_weight": "the package's objectives are listwise: they read the labels, not pairs",
    "graph": "the package's objectives read only the queries' labels",
    "subgroup_id": "the package's objectives read only the queries' labels",
    "text_features": "their estimators read the learn labels, which are row indices here",
    "embedding_features": "their estimators read the learn labels, which are row indices here",
    "save_snapshot": "a snapshot restores CatBoost's state, not the objective's",
    "snapshot_file": "a snapshot restores CatBoost's state, not the objective's",
    "snapshot_interval": "a snapshot restores CatBoost's state, not the objective's",
}
#: the fitted attributes of the package's own (pickled beside CatBoost's state)
_OWN_FITTED = ("objective_", "route_", "eval_metric_", "n_gradient_evaluations_",
               "n_iterations_", "fit_seconds_", "propensities_", "feature_names_in_",
               "_history", "_cat_features")


class StochasticCatBoostRanker(StochasticRankerBase, CatBoostRanker, BaseEstimator):
    """A ``catboost.CatBoostRanker`` whose default objective is this package's StochasticRank.

    Example (a CatBoost user's code, one name changed)::

        ranker = StochasticCatBoostRanker(iterations=300, depth=6, eval_metric="NDCG:top=10")
        ranker.fit(Pool(X, y, group_id=qid), eval_set=Pool(Xv, yv, group_id=qid_v),
                   early_stopping_rounds=30)
        ranker.predict(Xt, ntree_end=ranker.get_best_iteration() + 1)

    Everything of ``CatBoostRanker`` is inherited with CatBoost's meaning, defaults and errors:
    its constructor (``iterations``/``n_estimators``, ``random_seed``/``random_state``,
    ``thread_count``/``n_jobs``, ``depth``, ...), ``fit``'s arguments (``Pool``, ``group_id``,
    ``group_weight``, ``baseline``, ``eval_set`` as Pools or ``(X, y)`` pairs,
    ``early_stopping_rounds``, ``use_best_model``, ``verbose``, ``cat_features``,
    ``callbacks``, ``init_model``), ``predict``, ``staged_predict``, ``eval_metrics``,
    ``get_feature_importance``, ``tree_count_``, ``evals_result_``, ``best_iteration_``,
    ``save_model``/``load_model``; SHAP and ``catboost.sum_models`` take it as a CatBoost model.

    What differs is the objective: ``objective=None`` (the default) is
    :func:`~stochrank_objectives.adapters._ranker_settings.default_objective`, any object with
    ``grad_hess`` (``StochasticRank(...)``, also as the first positional argument or as
    ``loss_function=``) is trained through :class:`CatBoostObjective`, and a CatBoost loss
    string (``"YetiRank"``, ``objective="PairLogit"``) trains exactly ``CatBoostRanker``'s
    model. The exceptions with the package's objective (each with its reason) are listed on
    the documentation's CatBoost page: its defaults (100 trees, learning rate 0.1, silent,
    ``boosting_type="Plain"``, ``bootstrap_type="Bernoulli"`` with ``subsample=0.8``,
    target-free CTRs) and the fit arguments it refuses (``pairs``, ``subgroup_id``, ...).

    Added by the package: ``sglb=SGLB(...)`` (CatBoost's ``model_shrink_rate`` plus the
    package's gradient noise; CatBoost's ``langevin``/``diffusion_temperature`` names are
    taken too), ``route`` (``"auto"``, ``"pointer"`` or ``"per_tree"``, see
    :doc:`/guide/catboost`), ``fit(qid=)`` / ``fit(group=)`` beside ``group_id``,
    ``(X, y, qid)`` eval triples with ``eval_sample_weight`` / ``eval_init_score``,
    ``position`` / ``propensity`` (training on clicks), the package's metric names
    (``eval_metric="NDCG@5"``, an ``EvalMetric``), ``score(X, y, qid=)`` (the objective's
    metric, worst-order ties), nested ``get_params``/``set_params`` (``objective__top=10``),
    ``booster_`` (a plain ``catboost.CatBoost`` of the model), ``explainer()`` and the
    refusals of inputs CatBoost answers silently (no query of two documents, weights that vary
    inside a query, +-inf features). Fitted, with the package's objective: ``objective_``,
    ``route_``, ``eval_metric_``, ``n_gradient_evaluations_``, ``n_iterations_``,
    ``fit_seconds_``. ``best_iteration_`` is CatBoost's: 0-based, counting this fit's trees
    (``get_best_iteration()``), ``None`` without an eval set.

    Args:
      objective: the package's objective, a CatBoost loss string, or None (StochasticRank
        NDCG@5).
      sglb: optional :class:`~stochrank_objectives.sglb.SGLB` (its ``learning_rate`` must
        equal ``learning_rate``).
      route: ``"auto"`` (default), ``"pointer"`` or ``"per_tree"``.
      callbacks: deprecated, pass ``fit(..., callbacks=[...])``.
      **params: ``CatBoostRanker``'s parameters.
    """

    _booster_name = "CatBoost"
    _init_params: dict  # CatBoost's parameter dict (set by CatBoost.__init__)
    # scikit-learn metadata routing: qid and sample_weight requested by fit and score, so that
    # GridSearchCV(..., cv=GroupKFold()).fit(X, y, qid=qid, groups=qid) routes them
    __metadata_request__fit = {"qid": True, "sample_weight": True, "position": True}
    __metadata_request__score = {"qid": True, "sample_weight": True}

    def __init__(self, objective: Any = None, *, sglb: Any = None, route: str | None = None,
                 callbacks: list | None = None, n_jobs: int | None = None,
                 **params: Any) -> None:
        super().__init__(objective=objective, **params)  # CatBoost's names and TypeError
        if "loss_function" not in params:
            # CatBoostRanker's default YetiRank: here the default is the package's objective
            self._init_params.pop("loss_function", None)
        # n_jobs: scikit-learn's name of thread_count, which CatBoostRanker lacks (1.2.10)
        for name, value in (("sglb", sglb), ("route", route), ("callbacks", callbacks),
                            ("n_jobs", n_jobs)):
            if value is not None:
                self._init_params[name] = value

    # -- parameters -------------------------------------------------------------------------
    def __getattr__(self, name: str) -> Any:
        # the parameters as attributes, as scikit-learn estimators have them (ranker.depth)
        prop = getattr(type(self), name, None)
        if isinstance(prop, property) and prop.fget is not None:  # its own AttributeError
            return prop.fget(self)  # (e.g. "not fitted yet")
        params = self.__dict__.get("_init_params")
        if params is not None and not name.startswith("_"):
            if name in params:
                return params[name]
            if name in ("objective", "sglb"):
                return None
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def get_params(self, deep: bool = True) -> dict:
        """CatBoost's parameters as given (the objective and SGLB objects themselves, not
        copies: ``sklearn.base.clone`` compares them by identity) and, with ``deep``, the
        nested ``objective__*`` / ``sglb__*`` parameters."""
        params = dict(self._init_params)
        if deep:
            for name in ("objective", "sglb"):
                value: Any = params.get(name)
                if hasattr(value, "get_params") and not isinstance(value, type):
                    params.update({f"{name}__{k}": v for k, v in value.get_params().items()})
        return params

    def set_params(self, **params: Any) -> StochasticCatBoostRanker:
        """CatBoost's ``set_params`` plus nested ones (``objective__top=10``); ``objective__*``
        on ``objective=None`` first materialises the default objective."""
        nested = {key: value for key, value in params.items() if "__" in key}
        plain = {key: value for key, value in params.items() if key not in nested}
        if nested and self.is_fitted():
            raise CatBoostError("You can't change params of fitted model.")
        if any(key.startswith("objective__") for key in nested) and self.objective is None:
            plain.setdefault("objective", default_objective())
        if any(key.startswith("sglb__") for key in nested) and (
                plain.get("sglb", self.sglb) is None):
            raise ValueError("sglb__* parameters need an SGLB schedule: pass sglb=SGLB(...) "
                             "(or set_params(sglb=SGLB(...))) first")
        super().set_params(**plain)
        for prefix in ("objective", "sglb"):
            inner = {key.split("__", 1)[1]: value for key, value in nested.items()
                     if key.split("__", 1)[0] == prefix}
            if inner:
                self._init_params[prefix].set_params(**inner)
        unknown = sorted(key for key in nested if key.split("__", 1)[0] not in ("objective",
                                                                               "sglb"))
        if unknown:
            raise ValueError(f"{unknown[0]}: only objective__* and sglb__* are nested "
                             "parameters")
        self._canonized_params = None
        return self

    def _package_objective(self):
        """The package objective to train with, or None for a CatBoost loss string."""
        params = self._init_params
        if params.get("objective") is not None and params.get("loss_function") is not None:
            # CatBoost would train objective= and drop loss_function= without a word
            raise ValueError(f"objective={params['objective']!r} and loss_function="
                             f"{params['loss_function']!r} name one parameter: pass one")
        given = params.get("objective", params.get("loss_function"))
        if given is None:
            return default_objective()
        if isinstance(given, str):
            return None
        return check_objective(given, "objective")

    # -- fit ----------------------------------------------------------------------------------
    def fit(self, X: Any, y: Any = None, group_id: Any = None, cat_features: Any = None,
            text_features: Any = None, embedding_features: Any = None, pairs: Any = None,
            graph: Any = None, sample_weight: Any = None, group_weight: Any = None,
            subgroup_id: Any = None, pairs_weight: Any = None, baseline: Any = None,
            use_best_model: Any = None, eval_set: Any = None, verbose: Any = None,
            logging_level: Any = None, plot: Any = False, plot_file: Any = None,
            column_description: Any = None, verbose_eval: Any = None,
            metric_period: Any = None, silent: Any = None, early_stopping_rounds: Any = None,
            save_snapshot: Any = None, snapshot_file: Any = None,
            snapshot_interval: Any = None, init_model: Any = None, callbacks: Any = None,
            log_cout: Any = None, log_cerr: Any = None, *, qid: Any = None, group: Any = None,
            position: Any = None, propensity: Any = None, eval_sample_weight: Any = None,
            eval_init_score: Any = None, init_score: Any = None,
            **inputs: Any) -> StochasticCatBoostRanker:
        """``CatBoostRanker.fit`` with the package's objective (or CatBoost's loss string).

        Example::

            ranker.fit(X, y, group_id=qid, eval_set=Pool(Xv, yv, group_id=qid_v))
            ranker.fit(X, y, qid=qid, eval_set=[(Xv, yv, qid_v)])   # the package's forms

        The arguments are ``CatBoostRanker.fit``'s, plus (keyword-only): ``qid`` (one query
        id per row) or ``group`` (query sizes) instead of ``group_id``; ``position`` and
        ``propensity`` (training on clicks, see the rankers' guide); ``eval_sample_weight`` and
        ``eval_init_score`` (one entry per ``(X, y, qid)`` eval triple). ``init_score`` is
        deprecated: pass CatBoost's ``baseline=``.

        With the package's objective, ``sample_weight`` / ``group_weight`` are query weights
        (equal within a query; the loss is the weighted sum of the per-query losses) and
        ``pairs``, ``pairs_weight``, ``graph``, ``subgroup_id``, ``text_features``,
        ``embedding_features`` and snapshots are refused with the reason. ``init_model``
        continues a fitted CatBoost model (this ranker, a ``CatBoostRanker``) or a saved
        model's path: the objective's iteration continues from its ``tree_count_``.

        Returns:
          ``self``.
        """
        if init_score is not None:
            warnings.warn("fit(init_score=) is deprecated: pass CatBoost's baseline=",
                          DeprecationWarning, stacklevel=2)
            if baseline is not None:
                raise TypeError("pass baseline= or init_score=, not both (the same argument)")
            baseline = init_score
        self._get_canonized_params()  # CatBoost's own check of its synonyms, first
        objective = self._package_objective()
        native = dict(X=X, y=y, group_id=group_id, cat_features=cat_features,
                      text_features=text_features, embedding_features=embedding_features,
                      pairs=pairs, graph=graph, sample_weight=sample_weight,
                      group_weight=group_weight, subgroup_id=subgroup_id,
                      pairs_weight=pairs_weight, baseline=baseline,
                      use_best_model=use_best_model, eval_set=eval_set, verbose=verbose,
                      logging_level=logging_level, plot=plot, plot_file=plot_file,
                      column_description=column_description, verbose_eval=verbose_eval,
                      metric_period=metric_period, silent=silent,
                      early_stopping_rounds=early_stopping_rounds, save_snapshot=save_snapshot,
                      snapshot_file=snapshot_file, snapshot_interval=snapshot_interval,
                      init_model=init_model, callbacks=callbacks, log_cout=log_cout,
                      log_cerr=log_cerr)
        extras = dict(qid=qid, group=group, position=position, propensity=propensity,
                      eval_sample_weight=eval_sample_weight, eval_init_score=eval_init_score,
                      inputs=document_inputs(inputs, type(self).__name__))
        with self._fit_guard():
            if objective is None:
                self._fit_native(native, extras)
            else:
                self._fit_package(objective, native, extras)
        return self

    def _forget_fit(self):
        from catboost._catboost import _CatBoost

        for name in _OWN_FITTED + ("_random_seed", "_is_fitted_", "_learning_rate",
                                   "_tree_count", "_n_features_in"):
            self.__dict__.pop(name, None)
        self._object = _CatBoost()

    def _native_params(self, translate_metric=True) -> dict:
        params = {k: v for k, v in self._init_params.items() if k not in PACKAGE_PARAMS}
        n_jobs = _threads(self._init_params)
        if n_jobs is not None:
            params["thread_count"] = n_jobs
        metric = params.get("eval_metric")
        if translate_metric and (isinstance(metric, EvalMetric) or (
                isinstance(metric, str) and "@" in metric)):
            params["eval_metric"] = catboost_metric(_package_metric(metric))[0]
        return params

    def _fit_native(self, native: dict, extras: dict) -> None:
        """CatBoost's loss string: ``CatBoostRanker.fit`` itself, with the package's forms of
        the queries and eval sets translated into CatBoost's."""
        loss = self._init_params.get("objective", self._init_params.get("loss_function"))
        for name in ("sglb", "route"):
            if self._init_params.get(name) is not None:
                fix = ("CatBoost's langevin=True, diffusion_temperature=, model_shrink_rate="
                       if name == "sglb" else "nothing: CatBoost trains its loss itself")
                raise ValueError(f"{name}= works with the package's objectives; with the CatBoost "
                                 f"loss {loss!r} use {fix}")
        for name in ("position", "propensity", "eval_sample_weight", "eval_init_score"):
            if extras[name] is not None:
                raise ValueError(f"{name}= works with the package's objectives; with the "
                                 f"CatBoost loss {loss!r} put it into the Pools yourself")
        refuse_inputs_without_package_objective(extras["inputs"], False, loss)
        X = native["X"]
        if extras["qid"] is not None or extras["group"] is not None:
            if native["group_id"] is not None:
                raise ValueError("pass one of group_id=, qid= or group=")
            n_rows = X.num_row() if isinstance(X, Pool) else as_matrix(X, "X")[1]
            native["group_id"] = group_index(query_offsets(n_rows, extras["qid"],
                                                           extras["group"], "fit"))
        native["eval_set"] = self._native_eval_sets(native["eval_set"], native["cat_features"])
        callbacks = self._deprecated_callbacks(native["callbacks"])
        native["callbacks"] = callbacks or None
        given, self._init_params = self._init_params, self._native_params()
        self._canonized_params = None
        try:
            self._forget_fit()  # no attribute of an earlier fit with the package's objective
            super().fit(**native)
        finally:
            self._init_params, self._canonized_params = given, None

    def _native_eval_sets(self, eval_set, cat_features):
        """``(X, y, qid)`` triples as CatBoost Pools; CatBoost's own forms as they are."""
        if isinstance(eval_set, list):
            return [self._native_eval_sets(item, cat_features) for item in eval_set]
        if isinstance(eval_set, tuple) and len(eval_set) == 3:
            Xi, yi, qi = eval_set
            if cat_features is None:
                cat_features = self._init_params.get("cat_features")
            return Pool(Xi, yi, group_id=qi, cat_features=cat_features)
        return eval_set

    def _deprecated_callbacks(self, given):
        parameter = self._init_params.get("callbacks")
        if parameter is None:
            return [] if given is None else given
        if given:
            raise ValueError("callbacks given both to fit and as a ranker parameter: pass "
                             "them to fit(..., callbacks=[...]) only")
        warnings.warn("the callbacks= ranker parameter is deprecated: pass "
                      "fit(..., callbacks=[...]) instead", DeprecationWarning, stacklevel=4)
        return list(parameter)

    def _fit_package(self, objective, native: dict, extras: dict) -> None:
        """The package's objective: the learn rows as the objective sees them (labels, queries,
        weights, initial scores), CatBoost's parameters, one of the two routes."""
        for name, why in MEANINGLESS.items():
            if native.get(name) is not None:
                raise ValueError(f"{name}= cannot be used with the package's objective "
                                 f"{type(objective).__name__}: {why}")
        canon = dict(self._get_canonized_params())
        for name in ("text_features", "embedding_features"):
            if canon.get(name):
                raise ValueError(f"{name} cannot be used with the package's objective: "
                                 f"{MEANINGLESS[name]}")
        cat_features = native["cat_features"]
        if cat_features is None:
            cat_features = canon.get("cat_features")
        X, learn_info = _learn_data(native, extras, cat_features)
        features, labels, offsets, weights, init_scores, cat_features, pool_names = learn_info
        settings = self._settings(objective, canon, native)
        callbacks = _checked_callbacks(self._deprecated_callbacks(native["callbacks"]))
        init_model = _checked_init_model(native["init_model"], features.shape[1]
                                         if hasattr(features, "shape") else None)
        train, propensities = grouped_training_data(
            features, labels, offsets, extras["position"], extras["propensity"], weights,
            init_scores, "baseline", extras["inputs"])
        labels = train.labels
        self._check_training_queries(objective, offsets)
        evals = _eval_data(native["eval_set"], extras, features, cat_features, pool_names,
                           settings.early_stopping_rounds is not None)
        if settings.early_stopping_rounds is not None and not evals:
            raise ValueError("early_stopping_rounds needs an eval_set (a Pool, (X, y) or "
                             "(X, y, qid)) to watch")
        self._forget_fit()
        names = column_names(features)
        if names is not None:
            self.feature_names_in_ = names
        self.objective_ = objective
        if propensities is not None:
            self.propensities_ = propensities
        self._train_package(features, pool_names, cat_features, train, evals, settings, init_model,
                    callbacks, native)

    def _settings(self, objective, canon: dict, native: dict) -> FitSettings:
        """CatBoost's parameters with the package objective's defaults, checked."""
        params = {k: v for k, v in canon.items()
                  if k not in PACKAGE_PARAMS + ("loss_function", "cat_features")}
        values = {name: params.pop(name, default) for name, default in PACKAGE_DEFAULTS.items()}
        params.pop("thread_count", None)
        given = {"n_estimators": values["iterations"], "learning_rate": values["learning_rate"],
                 "random_state": values["random_seed"], "n_jobs": _threads(canon)}
        checked = {name: RANKER_CONSTRAINTS[name](_as_number(value), name)
                   for name, value in given.items()}
        sglb = RANKER_CONSTRAINTS["sglb"](self._init_params.get("sglb"), "sglb")
        if sglb is not None:
            sglb.check_learning_rate(checked["learning_rate"])
        # fit's verbosity and stopping arguments override the constructor's (as in CatBoost)
        for name in ("verbose", "logging_level", "metric_period", "verbose_eval", "silent"):
            if native.get(name) is not None:
                for other in ("verbose", "logging_level", "verbose_eval", "silent"):
                    if name != "metric_period" and other != name:
                        params.pop(other, None)
                params["verbose" if name in ("verbose_eval", "silent") else name] = (
                    (not native[name]) if name == "silent" else native[name])
        if native["early_stopping_rounds"] is not None:
            params.update(od_type="Iter", od_wait=native["early_stopping_rounds"])
            params.pop("od_pval", None)
        if native["use_best_model"] is not None:
            params["use_best_model"] = native["use_best_model"]
        rounds = params.get("od_wait")
        rounds = RANKER_CONSTRAINTS["early_stopping_rounds"](_as_number(rounds),
                                                            "early_stopping_rounds")
        if "verbose" not in params and "logging_level" not in params:
            params["verbose"] = False  # the package's default: CatBoost logs every tree
        return FitSettings(objective=objective, sglb=sglb, eval_metric=self._eval_metric(
            objective, params.pop("eval_metric", None)), early_stopping_rounds=rounds,
            verbose=params.get("verbose", False), params=params, **checked)

    @staticmethod
    def _eval_metric(objective, metric):
        if metric is None:
            return objective_metric(objective)
        if isinstance(metric, EvalMetric):
            return metric
        if isinstance(metric, str):
            if "@" in metric:  # the package's "NDCG@5"; CatBoost writes "NDCG:top=5"
                return _package_metric(metric)
            _check_catboost_metric_name(metric)  # its options: CatBoost's own check at fit
            return metric
        raise TypeError(f"eval_metric must be None, a CatBoost metric string, a string like "
                        f"'NDCG@5' or an EvalMetric, got {type(metric).__name__}")

    def _train_package(self, X, pool_names, cat_features, train, evals, s, init_model, callbacks,
               native) -> None:
        y, offsets = train.labels, train.query_offsets
        params = dict(s.params)
        route = self._init_params.get("route") or "auto"
        has_cat = bool(cat_features is not None and len(cat_features))
        check_label_domain(s.objective, y, "y")
        metric, spec, _ = catboost_metric(s.eval_metric)
        params, route_used, noise = resolve(s, metric, len(y), has_cat, route)
        init_scores = _as_baseline(train.init_scores)
        eval_inits = [_as_baseline(data.init_scores if pool is None else _pool_baseline(pool))
                      for _, data, pool in evals]
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
        if init_model is not None and route_used == "pointer" and _draws_randomness(params):
            warnings.warn(
                "init_model on route 'pointer': CatBoost draws its bootstrap and split noise "
                "again from random_seed in this fit, so the new trees are not those that one fit "
                "of all the trees would grow (the model differs; its quality does not in "
                "distribution). For the one-fit model pass route='per_tree' (it seeds each tree "
                "by its index) or bootstrap_type='No' and random_strength=0", RuntimeWarning,
                stacklevel=4)
        pools, eval_weights = [], []  # CatBoost's ranking metrics weigh queries by group_weight
        for i, (Xi, data, pool) in enumerate(evals):
            if pool is not None:  # the user's Pool, copied (the routes set its baseline)
                if spec is not None and spec.row.catboost_grade_labels and spec.grade_max:
                    raise ValueError(f"eval_set[{i}] is a Pool: the eval metric "
                                     f"{s.eval_metric.name} maps the labels to probabilities; "
                                     "pass the eval set as (X, y, qid)")
                pools.append(pool.slice(np.arange(pool.num_row())))
                weight = np.asarray(pool.get_weight(), dtype=np.float64)
                eval_weights.append(None if np.all(weight == 1.0) else weight)
                continue
            if spec is not None:
                check_label_domain(_WithSpec(spec), data.labels, f"eval_set[{i}] y")
            eval_weights.append(data.document_weights())
            groups = None if data.query_offsets is None else group_index(data.query_offsets)
            pools.append(Pool(Xi, label=eval_labels(spec, data.labels), group_id=groups,
                              group_weight=eval_weights[-1], cat_features=cat_features,
                              feature_names=pool_names))
        rounds = s.early_stopping_rounds
        use_best = params.pop("use_best_model", None)
        learn = Pool(X, label=encode_row_index(len(y)), group_id=group_index(offsets),
                     cat_features=cat_features, feature_names=pool_names)
        self._cat_features = cat_features
        extra = {k: native[k] for k in ("plot", "plot_file", "log_cout", "log_cerr")
                 if native[k]}
        started = time.perf_counter()
        # the training weights go to the objective only, never to the learn Pool (see
        # CatBoostObjective's weights)
        adapter = CatBoostObjective(s.objective, train, sglb=noise, route="pointer")
        if route_used == "pointer":
            if given:  # CatBoost wants a baseline in every Pool once one has one
                learn.set_baseline(_or_zeros(init_scores, len(y)))
                for pool, scores in zip(pools, eval_inits):
                    pool.set_baseline(_or_zeros(scores, pool.num_row()))
            try:
                model, history, best = fit_pointer(adapter, learn, pools, params, rounds,
                                                   use_best, callbacks, init_model, **extra)
            except LayoutError:  # catboost_fit raises our own errors, not CatBoost's wrapper
                if route == "pointer":
                    raise
                if callbacks and adapter.iteration > start:
                    raise LayoutError(
                        f"{adapter.layout_error}; the callbacks have seen "
                        f"{adapter.iteration - start} rounds already, so the fit is not "
                        "restarted with one tree per fit: pass route='per_tree'") from None
                warnings.warn(f"pointer route failed its layout guard ({adapter.layout_error}); "
                              "retraining with one tree per fit", RuntimeWarning, stacklevel=4)
                route_used = "per_tree"
        if route_used == "per_tree":
            if params.get("od_type", "Iter") != "Iter" or "od_pval" in params:
                raise ValueError("route='per_tree' stops early with od_type='Iter' "
                                 "(early_stopping_rounds) only")
            adapter = CatBoostObjective(s.objective, train, sglb=noise, route="per_tree")
            model, history, best = fit_per_tree(
                adapter, X, learn, cat_features, pools, params, rounds, use_best, eval_weights,
                init_scores=init_scores, eval_init_scores=eval_inits, init_model=init_model,
                callbacks=callbacks, feature_names=pool_names)
        self.fit_seconds_ = time.perf_counter() - started
        self.route_ = route_used
        self.eval_metric_ = params["eval_metric"]
        self.n_gradient_evaluations_ = adapter.n_evaluations
        self.n_iterations_ = adapter.iteration - start
        adapter.release()
        # the eval metric as the saved model's objective metric: LossFunctionChange computes it
        self._adopt(with_objective_metric(detached(model), params["eval_metric"]))
        history = {"learn": {}, **{name: {strip_hints(k): v for k, v in values.items()}
                                   for name, values in history.items() if name != "learn"}}
        self._history = (history, best[0], best[1])

    # -- the model's history: CatBoost keeps it only in the training object ---------------------
    def get_evals_result(self) -> dict:
        """CatBoost's ``{"learn": {}, "validation": {metric: [...]}}`` (``validation_i`` with
        several eval sets; the learn metrics are skipped: the learn labels are row indices)."""
        if "_history" in self.__dict__:
            return self._history[0]
        return super().get_evals_result()

    def get_best_iteration(self) -> int | None:
        """CatBoost's 0-based best iteration on the last eval set (None without one)."""
        if "_history" in self.__dict__:
            return self._history[1]
        return super().get_best_iteration()

    def get_best_score(self) -> dict:
        """CatBoost's ``{"validation": {metric: value}}`` at the best iteration."""
        if "_history" in self.__dict__:
            return self._history[2]
        return super().get_best_score()

    @property
    def feature_importances_(self) -> np.ndarray:
        """CatBoost's ``PredictionValuesChange`` per feature (``CatBoostRanker``'s default type
        needs the training data, so its ``feature_importances_`` is empty)."""
        if not self.is_fitted():
            raise AttributeError(f"this {type(self).__name__} is not fitted yet: call fit first")
        return np.asarray(self.get_feature_importance(type="PredictionValuesChange"),
                          dtype=np.float64)

    @property
    def booster_(self) -> CatBoost:
        """The fitted model as a plain ``catboost.CatBoost`` (no Python objective attached)."""
        if not self.is_fitted():
            raise AttributeError(f"this {type(self).__name__} is not fitted yet: call fit first")
        booster = CatBoost()
        StochasticCatBoostRanker._adopt(booster, self)
        return booster

    # -- predict / score ----------------------------------------------------------------------
    def predict(self, X: Any, ntree_start: int = 0, ntree_end: int = 0, thread_count: int = -1,
                verbose: bool | None = None) -> Any:
        """``CatBoostRanker.predict``, refusing +-inf features (CatBoost predicts silently)."""
        self._check_features(X)
        return super().predict(X, ntree_start, ntree_end, thread_count, verbose)

    def _check_features(self, X):
        if isinstance(X, (Pool, str, os.PathLike)) or not self.is_fitted() or (
                isinstance(X, (list, np.ndarray)) and np.ndim(X) < 2):
            return  # CatBoost's own forms: a Pool, a file, one object's features
        X, _, n_cols = as_matrix(X, "X")
        n_model = len(self.feature_names_ or ())
        if n_cols != n_model:
            raise ValueError(f"X has {n_cols} features, but {type(self).__name__} was fitted "
                             f"with {n_model} features")
        names, fitted = column_names(X), self.__dict__.get("feature_names_in_")
        if names is not None and fitted is not None and not np.array_equal(names, fitted):
            raise ValueError(f"feature_names mismatch: X has columns {list(names)}, the ranker "
                             f"was fitted with {list(fitted)}")
        categorical = set(self._get_cat_feature_indices())
        check_feature_values(X, "X", frozenset(categorical), _CATEGORIES_HOW)

    def score(self, X: Any, y: Any = None, group_id: Any = None, top: int | None = None,
              type: str | None = None, denominator: str | None = None,
              group_weight: Any = None, thread_count: int = -1, *, qid: Any = None,
              group: Any = None, sample_weight: Any = None) -> float:
        """CatBoost's NDCG with ``group_id`` (or a Pool); with ``qid`` / ``group`` the mean over
        queries of the objective's metric with worst-order ties (e.g. NDCG@5), weighted by
        ``sample_weight`` (query weights): what scikit-learn's model selection maximises."""
        if qid is None and group is None:
            return super().score(X, y, group_id, top, type, denominator, group_weight,
                                 thread_count)
        objective = self.__dict__.get("objective_") or self._package_objective()
        if objective is None:
            raise ValueError("score(qid=) reads the package objective's metric; this model "
                             "was trained with a CatBoost loss: pass group_id= for CatBoost's "
                             "NDCG")
        return self._query_score(X, y, qid, group, sample_weight, objective)

    def save_model(self, fname: Any, format: str = "cbm", export_parameters: dict | None = None,
                   pool: Any = None) -> None:
        """``CatBoost.save_model``; a path that cannot be written raises the ``OSError``
        naming it and the fix (``IsADirectoryError``, ``FileNotFoundError``, ...), CatBoost's
        error as its ``__cause__``."""
        try:
            return super().save_model(fname, format, export_parameters, pool)
        except CatBoostError as exc:
            if not self.is_fitted() or not isinstance(fname, (str, os.PathLike)):
                raise
            raise unwritable_path_error(fname, self._booster_name, exc) from exc

    def _shap_model(self):
        if not self.is_fitted():
            raise AttributeError(f"this {type(self).__name__} is not fitted yet: call fit first")
        return self  # SHAP recognises CatBoost models by isinstance

    def _fitted_feature_names(self):
        return self.__dict__.get("feature_names_in_")

    # -- pickling: CatBoost's state, its model as its own pickle with a checksum ------------
    def __getstate__(self):
        state = super().__getstate__()
        state.pop("__model", None)
        if self.is_fitted():  # damaged bytes are refused before CatBoost reads them
            state = packed_state(dict(state, booster_=self.booster_), self._booster_name)
        state["_stochrank_fitted"] = {name: self.__dict__[name] for name in _OWN_FITTED
                                      if name in self.__dict__}
        return state

    def __setstate__(self, state):
        state = unpacked_state(dict(state), type(self).__name__)
        if "_other_params" in state:  # pickled before the ranker was a CatBoostRanker
            state = _from_previous_format(state)
        booster = state.pop("booster_", None)
        own = state.pop("_stochrank_fitted", {})
        super().__setstate__(state)
        if booster is not None:
            self._adopt(booster)
        self.__dict__.update(own)

    def _adopt(self, model) -> None:
        """``model``'s trained object as this ranker's model."""
        self._object = model._object
        self._set_trained_model_attributes()
        # a re-loaded model reports 0 features in (catboost 1.2.10): its feature names count
        self._n_features_in = len(self._object._get_feature_names() or ())


#: the constructor arguments of the ranker before it was a CatBoostRanker
_PREVIOUS_ARGUMENTS = ("objective", "sglb", "n_estimators", "learning_rate", "random_state",
                       "eval_metric", "early_stopping_rounds", "n_jobs", "verbose")


def _from_previous_format(old: dict) -> dict:
    """The state of a ranker pickled by the package's previous ranker (its attributes, the
    booster under ``booster_``) in this class's form: CatBoost's parameters, the model, the
    package's fitted attributes and the fit's history as it was recorded."""
    old = dict(old)
    state = dict(old.pop("_other_params"))
    for name in _PREVIOUS_ARGUMENTS:
        value = old.pop(name, None)
        if value is not None:
            state[name] = value
    booster = old.pop("booster_", None)
    if booster is not None:
        state["booster_"] = booster
        own = {name: old[name] for name in _OWN_FITTED if name in old}
        own["_history"] = (old.get("evals_result_") or {"learn": {}},
                           old.get("best_iteration_"), old.get("best_score_") or {})
        state["_stochrank_fitted"] = own
    return state


_CATEGORIES_HOW = "list it in cat_features=[{column}] (CatBoost encodes it itself)"


def _check_catboost_metric_name(metric: str) -> None:
    """Refuse an eval_metric string that is neither this package's metric nor CatBoost's, in
    one line (CatBoost's own error lists every loss it has)."""
    from catboost._catboost import _check_train_params

    name = metric.partition(":")[0]
    try:
        _check_train_params({"loss_function": "YetiRank", "eval_metric": name})
    except CatBoostError:
        try:
            EvalMetric.from_string(metric)
        except ValueError as ours:
            raise ValueError(f"eval_metric={metric!r}: {ours}; or a CatBoost metric string "
                             f"such as 'NDCG:top=5;type=Base' (CatBoost has no metric named "
                             f"{name!r} either)") from None


def _threads(params: dict):
    """``thread_count``, or the package's ``n_jobs`` for it (not both)."""
    if params.get("n_jobs") is not None and params.get("thread_count") is not None:
        raise CatBoostError("only one of the parameters thread_count, n_jobs should be "
                            "initialized.")
    value = params.get("thread_count")
    return params.get("n_jobs") if value is None else value


def _package_metric(metric):
    return metric if isinstance(metric, EvalMetric) else EvalMetric.from_string(metric)


def _as_number(value):
    """A parameter value from a config file (``"0.1"``) as CatBoost reads it."""
    if isinstance(value, str):
        try:
            return int(value) if value.strip().lstrip("-").isdigit() else float(value)
        except ValueError:
            return value
    return value


def _pool_baseline(pool):
    baseline = np.asarray(pool.get_baseline(), dtype=np.float64)  # (n, 0) without one
    return baseline.reshape(-1) if baseline.size else None


def _learn_data(native: dict, extras: dict, cat_features):
    """The learn rows as the objective needs them: ``(X, (features, labels, query offsets,
    weights, initial scores, cat_features, feature names of a Pool or None))``."""
    X = native["X"]
    if isinstance(X, (str, os.PathLike)):
        X = Pool(X, column_description=native["column_description"])
    pool_names = None
    if isinstance(X, Pool):
        given = [name for name in ("y", "group_id", "cat_features", "sample_weight",
                                   "group_weight", "baseline") if native[name] is not None]
        given += [name for name in ("qid", "group") if extras[name] is not None]
        if given:
            raise CatBoostError(f"{', '.join(given)} should have the None type when X has "
                                "catboost.Pool type (they are inside the Pool)")
        if len(X.get_cat_feature_indices()):
            raise ValueError("X is a catboost.Pool with categorical features: the package's "
                             "objective relabels the learn rows, which a Pool cannot be; pass "
                             "fit(X, y, group_id=..., cat_features=[...]) instead")
        if not X.has_label():
            raise CatBoostError("Label in X has not been initialized.")
        features = X.get_features()  # float32, as the Pool holds them
        pool_names = list(X.get_feature_names())
        labels = as_float_array(X.get_label(), "y", X.num_row())
        ids = X.get_group_id_hash()
        if ids is None:
            raise ValueError("X is a catboost.Pool without group_id: the package's objective "
                             "ranks within queries; build it with Pool(..., group_id=qid)")
        offsets = query_offsets(len(labels), np.asarray(ids), None, "fit")
        weight = np.asarray(X.get_weight(), dtype=np.float64)
        weights = None if np.all(weight == 1.0) else weight
        init_scores = _pool_baseline(X)
        return X, (features, labels, offsets, weights, init_scores, None, pool_names)
    if native["y"] is None:
        raise CatBoostError("y has not initialized in fit(): X is not catboost.Pool object, y "
                            "must be not None in fit().")
    features, n_rows, _ = as_matrix(X, "X")
    names = list(getattr(features, "columns", []))
    categorical = frozenset(names.index(c) if isinstance(c, str) and c in names else c
                            for c in cat_features or ())
    check_feature_values(features, "X", categorical, _CATEGORIES_HOW)
    if n_rows == 0:
        raise ValueError("X has 0 rows: fit needs at least one query of two or more documents")
    labels = as_float_array(native["y"], "y", n_rows)
    if np.any(labels < 0):
        raise ValueError("y must be non-negative relevance labels")
    qid = extras["qid"]
    if native["group_id"] is not None:
        if qid is not None or extras["group"] is not None:
            raise ValueError("fit: pass exactly one of group_id=, qid= or group=")
        qid = native["group_id"]
    offsets = query_offsets(n_rows, qid, extras["group"], "fit")
    if native["sample_weight"] is not None and native["group_weight"] is not None:
        raise CatBoostError("Only a weight or group_weight parameter can be used at a time")
    weights = native["sample_weight"] if native["sample_weight"] is not None \
        else native["group_weight"]
    baseline = native["baseline"]
    if baseline is not None:
        baseline = np.asarray(baseline, dtype=np.float64)
        if baseline.ndim == 2 and baseline.shape[1] == 1:
            baseline = baseline[:, 0]
    return X, (features, labels, offsets, weights, baseline, cat_features, None)


def _eval_data(eval_set, extras, X, cat_features, pool_names, stopping):
    """``[(X, GroupedData, None) or (None, None, Pool), ...]`` from CatBoost's forms (a Pool,
    a list of Pools, ``(X, y)`` pairs, paths) and the package's ``(X, y, qid)`` triples."""
    if eval_set is None:
        if extras["eval_sample_weight"] is not None or extras["eval_init_score"] is not None:
            raise ValueError("eval_sample_weight / eval_init_score need an eval_set=[(X, y, "
                             "qid), ...] (one entry per eval set)")
        return []
    items = eval_set if isinstance(eval_set, list) else [eval_set]
    weights = per_eval_set(extras["eval_sample_weight"], "eval_sample_weight", len(items))
    scores = per_eval_set(extras["eval_init_score"], "eval_init_score", len(items))
    n_cols = X.shape[1]
    categorical = frozenset(cat_features or ()) if not hasattr(X, "columns") else frozenset(
        list(X.columns).index(c) if isinstance(c, str) and c in list(X.columns) else c
        for c in cat_features or ())
    evals = []
    for i, item in enumerate(items):
        if isinstance(item, (str, os.PathLike)):
            item = Pool(item)
        if isinstance(item, Pool):
            if item.num_row() == 0:
                raise CatBoostError("Empty 'eval_set' in Pool")
            evals.append((None, None, item))
            continue
        if not isinstance(item, tuple) or len(item) not in (2, 3):
            raise CatBoostError(f"Invalid type of 'eval_set': {type(item)}, while expected "
                                "Pool or (X, y) or a filename, or list thereof (or the "
                                "package's (X, y, qid))")
        Xi, yi, qi = item if len(item) == 3 else (*item, None)
        Xi, ni, ci = as_matrix(Xi, f"eval_set[{i}] X")
        if ci != n_cols:
            raise ValueError(f"eval_set[{i}] X has {ci} features, X has {n_cols}")
        check_feature_values(Xi, f"eval_set[{i}] X", categorical, _CATEGORIES_HOW)
        names = {"labels": f"eval_set[{i}] y", "weights": f"eval_sample_weight[{i}]",
                 "init_scores": f"eval_init_score[{i}]"}
        # an (X, y) pair is one query, as CatBoost reads a Pool without group_id
        offsets = (np.array([0, ni]) if qi is None
                   else query_offsets(ni, qi, None, f"eval_set[{i}]"))
        data = GroupedData(as_float_array(yi, f"eval_set[{i}] y", ni), offsets,
                           weights=weights[i], init_scores=scores[i], names=names)
        if qi is None:
            data = _WithoutGroups(data)
        evals.append((Xi, data, None))
    for i, (_, data, _) in enumerate(evals):
        if data is not None:  # early stopping watches the last set only
            check_eval_queries(data.labels, np.array([0, len(data.labels)])
                               if data.query_offsets is None else data.query_offsets,
                               f"eval_set[{i}]", stopping and i == len(evals) - 1,
                               data.weights)
    return evals


class _WithoutGroups:
    """An ``(X, y)`` eval pair's data: its Pool gets no ``group_id`` (CatBoost's reading)."""

    def __init__(self, data):
        self.labels, self.weights, self.init_scores = data.labels, data.weights, \
            data.init_scores
        self.query_offsets = None
        self._data = data

    def document_weights(self):
        return self._data.document_weights()


def _checked_callbacks(callbacks) -> list:
    if not isinstance(callbacks, (list, tuple)):
        raise TypeError(f"callbacks must be a list of CatBoost callbacks, got "
                        f"{type(callbacks).__name__}")
    for i, cb in enumerate(callbacks):
        if not callable(getattr(cb, "after_iteration", None)):
            raise TypeError(f"callbacks[{i}] is a {type(cb).__name__}: a CatBoost callback "
                            "is an object with an after_iteration(info) method returning "
                            "False to stop training")
    return list(callbacks)


def _checked_init_model(init_model, n_features):
    """The CatBoost model to continue: a fitted ``catboost.CatBoost`` (this ranker,
    ``CatBoostRanker``, ...) or a saved model's path, loaded."""
    if init_model is None:
        return None
    if isinstance(init_model, CatBoost):
        if not init_model.is_fitted():
            raise ValueError(f"init_model is not fitted: fit the {type(init_model).__name__} "
                             "first, or pass init_model=None")
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
        raise TypeError("init_model must be a fitted catboost.CatBoost model (this ranker, a "
                        "CatBoostRanker, ...) or the path of a saved CatBoost model, got "
                        f"{type(init_model).__name__}")
    n_model = len(model.feature_names_ or ())
    if n_features is not None and n_model != n_features:
        raise ValueError(f"init_model has {n_model} features, X has {n_features}")
    return model


def _draws_randomness(params: dict) -> bool:
    """Whether CatBoost draws random numbers while growing trees with these parameters:
    a bootstrap (any but ``"No"``, or ``"Bayesian"`` at ``bagging_temperature`` 0), split
    noise (``random_strength`` above 0, 1 by default) or feature sampling (``rsm`` below 1)."""
    bootstrap = params.get("bootstrap_type")
    sampled = not (bootstrap == "No" or (bootstrap == "Bayesian"
                                         and float(params.get("bagging_temperature", 1)) == 0))
    return (sampled or float(params.get("random_strength", 1)) != 0
            or float(params.get("rsm", 1) or 1) < 1)


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
        return ("model_shrink_rate (SGLB shrinkage) with baseline/eval_init_score: CatBoost "
                "resets model_shrink_rate to 0 when a Pool has a baseline")
    if continued and given:
        return ("init_model with baseline/eval_init_score: CatBoost refuses a baseline when "
                "it continues training")
    return None


class _WithSpec:
    """An objective-like holder of a metric definition (for the label-domain check)."""

    def __init__(self, spec):
        self.metric_spec = spec
