"""XGBoost adapter: any objective of this package as an XGBoost custom objective.

With ``xgb.train`` (the DMatrix needs ``qid=``, sorted, or ``group=`` sizes)::

    dtrain = xgb.DMatrix(X, y, qid=qid)
    params = {"base_score": 0.0, "disable_default_eval_metric": 1, "learning_rate": 0.3}
    booster = xgb.train(params, dtrain, 100, obj=XGBObjective(StochasticRank(top=5)))

``base_score=0``: with a custom objective XGBoost otherwise starts every margin at 0.5 (harmless
for a ranking gradient, but it becomes part of the model). ``disable_default_eval_metric``: the
learner thinks it is ``reg:squarederror`` while it trains and would report (and early-stop on)
``rmse``. Evaluate with :class:`XGBMetric` (``custom_metric=XGBMetric("NDCG", 5), maximize=True``).
The callback then names the objective ``rank:pairwise`` (same link and predictions) for servers.

``XGBRanker`` refuses callable objectives, so :class:`StochasticXGBRanker` is the
scikit-learn ranker of this package (the same shape as the LightGBM and CatBoost rankers)::

    ranker = StochasticXGBRanker(StochasticRank(top=5), n_estimators=200, max_depth=6,
                                 eval_metric="NDCG@5", early_stopping_rounds=20)
    ranker.fit(X, y, qid=qid, eval_set=[(Xv, yv, qid_v)]).predict(Xt)

SGLB (see :mod:`stochrank_objectives.sglb`) runs through the adapter's callback: it sets tree
t's learning rate to ``lr * c^-(t+1)`` in ``before_iteration`` (XGBoost's own
``LearningRateScheduler`` is one tree late), and after training multiplies every leaf value and
``base_score`` of the JSON model by ``c^T`` and reloads it, so that the returned (and saved)
model predicts ``F_T`` without this package::

    obj = XGBObjective(StochasticRank(top=5), sglb=SGLB(0.1, 0.01, 1e4))
    booster = xgb.train(params, dtrain, 100, obj=obj, callbacks=[obj.callback()])

With early stopping the SGLB model is first cut to ``best_iteration + 1`` trees (an SGLB model is
not a prefix of a longer one). XGBoost's margins are float32, so ``G = F c^-t`` limits the number
of trees (:meth:`SGLB.max_iterations`); the callback raises a clear error beyond it.

Iterations. The objective's ``iteration`` (which keys its noise) is the index of the tree being
added to the model: read from XGBoost's loop by the callback (which also resets it at the start of
each run) and, when ``xgb_model`` holds ``T0`` trees, continued from ``T0``; without the callback
the adapter counts itself from 0 -- then use a fresh adapter per ``xgb.train`` call to reproduce
a run. ``base_margin`` is part of the margins the objective sees; under SGLB it is the starting
point ``F_0`` and is shrunk as well: the SGLB model is ``F_T = c^T (base_margin + G_T)``, and
the finalised booster holds ``c^T G_T`` only (its ``stochrank_sglb_final_scale`` attribute is
``c^T``).

Continued training (``xgb.train(..., xgb_model=...)``): with the callback the iteration continues
from the model's trees. Under SGLB the booster must hold ``G_T0 = F_T0 / c^T0`` while a finalised
model (or any other) predicts ``F_T0``: pass ``xgb_model=obj.continue_from(model)``, a copy with
its leaves and base score scaled by ``c^-T0``; the new trees follow, and the finalisation scales all
``T0 + n`` trees by ``c^(T0 + n)``. A model of ``T0`` trees continued by ``n`` is then the model of
``T0 + n`` trees of one run with the same settings, to float32 rounding. Without SGLB
``continue_from`` only drops the model's early-stopping and SGLB attributes.

Weights. DMatrix weights are query weights, one per query group (XGBoost's ranking
convention): the loss is the weighted sum over queries, :class:`XGBMetric` the weighted mean.
XGBoost itself refuses one weight per row on a matrix with groups, in ``xgb.train`` before the
objective runs ("Size of weight must equal to the number of query groups"). From per-row
weights ``w`` (equal within each query) build the matrix with one per query::

    from stochrank_objectives.groups import query_offsets_from_qid, query_weights
    dtrain = xgb.DMatrix(X, y, qid=qid, weight=query_weights(w, query_offsets_from_qid(qid)))

(``query_weights`` names the first query whose rows differ), or call ``dtrain.set_group(sizes)``
and ``dtrain.set_weight(per_query)``. :class:`StochasticXGBRanker` takes either form as
``sample_weight`` and does this itself.
"""

from __future__ import annotations

import functools
import json
import os
from typing import TYPE_CHECKING

import numpy as np
import scipy.sparse
import xgboost as xgb

from ..groups import GroupedData, query_weights
from ..kernels import sigint_deferred
from ..sglb import SGLB
from ._common import BoosterObjective, EvalMetric, as_scores, objective_grad_hess
from ._ranker import StochasticRankerBase
from ._ranker_inputs import category_columns
from ._serving import xgboost_as_ranker
from ._xgboost_json import scale_json_model

if TYPE_CHECKING:  # only the type checker needs it
    from ..objectives import Objective

__all__ = ["XGBObjective", "XGBMetric", "StochasticXGBRanker", "DEFAULT_PARAMS"]

#: Parameters every custom ranking objective wants (see the module docstring).
DEFAULT_PARAMS = {"base_score": 0.0, "disable_default_eval_metric": 1}

_FINAL_ATTR = "stochrank_sglb_final_scale"
#: set by XGBObjective.continue_from on a model brought back to G = F / c^T0 (T0 and c)
_CONTINUE_ATTR = "stochrank_sglb_continue"


def _grouped(dmat, n_preds: int, where: str):
    """float64 labels and int64 offsets of a DMatrix, checked against the predictions."""
    labels = np.asarray(dmat.get_label(), dtype=np.float64)
    ptr = dmat.get_uint_info("group_ptr")
    if ptr.size == 0:
        raise ValueError(
            f"the {where} DMatrix has no query groups: ranking objectives need them. Build it "
            "with xgboost.DMatrix(X, y, qid=qid) (rows sorted by qid) or dmatrix.set_group(sizes)")
    offsets = ptr.astype(np.int64)
    if not (labels.shape[0] == offsets[-1] == n_preds):
        raise ValueError(
            f"length mismatch in the {where} data: {n_preds} predictions, {labels.shape[0]} "
            f"labels, query groups covering {offsets[-1]} rows; they must all describe the same "
            "documents")
    return labels, offsets


def _weights(dmat, offsets):
    """The query weights of a DMatrix: one per group. (XGBoost refuses per-row weights on a
    ranking matrix before an objective or metric runs; called by hand with them, the adapter
    still reads per-row weights equal within each group.)"""
    weight = dmat.get_weight()
    return query_weights(weight, offsets, "the DMatrix weight") if weight.size else None


class XGBObjective(BoosterObjective):
    """An XGBoost custom objective ``obj(predt, dtrain)`` wrapping a ``grad_hess`` objective.

    Example::

        obj = XGBObjective(StochasticRank(metric="NDCG", top=10))
        booster = xgb.train(DEFAULT_PARAMS, dtrain, num_boost_round=100, obj=obj)

    ``dtrain``'s weights, if any, are query weights, one per group: XGBoost refuses one per row
    on a matrix with groups ("Size of weight must equal to the number of query groups") before
    this objective runs; pass ``weight=query_weights(w, query_offsets_from_qid(qid))``
    (:mod:`stochrank_objectives.groups`) to the DMatrix instead (see the module docstring).

    Args:
      objective: an object with ``grad_hess(scores, labels, query_offsets, iteration)``.
      sglb: optional :class:`~stochrank_objectives.sglb.SGLB` schedule; then pass
        ``callbacks=[adapter.callback()]`` to ``xgb.train``.
    """

    callback_hint = "xgb.train(..., obj=obj, callbacks=[obj.callback()])"

    def __call__(self, predt: np.ndarray, dtrain: xgb.DMatrix) -> tuple[np.ndarray, np.ndarray]:
        predt = as_scores(predt)
        if not isinstance(dtrain, xgb.DMatrix):
            raise TypeError(f"expected (predt, xgboost.DMatrix), got a {type(dtrain).__name__}")
        labels, offsets = _grouped(dtrain, predt.shape[0], "training")
        return objective_grad_hess(self, predt, labels, offsets, _weights(dtrain, offsets))

    def callback(self) -> xgb.callback.TrainingCallback:
        """A ``TrainingCallback``: iteration, SGLB learning rate and finalisation, ranker name."""
        return _XGBCallback(self)

    def _continue_key(self, n_trees: int) -> str:
        return f"{n_trees} trees, c={self.sglb.shrink!r}"

    def continue_from(self, booster: xgb.Booster) -> xgb.Booster:
        """A copy of ``booster`` to continue training from, with this adapter and its callback.

        Example::

            more = xgb.train(params, dtrain, 50, obj=obj, xgb_model=obj.continue_from(booster),
                             callbacks=[obj.callback()])

        Under SGLB the booster holds ``G_t = F_t / c^t`` while it trains, and ``booster``
        (finalised, or any model) predicts ``F_T0`` after ``T0`` trees: the copy has every leaf
        and its base score multiplied by ``c^-T0``, so the iteration continues at ``T0`` (tree
        ``t``'s learning rate ``lr c^-(t+1)``, the objective at ``c^(t+1) G_t``) and the
        finalisation scales all the trees by ``c^(T0 + n)``. The callback refuses an
        ``xgb_model`` with trees that was not prepared so for this schedule. Without SGLB the
        copy only loses the early-stopping and SGLB attributes (``best_iteration``,
        ``best_score``), which belong to the run that made ``booster``.

        Args:
          booster: the model to continue (not changed).

        Returns:
          a new ``xgboost.Booster``.
        """
        if not isinstance(booster, xgb.Booster):
            raise TypeError(f"expected an xgboost.Booster, got {type(booster).__name__}")
        new = booster.copy()
        new.set_attr(**{name: None for name in ("best_iteration", "best_score", _FINAL_ATTR,
                                                _CONTINUE_ATTR)})
        if self.sglb is None:
            return new
        n_trees = new.num_boosted_rounds()
        model = json.loads(bytes(new.save_raw("json")))
        scale_json_model(model, 1.0 / self.sglb.final_scale(n_trees))
        new = xgb.Booster(model_file=bytearray(json.dumps(model).encode()))
        new.set_attr(**{_CONTINUE_ATTR: self._continue_key(n_trees)})
        return new

    def finalize(self, booster: xgb.Booster) -> xgb.Booster:
        """A new Booster predicting the SGLB model ``F_T = c^T G_T`` (the callback calls this).

        Cuts the model to ``best_iteration + 1`` trees if early stopping recorded a best
        iteration, then multiplies every leaf value and ``base_score`` by ``c^T`` in the JSON
        model and reloads it. Without SGLB the booster is returned unchanged.
        """
        if not isinstance(booster, xgb.Booster):
            raise TypeError(f"expected an xgboost.Booster, got {type(booster).__name__}")
        if self.sglb is None:
            return booster
        if booster.attr(_FINAL_ATTR) is not None:
            raise RuntimeError("this booster has already been finalised "
                               "(c^T is baked into its leaves)")
        best = booster.attr("best_iteration")
        best_score = booster.attr("best_score")
        if best is not None and int(best) + 1 < booster.num_boosted_rounds():
            booster = booster[: int(best) + 1]
        n_trees = booster.num_boosted_rounds()
        factor = self.sglb.final_scale(n_trees)
        model = json.loads(bytes(booster.save_raw("json")))
        scale_json_model(model, factor)
        new = xgb.Booster(model_file=bytearray(json.dumps(model).encode()))
        attrs = {_FINAL_ATTR: repr(factor)}
        if best is not None:
            attrs["best_iteration"] = str(n_trees - 1)
            if best_score is not None:
                attrs["best_score"] = best_score
        new.set_attr(**attrs)
        return new


class _XGBCallback(xgb.callback.TrainingCallback):
    def __init__(self, adapter: XGBObjective):
        super().__init__()
        self._adapter = adapter
        self._start = 0  # the trees of xgb_model: the iteration continues from them

    def before_training(self, model):
        self._adapter.reset_iteration()
        self._start = model.num_boosted_rounds() if isinstance(model, xgb.Booster) else 0
        if self._adapter.sglb is not None and self._start:
            if model.attr(_CONTINUE_ATTR) != self._adapter._continue_key(self._start):
                raise ValueError(
                    f"SGLB cannot continue training from this xgb_model as it is: its "
                    f"{self._start} trees predict F, while the booster must hold G = F / c^t "
                    "during training (or the model was prepared for another SGLB schedule): "
                    "pass xgb_model=obj.continue_from(model)")
            model.set_attr(**{_CONTINUE_ATTR: None})
        return model

    def before_iteration(self, model, epoch, evals_log) -> bool:
        sglb = self._adapter.sglb
        t = self._start + epoch  # the index of the tree added now, in the whole model
        if sglb is not None:
            if not isinstance(model, xgb.Booster):
                raise TypeError("SGLB is supported in xgb.train only (not xgb.cv)")
            sglb.check_iterations(t + 1, np.float32)
            if epoch == 0:
                name = json.loads(model.save_config())["learner"]["gradient_booster"]["name"]
                if name != "gbtree":
                    raise ValueError(f"SGLB needs booster='gbtree', got {name!r}")
            if model.num_boosted_rounds() != t:
                raise ValueError(f"SGLB expected {t} trees before tree {t}, the booster has "
                                 f"{model.num_boosted_rounds()}: the callback must see every "
                                 "round of one xgb.train call")
            model.set_param("learning_rate", str(sglb.learning_rate_at(t)))
        self._adapter.sync_iteration(t)
        return False

    def after_training(self, model):
        self._adapter.sync_iteration(None)
        if self._adapter.sglb is not None:
            model = self._adapter.finalize(model)
        return xgboost_as_ranker(model) if isinstance(model, xgb.Booster) else model  # not cv


class XGBMetric(EvalMetric):
    """A ranking metric of :mod:`stochrank_objectives.metrics` as an XGBoost ``custom_metric``.

    ``metric(predt, dmatrix) -> (name, value)``; pass ``maximize=True`` to ``xgb.train``. With
    DMatrix weights (one per query group) the value is the weighted mean over queries.

    Example::

        xgb.train(params, dtrain, evals=[(dvalid, "valid")], maximize=True,
                  custom_metric=XGBMetric.from_string("NDCG@5"))

    Args:
      see :class:`~stochrank_objectives.eval_metric.EvalMetric` (metric name, cutoff,
      metric options).

    Returns:
      when called, ``(name, value)`` (higher is better).
    """

    def __call__(self, predt: np.ndarray, dmat: xgb.DMatrix) -> tuple[str, float]:
        predt = as_scores(predt)
        labels, offsets = _grouped(dmat, predt.shape[0], "evaluation")
        return self.name, self.value(predt, labels, offsets, _weights(dmat, offsets))


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
