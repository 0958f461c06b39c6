"""The scikit-learn ranker shape shared by the LightGBM, XGBoost and CatBoost rankers.

:class:`StochasticRankerBase` holds everything that does not depend on the booster: the
constructor (it only stores its arguments), parameter validation at ``fit``, booster aliases,
query groups, eval sets, feature names, ``predict``/``score`` and scikit-learn's nested
parameters and metadata routing. A booster subclass implements ``_fit_booster``,
``_predict_raw``, ``_importances`` and ``_valid_booster_params``. No booster is imported here.
The arguments are checked by one constraints table (:mod:`._ranker_settings`), the data by
:mod:`._ranker_inputs`, the booster parameters by :mod:`._booster_params`.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, Iterable

import numpy as np
from numpy.typing import ArrayLike
from sklearn.base import BaseEstimator

from ..groups import GroupedData, as_float_array, query_weights
from ._booster_params import ALIASES, check_known_names, refuse_aliases
from ._common import EvalMetric, objective_metric
from ._interrupts import sigints_recorded
from ._ranker_inputs import (
    as_matrix,
    category_columns,
    check_eval_queries,
    check_feature_values,
    column_names,
    per_eval_set,
    query_offsets,
    training_data,
)
from ._ranker_files import packed_state, save_booster, unpacked_state
from ._ranker_settings import RANKER_CONSTRAINTS, FitSettings, default_objective

if TYPE_CHECKING:  # only the type checker needs them
    from ..objectives import Objective
    from ..sglb import SGLB

__all__ = ["StochasticRankerBase", "default_objective", "ALIASES", "FitSettings"]



class StochasticRankerBase(BaseEstimator):
    """Base class of the scikit-learn rankers: one shape for every booster.

    Example::

        ranker = StochasticLGBMRanker(StochasticRank(metric="NDCG", top=5), n_estimators=200,
                                      eval_metric="NDCG@5", early_stopping_rounds=20)
        ranker.fit(X, y, qid=qid, eval_set=[(Xv, yv, qid_v)]).predict(Xt)

    Args:
      objective: any object with ``grad_hess(scores, labels, query_offsets, iteration)``;
        ``None`` = :func:`default_objective` (``StochasticRank(metric="NDCG", top=5)``).
      sglb: optional :class:`~stochrank_objectives.sglb.SGLB` schedule (its ``learning_rate``
        must equal ``learning_rate``).
      n_estimators: boosting rounds (trees), default 100.
      learning_rate: step of every tree, default 0.1.
      random_state: the booster's seed (``None`` = the booster's default; the objective keeps
        its own ``seed``).
      eval_metric: metric logged on ``eval_set`` and used for early stopping: ``None`` (the
        objective's own metric, e.g. ``"NDCG@5"``), a string ``"NDCG@5"``, ``"ERR@10"``,
        ``"MRR"``, or an :class:`~stochrank_objectives.eval_metric.EvalMetric`. Ties are
        resolved pessimistically (worst order), so a constant model does not score well.
      early_stopping_rounds: stop when the last eval set's metric has not improved for this
        many rounds; the fitted model keeps the trees up to the best round.
      n_jobs: threads (``None`` = the booster's default, ``-1`` = all cores).
      verbose: ``False`` = silent, ``True`` = log the eval metric every round, ``n`` = every
        ``n`` rounds.
      **booster_params: any other parameter of the booster (``max_depth``, ``num_leaves``,
        ``reg_lambda``, ``depth``, ...). Booster aliases of the arguments above (``eta``,
        ``num_boost_round``, ``iterations``, ``seed``, ``nthread``, ...) are refused with an
        error naming the argument to use.

    Data: ``X`` (fit, eval sets, predict) is an array, a DataFrame, a list of rows or a scipy
    sparse matrix (an implicit entry is 0.0 in every ranker). NaN is a missing value. +-inf is
    refused with the column and first row, in all three rankers although LightGBM and CatBoost
    would train on it: XGBoost cannot bin it, and one model of the same data should not read
    one value three ways (scikit-learn refuses it too). A string is refused with the column and
    the value, except in the columns the booster reads as categories: pandas category columns
    (LightGBM; XGBoost with ``enable_categorical=True``) or CatBoost's ``cat_features``.
    Duplicate DataFrame column names are refused.

    Fitted attributes: ``booster_`` (the booster's own model object, saved with its native
    ``save_model`` and loadable without this package), ``objective_``, ``best_iteration_``
    (0-based index of the best round with early stopping, else ``None``; LightGBM's own
    ``best_iteration`` counts from 1, XGBoost's and CatBoost's from 0), ``evals_result_``
    (``{"validation_0": {"NDCG@5": [...]}, ...}``), ``feature_importances_``,
    ``n_features_in_`` and ``feature_names_in_`` (when fitted on a DataFrame with string
    column names).
    """

    # scikit-learn metadata routing: qid is requested by fit and score by default, so that
    # GridSearchCV(..., cv=GroupKFold()).fit(X, y, qid=qid, groups=qid) routes it.
    # sample_weight too: cross_validate(..., params={"qid": qid, "sample_weight": w}).
    __metadata_request__fit = {"qid": True, "sample_weight": True, "position": True}
    __metadata_request__score = {"qid": True, "sample_weight": True}

    _booster_name = "the booster"
    #: booster parameters the ranker sets itself -> how to set them instead
    _owned_params: dict = {}
    #: aliases that this booster accepts as ordinary parameters after all
    _allowed_aliases: tuple = ()
    #: how this booster is told a column is categorical (``{column}``: the column), offered
    #: for a string in ``X`` or a category column the booster would not read
    _categories_how = "give the DataFrame column the pandas category dtype"

    def __init__(self, objective: Objective | None = None, *, sglb: SGLB | None = None,
                 n_estimators: int = 100, learning_rate: float = 0.1,
                 random_state: int | None = None, eval_metric: str | EvalMetric | None = None,
                 early_stopping_rounds: int | None = None, n_jobs: int | None = None,
                 verbose: bool | int = False, **booster_params: Any) -> None:
        self.objective = objective
        self.sglb = sglb
        self.n_estimators = n_estimators
        self.learning_rate = learning_rate
        self.random_state = random_state
        self.eval_metric = eval_metric
        self.early_stopping_rounds = early_stopping_rounds
        self.n_jobs = n_jobs
        self.verbose = verbose
        self._other_params: dict = {}
        self._set_booster_params(booster_params)

    # -- parameters (as LightGBM's scikit-learn wrapper: extra kwargs are parameters too) -----
    def _set_booster_params(self, params):
        for name, value in params.items():
            setattr(self, name, value)
            self._other_params[name] = value

    def get_params(self, deep: bool = True) -> dict:
        """The constructor arguments, the booster parameters and, with ``deep``, the nested
        ``objective__*`` / ``sglb__*`` parameters."""
        params = super().get_params(deep=deep)
        params.update(self._other_params)
        return params

    def set_params(self, **params: Any) -> StochasticRankerBase:
        """Set arguments, booster parameters or nested ones (``objective__top=10``).

        ``objective__*`` on a ranker with ``objective=None`` first materialises
        :func:`default_objective`; ``sglb__*`` needs an SGLB already set.
        """
        if not params:
            return self
        own = set(self._get_param_names())
        nested = {key for key in params if "__" in key}
        if any(key.startswith("objective__") for key in nested) and self.objective is None:
            self.objective = default_objective()
        if any(key.startswith("sglb__") for key in nested) and self.sglb is None:
            raise ValueError("sglb__* parameters need an SGLB schedule: pass sglb=SGLB(...) "
                             "(or set_params(sglb=SGLB(...))) first")
        known = {k: v for k, v in params.items() if k in own or k in nested}
        super().set_params(**known)
        self._set_booster_params({k: v for k, v in params.items() if k not in known})
        return self

    # -- validation at fit -------------------------------------------------------------------
    #: argument -> check(value, name), run at fit. Callables, not scikit-learn's constraint
    #: format, hence not under its name ``_parameter_constraints``.
    _fit_constraints = RANKER_CONSTRAINTS

    def _fit_settings(self) -> FitSettings:
        """The checked arguments of one fit (the object itself is not changed)."""
        cls = type(self).__name__
        checked = {name: check(getattr(self, name), name)
                   for name, check in self._fit_constraints.items()}
        if checked["sglb"] is not None:
            checked["sglb"].check_learning_rate(checked["learning_rate"])
        params = dict(self._other_params)
        refuse_aliases(params, cls, self._allowed_aliases)
        for name, fix in self._owned_params.items():
            if name in params:
                raise ValueError(f"{name}={params[name]!r} is set by {cls} itself: {fix}")
        self._check_booster_params(params)
        checked["eval_metric"] = self._eval_metric(checked["objective"])
        return FitSettings(**checked, params=params)

    def _check_booster_params(self, params: dict) -> None:
        """Refuse a name the booster does not know (a misspelling would be ignored)."""
        check_known_names(params, self._valid_booster_params(), self._booster_name)

    def _eval_metric(self, objective) -> EvalMetric:
        metric = self.eval_metric
        if metric is None:
            return objective_metric(objective)
        if isinstance(metric, EvalMetric):
            return metric
        if isinstance(metric, str):
            return EvalMetric.from_string(metric)
        raise TypeError(f"eval_metric must be None, a string like 'NDCG@5' or an EvalMetric, "
                        f"got {type(metric).__name__}")

    # -- fit / predict / score ---------------------------------------------------------------
    def fit(self, X: ArrayLike, y: ArrayLike, *, qid: ArrayLike | None = None,
            group: ArrayLike | None = None, eval_set: list[tuple] | None = None,
            sample_weight: ArrayLike | None = None, eval_sample_weight: list | None = None,
            position: ArrayLike | None = None,
            propensity: ArrayLike | None = None, init_score: ArrayLike | None = None,
            eval_init_score: list | None = None, init_model: Any = None,
            callbacks: list | None = None, **booster_names: Any) -> StochasticRankerBase:
        """Train on ``X, y`` with the queries given by ``qid`` or ``group``.

        Args:
          X: features (array, DataFrame, list of rows or scipy sparse matrix); the rows of a
            query contiguous.
          y: relevance labels (>= 0), one per row.
          qid: one query id per row (ids need not be sorted, only contiguous).
          group: the number of rows of each query, in row order (instead of ``qid``).
          eval_set: ``[(X, y, qid), ...]``; early stopping follows the last one.
          sample_weight: query weights, one per row (the same for all the rows of a query) or
            one per query (as ``XGBRanker``): the loss is the weighted sum of the per-query
            losses (a weight of 0 removes a query, an integer weight ``w`` counts it ``w``
            times); finite, non-negative, not all 0.
          eval_sample_weight: one entry per eval set, each ``None`` or its query weights: the
            eval metric is then the weighted mean over queries.
          position: training on clicks: ``y`` holds clicks (0/1, or click-through rates over
            sessions) and ``position`` the 0-based display position of each row. The ranker
            trains on the IPS labels ``y / max(theta_position, clip)``
            (:func:`~stochrank_objectives.clicks.ips_labels`, clip
            :data:`~stochrank_objectives.clicks.DEFAULT_CLIP`): unbiased for DCG-type metrics
            with ``gain="linear"`` under the position-based click model (guide "Training on
            clicks"). Eval sets are used as given (true labels, or IPS labels you computed).
          propensity: ``theta_k`` per position ``k`` (known examination propensities); ``None``
            with ``position`` = estimated from the same clicks by regression-EM
            (:func:`~stochrank_objectives.clicks.estimate_propensities`, on dense ``X``, run
            to convergence), or a :class:`~stochrank_objectives.clicks.RegressionEM` of its
            settings (``max_iter``, ``tol``, ``ridge``). Fitted: ``propensities_``.
          init_score: an initial score per row (e.g. a first-stage ranker's scores): the
            booster starts from it (LightGBM ``init_score``, XGBoost ``base_margin``, CatBoost
            ``baseline``) and the objective sees ``init_score + model``. The fitted model
            holds only the new trees: as with LightGBM, ``predict`` returns the model's own
            output, and the user adds the first stage (``init_score + predict(X)``).
          eval_init_score: one entry per eval set, each ``None`` or its initial scores (the
            eval metric is computed on ``init_score + model``).
          init_model: continue training: a fitted ranker of the same booster, or the booster's
            own model (see the booster's ranker); the new trees are added to its trees.
          callbacks: the booster's own callbacks (``lightgbm.callback`` functions, XGBoost
            ``TrainingCallback`` objects, CatBoost callback objects), run after the ranker's
            own each round (Optuna's pruning callbacks among them).
          **booster_names: the booster's own names of the above (XGBoost ``base_margin``,
            ``base_margin_eval_set``, ``xgb_model``; CatBoost ``baseline``); another name is
            refused.

        Returns:
          ``self``.
        """
        init_score, eval_init_score, init_model = self._booster_fit_names(
            booster_names, init_score, eval_init_score, init_model)
        self._check_fit_inputs(X, eval_set)  # the booster's refusals, before anything changes
        try:
            with sigints_recorded() as sigints:
                self._fit(X, y, qid, group, eval_set, sample_weight=sample_weight,
                          eval_sample_weight=eval_sample_weight, position=position,
                          propensity=propensity, init_score=init_score,
                          eval_init_score=eval_init_score, init_model=init_model,
                          callbacks=callbacks)
            if sigints:  # a KeyboardInterrupt something swallowed (see _interrupts)
                raise KeyboardInterrupt("Ctrl-C during fit, lost on its way (e.g. while Numba "
                                        "compiled a kernel): the model may be incomplete")
        except BaseException:
            # never half-updated: no fitted attribute of the old model beside the new data's
            self._forget_fit()
            raise
        return self

    #: the fit inputs this booster's ranker implements (``init_score``, ``callbacks``)
    _fit_supports: frozenset = frozenset()
    #: the booster's own fit names -> the ranker's (``{"base_margin": "init_score", ...}``)
    _fit_aliases: dict = {}

    def _booster_fit_names(self, given: dict, init_score, eval_init_score, init_model):
        """``(init_score, eval_init_score, init_model)`` from the ranker's names or the
        booster's own (:attr:`_fit_aliases`), refusing an unknown name or both at once."""
        values = {"init_score": init_score, "eval_init_score": eval_init_score,
                  "init_model": init_model}
        for name, value in given.items():
            ours = self._fit_aliases.get(name)
            if ours is None:
                known = ", ".join(sorted(self._fit_aliases)) or "none"
                raise TypeError(f"{type(self).__name__}.fit() got an unexpected keyword argument "
                                f"{name!r} (the {self._booster_name} names it also takes: "
                                f"{known})")
            if values[ours] is not None and value is not None:
                raise TypeError(f"pass {ours}= or {name}=, not both (the same argument)")
            if value is not None:
                values[ours] = value
        return values["init_score"], values["eval_init_score"], values["init_model"]

    def _forget_fit(self) -> None:
        for name in [name for name in vars(self) if name.endswith("_")
                     and not name.startswith("_")]:
            delattr(self, name)

    def _fit(self, X, y, qid, group, eval_set, sample_weight=None,
             eval_sample_weight=None, position=None, propensity=None,
             init_score=None, eval_init_score=None, init_model=None, callbacks=None) -> None:
        settings = self._fit_settings()
        X, n_rows, n_cols = as_matrix(X, "X")
        categorical = self._categorical_columns(X, settings.params)
        check_feature_values(X, "X", categorical, self._categories_how)
        if n_rows == 0:
            raise ValueError("X has 0 rows: fit needs at least one query of two or more "
                             "documents")
        train, propensities = training_data(X, y, n_rows, qid, group, position, propensity,
                                           sample_weight, init_score, "init_score")
        evals = []
        if eval_set is not None:
            if not isinstance(eval_set, (list, tuple)) or (
                    len(eval_set) and not isinstance(eval_set[0], (list, tuple))):
                raise TypeError("eval_set must be a list of (X, y, qid) tuples")
            eval_weights = per_eval_set(eval_sample_weight, "eval_sample_weight", len(eval_set))
            eval_scores = per_eval_set(eval_init_score, "eval_init_score", len(eval_set))
            for i, item in enumerate(eval_set):
                if not isinstance(item, (list, tuple)) or len(item) != 3:
                    raise TypeError(f"eval_set[{i}] must be an (X, y, qid) tuple, got "
                                    f"{type(item).__name__} of length {len(item)}"
                                    if hasattr(item, "__len__") else
                                    f"eval_set[{i}] must be an (X, y, qid) tuple")
                Xi, yi, qi = item
                Xi, ni, ci = as_matrix(Xi, f"eval_set[{i}] X")
                if ci != n_cols:
                    raise ValueError(f"eval_set[{i}] X has {ci} features, X has {n_cols}")
                check_feature_values(Xi, f"eval_set[{i}] X", categorical, self._categories_how)
                names = {"labels": f"eval_set[{i}] y", "weights": f"eval_sample_weight[{i}]",
                         "init_scores": f"eval_init_score[{i}]"}
                evals.append((Xi, GroupedData(
                    as_float_array(yi, f"eval_set[{i}] y", ni),
                    query_offsets(ni, qi, None, f"eval_set[{i}]"), weights=eval_weights[i],
                    init_scores=eval_scores[i], names=names)))
        elif eval_sample_weight is not None or eval_init_score is not None:
            raise ValueError("eval_sample_weight / eval_init_score need an eval_set=[(X, y, "
                             "qid), ...] (one entry per eval set)")
        if settings.early_stopping_rounds is not None and not evals:
            raise ValueError("early_stopping_rounds needs an eval_set=[(X, y, qid)] to watch")
        for i, (_, data) in enumerate(evals):
            # early stopping watches the last set only
            check_eval_queries(data.labels, data.query_offsets, f"eval_set[{i}]",
                               settings.early_stopping_rounds is not None
                               and i == len(evals) - 1)
        given = {"init_score": init_score is not None or eval_init_score is not None,
                 "callbacks": bool(callbacks)}
        for name in sorted(set(n for n, used in given.items() if used) - self._fit_supports):
            raise ValueError(f"{type(self).__name__} does not take {name}= yet")
        settings = settings._replace(init_model=self._check_init_model(init_model, n_cols),
                                     callbacks=self._check_callbacks(callbacks))
        self._forget_fit()
        names = column_names(X)
        if names is not None:
            self.feature_names_in_ = names
        self.n_features_in_ = n_cols
        self._categorical = categorical  # the columns predict leaves to the booster too
        self.objective_ = settings.objective
        if propensities is not None:
            self.propensities_ = propensities
        self.evals_result_: dict = {}
        self.best_iteration_ = None
        self._fit_booster(X, train, evals, settings)

    def _check_predict_X(self, X):
        if not hasattr(self, "booster_"):
            raise AttributeError(f"this {type(self).__name__} is not fitted yet: call fit first")
        X, _, n_cols = as_matrix(X, "X")
        if n_cols != self.n_features_in_:
            raise ValueError(f"X has {n_cols} features, but {type(self).__name__} was fitted "
                             f"with {self.n_features_in_} features")
        names = column_names(X)
        fitted = getattr(self, "feature_names_in_", None)
        if names is not None and fitted is not None and not np.array_equal(names, fitted):
            raise ValueError(f"feature_names mismatch: X has columns {list(names)}, the ranker "
                             f"was fitted with {list(fitted)}")
        check_feature_values(X, "X", getattr(self, "_categorical", frozenset()),
                             self._categories_how)
        return X

    def predict(self, X: ArrayLike) -> np.ndarray:
        """Ranking scores (raw margins), one float64 per row of ``X`` (array or DataFrame)."""
        X = self._check_predict_X(X)
        return np.asarray(self._predict_raw(X), dtype=np.float64).reshape(-1)

    def score(self, X: ArrayLike, y: ArrayLike, *, qid: ArrayLike | None = None,
              group: ArrayLike | None = None, sample_weight: ArrayLike | None = None) -> float:
        """Mean over queries of the objective's metric with worst-order ties (e.g. NDCG@5),
        weighted by ``sample_weight`` (query weights, as in :meth:`fit`).

        Returns:
          the value of :func:`~stochrank_objectives.eval_metric.objective_metric` on
          ``predict(X)`` (higher is better, as scikit-learn's ``score`` wants).
        """
        scores = self.predict(X)
        labels = as_float_array(y, "y", scores.shape[0])
        offsets = query_offsets(scores.shape[0], qid, group, "score")
        if sample_weight is not None:
            sample_weight = query_weights(sample_weight, offsets, "sample_weight")
        return objective_metric(self.objective_).value(scores, labels, offsets, sample_weight)

    @property
    def feature_importances_(self) -> np.ndarray:
        """The booster's default importance per feature (length ``n_features_in_``)."""
        if not hasattr(self, "booster_"):
            raise AttributeError(f"this {type(self).__name__} is not fitted yet: call fit first")
        return np.asarray(self._importances(), dtype=np.float64)

    def save_model(self, fname: str | os.PathLike) -> None:
        """Save ``booster_`` in the booster's native format (loadable without this package).

        A path that cannot be written raises an ``OSError`` naming it and the fix:
        ``IsADirectoryError`` (``fname`` is a folder), ``FileNotFoundError`` (its folder does not
        exist), ``NotADirectoryError`` (a "folder" on the way is a file), ``PermissionError``,
        else ``OSError``; the booster's own exception is its ``__cause__``.
        """
        if not hasattr(self, "booster_"):
            raise AttributeError(f"this {type(self).__name__} is not fitted yet: call fit first")
        save_booster(self.booster_, fname, self._booster_name)

    def explainer(self, data: Any = None, **kwargs: Any) -> Any:
        """A ``shap.TreeExplainer`` of the fitted model: ``TreeExplainer(self.booster_, data,
        **kwargs)``.

        ``shap.TreeExplainer(ranker)`` fails with "Model type not yet supported": SHAP
        recognises models by their class paths only (``LGBMRanker``, ``XGBRanker``,
        ``CatBoostRanker``, the boosters' own model objects, ...), not through any protocol a
        ranker could implement. Hand it ``ranker.booster_``, or call this.

        Example::

            explanation = ranker.explainer()(X_test)   # needs ``pip install shap``
            explanation.base_values + explanation.values.sum(axis=1)   # == ranker.predict(X_test)

        Semantics: SHAP explains the raw score that :meth:`predict` returns (``booster_`` holds
        the whole model: under SGLB ``c^T`` is in its leaves, with early stopping it is cut to
        the best round, with ``init_score`` it holds only the new trees), so each row's base
        value plus its SHAP values equals ``predict`` (to float32 rounding for XGBoost). A
        ranking uses only the score differences within a query: compare the SHAP values of
        the documents of one query.

        Args:
          data: background data for ``feature_perturbation="interventional"``, or None (the
            default, ``"tree_path_dependent"``: the trees' own cover). SHAP takes no
            background data for CatBoost models (native ones neither).
          **kwargs: passed to ``shap.TreeExplainer`` (``feature_perturbation``,
            ``model_output``, ``feature_names``, ...). ``feature_names`` defaults to
            ``feature_names_in_`` when the ranker was fitted on a DataFrame.

        Returns:
          The ``shap.TreeExplainer``. Raises ``AttributeError`` before ``fit``, ``ImportError``
          when SHAP is not installed.
        """
        if not hasattr(self, "booster_"):
            raise AttributeError(f"this {type(self).__name__} is not fitted yet: call fit first")
        try:
            import shap
        except ImportError as exc:
            raise ImportError(f"{type(self).__name__}.explainer needs SHAP: pip install shap "
                              "(it is shap.TreeExplainer(ranker.booster_))") from exc
        names = getattr(self, "feature_names_in_", None)
        if names is not None and "feature_names" not in kwargs:
            kwargs["feature_names"] = [str(name) for name in names]
        return shap.TreeExplainer(self.booster_, data, **kwargs)

    # -- pickling: the booster travels as its own pickle with a checksum --------------------
    def __getstate__(self) -> dict:
        return packed_state(super().__getstate__(), self._booster_name)

    def __setstate__(self, state: dict) -> None:
        super().__setstate__(unpacked_state(state, type(self).__name__))

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = True
        tags.target_tags.required = True
        return tags

    # -- booster hooks -----------------------------------------------------------------------
    def _check_fit_inputs(self, X, eval_set) -> None:
        """Refuse, before fitting, the data this booster's ranker cannot take (as given to
        :meth:`fit`: ``X`` and ``eval_set`` unconverted). Every form is accepted by default."""

    def _categorical_columns(self, X, params: dict) -> frozenset:
        """Positions of the columns of ``X`` the booster reads as categories (their values are
        left to it): by default the pandas category columns (LightGBM splits on them)."""
        return category_columns(X)

    def _fit_booster(self, X, train: GroupedData, evals: list,
                     settings: FitSettings) -> None:  # pragma: no cover - abstract
        """Train on ``X`` with ``train`` (its labels, queries, weights and initial scores);
        ``evals`` are ``(X, GroupedData)`` pairs. One builder per booster puts a GroupedData
        into the booster's data container."""
        raise NotImplementedError

    def _check_init_model(self, init_model, n_features: int):
        """The model to continue from (``None`` = a new one). Booster subclasses accept their
        own forms; by default continued training is refused."""
        if init_model is not None:
            raise TypeError(f"{type(self).__name__} does not continue training: init_model "
                            "must be None")
        return None

    def _check_callbacks(self, callbacks) -> list:
        """The user's callbacks as a list (``None`` = none); booster subclasses check their
        types."""
        if callbacks is None:
            return []
        if not isinstance(callbacks, (list, tuple)):
            raise TypeError(f"callbacks must be a list of {self._booster_name} callbacks, got "
                            f"{type(callbacks).__name__}")
        return list(callbacks)

    def _valid_booster_params(self) -> Iterable[str]:  # pragma: no cover - abstract
        """Every booster parameter name the booster (and the ranker) accepts."""
        raise NotImplementedError

    def _predict_raw(self, X):  # pragma: no cover - abstract
        raise NotImplementedError

    def _importances(self):  # pragma: no cover - abstract
        raise NotImplementedError
