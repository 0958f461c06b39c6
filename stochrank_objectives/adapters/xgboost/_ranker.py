"""``StochasticXGBRanker``: the package's scikit-learn ranker on ``xgb.train``, its one builder of
the training and evaluation matrices, and the booster's parameter names."""

from __future__ import annotations

import functools
import json
import os

import numpy as np
import scipy.sparse
import xgboost as xgb

from ...groups import GroupedData
from ...kernels import sigint_deferred
from ...sglb import SGLB
from .._ranker import StochasticRankerBase
from .._ranker_inputs import category_columns
from ._metric import XGBMetric
from ._objective import DEFAULT_PARAMS, XGBObjective

__all__ = ["StochasticXGBRanker", "xgboost_parameter_names"]


def _string_keys(config, names: set) -> set:
    # the parameters are the string-valued entries of the JSON config, at any depth
    items = config.items() if isinstance(config, dict) else enumerate(config)
    for key, value in items:
        if isinstance(value, str) and isinstance(key, str):
            names.add(key)
        elif isinstance(value, (dict, list)):
            _string_keys(value, names)
    return names


@functools.lru_cache(maxsize=1)
def xgboost_parameter_names() -> frozenset:
    """Every training parameter name XGBoost knows, read from the JSON configuration
    (``Booster.save_config``) of each kind of booster and tree method on a 4-row matrix.

    The boosters are built, not trained (the same configuration as ``xgb.train(params, data,
    0)``), so that loggers which patch ``xgb.train`` (MLflow's autolog) see no model from it.
    """
    data = xgb.DMatrix(np.arange(8.0).reshape(4, 2), np.arange(4.0))
    names: set = set()
    for params in ({"tree_method": "hist"}, {"tree_method": "approx"}, {"tree_method": "exact"},
                   {"booster": "dart"}, {"booster": "gblinear", "updater": "coord_descent"}):
        booster = xgb.Booster(dict(params, nthread=1), [data])
        _string_keys(json.loads(booster.save_config()), names)
    return frozenset(names)


class _EarlyStopping(xgb.callback.EarlyStopping):
    """XGBoost's early stopping (``save_best``: ``after_training`` cuts the model to the best
    round) that stops at the next ``before_iteration`` instead of in ``after_iteration``: the
    callbacks after it (the user's, a logger's) still see the round that decided the stop. No
    tree is added in between: XGBoost asks ``before_iteration`` before it trains a tree."""

    _stop = False

    def before_iteration(self, model, epoch, evals_log) -> bool:
        return self._stop

    def after_iteration(self, model, epoch, evals_log) -> bool:
        self._stop = super().after_iteration(model, epoch, evals_log)
        return False


def _check_init_columns(trained: list, names) -> None:
    """Refuse continuing a model trained on named columns with other columns (``names``: those
    of ``X``, None for an array); XGBoost would refuse them with a longer message."""
    if not trained or names == trained:
        return
    if names is None:
        raise ValueError(f"init_model was trained on named columns ({trained[0]!r}, ...), X "
                         "has no column names: fit on a DataFrame with the same columns")
    i = next(i for i, (a, b) in enumerate(zip(trained, names)) if a != b)
    raise ValueError(f"init_model was trained on other columns: column {i} is {trained[i]!r} "
                     f"there, {names[i]!r} in X; continue training on the same columns")


def _qid(offsets) -> np.ndarray:
    return np.repeat(np.arange(offsets.size - 1, dtype=np.int64), np.diff(offsets))


def _uses_histograms(params: dict) -> bool:
    """Whether the booster trains on quantised histograms only (gbtree/dart with ``hist``,
    XGBoost's default tree method), so a ``QuantileDMatrix`` can replace the ``DMatrix``."""
    return (params.get("booster", "gbtree") in ("gbtree", "dart")
            and params.get("tree_method", "hist") in ("hist", "auto"))


_PREDICT_BLOCK_ROWS = 1 << 16  #: rows of a sparse X densified at a time by predict


def _dense(X):
    """A scipy sparse ``X`` as a dense float32 array (XGBoost's precision: no value changes),
    so that its implicit entries are 0.0 as in LightGBM, CatBoost and scikit-learn; XGBoost
    reads them as missing (each split's default direction). Anything else as given."""
    return X.astype(np.float32).toarray() if scipy.sparse.issparse(X) else X


def _training_matrices(X, train: GroupedData, evals, params, names, enable_categorical=False):
    """The training and evaluation matrices of ``StochasticXGBRanker.fit``: one builder puts
    what each :class:`~stochrank_objectives.groups.GroupedData` carries into its matrix --
    labels, query ids, query weights (one per group, XGBoost's ranking convention) and initial
    scores (``base_margin``).

    With histograms (the default), ``QuantileDMatrix``: the features are quantised straight
    into bins, as ``XGBRanker`` does. A ``DMatrix`` would keep a copy of them in XGBoost's own
    format for the whole fit: on 1M documents x 136 float32 features (0.5 GiB) it added 1.5 GiB
    to the peak memory, against 0.47 GiB (``benchmarks.scale``). Sparse: see :func:`_dense`.
    """
    common = {"feature_names": names, "enable_categorical": enable_categorical}
    if _uses_histograms(params):
        common.update({key: params[key] for key in ("max_bin", "nthread") if key in params})
    matrix = xgb.QuantileDMatrix if _uses_histograms(params) else xgb.DMatrix

    def build(X, data: GroupedData, **options):
        return matrix(_dense(X), data.labels, qid=_qid(data.query_offsets),
                      weight=data.weights, base_margin=data.init_scores, **options, **common)

    dtrain = build(X, train)
    ref = {"ref": dtrain} if matrix is xgb.QuantileDMatrix else {}
    return dtrain, [build(Xi, data, **ref) for Xi, data in evals]


class StochasticXGBRanker(StochasticRankerBase):
    """An XGBoost ranker trained with one of this package's objectives (``xgb.train`` inside).

    ``XGBRanker`` refuses callable objectives; this is the package's scikit-learn ranker.

    Example::

        ranker = StochasticXGBRanker(StochasticRank(metric="NDCG", top=5), max_depth=6)
        ranker.fit(X, y, qid=qid).predict(X_test)

    Args: see :class:`~stochrank_objectives.adapters._ranker.StochasticRankerBase`;
    ``**booster_params`` are XGBoost parameters (``max_depth``, ``min_child_weight``,
    ``reg_lambda``, ``subsample``, ``tree_method``, ...). ``base_score`` defaults to 0 and
    XGBoost's default ``rmse`` metric is disabled; ``eta``/``seed``/``nthread`` are refused in
    favour of ``learning_rate``/``random_state``/``n_jobs``.

    ``booster_`` is the ``xgboost.Booster`` (cut to ``best_iteration_ + 1`` trees after early
    stopping; under SGLB ``c^T`` is in its leaves), loadable with
    ``xgb.Booster(model_file=...)`` without this package. It is the very model ``xgb.train``
    returns: the cut and the SGLB finalisation happen inside training (XGBoost's
    ``EarlyStopping(save_best=True)``, then the adapter's callback), so loggers that patch
    ``xgb.train`` (``mlflow.xgboost.autolog()``) record the ranker's model. XGBoost passes
    evaluation results through ``%f`` text, so ``evals_result_`` values are rounded to 6
    decimals. ``feature_importances_`` is ``XGBRanker``'s default, the normalised ``"gain"``.

    ``best_iteration_`` is 0-based (the index of the best round; ``best_iteration_ + 1`` trees
    are kept), the same convention as XGBoost's own ``Booster.best_iteration``; after
    ``init_model`` it counts the init model's trees too.

    ``fit`` also takes XGBoost's own names: ``base_margin`` (= ``init_score``),
    ``base_margin_eval_set`` (= ``eval_init_score``) and ``xgb_model`` (= ``init_model``).

    * ``init_score``: XGBoost's ``base_margin`` on the training matrix (``eval_init_score`` on
      the eval matrices): the objective and the eval metric see ``init_score + model``; the
      fitted model holds only its trees and ``predict`` returns their output (add the first
      stage yourself). Under SGLB the initial score is ``F_0`` and is shrunk with the rest:
      the SGLB model is ``c^T init_score + predict(X)``, with ``c^T =
      float(booster_.attr("stochrank_sglb_final_scale"))`` (early stopping selects the same
      round on it: a positive scale does not change a ranking).
    * ``init_model``: a fitted ``StochasticXGBRanker``, an ``xgboost.Booster`` or the path of a
      saved model (not changed); ``xgb.train(xgb_model=...)`` adds ``n_estimators`` new trees to
      its ``T0`` trees, and the objective's iteration (its noise) continues at ``T0``. The
      init model keeps its base score (``base_score=`` is refused with it: XGBoost would
      replace it) and its early-stopping attributes are dropped. Under SGLB the init model is
      ``F_T0`` and the booster is brought back to ``G = F / c^T0`` first
      (:meth:`XGBObjective.continue_from`), so all ``T0 + n`` trees count against the float32
      limit and are scaled by ``c^(T0 + n)``: ``T0`` trees continued by ``n`` give the model
      of ``T0 + n`` trees of one fit, to float32 rounding.
    * ``callbacks``: ``xgboost.callback.TrainingCallback`` objects (e.g. Optuna's
      ``XGBoostPruningCallback(trial, "validation_0-NDCG@5")``, named by the eval set and the
      ranker's metric), run after the ranker's own every round; their ``after_training``
      receives the final model. A callback returning ``True`` stops training (under SGLB the
      kept trees are then finalised).

    ``early_stopping_rounds`` is refused with ``booster="gblinear"`` (XGBoost cannot cut a
    linear model to its best round).

    A scipy sparse ``X`` (fit, eval sets, predict) is densified to float32 first, so that an
    implicit entry is 0.0 as in the other rankers (XGBoost reads it as missing): a dense copy
    of ``4 * n_rows * n_features`` bytes while the training matrix is built (``predict``:
    65,536 rows at a time); for XGBoost's reading use ``xgb.train`` with :class:`XGBObjective`.
    ``enable_categorical=True`` (passed to the matrices of fit, eval sets and predict) trains
    on pandas category columns, with ``max_cat_to_onehot``/``max_cat_threshold`` if wanted.
    """

    _booster_name = "XGBoost"
    _categories_how = ("give the DataFrame column the pandas category dtype and pass "
                       "enable_categorical=True")
    _owned_params = {"disable_default_eval_metric": "the ranker disables XGBoost's default "
                     "metric itself; use eval_metric="}

    def _valid_booster_params(self):
        return xgboost_parameter_names() | {"enable_categorical"}  # a matrix option

    def _categorical_columns(self, X, params):
        return category_columns(X) if params.get("enable_categorical") else frozenset()

    _fit_supports = frozenset({"init_score", "callbacks"})
    _fit_aliases = {"base_margin": "init_score", "base_margin_eval_set": "eval_init_score",
                    "xgb_model": "init_model"}

    def _check_init_model(self, init_model, n_features):
        """The ``xgboost.Booster`` to continue from: a fitted ``StochasticXGBRanker``'s
        ``booster_``, a Booster, or a saved model file (``str`` or path)."""
        if init_model is None:
            return None
        if isinstance(init_model, StochasticXGBRanker):
            if not hasattr(init_model, "booster_"):
                raise ValueError("init_model is a StochasticXGBRanker that is not fitted yet: "
                                 "fit it first (or pass init_model=None)")
            booster = init_model.booster_
        elif isinstance(init_model, xgb.Booster):
            booster = init_model
        elif isinstance(init_model, (str, os.PathLike)):
            path = os.fspath(init_model)
            if not os.path.isfile(path):
                raise FileNotFoundError(f"init_model={path!r}: no such file; pass the path of "
                                        "a model saved with save_model, an xgboost.Booster or "
                                        "a fitted StochasticXGBRanker")
            try:
                booster = xgb.Booster(model_file=path)
            except xgb.core.XGBoostError as error:
                first = str(error).strip().splitlines()[0] if str(error).strip() else ""
                raise ValueError(f"init_model={path!r} is not an XGBoost model file that "
                                 f"XGBoost can load ({first})") from error
        else:
            raise TypeError("init_model must be a fitted StochasticXGBRanker, an "
                            "xgboost.Booster or the path of a saved XGBoost model, got "
                            f"{type(init_model).__name__}")
        if booster.num_features() != n_features:
            raise ValueError(f"init_model was trained on {booster.num_features()} features, "
                             f"X has {n_features}: continue training on the same features")
        return booster

    def _check_callbacks(self, callbacks):
        callbacks = super()._check_callbacks(callbacks)
        for i, callback in enumerate(callbacks):
            if not isinstance(callback, xgb.callback.TrainingCallback):
                raise TypeError(
                    f"callbacks[{i}] must be an xgboost.callback.TrainingCallback (XGBoost's "
                    "callback objects, e.g. optuna_integration.XGBoostPruningCallback), got "
                    f"{type(callback).__name__}")
        return callbacks

    def _fit_booster(self, X, train, evals, s):
        params = dict(DEFAULT_PARAMS, learning_rate=s.learning_rate)
        if s.random_state is not None:
            params["seed"] = s.random_state
        if s.n_jobs is not None:
            params["nthread"] = s.n_jobs
        params.update(s.params)
        self._enable_categorical = bool(params.pop("enable_categorical", False))
        names = None if getattr(self, "feature_names_in_", None) is None else [
            str(name) for name in self.feature_names_in_]
        init = s.init_model
        if init is not None:
            if "base_score" in s.params:
                raise ValueError(
                    f"base_score={s.params['base_score']!r} with init_model: XGBoost would "
                    "replace the init model's base score with it (changing what its trees "
                    "predict); the continued model keeps the init model's own: drop base_score")
            del params["base_score"]
            _check_init_columns(list(init.feature_names or []), names)
        if s.early_stopping_rounds is not None and params.get("booster") == "gblinear":
            raise ValueError("early_stopping_rounds with booster='gblinear': XGBoost cannot cut "
                             "a linear model to its best round, so the ranker could not keep "
                             "it; use booster='gbtree' or drop early_stopping_rounds")
        n_rounds = s.n_estimators
        start = 0 if init is None else init.num_boosted_rounds()
        if s.sglb is not None:  # every tree counts, the init model's included (G = F / c^t)
            s.sglb.check_iterations(start + n_rounds, np.float32)
        adapter = XGBObjective(s.objective, sglb=s.sglb)
        m = s.eval_metric
        metric = XGBMetric(m.metric, m.k, ties=m.ties, name=m.name, **m.options)
        # a Ctrl-C inside XGBoost's data callback (QuantileDMatrix) can corrupt its heap: it is
        # held until the matrices are built, then raised as KeyboardInterrupt
        with sigint_deferred():
            dtrain, dvalid = _training_matrices(X, train, evals, params, names,
                                                self._enable_categorical)
        dvalid = [(dmat, f"validation_{i}") for i, dmat in enumerate(dvalid)]
        # Everything happens inside xgb.train, so that its return value is booster_ (what a
        # logger patching xgb.train records): early stopping cuts the model to the best round
        # in after_training, then the adapter's callback finalises SGLB on those trees and
        # names the ranking objective; the user's callbacks follow, every round.
        callbacks = []
        if s.early_stopping_rounds is not None:
            callbacks.append(_EarlyStopping(rounds=s.early_stopping_rounds,
                                            metric_name=metric.name,
                                            data_name=dvalid[-1][1], maximize=True,
                                            save_best=True))
        callbacks += [adapter.callback(), *s.callbacks]
        history = {}
        booster = xgb.train(params, dtrain, n_rounds, evals=dvalid, obj=adapter,
                            custom_metric=metric if dvalid else None, maximize=True,
                            evals_result=history, verbose_eval=s.verbose or False,
                            xgb_model=None if init is None else adapter.continue_from(init),
                            callbacks=callbacks)
        best = booster.attr("best_iteration")
        if s.early_stopping_rounds is not None and best is not None:
            self.best_iteration_ = int(best)
        self.evals_result_ = {name: dict(values) for name, values in history.items()}
        self.booster_ = booster

    def get_booster(self) -> xgb.Booster:
        """``booster_`` (as ``XGBRanker.get_booster``)."""
        if not hasattr(self, "booster_"):
            raise AttributeError(f"this {type(self).__name__} is not fitted yet: call fit first")
        return self.booster_

    def _predict_raw(self, X):
        if scipy.sparse.issparse(X):  # implicit zeros are zeros (see _dense), block by block
            X = scipy.sparse.csr_matrix(X)
            blocks = [self._predict_raw(_dense(X[start:start + _PREDICT_BLOCK_ROWS]))
                      for start in range(0, X.shape[0], _PREDICT_BLOCK_ROWS)]
            return np.concatenate(blocks) if blocks else np.zeros(0)
        data = xgb.DMatrix(X, enable_categorical=getattr(self, "_enable_categorical", False))
        # as XGBRanker: column names are checked when X has them (a DataFrame)
        validate = data.feature_names is not None and self.booster_.feature_names is not None
        return self.booster_.predict(data, output_margin=True, validate_features=validate)

    def _importances(self):
        score = self.booster_.get_score(importance_type="gain")
        names = self.booster_.feature_names or [f"f{i}" for i in range(self.n_features_in_)]
        values = np.array([score.get(name, 0.0) for name in names], dtype=np.float64)
        total = values.sum()
        return values / total if total > 0 else values
