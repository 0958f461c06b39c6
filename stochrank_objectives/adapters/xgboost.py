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

Iterations. The objective's ``iteration`` (which keys its noise) is the tree index in the current
run: read from XGBoost's loop by the callback (which also resets it at the start of each run), or
counted by the adapter itself without the callback -- then use a fresh adapter per
``xgb.train`` call to reproduce a run. ``base_margin`` is part of the margins the objective sees;
under SGLB it is the starting point ``F_0`` and is shrunk as well.

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

    def before_training(self, model):
        self._adapter.reset_iteration()
        return model

    def before_iteration(self, model, epoch, evals_log) -> bool:
        sglb = self._adapter.sglb
        if sglb is not None:
            if not isinstance(model, xgb.Booster):
                raise TypeError("SGLB is supported in xgb.train only (not xgb.cv)")
            sglb.check_iterations(epoch + 1, np.float32)
            if epoch == 0:
                name = json.loads(model.save_config())["learner"]["gradient_booster"]["name"]
                if name != "gbtree":
                    raise ValueError(f"SGLB needs booster='gbtree', got {name!r}")
            if model.num_boosted_rounds() != epoch:
                raise ValueError("SGLB cannot continue training from xgb_model: the existing "
                                 "trees are not in the shrunk parametrisation")
            model.set_param("learning_rate", str(sglb.learning_rate_at(epoch)))
        self._adapter.sync_iteration(epoch)
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
      see :class:`~stochrank_objectives.adapters._common.EvalMetric` (metric name, cutoff,
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
    (``Booster.save_config``) of each kind of booster and tree method on a 4-row matrix."""
    data = xgb.DMatrix(np.arange(8.0).reshape(4, 2), np.arange(4.0))
    names: set = set()
    for params in ({"tree_method": "hist"}, {"tree_method": "approx"}, {"tree_method": "exact"},
                   {"booster": "dart"}, {"booster": "gblinear", "updater": "coord_descent"}):
        booster = xgb.train(dict(params, nthread=1), data, 0)
        _string_keys(json.loads(booster.save_config()), names)
    return frozenset(names)


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
    ``xgb.Booster(model_file=...)`` without this package. XGBoost passes evaluation results
    through ``%f`` text, so ``evals_result_`` values are rounded to 6 decimals.
    ``feature_importances_`` is ``XGBRanker``'s default, the normalised ``"gain"``.

    ``best_iteration_`` is 0-based (the index of the best round; ``best_iteration_ + 1`` trees
    are kept), the same convention as XGBoost's own ``Booster.best_iteration``.

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

    _fit_supports = frozenset({"init_score"})

    def _fit_booster(self, X, train, evals, s):
        params = dict(DEFAULT_PARAMS, learning_rate=s.learning_rate)
        if s.random_state is not None:
            params["seed"] = s.random_state
        if s.n_jobs is not None:
            params["nthread"] = s.n_jobs
        params.update(s.params)
        self._enable_categorical = bool(params.pop("enable_categorical", False))
        n_rounds = s.n_estimators
        if s.sglb is not None:
            s.sglb.check_iterations(n_rounds, np.float32)
        adapter = XGBObjective(s.objective, sglb=s.sglb)
        m = s.eval_metric
        metric = XGBMetric(m.metric, m.k, ties=m.ties, name=m.name, **m.options)
        names = None if getattr(self, "feature_names_in_", None) is None else [
            str(name) for name in self.feature_names_in_]
        # a Ctrl-C inside XGBoost's data callback (QuantileDMatrix) can corrupt its heap: it is
        # held until the matrices are built, then raised as KeyboardInterrupt
        with sigint_deferred():
            dtrain, dvalid = _training_matrices(X, train, evals, params, names,
                                                self._enable_categorical)
        dvalid = [(dmat, f"validation_{i}") for i, dmat in enumerate(dvalid)]
        history = {}
        booster = xgb.train(params, dtrain, n_rounds, evals=dvalid, obj=adapter,
                            custom_metric=metric if dvalid else None, maximize=True,
                            early_stopping_rounds=s.early_stopping_rounds,
                            evals_result=history, verbose_eval=s.verbose or False,
                            callbacks=[adapter.callback()])
        best = booster.attr("best_iteration")
        if s.early_stopping_rounds is not None and best is not None:
            self.best_iteration_ = int(best)
            if int(best) + 1 < booster.num_boosted_rounds():
                # keep exactly the selected trees, so that a saved model predicts the same
                score = booster.attr("best_score")
                booster = xgboost_as_ranker(booster[: int(best) + 1])
                booster.set_attr(best_iteration=best, best_score=score)
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
