"""Booster-independent parts of the adapters: calling the objective (with or without SGLB)
for ``LGBMObjective``/``XGBObjective``, and the eval-metric definition behind ``LGBMMetric``/
``XGBMetric``."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike

from .. import metrics as _metrics
from ..objectives import weighted_grad_hess
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


class EvalMetric:
    """A ranking metric of :mod:`stochrank_objectives.metrics`, checked at construction.

    Args:
      metric: ``"NDCG"``, ``"ERR"``, ``"MRR"`` (or ``"DCG"``, ``"precision"``, ``"MAP"``,
        ``"Recall"``, ...: :func:`stochrank_objectives.metrics.evaluate`).
      k: cutoff (``None`` = whole list).
      ties: tie policy, ``"worst"`` (pessimistic, default), ``"best"``, ``"input_order"``...
      name: the name in the booster's logs (default ``"NDCG@5"`` style, plus ``[ties]`` when
        not ``"worst"``).
      **options: metric options (``gain=``, ``grade_max=``, ``threshold=``, ``no_relevant=``).
    """

    def __init__(self, metric: str = "NDCG", k: int | None = None, *, ties: str = "worst",
                 name: str | None = None, **options: Any) -> None:
        self.metric = str(metric)
        self.k = k
        self.ties = ties
        self.options = dict(options)
        # Fail now on a bad name, cutoff or option rather than after the first tree.
        _metrics.evaluate(self.metric, np.zeros(1), np.zeros(1), np.array([0, 1]), k,
                          ties=ties, **self.options)
        if name is None:
            name = self.metric.upper() + ("" if k is None else f"@{k}")
            name += "" if ties == "worst" else f"[{ties}]"
        self.name = name

    @classmethod
    def from_string(cls, spec: str) -> EvalMetric:
        """``"NDCG@5"`` -> ``cls("NDCG", 5)``; ``"MRR"`` -> ``cls("MRR")``."""
        name, _, k = str(spec).partition("@")
        if k and not k.isdigit():
            raise ValueError(f"eval_metric {spec!r}: the cutoff after '@' must be a positive "
                             f"integer, e.g. 'NDCG@5', 'ERR@10' or 'MRR'")
        return cls(name, int(k) if k else None)

    def __repr__(self) -> str:
        options = "".join(f", {key}={value!r}" for key, value in self.options.items())
        return (f"{type(self).__name__}({self.metric!r}, {self.k!r}, ties={self.ties!r}, "
                f"name={self.name!r}{options})")

    def value(self, preds: ArrayLike, labels: ArrayLike, query_offsets: ArrayLike,
              weights: ArrayLike | None = None) -> float:
        """The mean over queries (weighted by ``weights``, one per query or per document)."""
        return float(_metrics.evaluate(self.metric, preds, labels, query_offsets, self.k,
                                       ties=self.ties, weights=weights, **self.options))


def objective_metric(objective) -> EvalMetric:
    """The objective's own metric with worst-order ties: ``StochasticRank(metric="NDCG",
    top=5)`` -> ``EvalMetric("NDCG", 5)`` (its gain, threshold, ``grade_max`` or decay too).

    Objectives without a ``metric_spec`` use their ``metric``/``top`` attributes when these
    name a metric, else NDCG (at ``top``). The rankers' ``score`` and default ``eval_metric``.
    """
    spec = getattr(objective, "metric_spec", None)
    if spec is not None and getattr(spec, "metric", None) is not None:
        return EvalMetric(spec.metric, spec.top, **_metrics.metric_options(spec))
    top = getattr(objective, "top", None)
    try:
        return EvalMetric(getattr(objective, "metric", "NDCG"), top)
    except (TypeError, ValueError):
        return EvalMetric("NDCG", top)


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
        """Subclass state that is not pickled; the base starts a fresh per-thread counter."""
        self._iterations = _IterationState()

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


def objective_grad_hess(adapter, preds, labels, offsets, weights=None):
    """``(grad, hess)`` of ``adapter.objective`` at the booster's raw scores ``preds``.

    ``adapter`` is a :class:`BoosterObjective` (``objective``, ``sglb``, ``iteration()``).
    Objectives cache their per-query constants by the contents of ``labels``/``offsets``.

    Query weights (``weights``: one per query, from :func:`~stochrank_objectives.groups.
    query_weights`) go to the objective (:func:`~stochrank_objectives.objectives._protocol.
    weighted_grad_hess`): the loss is ``sum_q w_q L_q`` and every normalisation the objective
    computes over the queries of the call counts query ``q`` ``w_q`` times, so weight 0 removes
    a query and an integer weight equals copies of it, for every objective. Under SGLB the
    noise is added after weighting, times ``sqrt(w_q h)`` (:meth:`SGLB.grad_hess`). LightGBM,
    XGBoost and CatBoost do not multiply a custom objective's derivatives by their data's
    weights again (measured: LightGBM 4.7 and XGBoost 3.2 train the same model with and
    without Dataset/DMatrix weights from the same derivatives).
    """
    t = adapter.iteration()
    if adapter.sglb is None:
        grad, hess = weighted_grad_hess(adapter.objective, preds, labels, offsets, t, weights)
    else:
        grad, hess = adapter.sglb.grad_hess(adapter.objective, preds, labels, offsets, t,
                                            weights)
    grad, hess = np.asarray(grad), np.asarray(hess)
    if grad.shape != preds.shape or hess.shape != preds.shape:
        raise ValueError(f"objective returned gradients of shape {grad.shape} and hessians "
                         f"of shape {hess.shape} for {preds.shape[0]} documents")
    check_finite(grad, hess, preds)
    return grad, hess


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
