"""``CatBoostObjective``: CatBoost's user-defined objective serving whole-query derivatives."""

from __future__ import annotations

import contextlib
import ctypes
import threading
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike

from ...groups import GroupedData
from ...objectives import grouped_grad_hess
from ...sglb import SGLB
from .._common import check_finite, check_objective_and_sglb
from ._layout import (
    CHUNK_CHANGED,
    CHUNK_NOT_SLICE,
    CHUNK_TWICE,
    NOT_SLICE,
    ROW_INVERSE,
    LayoutError,
    buffer_view,
    decode_row_index,
    encode_row_index,
    negated_pairs,
    serve_chunk,
)

if TYPE_CHECKING:  # only the type checker needs it
    from ...objectives import Objective

__all__ = ["CatBoostObjective", "WEIGHTED_POOL_REFUSED"]

#: the messages of :func:`serve_chunk`'s failures, by code
_CHUNK_FAILURES = {CHUNK_NOT_SLICE: NOT_SLICE, CHUNK_TWICE: "a row was passed twice in one pass",
                   CHUNK_CHANGED: "the approx buffer changed during a pass"}

WEIGHTED_POOL_REFUSED = (
    "the learn Pool has weights (weight= or group_weight=): give the query weights to "
    "CatBoostObjective(..., weights=w) and build the learn Pool without them (CatBoost would "
    "also use them in its own split and leaf computations, so they would not mean the weighted "
    "sum of the per-query losses); StochasticCatBoostRanker.fit(sample_weight=w) does both")


class CatBoostObjective:
    """CatBoost user-defined objective serving a grouped objective's derivatives.

    Most users want :class:`StochasticCatBoostRanker`, which builds this object, the learn pool
    (labels = :func:`encode_row_index`) and the callbacks. Direct use::

        adapter = CatBoostObjective(obj, labels, query_offsets)
        pool = Pool(X, label=encode_row_index(len(labels)), group_id=group_index)
        model = CatBoost(dict(loss_function=adapter, eval_metric="NDCG:top=5",
                              boosting_type="Plain", bootstrap_type="Bernoulli"))
        catboost_fit(model, pool, adapter)

    (:func:`catboost_fit` resets the object, adds it as the callback that advances
    ``iteration`` and raises the objective's own errors and ``KeyboardInterrupt``; a plain
    ``model.fit(pool, callbacks=[adapter])`` after :meth:`reset` works too, with CatBoost's
    error handling: see :doc:`/guide/catboost`). The learn Pool must be unweighted: object or
    group weights are refused with a ``ValueError``; query weights go to ``weights=``.

    Args:
      objective: object with ``grad_hess(scores, labels, query_offsets, iteration)``.
      labels: true relevance labels in learn-row order, or the learn rows'
        :class:`~stochrank_objectives.groups.GroupedData` (validated by the caller; then no
        ``query_offsets`` or ``weights``): checked once, here, and read every round unchecked.
      query_offsets: CSR query offsets of the learn rows.
      sglb: optional :class:`stochrank_objectives.sglb.SGLB`; only its gradient noise is used
        (:meth:`~stochrank_objectives.sglb.SGLB.perturb`, variance ``2 / (lr T)`` per document). Shrinkage
        is CatBoost's native ``model_shrink_rate`` (or the per-tree loop's), never ``sglb``'s.
      route: ``"pointer"`` (whole-buffer view) or ``"per_tree"`` (serve derivatives computed
        by :meth:`serve` at given scores).
      weights: optional query weights, one per query or one per learn row (equal within a
        query): each query's derivatives are multiplied by its weight (the SGLB noise by its
        square root, :meth:`~stochrank_objectives.sglb.SGLB.perturb`), so the loss is the
        weighted sum of the per-query losses. Give them here, not to the learn ``Pool``: CatBoost
        also uses a Pool's weights in its own split and leaf computations (measured, catboost
        1.2.10: a weighted Pool gives another model than the same derivatives on duplicated
        queries, while weights given here reproduce the duplicated-query model exactly), so a
        learn Pool with ``weight=``/``group_weight=`` is refused.
    """

    no_jit = True  # CatBoost must not try to numba-compile calc_ders_range

    def __init__(self, objective: Objective, labels: ArrayLike | GroupedData,
                 query_offsets: ArrayLike | None = None, *, sglb: SGLB | None = None,
                 route: str = "pointer", weights: ArrayLike | None = None) -> None:
        check_objective_and_sglb(objective, sglb)
        if route not in ("pointer", "per_tree"):
            raise ValueError(f"route must be 'pointer' or 'per_tree', got {route!r}")
        self.objective = objective
        if isinstance(labels, GroupedData):  # validated by the caller (the ranker)
            if query_offsets is not None or weights is not None:
                raise TypeError("with a GroupedData as labels, pass no query_offsets or weights "
                                "(the GroupedData has them)")
            self.data = labels
        else:
            if query_offsets is None:
                raise TypeError("query_offsets is required with labels given as an array")
            self.data = GroupedData(np.asarray(labels), np.asarray(query_offsets),
                                    weights=None if weights is None else np.asarray(weights))
        # validated once: the objective reads this data every round, unchecked
        self.labels, self.query_offsets = self.data.labels, self.data.query_offsets
        self.weights = self.data.weights
        self.n_rows = self.data.n_docs
        self._encoded = encode_row_index(self.n_rows)
        self.sglb = sglb
        self.route = route
        self.total_iterations = None  # trees of the current fit, when known (no guess after the last)
        self._lock = threading.Lock()
        self.fitting = threading.RLock()  # held by the package's fits: one training at a time
        self.reset()

    # -- state ----------------------------------------------------------------------------
    def reset(self) -> None:
        """Forget all training state (iteration 0, no cached derivatives)."""
        self.iteration = 0
        self.layout_error: str | None = None
        self.n_calls = 0          # calc_ders_range calls
        self.n_passes = 0         # full passes over the learn rows (pointer route)
        self.n_evaluations = 0    # grad_hess evaluations
        self._served = np.zeros(1, dtype=np.int64)  # rows served in this pass (serve_chunk)
        self._seen = np.zeros(self.n_rows, dtype=bool)
        self._pass_scores: np.ndarray | None = None
        self._pass_ders: np.ndarray | None = None
        self._pass_iteration = -1
        self._cache_iteration = -1
        self._cache_scores: np.ndarray | None = None
        self._cache_ders: Any = None  # an array whenever _cache_scores is one
        self._search_base = None  # address of the approx buffer of the tree-search passes
        # The first exception raised in this object's code during the fit (the objective's
        # ValueError, a LayoutError, a KeyboardInterrupt from Ctrl-C): CatBoost passes it on
        # only as text inside a CatBoostError, so the package's fits raise this one instead.
        self.error: BaseException | None = None
        # trees CatBoost asked derivatives for (pointer route); one more than ``iteration``
        # after a fit means a tree whose after_iteration never ran (CatBoost ignored an error)
        self.trees_started = 0
        self.sigint_received = False  # a SIGINT arrived during the package's fit

    def release(self) -> None:
        """Drop the per-row arrays after training (the object stays usable after :meth:`reset`)."""
        self._pass_scores = self._pass_ders = self._cache_scores = self._cache_ders = None

    def __deepcopy__(self, memo):
        return self  # CatBoost.fit deep-copies its params; training state must stay on this object

    def __getstate__(self):
        state = self.__dict__.copy()
        del state["_lock"], state["fitting"]
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        if not isinstance(self._served, np.ndarray):  # pickled before serve_chunk's counter
            self._served = np.array([self._served], dtype=np.int64)
        self._lock = threading.Lock()
        self.fitting = threading.RLock()

    # -- derivatives ----------------------------------------------------------------------
    def derivatives(self, scores: np.ndarray) -> np.ndarray:
        """``(n, 2)`` array ``[der1, der2] = [-grad (+ noise), -hess]`` at ``scores`` for the
        current iteration (cached: the same scores in the same iteration are not recomputed)."""
        if (self._cache_iteration == self.iteration and self._cache_scores is not None
                and np.array_equal(scores, self._cache_scores)):
            return self._cache_ders
        # query weights go to the objective (see objective_grad_hess): weighted derivatives
        grad, hess = grouped_grad_hess(self.objective, scores, self.data, self.iteration)
        shape = (self.n_rows,)  # a scalar (e.g. constant hessian) broadcasts, as before
        grad = np.broadcast_to(np.asarray(grad, dtype=np.float64), shape)
        hess = np.broadcast_to(np.asarray(hess, dtype=np.float64), shape)
        noisy = self.sglb is not None and self.sglb.noise_std != 0.0
        ders = np.empty((self.n_rows, 2))
        # CatBoost maximises: der1 = -grad, der2 = -hess (one fused pass, finiteness included)
        if not negated_pairs(grad, hess, ders):
            check_finite(grad, hess, scores)  # raises the adapters' one ValueError, with details
        if noisy and self.sglb is not None:
            # the Langevin step (sglb.py): -(w g + sqrt(w h) noise), finite grad checked above
            ders[:, 0] = -self.sglb.perturb(grad, self.iteration, None, hess)
        self.n_evaluations += 1
        self._cache_iteration = self.iteration
        self._cache_scores = scores
        self._cache_ders = ders
        return ders

    def serve(self, scores: np.ndarray) -> None:
        """Per-tree route: the next fit is served the derivatives at ``scores`` (float64)."""
        with self._lock:
            scores = np.array(scores, dtype=np.float64)  # a copy: the caller updates its own
            self._pass_scores = scores
            self._pass_scores32 = scores.astype(np.float32).astype(np.float64)
            self._pass_ders = self.derivatives(scores)

    @property
    def served_baseline(self) -> np.ndarray:
        """Per-tree route: the scores of the last :meth:`serve` rounded as CatBoost keeps a
        baseline (float32), as float64: the baseline to set on the learn pool."""
        return self._pass_scores32

    # -- the CatBoost protocol --------------------------------------------------------------
    def _record(self, exc: BaseException) -> None:
        """Keep the first exception raised in our code (see ``error``)."""
        if self.error is None:
            self.error = exc
        if isinstance(exc, LayoutError):
            self.layout_error = str(exc)

    @contextlib.contextmanager
    def _recorded(self):
        """Keep the first exception raised in our code (see ``error``) and re-raise it."""
        try:
            yield
        except BaseException as exc:
            self._record(exc)
            raise

    def after_iteration(self, info: Any) -> bool:
        with self._lock, self._recorded():
            if self.sigint_received:  # set by the package's fits: CatBoost may have lost it
                raise KeyboardInterrupt("Ctrl-C during the CatBoost fit")
            self.iteration += 1
            self._precompute()
        return True

    def _precompute(self):
        """Between two trees, compute the next tree's derivatives while CatBoost's threads are
        idle (the objective's kernels then have every core; otherwise one CatBoost thread
        computes them while the others wait on the lock).

        The buffer the tree-search passes read holds the next approx once a tree is added
        (verified: catboost 1.2.10, Plain boosting); the snapshot is only a guess -- the first
        chunk of the next pass compares it with the approx CatBoost actually passes, and
        recomputes on any difference -- so every guard of :meth:`_pointer_chunk` still holds.
        Skipped on the last tree and with SGLB (CatBoost shrinks the approx before the next
        derivatives, so the guess would always miss).
        """
        if (self.route != "pointer" or self._search_base is None or self.sglb is not None
                or self._served[0] != 0 or self.layout_error is not None
                or (self.total_iterations is not None
                    and self.iteration >= self.total_iterations)):
            return
        view = buffer_view(self._search_base, ctypes.c_double, self.n_rows)
        scores = view.copy()
        if not np.all(np.isfinite(scores)):
            return  # not an approx: let the next pass compute from what CatBoost passes
        self._pass_ders = self.derivatives(scores)
        self._pass_scores = scores
        self._pass_iteration = self.iteration

    def calc_ders_range(self, approxes: Any, targets: Any, weights: Any) -> Any:
        # called once per block of rows with the GIL held (about 150 calls per tree at 20k
        # rows), so the pointer route's path is kept short: no context manager, one numba call
        with self._lock:
            try:
                self.n_calls += 1
                self.trees_started = self.iteration + 1
                if self.layout_error is not None:
                    raise LayoutError(self.layout_error)
                if weights is not None:  # not a layout problem: the per-tree route would fail too
                    raise ValueError(WEIGHTED_POOL_REFUSED)
                if self.route == "pointer":
                    return self._pointer_chunk(approxes, targets)
                return self._served_chunk(approxes, targets)
            except BaseException as exc:
                self._record(exc)
                raise

    def _pointer_chunk(self, approxes, targets):
        n = approxes.shape[0]
        if n == 0:
            return np.empty((0, 2))
        if (approxes.dtype != np.float64 or targets.dtype != np.float32
                or not approxes.flags.c_contiguous or not targets.flags.c_contiguous
                or targets.shape[0] != n):
            raise LayoutError("unexpected approx/target array layout")
        if self._served[0] == 0:
            self._begin_pass(approxes, targets)
        start = serve_chunk(approxes, targets, self._encoded, self._pass_scores, self._seen,
                            self._served)
        if start < 0:
            raise LayoutError(_CHUNK_FAILURES[-start])
        return self._pass_ders[start:start + n]

    def _begin_pass(self, approxes, targets):
        """The first chunk of a pass: view the whole buffers, check them, and compute the
        derivatives if the approx is new. :func:`serve_chunk` then guards this chunk as any."""
        n = approxes.shape[0]
        # the chunk's first row from its first label (serve_chunk compares every label)
        first = float(targets[0]) * ROW_INVERSE
        if not 0.0 <= first <= self.n_rows - n or first != int(first):
            raise LayoutError(NOT_SLICE)
        start = int(first)
        if not np.array_equal(targets, self._encoded[start:start + n]):
            raise LayoutError(NOT_SLICE)  # checked before the views are built
        full_targets = buffer_view(targets.ctypes.data - 4 * start, ctypes.c_float, self.n_rows)
        if not np.array_equal(full_targets, self._encoded):
            raise LayoutError("the target buffer is not the learn rows in original order")
        view = buffer_view(approxes.ctypes.data - 8 * start, ctypes.c_double, self.n_rows)
        if not (self._pass_iteration == self.iteration and self._pass_scores is not None
                and np.array_equal(view, self._pass_scores)):
            # a new approx (otherwise: another pass, e.g. leaf estimation, at the same
            # approx in the same iteration reuses the snapshot and its derivatives)
            scores = view.copy()
            self._pass_ders = self.derivatives(scores)
            self._pass_scores = scores
            self._pass_iteration = self.iteration
            if self._search_base is None:  # the fit's first pass: a tree search
                self._search_base = approxes.ctypes.data - 8 * start
        self.n_passes += 1

    def _served_chunk(self, approxes, targets):
        if self._pass_ders is None:
            raise RuntimeError("per_tree route: call serve(scores) before each fit")
        rows = decode_row_index(targets)
        if rows.size and (rows.min() < 0 or rows.max() >= self.n_rows):
            raise LayoutError("row index out of range")
        # CatBoost keeps the baseline in float32: the approx it passes must be that rounding of
        # the scores we computed the derivatives at (anything else, e.g. a second leaf-estimation
        # pass, would need derivatives we do not have).
        if not np.array_equal(approxes, self._pass_scores32[rows]):
            raise RuntimeError(
                "per_tree route: CatBoost asked for derivatives away from the baseline "
                "(leaf_estimation_iterations > 1 is not supported on this route)")
        return self._pass_ders[rows]
