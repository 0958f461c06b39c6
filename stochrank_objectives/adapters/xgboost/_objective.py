"""``XGBObjective``: any objective of this package as an XGBoost custom objective, its callback
(iteration, SGLB learning rate and finalisation, continued training) and the parameters every
custom ranking objective wants."""

from __future__ import annotations

import json

import numpy as np
import xgboost as xgb

from ...groups import GroupedData, query_weights
from ...sglb import SGLB
from .._common import BoosterObjective, as_scores, objective_grad_hess
from .._handoff import RuntimeHandOff, handed_off
from .._serving import xgboost_as_ranker
from ._json import scale_json_model

__all__ = ["XGBObjective", "DEFAULT_PARAMS", "dmatrix_groups", "dmatrix_weights",
           "is_sglb_callback", "XGBOOST_HANDOFF"]

#: Parameters every custom ranking objective wants (see the module docstring).
DEFAULT_PARAMS = {"base_score": 0.0, "disable_default_eval_metric": 1}

#: XGBoost's OpenMP runtime (its wheel's own libgomp) and the kernels' meet at every objective
#: and metric call (see :mod:`~stochrank_objectives.adapters._handoff`)
XGBOOST_HANDOFF = RuntimeHandOff(lambda: getattr(xgb.core, "_LIB", None))

_FINAL_ATTR = "stochrank_sglb_final_scale"
#: set by XGBObjective.continue_from on a model brought back to G = F / c^T0 (T0 and c)
_CONTINUE_ATTR = "stochrank_sglb_continue"


def dmatrix_groups(dmat, n_preds: int, where: str):
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


def dmatrix_weights(dmat, offsets):
    """The query weights of a DMatrix: one per group. (XGBoost refuses per-row weights on a
    ranking matrix before an objective or metric runs; called by hand with them, the adapter
    still reads per-row weights equal within each group.)"""
    weight = dmat.get_weight()
    return query_weights(weight, offsets, "the DMatrix weight") if weight.size else None


def same_fields(dmat, weights: bool):
    """``verify(data)``: whether the DMatrix's labels, groups and (with ``weights``) weights
    are still ``data``'s."""
    def verify(data) -> bool:
        if not (np.array_equal(dmat.get_label(), data.labels)
                and np.array_equal(dmat.get_uint_info("group_ptr"), data.query_offsets)):
            return False
        if not weights:
            return True
        weight = dmat.get_weight()
        return (data.weights is None if weight.size == 0
                else data.weights is not None and np.array_equal(weight, data.weights))
    return verify


def is_sglb_callback(callback) -> bool:
    """Whether ``callback`` is :meth:`XGBObjective.callback` of an adapter with an SGLB
    schedule (it sets every tree's learning rate and finalises the booster)."""
    return isinstance(callback, _XGBCallback) and callback.sglb is not None


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
        data = self.training_data(dtrain, predt.shape[0])
        with handed_off(XGBOOST_HANDOFF):
            return objective_grad_hess(self, predt, data)

    def training_data(self, dtrain: xgb.DMatrix, n_preds: int) -> GroupedData:
        """The training's :class:`~stochrank_objectives.groups.GroupedData` of ``dtrain``,
        validated on the first call of a training and kept.

        With the callback (:meth:`callback`, which the rankers always attach) nothing is read
        back from the DMatrix after the first round: the callback forgets the data when a
        training starts. Without it, the DMatrix is read every round (XGBoost copies its fields
        out on every read) and compared with the kept data, which is rebuilt only if they
        differ (``dtrain.set_label`` between two trainings)."""
        def build():
            labels, offsets = dmatrix_groups(dtrain, n_preds, "training")
            return self.grouped(labels, offsets, self._query_weights(dtrain, labels, offsets))

        verify = (None if self._iterations.synced is not None
                  else same_fields(dtrain, self._weights_in_dmatrix))
        data = self.training.get(dtrain, (), build, verify)
        if data.n_docs != n_preds:
            raise ValueError(f"length mismatch in the training data: {n_preds} predictions, "
                             f"{data.n_docs} labels")
        return data

    #: whether the query weights are the DMatrix's (a Dask worker's adapter takes its own)
    _weights_in_dmatrix = True

    def _query_weights(self, dtrain, labels, offsets):
        """The query weights of the training (one per query), or None: the DMatrix's."""
        return dmatrix_weights(dtrain, offsets)

    def callback(self) -> xgb.callback.TrainingCallback:
        """A ``TrainingCallback``: iteration, SGLB learning rate and finalisation, ranker name."""
        return _XGBCallback(self)

    def _continue_key(self, n_trees: int) -> str:
        shrink = None if self.sglb is None else self.sglb.shrink
        return f"{n_trees} trees, c={shrink!r}"

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

    @property
    def sglb(self) -> SGLB | None:
        """The adapter's SGLB schedule, or None."""
        return self._adapter.sglb

    def before_training(self, model):
        self._adapter.reset_iteration()
        self._adapter.training.clear()  # a new training: its data is read on the first round
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
