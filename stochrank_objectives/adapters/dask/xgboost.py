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

Query weights. ``xgboost.dask.DaskDMatrix`` refuses ``weight=`` with ``qid=`` ("per-group
weight is not implemented", xgboost 3.2), so the weights go to this package's objective
instead: ``xgboost_dmatrix(..., weight="w")`` checks the column on the client and returns
``(dtrain, weights)``, a :class:`QueryWeights` (one weight per query of every partition);
``train_xgboost(..., weights=weights)`` ships it to the workers, where each finds the
partitions of its shard by their labels and query sizes (as the noise does, :mod:`.seeding`)
and weighs its queries exactly as ``StochasticXGBRanker.fit(..., sample_weight=w)`` does (only
the histogram bins differ: XGBoost's distributed sketch sees unweighted rows)::

    dtrain, weights = xgboost_dmatrix(client, df, "qid", "label", weight="w", layout=layout)
    out = train_xgboost(client, {"max_depth": 6}, dtrain, 100, StochasticRank(top=5),
                        layout=layout, weights=weights)
"""

from __future__ import annotations

import numpy as np
import xgboost as xgb

from ...sglb import SGLB
from ..xgboost import DEFAULT_PARAMS, XGBObjective
from ._frontend import DaskFrontEnd
from .layout import QueryLayout

__all__ = ["DaskXGBObjective", "QueryWeights", "train_xgboost"]


class QueryWeights:
    """One weight per query of every partition of a frame, for XGBoost's Dask workers.

    Built by :func:`~.inputs.xgboost_dmatrix` (``weight=``), after the client-side checks;
    pass it to :func:`train_xgboost` (``weights=``) or :class:`DaskXGBObjective`. A worker
    cuts its shard into the partitions of ``layout`` (matched by row count, query count and
    the digest of labels and query sizes, in whatever order the worker holds them) and takes
    their weights, so the shard's queries are weighted as on one machine: the loss is
    ``sum_q w_q L_q`` and a weight of 0 removes a query.

    Example::

        weights = QueryWeights(layout, [np.array([1.0, 2.0]), np.array([0.5])])
        weights.shard(labels, query_offsets)   # on a worker: its queries' weights

    Args:
      layout: the :class:`~.layout.QueryLayout` of the trained frame.
      weights: per partition, its query weights (finite, non-negative), one per query.

    Raises ``ValueError`` if the lengths do not match the layout, or if two partitions alike
    in labels and query sizes (the worker cannot tell them apart) have different weights.
    """

    def __init__(self, layout: QueryLayout, weights):
        if not isinstance(layout, QueryLayout):
            raise TypeError(f"layout must be a QueryLayout, got {type(layout).__name__}")
        weights = [np.asarray(w, dtype=np.float64) for w in weights]
        if len(weights) != layout.npartitions or any(
                w.shape != s.shape for w, s in zip(weights, layout.sizes)):
            raise ValueError(
                f"one weight per query of every partition is needed: the layout has "
                f"{[s.size for s in layout.sizes]} queries per partition, the weights "
                f"{[w.size for w in weights]}; build both with xgboost_dmatrix(..., weight=)")
        alike: dict = {}
        for p, (sizes, digest) in enumerate(zip(layout.sizes, layout.digests)):
            first = alike.setdefault((sizes.tobytes(), digest), p)
            if first != p and not np.array_equal(weights[first], weights[p]):
                raise ValueError(
                    f"partitions {first} and {p} of the frame have the same labels and query "
                    "sizes but different weights: a worker finds its partitions by their "
                    "labels and query sizes and could not tell them apart; partition the "
                    "frame differently (repartition_by_query(df, qid, npartitions=k) with "
                    "another k)")
        self.layout = layout
        self.weights = weights

    def __repr__(self) -> str:
        return (f"QueryWeights(npartitions={self.layout.npartitions}, "
                f"queries={sum(w.size for w in self.weights)})")

    def shard(self, labels, query_offsets) -> np.ndarray:
        """The query weights of a worker's shard, in the shard's query order.

        Args:
          labels: the shard's labels (float32 as XGBoost hands them, or float64).
          query_offsets: the shard's query offsets (``0, ..., n_rows``).

        Returns:
          float64, one weight per query. Raises RuntimeError if the shard is not made of whole
          partitions of the weights' frame.
        """
        try:
            segments = self.layout.segments(labels, query_offsets)
        except RuntimeError as exc:
            raise RuntimeError(
                f"{exc}. The query weights belong to another frame: pass train_xgboost the "
                "weights that xgboost_dmatrix(..., weight=) returned with this dtrain") from None
        if not segments:
            return np.zeros(0)
        return np.concatenate([self.weights[key[0]] for key, *_ in segments])


class _ShardXGBObjective(XGBObjective):
    """A worker's adapter: :class:`XGBObjective` with the shard's query weights taken from a
    :class:`QueryWeights` (``query_weights``, set by the front end; None: unweighted)."""

    query_weights: QueryWeights | None = None

    @property
    def _weights_in_dmatrix(self) -> bool:  # type: ignore[override]
        return self.query_weights is None

    def _query_weights(self, dtrain, labels, offsets):
        if self.query_weights is None:
            return super()._query_weights(dtrain, labels, offsets)
        return self.query_weights.shard(labels, offsets)


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
        partition), or None (the layout of ``weights`` if given, else the noise is keyed per
        worker shard).
      weights: the :class:`QueryWeights` that ``xgboost_dmatrix(..., weight=)`` returned with
        the trained ``DaskDMatrix``, or None (unweighted). ``xgboost.dask`` cannot carry them
        itself: a ``dtrain`` built with ``weight=`` trains unweighted without them.
    """

    _adapter_type = _ShardXGBObjective
    _name = "xgboost.dask.train(..., obj=obj, callbacks=[obj.callback()])"

    def __init__(self, objective, sglb: SGLB | None = None, layout: QueryLayout | None = None,
                 weights: QueryWeights | None = None):
        if weights is not None and not isinstance(weights, QueryWeights):
            raise TypeError(
                f"weights must be the QueryWeights that xgboost_dmatrix(..., weight=column) "
                f"returns with its dtrain, or None; got {type(weights).__name__}")
        if layout is None and weights is not None:
            layout = weights.layout   # the noise too is then keyed per partition
        super().__init__(objective, sglb=sglb, layout=layout)
        self.weights = weights

    def _start(self):
        state = super()._start()
        state[0].query_weights = self.weights
        return state

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
                  weights: QueryWeights | None = None, **kwargs) -> dict:
    """``xgboost.dask.train`` with one of this package's objectives.

    Example::

        out = train_xgboost(client, {"max_depth": 6}, dtrain, 100, StochasticRank(top=5),
                            sglb=SGLB(0.1, 0.01, 1e4), layout=layout)
        # query weights: dtrain, weights = xgboost_dmatrix(..., weight="w")
        out = train_xgboost(client, {"max_depth": 6}, dtrain, 100, StochasticRank(top=5),
                            weights=weights)

    Args:
      client: the ``distributed.Client``.
      params: XGBoost parameters, merged over ``DEFAULT_PARAMS``; with ``sglb`` the learning
        rate is ``sglb.learning_rate``. No ``objective``/``obj``.
      dtrain: the ``DaskDMatrix`` (:func:`~.inputs.xgboost_dmatrix`).
      num_boost_round: number of trees.
      objective: one of this package's objectives.
      sglb: an :class:`~stochrank_objectives.sglb.SGLB` schedule, or None.
      layout: :func:`~.layout.query_layout` of the trained frame, or None (the layout of
        ``weights`` if given).
      callbacks: further XGBoost callbacks, run after the objective's.
      weights: the :class:`QueryWeights` returned by ``xgboost_dmatrix(..., weight=column)``
        with ``dtrain``, or None. The loss is ``sum_q w_q L_q`` as on one machine
        (``StochasticXGBRanker.fit(..., sample_weight=w)``); a weight of 0 removes a query.
        Evaluation sets (``evals``) are evaluated unweighted. The histogram bins are
        XGBoost's sketch of the unweighted rows (one machine bins with the weights).
      kwargs: passed to ``xgboost.dask.train`` (``evals``, ``custom_metric``, ...).

    Returns:
      ``xgboost.dask.train``'s dict (``booster``, ``history``); with SGLB the booster is
      already finalised.
    """
    from xgboost import dask as dxgb

    if isinstance(dtrain, tuple):
        raise TypeError("dtrain is a tuple: xgboost_dmatrix(..., weight=column) returns "
                        "(dtrain, weights); pass train_xgboost(client, params, dtrain, ..., "
                        "weights=weights)")
    for bad in ("objective", "obj"):
        if bad in params:
            raise ValueError(f"{bad!r} cannot be an XGBoost parameter here; pass objective")
    params = {**DEFAULT_PARAMS, **params}
    if sglb is not None:
        sglb.check_iterations(int(num_boost_round), np.float32)
        params["learning_rate"] = sglb.learning_rate
    obj = DaskXGBObjective(objective, sglb=sglb, layout=layout, weights=weights)
    return dxgb.train(client, params, dtrain, num_boost_round, obj=obj,
                      callbacks=[obj.callback(), *(callbacks or [])], **kwargs)
