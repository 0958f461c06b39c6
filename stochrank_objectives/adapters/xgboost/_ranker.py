"""``StochasticXGBRanker``: ``xgboost.XGBRanker`` trained with one of this package's objectives.

The native ranker does the work (parameters, matrices, eval sets, early stopping, callbacks,
model files, attributes); this module adds what only the package does: the objective inside
XGBoost's training loop, its eval metrics, SGLB, ``(X, y, qid)`` eval triples, clicks, and the
refusals of inputs XGBoost would train on silently.
"""

from __future__ import annotations

import os
import re
import warnings
from collections.abc import Mapping
from types import SimpleNamespace
from typing import Any

import numpy as np
import scipy.sparse
from numpy.typing import ArrayLike
import xgboost as xgb

from ...groups import GroupedData, as_float_array
from .._common import EvalMetric, check_objective, check_sglb, objective_metric
from .._ranker import StochasticRankerBase, is_package_metric
from .._ranker_files import packed_state, save_booster, unpacked_state
from .._ranker_inputs import (
    as_matrix,
    category_columns,
    check_eval_queries,
    check_feature_values,
    document_inputs,
    per_eval_set,
    query_offsets,
    refuse_inputs_without_package_objective,
    training_data,
)
from .._ranker_settings import default_objective
from .._serving import XGBOOST_RANKING_OBJECTIVE
from ._metric import XGBMetric
from ._objective import XGBObjective, is_sglb_callback

__all__ = ["StochasticXGBRanker"]

#: the xgboost versions whose private ``XGBModel._configure_fit`` this module overrides
TESTED_XGBOOST = ("3.2",)

_CATEGORIES_HOW = ("give the DataFrame column the pandas category dtype and pass "
                   "enable_categorical=True")

#: XGBoost's lambdarank parameters and their defaults (xgboost 3.2 parameter docs): they
#: shape XGBoost's own rank:* gradients, so they have no effect with a package objective
_LAMBDARANK_DEFAULTS = {"lambdarank_pair_method": "topk", "lambdarank_num_pair_per_sample": None,
                        "lambdarank_normalization": True, "lambdarank_score_normalization": True,
                        "lambdarank_unbiased": False, "lambdarank_bias_norm": 1.0,
                        "ndcg_exp_gain": True}

#: the package's fit names of the previous ranker -> XGBRanker's own
_OLD_FIT_NAMES = {"init_score": "base_margin", "eval_init_score": "base_margin_eval_set",
                  "init_model": "xgb_model", "eval_sample_weight": "sample_weight_eval_set"}



def _is_package_objective(objective) -> bool:
    return not isinstance(objective, str)  # None = the package's default objective


def _qid(offsets) -> np.ndarray:
    """Sorted query ids ``0, 1, ...`` (XGBoost wants them non-decreasing) from offsets."""
    return np.repeat(np.arange(offsets.size - 1, dtype=np.int64), np.diff(offsets))


def _qid_column(X, qid):
    """``(X, qid)`` with XGBRanker's ``qid`` column of a DataFrame taken out of ``X``."""
    columns = getattr(X, "columns", None)
    if columns is None or "qid" not in list(columns):
        return X, qid
    if qid is not None:
        raise ValueError("X has a 'qid' column and qid= is given too: pass one of them")
    return X.drop(columns="qid"), X["qid"].to_numpy()


def _dense(X):
    """A scipy sparse ``X`` as a dense float32 array (XGBoost's precision: no value changes),
    so that its implicit entries are 0.0 as in LightGBM, CatBoost and scikit-learn; XGBoost
    reads them as missing (each split's default direction). Anything else as given."""
    return X.astype(np.float32).toarray() if scipy.sparse.issparse(X) else X


class _TrainWithObjective(xgb.callback.TrainingCallback):
    """Trains XGBRanker's booster with the package's objective.

    ``XGBRanker.fit`` calls ``xgboost.train`` without ``obj=`` (xgboost 3.2), and ``train``
    asks ``model.update(dtrain, iteration, fobj)`` for every tree. ``before_training`` shadows
    that method on this one training's Booster with one that passes the adapter as ``fobj``
    (public ``Booster.update``: predict the margins, call the objective, ``boost``);
    ``after_training`` removes it, so the fitted booster is a plain one (pickles, copies).
    """

    def __init__(self, adapter: XGBObjective):
        super().__init__()
        self._adapter = adapter

    def before_training(self, model):
        native = model.update

        def update(dtrain, iteration, fobj=None):
            return native(dtrain, iteration=iteration, fobj=self._adapter)

        model.update = update
        return model

    def after_training(self, model):
        vars(model).pop("update", None)
        return model


class _FixedLearningRate(xgb.callback.TrainingCallback):
    """Under SGLB, placed after the user's callbacks: refuses a learning rate one of them set.

    SGLB's callback sets tree ``t``'s rate to ``sglb.learning_rate_at(t)`` in
    ``before_iteration``; a user's ``set_param("learning_rate", ...)`` in ``before_iteration``
    would train that tree with another rate, its ``set_param("eta", ...)`` (the alias loses to
    ``learning_rate``) or one in ``after_iteration`` would be dropped without a word. Every
    ``set_param`` of the training booster naming ``learning_rate`` or ``eta`` is recorded (the
    booster's own method is shadowed during training, as ``_TrainWithObjective`` does for
    ``update``) and checked after the user's callbacks, before and after each tree.
    """

    _NAMES = ("learning_rate", "eta")

    def __init__(self, sglb):
        super().__init__()
        self._sglb = sglb
        self._start = 0
        self._set: list = []

    def before_training(self, model):
        self._start = model.num_boosted_rounds()
        self._set = []
        native = model.set_param

        def set_param(params, value=None):
            items = ([(params, value)] if isinstance(params, str) else
                     params.items() if isinstance(params, Mapping) else list(params))
            self._set += [(key, v) for key, v in items if key in self._NAMES]
            return native(params, value)

        model.set_param = set_param
        return model

    def before_iteration(self, model, epoch, evals_log) -> bool:
        self._check(self._start + epoch, "before")
        return False

    def after_iteration(self, model, epoch, evals_log) -> bool:
        self._check(self._start + epoch, "after")
        return False

    def after_training(self, model):
        vars(model).pop("set_param", None)
        return model

    def _check(self, t, when) -> None:
        rate = self._sglb.learning_rate_at(t)
        changed, self._set = [(k, v) for k, v in self._set if not _same_rate(v, rate)], []
        if changed:
            key, value = changed[0]
            raise ValueError(
                f"a callback in callbacks= changed the learning rate {when} tree {t} "
                f"(set_param({key!r}, {value!r})), where SGLB sets it to {rate!r} "
                f"(sglb.learning_rate_at({t})): SGLB's reparametrisation needs its own rates; "
                f"drop the callback's set_param({key!r}, ...) (e.g. "
                "xgb.callback.LearningRateScheduler) or the SGLB schedule (sglb=)")


def _same_rate(value, rate) -> bool:
    try:
        return bool(np.isclose(float(value), rate, rtol=1e-6, atol=0.0))
    except (TypeError, ValueError):
        return False


def _loaded_model_file(path) -> xgb.Booster:
    """``xgb_model`` given as a path, loaded as XGBoost loads it. A file XGBoost cannot load
    (missing, empty, truncated, another format) raises XGBoost's own exception type
    (``XGBoostError``, a ``ValueError``) with a message naming ``xgb_model``, the path, XGBoost's
    reason without its C++ source location and stack trace, and the fix."""
    try:
        return xgb.Booster(model_file=path)
    except xgb.core.XGBoostError as exc:
        lines = [line for line in str(exc).splitlines() if line.strip()]
        reason = re.sub(r"^\[[\d:]+\] \S+:\d+: ", "", lines[0]) if lines else "XGBoostError"
        raise xgb.core.XGBoostError(
            f"xgb_model={os.fspath(path)!r} is not a loadable XGBoost model file ({reason[:300]}); "
            "pass a file saved by the ranker's save_model(path) (or xgboost.Booster.save_model), "
            "or the fitted ranker or its booster itself") from exc


def _check_user_callbacks(callbacks, fit_callbacks) -> None:
    """Refuses the package's SGLB callback among the user's (the ranker runs its own)."""
    named = [(f"callbacks=[{i}]", cb) for i, cb in enumerate(callbacks or [])] + [
        (f"fit(callbacks=)[{i}]", cb) for i, cb in enumerate(fit_callbacks or [])]
    for name, callback in named:
        if is_sglb_callback(callback):
            raise ValueError(
                f"{name} is XGBObjective.callback() of an adapter with an SGLB schedule: the "
                "ranker runs its own callback for its objective and sglb= (another would set "
                "the learning rates and finalise the booster again, or apply SGLB to a model "
                "trained without it); drop it, and pass the schedule as sglb=SGLB(...)")


class StochasticXGBRanker(StochasticRankerBase, xgb.XGBRanker):
    """``xgboost.XGBRanker`` trained with one of this package's objectives.

    Example::

        ranker = StochasticXGBRanker(StochasticRank(metric="NDCG", top=5), max_depth=6)
        ranker.fit(X, y, qid=qid).predict(X_test)

    A user of ``XGBRanker`` changes the class name and keeps the code: every constructor
    argument, ``fit`` / ``predict`` argument, fitted attribute and method is XGBRanker's, with
    its defaults and errors (guide page "XGBoost" lists the exceptions). What differs is the
    objective: ``objective=None`` is the package's default (``StochasticRank(metric="NDCG",
    top=5)``), an object with ``grad_hess`` trains with it (:class:`XGBObjective` in XGBoost's
    loop; the booster calls itself ``rank:pairwise``, the same identity link, and
    ``base_score`` defaults to 0), and an XGBoost ``"rank:*"`` string trains XGBoost's own
    model. The objective may come first positionally (a package extra).

    Added on top:

    * ``sglb=SGLB(...)``: Langevin boosting (:mod:`stochrank_objectives.sglb`); the fitted
      booster holds ``c^T`` in its leaves, so it predicts the final scores without this
      package (``booster_.attr("stochrank_sglb_final_scale")`` is ``c^T``); with early
      stopping it is cut to the best round.
    * ``eval_metric`` takes the package's metric names beside XGBoost's (``"NDCG@5"``,
      ``"ERR@10"``, ``"MRR"``, an :class:`~stochrank_objectives.eval_metric.EvalMetric`:
      worst-order ties; names with a capital letter), alone or in a list with XGBoost's; one
      is evaluated as XGBoost's custom metric and early stopping maximises it.
      ``eval_metric=None`` with a package objective is the objective's own metric.
    * ``fit``: ``eval_set`` items may be ``(X, y, qid)`` triples; ``qid`` needs only be
      contiguous (not sorted); ``sample_weight`` may be one weight per row equal within each
      query; ``position=`` / ``propensity=`` train on clicks (IPS labels); refused with an
      error naming the argument: a fit with no query of two documents, weights that vary
      inside a query, +-inf or non-numeric features, negative labels, early stopping on an
      eval set whose queries are all flat.
    * ``score(X, y, qid=...)``: the objective's metric (scikit-learn model selection);
      ``booster_`` (= ``get_booster()``), ``best_iteration_`` (XGBoost's 0-based
      ``best_iteration``, ``None`` without early stopping), ``objective_``,
      ``propensities_``, :meth:`explainer`; ``save_model`` names an unwritable path in an
      ``OSError``, and a pickle carries a checksum of its booster (a damaged one is refused
      instead of loading a different model).

    Early stopping is XGBRanker's: the booster keeps the rounds after the best one and
    ``predict`` uses the best ones; under SGLB the model is cut to the best round (an SGLB
    model is not a prefix of a longer one).

    A scipy sparse ``X`` is densified to float32 (fit, eval sets, predict, apply), so that an
    implicit entry is 0.0 as in the other rankers (XGBoost reads it as missing).

    Args:
      objective: ``None``, an object with ``grad_hess(scores, labels, query_offsets,
        iteration)``, or an XGBoost ``"rank:*"`` objective name.
      sglb: optional :class:`~stochrank_objectives.sglb.SGLB` schedule (package objectives
        only; its ``learning_rate`` must be the ranker's, XGBoost's 0.3 when unset).
      **kwargs: ``XGBRanker``'s arguments and XGBoost parameters.
    """

    # scikit-learn metadata routing: qid is requested by fit and score by default, so that
    # GridSearchCV(..., cv=GroupKFold()).fit(X, y, qid=qid, groups=qid) routes it.
    __metadata_request__fit = {"qid": True, "sample_weight": True, "position": True}
    __metadata_request__score = {"qid": True, "sample_weight": True}
    _booster_name = "XGBoost"  #: how the package's messages name the booster

    def __init__(self, objective: Any = None, *, sglb: Any = None, **kwargs: Any) -> None:
        # XGBRanker checks a string (and refuses a plain callable with its own error); the
        # package's objects are checked at fit, as scikit-learn wants of a constructor
        native = objective if isinstance(objective, str) or (
            callable(objective) and not hasattr(objective, "grad_hess")) else "rank:ndcg"
        super().__init__(objective=native, **kwargs)
        self.objective = objective
        self.sglb = sglb

    # -- parameters --------------------------------------------------------------------------
    def set_params(self, **params: Any) -> StochasticXGBRanker:
        """``XGBRanker.set_params``, plus scikit-learn's nested ``objective__*`` /
        ``sglb__*`` parameters (``objective__top=10``): ``objective__*`` on a ranker with
        ``objective=None`` first sets the default objective; ``sglb__*`` needs an SGLB, set
        before or in the same call."""
        return self._set_params_nested(params, super().set_params)

    def get_xgb_params(self) -> dict:
        """XGBRanker's booster parameters; with a package objective the booster's objective
        is ``rank:pairwise`` (its gradients come from the package) and, in ``fit``,
        ``base_score`` defaults to 0 and XGBoost's default metric is off."""
        params = {key: value for key, value in super().get_xgb_params().items()
                  if "__" not in key and key not in ("sglb", "verbose")}
        # the package's metrics are evaluated in Python (XGBoost would refuse their names)
        metric = params.pop("eval_metric", None)
        if isinstance(metric, (list, tuple)):
            metric = [m for m in metric if not is_package_metric(m)] or None
            if metric is not None and len(metric) == 1:  # Booster.set_param takes one string
                metric = metric[0]
        if metric is not None and not is_package_metric(metric):
            params["eval_metric"] = metric
        if _is_package_objective(self.objective):
            params["objective"] = XGBOOST_RANKING_OBJECTIVE
            fitting = self.__dict__.get("_fitting")
            if fitting is not None:
                params["disable_default_eval_metric"] = True
                if params.get("base_score") is None and not fitting["continued"]:
                    # a custom objective would start every margin at XGBoost's 0.5
                    params["base_score"] = 0.0
        return params

    def _configure_fit(self, booster, params, feature_weights):
        # xgboost 3.2 (TESTED_XGBOOST): XGBRanker.fit takes its custom metric from this
        # private method; the package's eval metric is handed to it here
        model, metric, params, feature_weights = super()._configure_fit(
            booster, params, feature_weights)
        ours = self.__dict__.get("_fitting", {}).get("metric")
        if ours is not None:
            if metric is not None:
                raise NotImplementedError(
                    "eval_metric holds a package metric and a callable: XGBoost takes one "
                    "custom metric; keep one of them")
            metric = ours
        return model, metric, params, feature_weights

    # -- fit ---------------------------------------------------------------------------------
    def fit(self, X: ArrayLike, y: ArrayLike, *, group: ArrayLike | None = None,
            qid: ArrayLike | None = None, sample_weight: ArrayLike | None = None,
            base_margin: ArrayLike | None = None, eval_set: list | None = None,
            eval_group: list | None = None, eval_qid: list | None = None,
            verbose: bool | int | None = False, xgb_model: Any = None,
            sample_weight_eval_set: list | None = None, base_margin_eval_set: list | None = None,
            feature_weights: ArrayLike | None = None, position: ArrayLike | None = None,
            propensity: Any = None, **old_names: Any) -> StochasticXGBRanker:
        """``XGBRanker.fit``, with the package's objective, checks and additions.

        Example::

            ranker.fit(X, y, qid=qid, eval_set=[(Xv, yv)], eval_qid=[qv], verbose=10)
            ranker.fit(X, y, qid=qid, eval_set=[(Xv, yv, qv)])   # the package's triples

        Args: XGBRanker's (``group``/``qid`` or a ``qid`` DataFrame column, ``eval_set``,
        ``eval_group``/``eval_qid``, ``sample_weight`` and ``sample_weight_eval_set`` (query
        weights), ``base_margin`` / ``base_margin_eval_set``, ``verbose``, ``xgb_model``,
        ``feature_weights``), plus:

          position: training on clicks: ``y`` holds clicks and ``position`` the 0-based
            display position of each row; trains on IPS labels (guide "Training on clicks").
          propensity: ``theta_k`` per position, or ``None`` (estimated by regression-EM) or
            a :class:`~stochrank_objectives.clicks.RegressionEM`.
          ``**old_names``: the previous ranker's names, with a ``DeprecationWarning``:
            ``init_score``, ``eval_init_score``, ``init_model``, ``eval_sample_weight``,
            ``callbacks`` (XGBoost's are the constructor's ``callbacks=``); any other name is
            a per-document input of the package's objectives, by its
            :class:`~stochrank_objectives.groups.GroupedData` field name (none beyond
            ``position`` today), else a ``TypeError``.

        Returns:
          ``self``.
        """
        native = {"base_margin": base_margin, "base_margin_eval_set": base_margin_eval_set,
                  "xgb_model": xgb_model, "sample_weight_eval_set": sample_weight_eval_set}
        fit_callbacks = old_names.pop("callbacks", None)
        if fit_callbacks is not None:
            warnings.warn("fit(callbacks=) is deprecated: XGBRanker takes callbacks in its "
                          "constructor, StochasticXGBRanker(..., callbacks=[...]) or "
                          "set_params(callbacks=[...])", DeprecationWarning, stacklevel=2)
        inputs = document_inputs({name: old_names.pop(name) for name in list(old_names)
                                  if name not in _OLD_FIT_NAMES}, type(self).__name__)
        for name, value in old_names.items():
            twin = _OLD_FIT_NAMES[name]
            if value is None:
                continue
            if native[twin] is not None:
                raise TypeError(f"pass {twin}= or {name}=, not both (the same argument)")
            warnings.warn(f"fit({name}=) is deprecated: pass XGBRanker's {twin}=",
                          DeprecationWarning, stacklevel=2)
            native[twin] = value
        if "verbose" in getattr(self, "kwargs", {}):
            warnings.warn("StochasticXGBRanker(verbose=) is deprecated: pass verbose= to fit "
                          "(XGBRanker's logging period)", DeprecationWarning, stacklevel=2)
            if verbose is False:
                verbose = self.kwargs["verbose"]
        with self._fit_guard():
            self._fit(X, y, group=group, qid=qid, sample_weight=sample_weight,
                      eval_set=eval_set, eval_group=eval_group, eval_qid=eval_qid,
                      verbose=verbose, feature_weights=feature_weights, position=position,
                      propensity=propensity, fit_callbacks=fit_callbacks, inputs=inputs,
                      **native)
        return self

    def _forget_fit(self) -> None:
        for name in ("_Booster", "evals_result_", "objective_", "propensities_"):
            self.__dict__.pop(name, None)

    def _fit(self, X, y, *, group, qid, sample_weight, eval_set, eval_group, eval_qid, verbose,
             feature_weights, position, propensity, fit_callbacks, inputs, base_margin,
             base_margin_eval_set, xgb_model, sample_weight_eval_set) -> None:
        if isinstance(xgb_model, xgb.XGBModel):  # before this fit forgets a model (itself)
            xgb_model = xgb_model.get_booster()
        objective: Any = self.objective
        package = _is_package_objective(objective)
        if package:
            objective = default_objective() if objective is None else check_objective(objective)
        sglb = check_sglb(self.sglb)
        if sglb is not None and not package:
            raise ValueError(f"sglb with objective={objective!r}: SGLB needs one of the "
                             "package's objectives (objective=None or an object with grad_hess)")
        X, n_rows, _ = as_matrix(X, "X")
        X, qid = _qid_column(X, qid)
        n_cols = X.shape[1]
        categorical = category_columns(X) if self.enable_categorical else frozenset()
        check_feature_values(X, "X", categorical, _CATEGORIES_HOW)
        refuse_inputs_without_package_objective(inputs, package, self.objective)
        train, propensities = training_data(X, y, n_rows, qid, group, position, propensity,
                                           sample_weight, base_margin, "base_margin",
                                           inputs=inputs)
        evals = self._eval_sets(eval_set, eval_group, eval_qid, sample_weight_eval_set,
                                base_margin_eval_set, n_cols, categorical)

        native_metric, metric = self._eval_metrics(objective if package else None)
        if metric is not None:  # a new metric of this fit, whose eval DMatrix objects are fixed
            metric.forget(trusted=True)
        stopping = self.early_stopping_rounds
        for i, (_, data) in enumerate(evals):  # early stopping watches the last set only
            check_eval_queries(data.labels, data.query_offsets, f"eval_set[{i}]",
                               stopping is not None and i == len(evals) - 1, data.weights)
        _check_user_callbacks(self.callbacks, fit_callbacks)
        callbacks = list(self.callbacks or []) + list(fit_callbacks or [])
        user = bool(callbacks)
        if package:
            self._check_training_queries(objective, train.query_offsets)
            xgb_model = self._prepare(objective, sglb, xgb_model, callbacks, train)
        if metric is not None:
            for callback in callbacks:
                # XGBoost guesses the direction from lower-case names only, and would minimise
                # "NDCG@5": the package's metrics are all maximised
                if (isinstance(callback, xgb.callback.EarlyStopping)
                        and callback.maximize is None
                        and callback.metric_name in (None, metric.name)):
                    callback.maximize = True
        if metric is not None and stopping is not None:
            # XGBoost's own early stopping guesses the direction from the metric's name; the
            # package's metrics are all maximised (it follows the last metric, this one)
            callbacks.append(xgb.callback.EarlyStopping(rounds=stopping, maximize=True))
            stopping = None
        if sglb is not None and user:  # last: sees what every user callback set
            callbacks.append(_FixedLearningRate(sglb))

        view = {"eval_metric": native_metric, "early_stopping_rounds": stopping,
                "callbacks": callbacks or None}
        saved = {name: getattr(self, name) for name in ("objective", *view)}
        self._forget_fit()
        self._fitting = {"metric": metric, "continued": xgb_model is not None}
        try:
            # the native fit reads these attributes: XGBoost's part of eval_metric, early
            # stopping (when the package's metric stops) and the callbacks (the package's
            # first); get_xgb_params names the objective
            for name, value in view.items():
                setattr(self, name, value)
            super().fit(
                _dense(X), train.labels, qid=_qid(train.query_offsets), sample_weight=train.weights,
                base_margin=train.init_scores,
                eval_set=[(_dense(Xi), data.labels) for Xi, data in evals] or None,
                eval_qid=[_qid(data.query_offsets) for _, data in evals] or None,
                sample_weight_eval_set=self._per_set(evals, "weights"),
                base_margin_eval_set=self._per_set(evals, "init_scores"),
                verbose=verbose, xgb_model=xgb_model, feature_weights=feature_weights)
        finally:
            del self._fitting
            for name, value in saved.items():  # XGBRanker.fit also rewrites objective
                setattr(self, name, value)
        self.objective_ = objective
        if propensities is not None:
            self.propensities_ = propensities

    @staticmethod
    def _per_set(evals, field):
        values = [getattr(data, field) for _, data in evals]
        return None if all(value is None for value in values) else values

    def _eval_sets(self, eval_set, eval_group, eval_qid, weights, margins, n_cols,
                   categorical) -> list:
        """``[(X, GroupedData), ...]`` from XGBRanker's ``(X, y)`` pairs with ``eval_qid`` /
        ``eval_group`` / a ``qid`` column, or the package's ``(X, y, qid)`` triples."""
        if eval_set is None:
            if any(v is not None for v in (eval_group, eval_qid, weights, margins)):
                raise ValueError("eval_group / eval_qid / sample_weight_eval_set / "
                                 "base_margin_eval_set need an eval_set=[(X, y), ...] (one "
                                 "entry per eval set)")
            return []
        if not isinstance(eval_set, (list, tuple)):
            raise TypeError("eval_set must be a list of (X, y) pairs or (X, y, qid) triples")
        n = len(eval_set)
        groups, qids = per_eval_set(eval_group, "eval_group", n), per_eval_set(
            eval_qid, "eval_qid", n)
        weights = per_eval_set(weights, "sample_weight_eval_set", n)
        margins = per_eval_set(margins, "base_margin_eval_set", n)
        evals = []
        for i, item in enumerate(eval_set):
            if not isinstance(item, (list, tuple)) or len(item) not in (2, 3):
                raise TypeError(f"eval_set[{i}] must be an (X, y) pair or an (X, y, qid) "
                                f"triple, got {type(item).__name__}")
            Xi, yi, qi = (*item, qids[i]) if len(item) == 2 else item
            if len(item) == 3 and (qids[i] is not None or groups[i] is not None):
                raise ValueError(f"eval_set[{i}] is an (X, y, qid) triple and eval_qid / "
                                 "eval_group has an entry for it too: pass one of them")
            Xi, ni, _ = as_matrix(Xi, f"eval_set[{i}] X")
            Xi, qi = _qid_column(Xi, qi)
            if Xi.shape[1] != n_cols:
                raise ValueError(f"eval_set[{i}] X has {Xi.shape[1]} features, X has {n_cols}")
            check_feature_values(Xi, f"eval_set[{i}] X", categorical, _CATEGORIES_HOW)
            names = {"labels": f"eval_set[{i}] y", "weights": f"sample_weight_eval_set[{i}]",
                     "init_scores": f"base_margin_eval_set[{i}]"}
            evals.append((Xi, GroupedData(
                as_float_array(yi, f"eval_set[{i}] y", ni),
                query_offsets(ni, qi, groups[i], f"eval_set[{i}]"), weights=weights[i],
                init_scores=margins[i], names=names)))
        return evals

    def _eval_metrics(self, objective):
        """``(XGBoost's part of eval_metric, the package's XGBMetric or None)``."""
        given = self.eval_metric
        if given is None:
            ours = [] if objective is None else [objective_metric(objective)]
            native = None
        elif not isinstance(given, (str, EvalMetric, list, tuple)) or callable(given):
            return given, None  # XGBoost's (a callable; anything else: its TypeError)
        else:
            items = [given] if isinstance(given, (str, EvalMetric)) else list(given)
            ours = [m for m in items if is_package_metric(m)]
            rest = [m for m in items if not is_package_metric(m)]
            native = given if not ours else (rest or None)
        if len(ours) > 1:
            raise NotImplementedError("eval_metric holds several package metrics: XGBoost "
                                      "takes one custom metric; keep one of them")
        if not ours:
            return native, None
        m = EvalMetric.from_string(ours[0]) if isinstance(ours[0], str) else ours[0]
        return native, XGBMetric(m.metric, m.k, ties=m.ties, name=m.name, **m.options)

    def _prepare(self, objective, sglb, xgb_model, callbacks, train):
        """The package objective's part of a fit: checks, the continued model, callbacks."""
        for name, default in _LAMBDARANK_DEFAULTS.items():
            value = getattr(self, "kwargs", {}).get(name)
            if value is not None and value != default:
                warnings.warn(f"{name}={value!r} shapes XGBoost's own rank:* gradients and "
                              "has no effect with the package's objective", UserWarning,
                              stacklevel=4)
        adapter = XGBObjective(objective, sglb=sglb)
        adapter.bind(train)  # its positions and any other per-document input reach the objective
        booster = xgb_model
        if booster is not None and not isinstance(booster, xgb.Booster):
            booster = _loaded_model_file(booster)
        if booster is not None and self.base_score is not None:
            raise ValueError(
                f"base_score={self.base_score!r} with xgb_model (init_model): XGBoost would "
                "replace the continued model's base score with it (changing what its trees "
                "predict); the continued model keeps its own: drop base_score")
        if sglb is not None:
            kwargs = getattr(self, "kwargs", {})
            rate = next((v for v in (self.learning_rate, kwargs.get("learning_rate"),
                                     kwargs.get("eta")) if v is not None), None)
            # unset: the schedule's (its callback sets every tree's rate from it)
            if rate is not None:
                sglb.check_learning_rate(rate)
            start = 0 if booster is None else booster.num_boosted_rounds()
            sglb.check_iterations(start + self.get_num_boosting_rounds(), np.float32)
        # iteration, SGLB learning rates and finalisation run first, the user's after them
        callbacks[:0] = [_TrainWithObjective(adapter), adapter.callback()]
        # a continued model: under SGLB brought back to G = F / c^T0; its early-stopping
        # attributes belong to the run that made it
        return None if booster is None else adapter.continue_from(booster)

    # -- predict, score, attributes -----------------------------------------------------------
    def _predict_X(self, X):
        X, _, _ = as_matrix(X, "X")
        X, _ = _qid_column(X, None)
        categorical = category_columns(X) if self.enable_categorical else frozenset()
        check_feature_values(X, "X", categorical, _CATEGORIES_HOW)
        return _dense(X)

    def predict(self, X: ArrayLike, **kwargs: Any) -> np.ndarray:
        """``XGBRanker.predict`` (``output_margin``, ``validate_features``, ``base_margin``,
        ``iteration_range``); a sparse ``X`` is densified, +-inf refused."""
        return super().predict(self._predict_X(X), **kwargs)

    def apply(self, X: ArrayLike,
              iteration_range: tuple[int | np.integer, int | np.integer] | None = None
              ) -> np.ndarray:
        """``XGBRanker.apply``; a sparse ``X`` is densified, +-inf refused."""
        return super().apply(self._predict_X(X), iteration_range=iteration_range)

    def score(self, X: ArrayLike, y: ArrayLike, *, qid: ArrayLike | None = None,
              group: ArrayLike | None = None, sample_weight: ArrayLike | None = None) -> float:
        """The mean over queries of the objective's metric with worst-order ties (e.g.
        NDCG@5), weighted by ``sample_weight`` (query weights); higher is better.

        ``qid``/``group`` name the queries (or a ``qid`` column of a DataFrame ``X``). With an
        XGBoost objective string and no ``qid=``/``group=``: ``XGBRanker.score``.
        """
        objective = self.__dict__.get("objective_", self.objective)
        if isinstance(objective, str) and qid is None and group is None:
            return super().score(X, y)
        X, _, _ = as_matrix(X, "X")
        X, qid = _qid_column(X, qid)
        return self._query_score(X, y, qid, group, sample_weight,
                                 default_objective() if objective is None else objective)

    @property
    def booster_(self) -> xgb.Booster:
        """The fitted ``xgboost.Booster`` (= ``get_booster()``), loadable without this
        package."""
        return self.get_booster()

    @property
    def best_iteration_(self) -> int | None:
        """0-based best round of early stopping (XGBoost's ``best_iteration``), else None."""
        best = self.get_booster().attr("best_iteration")
        return None if best is None else int(best)

    def save_model(self, fname: str | os.PathLike) -> None:
        """``XGBRanker.save_model``; a path that cannot be written raises an ``OSError``
        naming it and the fix (``IsADirectoryError``, ``FileNotFoundError``, ...), XGBoost's
        error as its ``__cause__``."""
        booster = self.get_booster()
        try:
            save_booster(SimpleNamespace(save_model=super().save_model), fname,
                         self._booster_name)
        finally:
            booster.set_attr(scikit_learn=None)  # XGBRanker's marker, left on a failed save

    def __getstate__(self) -> dict:
        # the booster travels as its own pickle with a checksum (see _ranker_files)
        state = dict(self.__dict__)
        if "_Booster" in state:
            state["booster_"] = state.pop("_Booster")
        return packed_state(state, self._booster_name)

    def __setstate__(self, state: dict) -> None:
        state = unpacked_state(state, type(self).__name__)
        if "booster_" in state:
            state["_Booster"] = state.pop("booster_")
        self.__dict__.update(state)
