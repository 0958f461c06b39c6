"""``StochasticLGBMRanker``: ``lightgbm.LGBMRanker`` trained with one of this package's
objectives."""

from __future__ import annotations

import functools
import math
import os
import threading
import warnings
from typing import Any

import lightgbm as lgb
import numpy as np
from lightgbm.basic import _choose_param_value, _ConfigAliases

from ...groups import as_float_array, document_weights, query_weights
from .._booster_params import LEARNING_RATE_NAMES, check_known_names
from .._common import EvalMetric, check_objective, check_sglb
from .._ranker import StochasticRankerBase, is_package_metric
from .._ranker_files import packed_state, save_booster, unpacked_state
from .._ranker_inputs import (
    as_matrix,
    category_columns,
    check_eval_queries,
    check_feature_values,
    column_names,
    per_eval_set,
    document_inputs,
    query_offsets,
    refuse_inputs_without_package_objective,
    training_data,
)
from .._ranker_settings import default_objective
from .._serving import LIGHTGBM_RANKING_OBJECTIVE, lightgbm_as_ranker
from ._callback import is_sglb_callback
from ._metric import LGBMMetric
from ._model_file import model_file_damage
from ._objective import LGBMObjective

__all__ = ["StochasticLGBMRanker", "lightgbm_parameter_names"]



@functools.lru_cache(maxsize=1)
def lightgbm_parameter_names() -> frozenset:
    """Every parameter name LightGBM knows, canonical and aliases, read from LightGBM itself."""
    aliases = _ConfigAliases._get_all_param_aliases()
    return frozenset(aliases) | frozenset(name for names in aliases.values() for name in names)


def _in_lightgbm_order(pairs, n: int) -> list:
    """The ``(position, callback)`` pairs in LightGBM's order: by the callbacks' ``order``
    attribute, where ``lgb.train`` gives one without it ``position - n`` (``n`` callbacks)."""
    return sorted(pairs, key=lambda pair: getattr(pair[1], "order", pair[0] - n))


def _callback_name(callback) -> str:
    return getattr(callback, "__name__", None) or type(callback).__name__


def _sglb_callback_error(i: int, sglb, objective) -> ValueError:
    """The error for :meth:`LGBMObjective.callback` of an SGLB adapter as ``callbacks[i]``."""
    start = f"callbacks[{i}] is LGBMObjective.callback() of an adapter with an SGLB schedule"
    if sglb is not None:
        return ValueError(
            f"{start}: the ranker already applies sglb= (its own callback sets each tree's "
            "SGLB learning rate and makes the booster final), so this one would set the "
            "learning rates a second time; drop it from callbacks= and pass the schedule only "
            "as sglb=SGLB(...) (the adapter's callback is for the low-level lgb.train, with "
            "that adapter as the objective)")
    fits = ("the package objective" if objective is not None
            else "LightGBM's objective")
    return ValueError(
        f"{start}, but the ranker has no sglb=: the callback would set SGLB's learning rates "
        f"on trees that {fits} fits without SGLB's shrinkage, and nothing makes the booster "
        "final (no c^T): a model neither SGLB's nor the plain one. Pass sglb=SGLB(...) to the "
        "ranker (with a package objective) and drop the callback, or train with lgb.train, "
        "that adapter as the objective and its callback")


class _RankerCallbacks:
    """The package objective's callbacks and the user's, as two LightGBM callbacks (before and
    after each iteration): the adapter's (iteration, SGLB learning rate) first, then the user's
    in LightGBM's order (early stopping from the parameters among them, see
    :meth:`StochasticLGBMRanker._process_params`).

    At the last round, and when a callback stops training (``lgb.early_stopping``), the
    booster is made final in place before ``lgb.train`` returns it: under SGLB the kept trees
    are multiplied by ``c^T``, and the objective is named ``lambdarank``. So the booster
    ``lgb.train`` returns (what MLflow's autolog and other patchers of ``lightgbm.sklearn.train``
    see) predicts what the ranker predicts.
    """

    def __init__(self, adapter: LGBMObjective, user: list):
        self.adapter = adapter
        self.user = list(user)
        self.own_before = [adapter.callback()]

    def callbacks(self) -> list:
        """The two callbacks to pass to ``lgb.train``: first and last in its order."""
        return [_Dispatch(self._before, -math.inf, True), _Dispatch(self._after, math.inf, False)]

    def _split(self, before: bool) -> list:
        """The user's ``(position, callback)`` pairs run before (after) each iteration."""
        picked = [(i, cb) for i, cb in enumerate(self.user)
                  if bool(getattr(cb, "before_iteration", False)) == before]
        return _in_lightgbm_order(picked, len(self.user))

    def _check_rate(self, env, i: int, callback) -> None:
        """Under SGLB, refuse a learning rate ``callback`` (``callbacks[i]``) set: in
        ``env.params`` (``lgb.reset_parameter``) or on the booster itself
        (``env.model.reset_parameter``, which updates ``Booster.params``). Set before a tree it
        would train that tree with another rate; set after one, the next tree's rate would
        be that one or SGLB's replacing it without a word."""
        sglb = self.adapter.sglb
        if sglb is None:
            return
        t = env.iteration - env.begin_iteration
        rate = sglb.learning_rate_at(t)
        changed = {name: params[name] for params in (env.params, env.model.params or {})
                   for name in LEARNING_RATE_NAMES
                   if name in params and params[name] != rate}
        if changed:
            raise ValueError(
                f"callbacks[{i}] ({_callback_name(callback)}) changed the learning rate "
                f"({changed}) that SGLB sets for tree {t} ({rate!r}, sglb.learning_rate_at"
                f"({t})): SGLB's schedule fixes each tree's learning rate (its shrinkage and "
                "noise are defined by it), so drop the callback's change "
                "(lgb.reset_parameter(learning_rate=...), env.model.reset_parameter(...)) and "
                "set the rate with sglb=SGLB(learning_rate=...) (and the same learning_rate=) "
                "instead, or drop sglb=")

    def _before(self, env) -> None:
        for cb in self.own_before:
            cb(env)
        for i, cb in self._split(True):
            cb(env)
            self._check_rate(env, i, cb)

    def _after(self, env) -> None:
        stop = None
        for i, cb in self._split(False):
            try:
                cb(env)
            except lgb.callback.EarlyStopException as exc:
                stop = stop or exc  # the first one stops; later callbacks still see the round
            self._check_rate(env, i, cb)
        if stop is not None or env.iteration == env.end_iteration - 1:
            kept = env.iteration + 1 if stop is None else stop.best_iteration + 1
            self.adapter.finalize_trees(env.model, kept, env.begin_iteration)
            lightgbm_as_ranker(env.model)
            # and its parameters, which onnxmltools reads before the model text
            env.model.params["objective"] = LIGHTGBM_RANKING_OBJECTIVE
        if stop is not None:
            raise stop


class _Dispatch:
    """One LightGBM callback (``order``, ``before_iteration``) calling ``run(env)``."""

    def __init__(self, run, order, before_iteration):
        self.run, self.order, self.before_iteration = run, order, before_iteration

    def __call__(self, env) -> None:
        self.run(env)


class _FitState(threading.local):
    """What the fit running in this thread hands to ``_process_params``: the adapter of the
    package objective, its callbacks, whether the package's metric replaces LightGBM's."""

    def __init__(self) -> None:
        self.adapter: LGBMObjective | None = None
        self.callbacks: _RankerCallbacks | None = None
        self.metric_none = False


_FIT = _FitState()


def _as_lightgbm_metric(metric):
    """A package metric (``"NDCG@5"``, an EvalMetric) as an :class:`LGBMMetric` (a callable
    ``LGBMRanker.fit(eval_metric=...)`` takes); anything else as it is."""
    if isinstance(metric, LGBMMetric) or not is_package_metric(metric):
        return metric
    m = metric if isinstance(metric, EvalMetric) else EvalMetric.from_string(metric)
    return LGBMMetric(m.metric, m.k, ties=m.ties, name=m.name, **m.options)


def _check_model_file(init_model) -> None:
    """Refuse an ``init_model`` path that is not a whole LightGBM model file, before LightGBM
    reads it: it aborts the process on a truncated one and raises its internal "Unknown model
    format" for another booster's (see :func:`._model_file.model_file_damage`). A missing file is
    left to LightGBM's own error ("Could not open ...")."""
    path = os.fspath(init_model)
    if not os.path.isfile(path):
        return
    with open(path, "rb") as file:
        damage = model_file_damage(file.read())
    if damage is not None:
        raise ValueError(f"init_model={path!r} {damage}; pass a file saved by the ranker's "
                         "save_model(path) (or lightgbm.Booster.save_model), or the fitted "
                         "ranker or its booster_ itself")


class StochasticLGBMRanker(StochasticRankerBase, lgb.LGBMRanker):
    """``lightgbm.LGBMRanker`` trained with one of this package's objectives: swap the class
    name, keep the code.

    Example::

        ranker = StochasticLGBMRanker(StochasticRank(metric="NDCG", top=5), num_leaves=15)
        ranker.fit(X, y, group=sizes, eval_X=(Xv,), eval_y=(yv,), eval_group=[sizes_v],
                   callbacks=[lgb.early_stopping(10)])
        ranker.predict(X_test)

    Every argument, fitted attribute and method is ``LGBMRanker``'s, with LightGBM's meaning
    and defaults (``**kwargs`` are LightGBM parameters, aliases and all). What differs is the
    objective: ``objective=None`` (the default) is :func:`default_objective`
    (``StochasticRank(metric="NDCG", top=5)``), any object with ``grad_hess`` trains through
    :class:`LGBMObjective`, and a LightGBM objective string (``"lambdarank"``) trains exactly
    ``LGBMRanker``'s model. The objective may be the first positional argument.

    ``best_iteration_`` is LightGBM's: 1-based (the number of trees kept after early
    stopping, counting an ``init_model``'s trees), 0 without early stopping.

    The package adds: ``sglb=SGLB(...)`` (``booster_`` then predicts the ``c^T``-shrunk scores
    with no package installed); ``fit(qid=...)`` instead of ``group=``; ``(X, y, qid)`` triples
    in ``eval_set``; ``position=`` / ``propensity=`` (training on clicks, see
    :meth:`fit`); the package's metric names in ``eval_metric`` (``"NDCG@5"``, ``"ERR@10"``,
    ``"MRR"``, an :class:`~stochrank_objectives.eval_metric.EvalMetric`: worst-order ties);
    :meth:`score` for scikit-learn model selection; :meth:`save_model`, :meth:`explainer`; and
    refusals where LightGBM answers silently (a misspelt parameter, no query of two
    documents, weights that vary inside a query, +-inf features, a damaged pickle). The
    documented exceptions are in the LightGBM guide page.

    With the package's objective, the booster that ``lgb.train`` returns inside ``fit`` is
    already final (SGLB's ``c^T`` in the kept trees, objective named ``lambdarank``), so
    ``mlflow.lightgbm.autolog()`` logs what ``predict`` uses.

    Args:
      objective: the package objective (``grad_hess``), ``None`` (the default one), or a
        LightGBM objective (a string or a callable, as ``LGBMRanker`` takes).
      sglb: optional :class:`~stochrank_objectives.sglb.SGLB` schedule (its ``learning_rate``
        must equal ``learning_rate``); only with a package objective.
      others: ``LGBMRanker``'s. Deprecated: ``eval_metric=`` here (pass it to ``fit``) and a
        bool ``verbose`` (LightGBM's ``verbose`` is its log level; log the eval metric with
        ``callbacks=[lgb.log_evaluation(1)]``).
    """

    # scikit-learn metadata routing: qid is requested by fit and score by default, so that
    # GridSearchCV(..., cv=GroupKFold()).fit(X, y, qid=qid, groups=qid) routes it.
    __metadata_request__fit = {"qid": True, "sample_weight": True, "position": True}
    __metadata_request__score = {"qid": True, "sample_weight": True}

    _booster_name = "LightGBM"
    _categories_how = ("give the DataFrame column the pandas category dtype (LightGBM splits on "
                       "its categories)")

    # LGBMRanker.__init__ is keyword-only and scikit-learn reads the parameter names from the
    # signature, so the native signature is repeated (as lightgbm.dask.DaskLGBMRanker does)
    def __init__(self, objective: Any = None, *, sglb: Any = None, boosting_type: str = "gbdt",
                 num_leaves: int = 31, max_depth: int = -1, learning_rate: float = 0.1,
                 n_estimators: int = 100, subsample_for_bin: int = 200000,
                 class_weight: Any = None, min_split_gain: float = 0.0,
                 min_child_weight: float = 1e-3, min_child_samples: int = 20,
                 subsample: float = 1.0, subsample_freq: int = 0,
                 colsample_bytree: float = 1.0, reg_alpha: float = 0.0,
                 reg_lambda: float = 0.0, random_state: Any = None, n_jobs: int | None = None,
                 importance_type: str = "split", **kwargs: Any) -> None:
        self.sglb = sglb
        super().__init__(
            boosting_type=boosting_type, num_leaves=num_leaves, max_depth=max_depth,
            learning_rate=learning_rate, n_estimators=n_estimators,
            subsample_for_bin=subsample_for_bin, objective=objective, class_weight=class_weight,
            min_split_gain=min_split_gain, min_child_weight=min_child_weight,
            min_child_samples=min_child_samples, subsample=subsample,
            subsample_freq=subsample_freq, colsample_bytree=colsample_bytree,
            reg_alpha=reg_alpha, reg_lambda=reg_lambda, random_state=random_state,
            n_jobs=n_jobs, importance_type=importance_type, **kwargs)

    def set_params(self, **params: Any) -> StochasticLGBMRanker:
        """``LGBMRanker.set_params``, plus the nested ``objective__*`` / ``sglb__*`` parameters
        of scikit-learn (``objective__top=10``; on ``objective=None`` it first sets
        :func:`default_objective`; ``sglb__*`` needs an SGLB, set before or in the same
        call)."""
        return self._set_params_nested(params, super().set_params)

    # -- the objective handed over (below LightGBM's public API: lightgbm 4.7.0) -------------
    def _process_params(self, stage: str) -> dict:
        """``LGBMModel._process_params`` (lightgbm 4.7.0, private), which builds the parameters
        of ``lgb.train`` (``stage="fit"``) and of ``Booster.predict`` from ``get_params()``:
        without the package's own names, with the package objective's adapter as LightGBM's
        objective, and LightGBM's early stopping moved inside the adapter's callbacks (so that
        the booster ``lgb.train`` returns is final)."""
        params = super()._process_params(stage)
        for name in [n for n in params if "__" in n] + ["sglb", "eval_metric"]:
            params.pop(name, None)
        if isinstance(params.get("verbose"), bool):
            params.pop("verbose")  # the deprecated logging period (see fit)
        if not callable(getattr(params.get("objective"), "grad_hess", None)):
            return params
        if stage == "predict" or _FIT.adapter is None:
            params["objective"] = "None"  # as LightGBM predicts with a callable objective
            return params
        params["objective"] = _FIT.adapter  # lgb.train calls it as (preds, train_data)
        if _FIT.metric_none:
            params["metric"] = "None"
        # lgb.train would add its early stopping after our callbacks, where the booster it
        # returns could not be made final: the same callback, among the user's
        params = _choose_param_value("early_stopping_round", params, None)
        rounds = params.pop("early_stopping_round")
        if rounds is not None and lgb.callback._should_enable_early_stopping(rounds):
            verbosity = _choose_param_value("verbosity", dict(params), 1)["verbosity"]
            assert _FIT.callbacks is not None  # set with the adapter, by fit
            _FIT.callbacks.user.append(lgb.early_stopping(
                rounds, first_metric_only=params.get("first_metric_only", False),
                min_delta=params.get("early_stopping_min_delta", 0.0), verbose=verbosity > 0))
        return params

    # -- fit / predict / score ---------------------------------------------------------------
    def fit(  # type: ignore[override]  # LGBMRanker.fit's arguments, then qid=, ...
            self, X, y, sample_weight=None, init_score=None, group=None, eval_set=None,
            eval_names=None, eval_sample_weight=None, eval_init_score=None, eval_group=None,
            eval_metric=None, eval_at=(1, 2, 3, 4, 5), feature_name="auto",
            categorical_feature="auto", callbacks=None, init_model=None, *, eval_X=None,
            eval_y=None, qid=None, position=None, propensity=None,
            **inputs) -> StochasticLGBMRanker:
        """``LGBMRanker.fit``, with the package's additions.

        Example::

            ranker.fit(X, y, qid=qid, eval_set=[(Xv, yv, qid_v)], eval_metric="NDCG@5")

        Every argument is ``LGBMRanker.fit``'s, with its meaning. Beside them:

        Args:
          qid: one query id per row (the rows of a query contiguous), instead of ``group``.
          eval_set: also ``(X, y, qid)`` triples (then no ``eval_group`` entry is needed),
            named ``validation_0``, ``validation_1``, ... in ``evals_result_`` unless
            ``eval_names`` is given (LightGBM's forms: ``valid_0``, ...).
          eval_metric: also the package's metric names (``"NDCG@5"``, ``"ERR@10"``, ``"MRR"``:
            names with a capital letter) or EvalMetric objects, evaluated with worst-order
            ties, beside LightGBM's metric (``metric="None"`` turns that off).
          sample_weight / eval_sample_weight: query weights, one per row (equal within a
            query: LightGBM reads a query's first row) or one per query.
          position: training on clicks: ``y`` holds clicks (0/1 or click-through rates) and
            ``position`` each row's 0-based display position; the ranker trains on the IPS
            labels ``y / max(theta_position, clip)``
            (:func:`~stochrank_objectives.clicks.ips_labels`). Eval sets are used as given.
          propensity: ``theta_k`` per position ``k``; ``None`` with ``position`` = estimated
            by regression-EM from the same clicks (or a
            :class:`~stochrank_objectives.clicks.RegressionEM` of its settings). Fitted:
            ``propensities_``.
          **inputs: any other per-document input of the package's objectives, by its
            :class:`~stochrank_objectives.groups.GroupedData` field name (none beyond the
            above today); an unknown name is a ``TypeError``.

        Refused with the argument and the fix (LightGBM would train on them silently): no
        query of two documents, negative labels, weights that vary inside a query or are all
        0, +-inf features, ``init_score`` together with ``init_model`` (LightGBM replaces the
        Dataset's init_score by the init model's predictions), an ``init_model`` of another
        type, early stopping on an eval set whose every query is flat.
        """
        X, n_rows, n_cols = as_matrix(X, "X")
        categorical = category_columns(X)
        check_feature_values(X, "X", categorical, self._categories_how)
        inputs = document_inputs(inputs, type(self).__name__)
        train, propensities = training_data(X, y, n_rows, qid, group, position, propensity,
                                           sample_weight, init_score, "init_score",
                                           inputs=inputs)
        evals, eval_X, eval_y, eval_group, eval_sample_weight, eval_names = self._eval_sets(
            eval_set, eval_X, eval_y, eval_group, eval_sample_weight, eval_names, n_cols,
            categorical)
        if eval_X is not None:
            eval_set = None
        self._check_init_model(init_model, init_score, eval_init_score)
        adapter, user_callbacks, metrics = self._package_settings(eval_metric, callbacks)
        refuse_inputs_without_package_objective(inputs, adapter is not None, self.objective)
        if adapter is not None:
            self._check_training_queries(adapter.objective, train.query_offsets)
            adapter.bind(train)  # its positions and any per-document input reach the objective
        # LightGBM's early stopping (a parameter or lgb.early_stopping) watches every set
        stopping = bool(self._stopping_rounds_given()) or any(
            isinstance(cb, lgb.callback._EarlyStoppingCallback) for cb in user_callbacks)
        for i, (lab, off, w) in enumerate(evals):
            check_eval_queries(lab, off, f"eval_set[{i}]", stopping, w)
        if adapter is None:
            callbacks = user_callbacks
        else:
            state = _RankerCallbacks(adapter, user_callbacks)
            callbacks = state.callbacks()
        previous = (_FIT.adapter, _FIT.callbacks, _FIT.metric_none)
        _FIT.adapter = adapter
        _FIT.callbacks = None if adapter is None else state
        _FIT.metric_none = adapter is not None and self._metric_none(train.labels)
        self._objective = self.objective if adapter is None else adapter.objective
        try:
            with self._fit_guard():
                super().fit(
                    X, train.labels, sample_weight=train.document_weights(),
                    init_score=train.init_scores, group=train.sizes, eval_set=eval_set,
                    eval_names=eval_names, eval_sample_weight=eval_sample_weight,
                    eval_init_score=eval_init_score, eval_group=eval_group, eval_metric=metrics,
                    eval_at=eval_at, feature_name=feature_name,
                    categorical_feature=categorical_feature, callbacks=callbacks,
                    init_model=init_model, eval_X=eval_X, eval_y=eval_y)
        finally:
            _FIT.adapter, _FIT.callbacks, _FIT.metric_none = previous
        self._fitted_categorical = categorical  # the columns predict leaves to LightGBM too
        self._fitted_names = column_names(X)
        if propensities is not None:
            self.propensities_ = propensities
        elif hasattr(self, "propensities_"):
            del self.propensities_
        return self

    def _forget_fit(self) -> None:
        # never half-updated (LightGBM would keep the old booster beside the new data's
        # n_features_in_): a failed fit leaves the ranker unfitted
        self.fitted_, self._Booster = False, None

    def _package_settings(self, eval_metric, callbacks):
        """``(adapter or None, the user's callbacks, eval_metric for LightGBM)``: the package
        objective's adapter, and the deprecated constructor forms resolved."""
        objective = self.objective
        sglb = check_sglb(self.sglb)
        # LightGBM logs a warning for a misspelt name and trains without it
        # (LGBMModel.set_params also files the constructor's own arguments there)
        check_known_names({k: v for k, v in self._other_params.items()
                           if k != "eval_metric" and "__" not in k},
                          lightgbm_parameter_names() | set(self._get_param_names()),
                          "LightGBM")
        if objective is None:
            objective = default_objective()
        elif isinstance(objective, str) or (callable(objective)
                                            and not hasattr(objective, "grad_hess")):
            objective = None  # LightGBM's own objective, trained as LGBMRanker does
        else:
            check_objective(objective)
        if sglb is not None:
            if objective is None:
                raise ValueError(f"sglb needs one of this package's objectives, not "
                                 f"objective={self.objective!r}: pass objective=None (the "
                                 "default StochasticRank) or a package objective")
            sglb.check_learning_rate(float(self.learning_rate))
        if callbacks is not None and not isinstance(callbacks, (list, tuple)):
            raise TypeError(f"callbacks must be a list of LightGBM callbacks, got "
                            f"{type(callbacks).__name__}")
        callbacks = list(callbacks or [])
        for i, cb in enumerate(callbacks):
            if not callable(cb):
                raise TypeError(f"callbacks[{i}] is a {type(cb).__name__}, not a LightGBM "
                                "callback: pass functions of env (lightgbm.CallbackEnv), such "
                                "as lgb.early_stopping(10) or lgb.log_evaluation(1)")
            if is_sglb_callback(cb):
                raise _sglb_callback_error(i, sglb, objective)
        verbose = self._other_params.get("verbose")
        if isinstance(verbose, bool):
            warnings.warn("verbose=True/False (the eval log) is deprecated: LightGBM's verbose "
                          "is its log level (verbose=-1 silent); log the eval metric with "
                          "callbacks=[lightgbm.log_evaluation(1)]", DeprecationWarning,
                          stacklevel=3)
            if verbose:
                callbacks.append(lgb.log_evaluation(1))
        metrics = eval_metric if isinstance(eval_metric, list) else (
            [] if eval_metric is None else [eval_metric])
        own = self._other_params.get("eval_metric")
        if own is not None:
            if not (isinstance(own, (str, EvalMetric)) or callable(own)):
                raise TypeError(f"eval_metric must be None, a string like 'NDCG@5' or an "
                                f"EvalMetric, got {type(own).__name__}")
            warnings.warn("StochasticLGBMRanker(eval_metric=...) is deprecated: pass it to fit, "
                          "ranker.fit(..., eval_metric='NDCG@5') (with metric='None' to leave "
                          "out LightGBM's ndcg@k)", DeprecationWarning, stacklevel=3)
            metrics = [*metrics, own]
        metrics = [_as_lightgbm_metric(m) for m in metrics] or None
        adapter = None if objective is None else LGBMObjective(objective, sglb=sglb)
        return adapter, callbacks, metrics

    def _metric_none(self, labels) -> bool:
        """Whether LightGBM's default ndcg is left out (no LightGBM ``metric`` set): with the
        deprecated constructor ``eval_metric`` (as it was: the one metric logged and watched),
        and for labels LightGBM's ndcg refuses (not integers below 31, e.g. IPS labels of
        clicks), which the package's objectives train on."""
        if any(alias in self._other_params for alias in _ConfigAliases.get("metric")):
            return False
        return (self._other_params.get("eval_metric") is not None
                or not np.array_equal(labels, np.round(labels)) or labels.max() >= 31)

    def _stopping_rounds_given(self):
        given = _choose_param_value("early_stopping_round", dict(self._other_params), None)
        return given["early_stopping_round"]

    def _eval_sets(self, eval_set, eval_X, eval_y, eval_group, eval_sample_weight, eval_names,
                   n_cols, categorical):
        """The eval sets checked as the training data is, ``(X, y, qid)`` triples turned into
        LightGBM's ``eval_X`` / ``eval_y`` / ``eval_group`` (named ``validation_0``, ... unless
        ``eval_names`` says otherwise). Returns ``(labels and offsets per set, eval_X, eval_y,
        eval_group, eval_sample_weight, eval_names)``; a malformed combination is left to
        LightGBM's own errors."""
        if isinstance(eval_set, list) and any(isinstance(e, (tuple, list)) and len(e) == 3
                                              for e in eval_set):
            if eval_X is not None or eval_y is not None:
                raise ValueError("pass eval_set or eval_X and eval_y, not both")
            groups = list(eval_group) if eval_group is not None else [None] * len(eval_set)
            if len(groups) != len(eval_set):
                raise ValueError(f"eval_group has {len(groups)} entries, eval_set "
                                 f"{len(eval_set)}")
            for i, item in enumerate(eval_set):
                if len(item) == 3:
                    sizes = np.diff(query_offsets(len(item[1]), item[2], None,
                                                  f"eval_set[{i}]"))
                    groups[i] = sizes
                elif len(item) != 2:
                    raise TypeError(f"eval_set[{i}] must be an (X, y) pair or an (X, y, qid) "
                                    f"triple, got {len(item)} items")
            if eval_names is None:  # the package's form keeps the package's names
                eval_names = [f"validation_{i}" for i in range(len(eval_set))]
            eval_X = tuple(item[0] for item in eval_set)
            eval_y = tuple(item[1] for item in eval_set)
            eval_group = groups
        if eval_X is not None and eval_y is not None:
            sets = (list(zip(eval_X, eval_y)) if isinstance(eval_X, tuple)
                    and isinstance(eval_y, tuple) else [(eval_X, eval_y)])
        elif eval_set is not None:
            sets = [eval_set] if isinstance(eval_set, tuple) else list(eval_set)
        else:
            return [], eval_X, eval_y, eval_group, eval_sample_weight, eval_names
        if eval_group is None or len(eval_group) != len(sets):
            return [], eval_X, eval_y, eval_group, eval_sample_weight, eval_names
        evals = []
        # LightGBM reads these by position and ignores extra entries: refuse a wrong count
        if eval_sample_weight is not None:
            per_eval_set(eval_sample_weight, "eval_sample_weight", len(sets))
        weights = list(eval_sample_weight) if isinstance(eval_sample_weight, list) else None
        for i, ((Xi, yi), gi) in enumerate(zip(sets, eval_group)):
            Xi, ni, ci = as_matrix(Xi, f"eval_set[{i}] X")
            if ci != n_cols:
                raise ValueError(f"eval_set[{i}] X has {ci} features, X has {n_cols}")
            check_feature_values(Xi, f"eval_set[{i}] X", categorical, self._categories_how)
            labels = as_float_array(yi, f"eval_set[{i}] y", ni)
            offsets = query_offsets(ni, None, gi, f"eval_set[{i}]")
            per_query = None
            if weights is not None and i < len(weights) and weights[i] is not None:
                per_query = query_weights(weights[i], offsets, f"eval_sample_weight[{i}]")
                weights[i] = document_weights(per_query, offsets)
            evals.append((labels, offsets, per_query))
        return evals, eval_X, eval_y, eval_group, (eval_sample_weight if weights is None
                                                   else weights), eval_names

    @staticmethod
    def _check_init_model(init_model, init_score, eval_init_score) -> None:
        """The init models LightGBM takes (it ignores any other type silently), not with
        ``init_score`` (which ``lgb.train`` would replace by the init model's predictions)."""
        if init_model is None:
            return
        if not isinstance(init_model, (str, os.PathLike, lgb.Booster, lgb.LGBMModel)):
            raise TypeError("init_model must be a fitted StochasticLGBMRanker, a fitted "
                            "lightgbm.LGBMModel, a lightgbm.Booster or the path of a LightGBM "
                            f"model file, got {type(init_model).__name__}")
        if isinstance(init_model, (str, os.PathLike)):
            _check_model_file(init_model)
        if init_score is not None or (eval_init_score is not None and any(
                s is not None for s in eval_init_score)):
            raise ValueError(
                "init_score / eval_init_score and init_model cannot be used together with "
                "LightGBM: lgb.train(init_model=...) replaces a Dataset's init_score by the init "
                "model's predictions, so the objective would not see init_score + model. Pass "
                "init_score=first_stage + init_model.predict(X) (and the same for the eval sets) "
                "without init_model, or init_model without init_score")

    def predict(self, X, raw_score=False, start_iteration=0, num_iteration=None,
                pred_leaf=False, pred_contrib=False, validate_features=False, **kwargs):
        """``LGBMRanker.predict``; +-inf features and DataFrame columns other than the fitted
        ones are refused (LightGBM would score them silently)."""
        if self.__sklearn_is_fitted__():
            X, _, _ = as_matrix(X, "X")
            names, fitted = column_names(X), getattr(self, "_fitted_names", None)
            if names is not None and fitted is not None and not np.array_equal(names, fitted):
                raise ValueError(f"feature_names mismatch: X has columns {list(names)}, the "
                                 f"ranker was fitted with {list(fitted)}")
            check_feature_values(X, "X", getattr(self, "_fitted_categorical", frozenset()),
                                 self._categories_how)
        return super().predict(X, raw_score=raw_score, start_iteration=start_iteration,
                               num_iteration=num_iteration, pred_leaf=pred_leaf,
                               pred_contrib=pred_contrib, validate_features=validate_features,
                               **kwargs)

    def score(self, X, y, *, qid=None, group=None, sample_weight=None) -> float:
        """Mean over queries of the objective's metric with worst-order ties (e.g. NDCG@5;
        for a LightGBM objective the default objective's NDCG@5), weighted by
        ``sample_weight`` (query weights): higher is better, as scikit-learn wants."""
        objective: Any = self.objective_
        if not hasattr(objective, "grad_hess"):
            objective = default_objective()
        return self._query_score(X, y, qid, group, sample_weight, objective)

    def save_model(self, fname) -> None:
        """``booster_.save_model(fname)``; a path that cannot be written raises the matching
        ``OSError`` (``IsADirectoryError``, ``FileNotFoundError``, ``NotADirectoryError``,
        ``PermissionError``) naming it and the fix, LightGBM's error as the ``__cause__``."""
        save_booster(self.booster_, fname, self._booster_name)

    def _fitted_feature_names(self):
        return getattr(self, "_fitted_names", None)  # None when fitted on an array

    # -- pickling: the booster travels as its own pickle with a checksum --------------------
    def __getstate__(self) -> dict:
        state = super().__getstate__()
        if state.get("_Booster") is not None:
            state = dict(state)
            state["booster_"] = state.pop("_Booster")
        return packed_state(state, self._booster_name)

    def __setstate__(self, state: dict) -> None:
        state = unpacked_state(state, type(self).__name__)
        if "booster_" in state:
            state = dict(state)
            state["_Booster"] = state.pop("booster_")
        super().__setstate__(state)
