"""Booster-independent parts of the adapters: calling the objective (with or without SGLB)
for ``LGBMObjective``/``XGBObjective``. The eval-metric definition behind ``LGBMMetric``/
``XGBMetric`` is :class:`~stochrank_objectives.eval_metric.EvalMetric` (re-exported here)."""

from __future__ import annotations

import dataclasses
import threading
import weakref
from typing import TYPE_CHECKING

import numpy as np

from ..eval_metric import EvalMetric, objective_metric  # noqa: F401 (re-exported)
from ..groups import GroupedData
from ..objectives import grouped_grad_hess
from ..sglb import SGLB

if TYPE_CHECKING:  # only the type checker needs it
    from ..objectives import Objective


def as_scores(preds) -> np.ndarray:
    """The booster's raw predictions as one float64 score per document."""
    preds = np.asarray(preds, dtype=np.float64)
    if preds.ndim == 2 and preds.shape[1] == 1:
        preds = preds[:, 0]
    if preds.ndim != 1:
        raise ValueError(f"ranking objectives need one score per document, got predictions of "
                         f"shape {preds.shape} (multi-class / multi-output is not supported)")
    return preds


def check_objective(objective, name: str = "objective"):
    """An object with ``grad_hess``, returned unchanged (else a ``TypeError`` naming it)."""
    if not callable(getattr(objective, "grad_hess", None)):
        raise TypeError(f"{name} must have a grad_hess(scores, labels, query_offsets, "
                        f"iteration) method, got {type(objective).__name__}")
    return objective


def check_sglb(sglb, name: str = "sglb"):
    """An :class:`~stochrank_objectives.sglb.SGLB` or None, returned unchanged."""
    if sglb is not None and not isinstance(sglb, SGLB):
        raise TypeError(f"{name} must be an SGLB instance or None, got {type(sglb).__name__}")
    return sglb


def check_objective_and_sglb(objective, sglb):
    """The adapters' constructor checks: a ``grad_hess`` objective and an optional SGLB."""
    check_objective(objective)
    check_sglb(sglb)


class _IterationState(threading.local):
    """One training's iteration bookkeeping, separate in every thread (fresh: 0, no callback)."""

    def __init__(self) -> None:
        self.next = 0                      # the adapter's own count (no callback)
        self.synced: int | None = None     # the callback's iteration, when one drives it


class BoosterObjective:
    """What the LightGBM and XGBoost objectives share: the wrapped objective and SGLB schedule,
    the iteration counter that keys the objective's noise, and pickling.

    The iteration is the tree index in the current training run: set by the booster callback
    before every tree (:meth:`sync_iteration`) or, without a callback, counted by the adapter
    itself from 0 (SGLB needs the callback). A pickled adapter keeps only the objective and the
    schedule; it is restored with a fresh counter (and :meth:`_restored` for the subclass's own
    state).

    Threads: the counter and the callback's iteration are kept per thread (LightGBM and XGBoost
    call the objective and the callbacks from the thread that runs the training), so one
    adapter shared by trainings in several threads keys each training's noise by its own
    trees. The wrapped objectives of this package are themselves safe to share.

    Example::

        adapter = XGBObjective(StochasticRank(top=5))   # a subclass
        adapter.iteration(), adapter.iteration()        # 0, 1 (no callback)

    Args:
      objective: an object with ``grad_hess(scores, labels, query_offsets, iteration)``.
      sglb: optional :class:`~stochrank_objectives.sglb.SGLB` schedule.
    """

    #: how to attach the callback, for the error raised when SGLB runs without it
    callback_hint = "pass callbacks=[adapter.callback()] to the training call"

    def __init__(self, objective: Objective, sglb: SGLB | None = None) -> None:
        check_objective_and_sglb(objective, sglb)
        self.objective = objective
        self.sglb = sglb
        self._restored()

    def _restored(self) -> None:
        """Subclass state that is not pickled; the base starts a fresh per-thread counter and
        keeps no training data (:class:`DataCache`)."""
        self._iterations = _IterationState()
        self.training = DataCache()
        self.bound: GroupedData | None = None

    def bind(self, data: GroupedData | None) -> None:
        """Give the adapter the ranker's validated training data (``None``: forget it): the
        data the objective gets every round is then ``data`` with the labels, queries and
        weights as the booster holds them (LightGBM and XGBoost keep float32 labels), so every
        other per-document input of ``data`` (display positions, initial scores, ...) reaches
        the objective without the adapter knowing of it."""
        self.bound = data

    def grouped(self, labels: np.ndarray, offsets: np.ndarray, weights: np.ndarray | None,
                names: dict | None = None) -> GroupedData:
        """The training's GroupedData from the booster container's labels, offsets and
        weights (validated here, once per training), with the other fields of the bound
        ranker data (:meth:`bind`)."""
        bound = self.bound
        if bound is None:
            return GroupedData(labels, offsets, weights=weights, names=names)
        if bound.n_docs != len(labels):
            raise ValueError(f"the booster's training data has {len(labels)} rows, the data "
                             f"bound to the adapter {bound.n_docs}: bind the data of this fit")
        return dataclasses.replace(bound, labels=labels, query_offsets=offsets, weights=weights,
                                   names=names)

    def reset_iteration(self) -> None:
        """Start counting at 0 again, with no callback-set iteration (in the calling thread)."""
        self._iterations.next = 0
        self._iterations.synced = None

    def sync_iteration(self, iteration: int | None) -> None:
        """Set (by the callback, before every tree) or clear (``None``) the current iteration."""
        self._iterations.synced = iteration

    def iteration(self) -> int:
        """The iteration of the gradient being computed: the callback's, else the own count."""
        state = self._iterations
        if state.synced is not None:
            return state.synced
        if self.sglb is not None:
            raise RuntimeError("SGLB needs the adapter's callback, which sets each tree's "
                               f"learning rate: {self.callback_hint}")
        t = state.next
        state.next += 1
        return t

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.objective!r}, sglb={self.sglb!r})"

    def __getstate__(self) -> dict:
        return {"objective": self.objective, "sglb": self.sglb}

    def __setstate__(self, state: dict) -> None:
        self.objective = state["objective"]
        self.sglb = state["sglb"]
        self._restored()


def objective_grad_hess(adapter, preds, data: GroupedData):
    """``(grad, hess)`` of ``adapter.objective`` at the booster's raw scores ``preds``.

    ``adapter`` is a :class:`BoosterObjective` (``objective``, ``sglb``, ``iteration()``);
    ``data`` the training's :class:`~stochrank_objectives.groups.GroupedData`, built and
    validated once per training (:class:`DataCache`): the objective derives its per-query
    constants from it once and nothing about the labels, offsets or weights is checked again.

    Query weights (``data.weights``) go to the objective (:func:`~stochrank_objectives.
    objectives.grouped_grad_hess`): the loss is ``sum_q w_q L_q`` and every normalisation the
    objective computes over the queries of the call counts query ``q`` ``w_q`` times, so weight
    0 removes a query and an integer weight equals copies of it, for every objective. Under
    SGLB the noise is added after weighting, times ``sqrt(w_q h)`` (:meth:`SGLB.grad_hess`).
    LightGBM, XGBoost and CatBoost do not multiply a custom objective's derivatives by their
    data's weights again (measured: LightGBM 4.7 and XGBoost 3.2 train the same model with and
    without Dataset/DMatrix weights from the same derivatives).
    """
    t = adapter.iteration()
    if adapter.sglb is None:
        grad, hess = grouped_grad_hess(adapter.objective, preds, data, t)
    else:
        grad, hess = adapter.sglb.gradient_hessian(adapter.objective, preds, data, t)
    grad, hess = np.asarray(grad), np.asarray(hess)
    if grad.shape != preds.shape or hess.shape != preds.shape:
        raise ValueError(f"objective returned gradients of shape {grad.shape} and hessians "
                         f"of shape {hess.shape} for {preds.shape[0]} documents")
    check_finite(grad, hess, preds)
    return grad, hess


class DataCache:
    """The :class:`~stochrank_objectives.groups.GroupedData` of each data set an adapter
    serves (the training data of an objective, the eval sets of a metric): built and
    validated on the first call from the booster's data container, then kept for that
    training, keyed by the container and its fields.

    Example::

        data = adapter.training.get(dtrain, (), lambda: GroupedData(labels, offsets))

    The kept data is returned while the container is the same object, each of ``fields`` (the
    container's label, group and weight arrays, where the booster keeps them as objects) is the
    same object, and ``verify(data)`` (where the booster copies its fields out on every read and
    no callback marks a training's start) holds. Each entry is one tuple, read once and
    replaced by one assignment, so threads sharing an adapter never get each other's data
    (they only rebuild each other's entry); containers are held by weak references, and an
    entry whose container is gone is dropped.
    """

    def __init__(self) -> None:
        self._entries: dict[int, tuple] = {}   # id(container) -> (weakref, fields, data)

    def get(self, container, fields: tuple, build, verify=None) -> GroupedData:
        """The kept data for ``container`` and ``fields``, else ``build()`` (validating), kept.

        Args:
          container: the booster's data object (a Dataset, a DMatrix, or a label array).
          fields: objects that must be the very ones of the kept entry.
          build: makes the GroupedData (validates) on a miss.
          verify: optional ``verify(data) -> bool``, a check of the kept data's contents.
        """
        entry = self._entries.get(id(container))
        if (entry is not None and entry[0]() is container and len(entry[1]) == len(fields)
                and all(a is b for a, b in zip(entry[1], fields))
                and (verify is None or verify(entry[2]))):
            return entry[2]
        data = build()
        for key, (ref, _, _) in list(self._entries.items()):
            if ref() is None:
                self._entries.pop(key, None)
        self._entries[id(container)] = (weakref.ref(container), fields, data)
        return data

    def clear(self) -> None:
        """Forget the kept data (a new training begins)."""
        self._entries = {}


class BoosterMetric(EvalMetric):
    """What ``LGBMMetric`` and ``XGBMetric`` share: the :class:`DataCache` of their eval sets
    (each validated once per training), left out of pickles."""

    @property
    def _data(self) -> DataCache:
        cache = self.__dict__.get("_data_cache")
        if cache is None:  # setdefault: threads arriving at once keep one cache
            cache = self.__dict__.setdefault("_data_cache", DataCache())
        return cache

    def __getstate__(self) -> dict:  # the cache holds weak references: never pickled
        state = self.__dict__.copy()
        state.pop("_data_cache", None)
        state.pop("_trusted", None)
        return state


def check_finite(grad, hess, scores):
    """Refuse NaN or infinite derivatives: a booster would otherwise fit them silently (an
    all-zero or NaN model)."""
    bad = ~(np.isfinite(grad) & np.isfinite(hess))
    if bad.any():
        i = int(np.argmax(bad))
        raise ValueError(
            f"the objective returned a non-finite derivative for {int(bad.sum())} document(s), "
            f"first document {i} (score {scores[i]!r}, grad {grad[i]!r}, hess {hess[i]!r}); "
            "check the scores (init_score / base_margin) and the objective's parameters")
