"""XGBoost front end: a custom objective for ``xgboost.dask.train``, and :func:`train_xgboost`.

Imports XGBoost (through the single-machine adapter) and not LightGBM.

Example::

    dtrain = xgboost_dmatrix(client, df, "qid", "label", layout=layout)
    out = train_xgboost(client, {"max_depth": 6}, dtrain, 100, StochasticRank(top=5),
                        sglb=SGLB(0.1, 0.01, 1e4), layout=layout)
    booster = out["booster"]           # finalised (F_T) on the workers

``DaskXGBObjective`` is the raw form: ``xgboost.dask.train(client, {**DEFAULT_PARAMS, ...},
dtrain, n, obj=obj, callbacks=[obj.callback()])``. A run is bit-reproducible when the placement
is fixed too, as it is when one ``DaskDMatrix`` is reused.
"""

from __future__ import annotations

import numpy as np
import xgboost as xgb

from ...sglb import SGLB
from ..xgboost import DEFAULT_PARAMS, XGBObjective
from ._frontend import DaskFrontEnd
from .layout import QueryLayout

__all__ = ["DaskXGBObjective", "train_xgboost"]


class DaskXGBObjective(DaskFrontEnd):
    """Custom objective for ``xgboost.dask.train(..., obj=obj, callbacks=[obj.callback()])``.

    The callback is required; with SGLB it returns the finalised booster (``F_T``) from the
    workers. :func:`train_xgboost` does all of this. Use ``DEFAULT_PARAMS`` (``base_score=0``).

    Example::

        obj = DaskXGBObjective(StochasticRank(top=5), layout=layout)
        out = xgboost.dask.train(client, {**DEFAULT_PARAMS, "max_depth": 6}, dtrain, 100,
                                 obj=obj, callbacks=[obj.callback()])

    Args:
      objective: one of this package's objectives; each worker calls a copy per partition.
      sglb: an :class:`~stochrank_objectives.sglb.SGLB` schedule, or None; the callback sets
        XGBoost's per-tree learning rate and finalises the booster on the workers.
      layout: :func:`~.layout.query_layout` of the trained frame (keys the noise per
        partition), or None (keys it per worker shard).
    """

    _adapter_type = XGBObjective
    _name = "xgboost.dask.train(..., obj=obj, callbacks=[obj.callback()])"

    def __call__(self, predt, dtrain):
        return self._state()[0](predt, dtrain)

    def callback(self) -> xgb.callback.TrainingCallback:
        """The training callback (required): starts the workers' adapters, finalises SGLB."""
        return _DaskXGBCallback(self)


class _DaskXGBCallback(xgb.callback.TrainingCallback):
    """Starts this worker thread's adapter before training and drops it after."""

    def __init__(self, front: DaskXGBObjective):
        super().__init__()
        self.front = front

    def before_training(self, model):
        return self.front._start()[1].before_training(model)

    def before_iteration(self, model, epoch, evals_log) -> bool:
        return self.front._state()[1].before_iteration(model, epoch, evals_log)

    def after_training(self, model):
        state = self.front._state()
        try:
            return state[1].after_training(model)
        finally:
            self.front._stop()


def train_xgboost(client, params: dict, dtrain, num_boost_round: int, objective, *,
                  sglb: SGLB | None = None, layout: QueryLayout | None = None, callbacks=None,
                  **kwargs) -> dict:
    """``xgboost.dask.train`` with one of this package's objectives.

    Example::

        out = train_xgboost(client, {"max_depth": 6}, dtrain, 100, StochasticRank(top=5),
                            sglb=SGLB(0.1, 0.01, 1e4), layout=layout)

    Args:
      client: the ``distributed.Client``.
      params: XGBoost parameters, merged over ``DEFAULT_PARAMS``; with ``sglb`` the learning
        rate is ``sglb.learning_rate``. No ``objective``/``obj``.
      dtrain: the ``DaskDMatrix`` (:func:`~.inputs.xgboost_dmatrix`).
      num_boost_round: number of trees.
      objective: one of this package's objectives.
      sglb: an :class:`~stochrank_objectives.sglb.SGLB` schedule, or None.
      layout: :func:`~.layout.query_layout` of the trained frame, or None.
      callbacks: further XGBoost callbacks, run after the objective's.
      kwargs: passed to ``xgboost.dask.train`` (``evals``, ``custom_metric``, ...).

    Returns:
      ``xgboost.dask.train``'s dict (``booster``, ``history``); with SGLB the booster is
      already finalised.
    """
    from xgboost import dask as dxgb

    for bad in ("objective", "obj"):
        if bad in params:
            raise ValueError(f"{bad!r} cannot be an XGBoost parameter here; pass objective")
    params = {**DEFAULT_PARAMS, **params}
    if sglb is not None:
        sglb.check_iterations(int(num_boost_round), np.float32)
        params["learning_rate"] = sglb.learning_rate
    obj = DaskXGBObjective(objective, sglb=sglb, layout=layout)
    return dxgb.train(client, params, dtrain, num_boost_round, obj=obj,
                      callbacks=[obj.callback(), *(callbacks or [])], **kwargs)
