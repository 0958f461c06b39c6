"""Train CatBoost rankers with this package's objectives (StochasticRank and any other object
that follows the ``grad_hess(scores, labels, query_offsets, iteration)`` protocol).

Usage::

    from stochrank_objectives import StochasticRank
    from stochrank_objectives.adapters.catboost import StochasticCatBoostRanker

    ranker = StochasticCatBoostRanker(StochasticRank(metric="NDCG", top=5), iterations=300)
    ranker.fit(X, y, group_id=qid, eval_set=(X_val, y_val, qid_val))
    scores = ranker.predict(X_test)          # ranker.model_ is a plain catboost.CatBoost

This module contains no gradient mathematics: it translates between the objective's protocol
(``grad`` is the gradient of the loss, one float64 per document) and CatBoost's user-defined
objective API (``calc_ders_range`` returns ``der1 = -grad`` and ``der2 = -hess``).

How it works (facts verified on catboost 1.2.10, see ``shared/notes/gbdt_api.md``)
-----------------------------------------------------------------------------------
CatBoost calls a Python objective on chunks of at most 1000 rows, from several threads, and
never tells it where the queries are; a ranking objective needs whole queries. Two routes:

``"pointer"`` (default, fast)
    The learn label of row ``i`` is the row index, encoded as ``i * 2**-24`` (exact in float32
    for up to ``2**24`` rows, and inside ``[0, 1)`` so that metrics such as ERR accept the learn
    pool). The true labels and the query offsets live on the :class:`CatBoostObjective`. The
    first chunk of every pass over the data rebuilds a view of CatBoost's whole approx buffer
    from the chunk's data pointer (``approxes.ctypes.data - 8 * start_row``), computes the
    derivatives of all queries once, and every chunk is then served from that array. A layout
    guard checks, under a lock, that each chunk is a contiguous slice of the original rows, that
    the whole target buffer is exactly the encoded row indices, that every row is served exactly
    once per pass and that the approx does not change within a pass; a violation stops training
    with :class:`LayoutError`. The per-chunk part of the guard is one numba pass over the chunk
    (~1 us per 1000 rows); what remains per call is CatBoost's own wrapper and, with several
    threads, handing the GIL between CatBoost's threads (~377 calls per iteration at 120k rows:
    1000-row chunks for the tree search, 500-row blocks for leaf estimation).

``"per_tree"`` (fallback, about 3x slower, relies on no internals)
    One ``CatBoost(iterations=1).fit`` per tree, with the current scores as the pool's
    baseline; the objective serves derivatives computed at the exact float64 scores (CatBoost
    stores baselines in float32, so these are not read back from CatBoost), rows located by the
    label channel. Scores are advanced with the tree's own predictions, shrinkage is applied by
    us, and the trees are combined with ``catboost.sum_models``. Both routes give the same
    model (verified to ~1e-12 in the tests, on variable-size queries with two threads).

``route="auto"`` picks ``"pointer"`` unless a setting is known to break its assumption:
categorical features without ``has_time=True`` (CatBoost permutes the rows and makes ~5
passes) fall back to ``"per_tree"`` with a warning; so does a :class:`LayoutError` raised
during a pointer fit (the fit is restarted on the per-tree route). ``boosting_type="Ordered"``
is refused on every route: ordered boosting needs per-document derivatives from prefix models,
which a query-level objective cannot give (one tree per fit would silently be Plain boosting).

Other decisions
---------------
* **Iteration counter.** The objective's ``iteration`` argument (which keys its noise) is the
  0-based index of the tree being built, counted by an ``after_iteration`` callback (pointer
  route) or by the loop (per-tree route). Leaf-estimation passes of the same tree reuse the
  derivatives when the approx is unchanged and otherwise recompute them with the same
  ``iteration``. The counter restarts at every ``fit``: same seeds -> bit-identical models.
* **Deep copy and threads.** ``CatBoost.fit`` deep-copies its parameters; the objective's
  ``__deepcopy__`` returns itself so that state survives. All state changes happen under a
  ``threading.Lock`` (CatBoost calls from several OS threads). ``no_jit = True`` stops
  CatBoost from trying to numba-compile ``calc_ders_range``.
* **Bootstrap.** CatBoost's default MVS bootstrap aborts ("Too few sampling units") when an
  iteration's derivatives are all zero, which a ranking objective produces legitimately (no
  query with two distinct labels, or every query already separated beyond the smoothing
  window). Default here: ``bootstrap_type="Bernoulli"``, ``subsample=0.8`` (CatBoost's default
  rate); any explicit ``bootstrap_type`` is honoured.
* **Eval metric.** CatBoost requires an explicit ``eval_metric`` with a Python loss. The default
  is CatBoost's own metric matching the objective's ``metric_spec`` (``NDCG:top=k;type=Exp`` for
  exp2 gain, ``type=Base`` for linear; ``DCG`` likewise; ``ERR:top=k`` with labels used as
  probabilities, the eval labels mapped through ``grade_max`` when the objective has one;
  ``MRR:top=k;border=threshold``). CatBoost's ranking metrics order tied scores pessimistically
  (less relevant first) and score a query without relevant documents as NDCG 1, exactly like
  :mod:`stochrank_objectives.metrics` with ``ties="worst"`` (checked in the tests to 1e-15 on
  heavily tied data), so no Python metric is needed. Every string metric gets
  ``hints=skip_train~true``: the learn labels are row indices, so learn values would be noise.
* **Categorical features.** CatBoost's default target statistics (``Borders`` CTRs) would be
  computed from the learn labels, which are row indices here. Default: target-free
  ``simple_ctr=combinations_ctr=["Counter"]``; target-based CTR types are refused.
* **SGLB** (``langevin=True``, ``diffusion_temperature=T``, ``model_shrink_rate=gamma``, with
  CatBoost's names, defaults -- ``T=10000``, ``gamma=0.001`` once ``langevin`` is on -- and
  ``posterior_sampling``). Shrinkage ``F <- (1 - gamma lr) F`` before each tree's derivatives
  is CatBoost's native ``model_shrink_rate`` on the pointer route (exact; ``Constant`` and
  ``Decreasing`` modes) and reproduced by us on the per-tree route (rate and learning rate
  rounded to float32 as CatBoost does). The noise is ours:
  :meth:`stochrank_objectives.sglb.SGLB.noise` (variance ``2 / (lr T)`` per document, seeded by
  ``(random_seed, iteration)``) is added to every document's gradient before CatBoost sees it. CatBoost 1.2.10's own per-row Langevin
  noise has no effect on the tree structure (only its leaf noise acts), while the SGLB weak
  learner must be fitted to the noisy gradients; as leaf values are averages of the ``der1``
  we return, our noise reaches the leaves too, so native ``langevin`` is **not** passed to
  CatBoost (it would add leaf noise a second time). CatBoost's ``model_shrink_rate`` also works
  alone (shrinkage without noise).
* **Weights, text/embedding features, user baselines** are not supported (the objectives are
  unweighted; text estimators would read the row-index labels).
"""

from __future__ import annotations

import ctypes
import os
import tempfile
import threading
import warnings

import numpy as np
from catboost import CatBoost, CatBoostError, Pool, sum_models
from catboost.utils import eval_metric as _catboost_eval_metric
from numba import njit

from ..groups import as_float_array, query_offsets_from_qid, validate_query_offsets
from ..sglb import SGLB
from ._common import check_objective_and_sglb

__all__ = [
    "StochasticCatBoostRanker",
    "CatBoostObjective",
    "LayoutError",
    "default_eval_metric",
    "encode_row_index",
    "decode_row_index",
    "MAX_ROWS",
]

MAX_ROWS = 2 ** 24
"""Most learn rows the float32 row-index label channel can encode exactly."""

_ROW_SCALE = 2.0 ** -24
_ROW_INVERSE = 2.0 ** 24
_NOT_SLICE = ("a chunk is not a contiguous slice of the original row order (rows are permuted: "
              "Ordered boosting or categorical features without has_time=True)")
_TARGET_CTRS = ("Borders", "Buckets", "BinarizedTargetMeanValue", "FloatTargetMeanValue")
_ROUTES = ("auto", "pointer", "per_tree")
_QUANTIZATION_PARAMS = ("ignored_features", "per_float_feature_quantization", "border_count",
                        "max_bin", "feature_border_type", "sparse_features_conflict_fraction",
                        "nan_mode", "input_borders", "used_ram_limit",
                        "dev_max_subset_size_for_build_borders")
_ALIASES = {  # CatBoost parameter synonyms that this module reads
    "learning_rate": ("eta",),
    "iterations": ("n_estimators", "num_boost_round", "num_trees"),
    "random_seed": ("random_state",),
}


class LayoutError(RuntimeError):
    """CatBoost's calls do not have the layout the pointer route relies on."""


def encode_row_index(n_rows: int) -> np.ndarray:
    """Learn labels carrying the row index: ``i * 2**-24`` in float32 (exact for ``i < 2**24``)."""
    if n_rows > MAX_ROWS:
        raise ValueError(
            f"{n_rows} learn rows: the CatBoost adapter passes the row index through the float32 "
            f"label, which is exact only up to {MAX_ROWS} rows; train on a subsample of queries "
            "or split the data")
    return (np.arange(n_rows, dtype=np.float64) * _ROW_SCALE).astype(np.float32)


def decode_row_index(targets) -> np.ndarray:
    """Inverse of :func:`encode_row_index` (int64); raises :class:`LayoutError` on other values."""
    scaled = np.asarray(targets, dtype=np.float64) * (1.0 / _ROW_SCALE)
    rows = scaled.astype(np.int64)
    if not np.array_equal(rows, scaled):
        raise LayoutError("the targets CatBoost passed are not encoded row indices")
    return rows


def _buffer_view(address: int, ctype, n: int) -> np.ndarray:
    return np.ctypeslib.as_array((ctype * n).from_address(address))


_CHUNK_OK, _CHUNK_NOT_SLICE, _CHUNK_TWICE, _CHUNK_CHANGED = 0, 1, 2, 3


@njit(cache=True)
def _check_chunk(approxes, targets, encoded, pass_scores, seen, start):  # pragma: no cover
    """The per-chunk layout guard in one pass over the chunk (numba: ~1 us for 1000 rows
    against ~10 us for the same checks as separate numpy calls). Returns
    ``_CHUNK_NOT_SLICE`` when ``targets != encoded[start:start + n]`` (the chunk is not the
    contiguous slice of the learn rows starting at row ``start``), ``_CHUNK_TWICE`` when a row
    of the chunk was already served in this pass, ``_CHUNK_CHANGED`` when ``approxes`` differs
    from this pass's snapshot, and otherwise marks the rows as served and returns ``_CHUNK_OK``.
    The caller checks ``0 <= start`` and ``start + n <= encoded.size``."""
    n = approxes.shape[0]
    for i in range(n):
        if targets[i] != encoded[start + i]:
            return _CHUNK_NOT_SLICE
    for i in range(n):
        if seen[start + i]:
            return _CHUNK_TWICE
    for i in range(n):
        if approxes[i] != pass_scores[start + i]:
            return _CHUNK_CHANGED
    for i in range(n):
        seen[start + i] = True
    return _CHUNK_OK


@njit(cache=True)
def _negated_pairs(grad, hess, out):  # pragma: no cover
    """``out[:, 0] = -grad``, ``out[:, 1] = -hess``; False when any value is NaN or inf."""
    finite = True
    for i in range(grad.shape[0]):
        g = grad[i]
        h = hess[i]
        if not (np.isfinite(g) and np.isfinite(h)):
            finite = False
        out[i, 0] = -g
        out[i, 1] = -h
    return finite


class CatBoostObjective:
    """CatBoost user-defined objective serving a grouped objective's derivatives.

    Most users want :class:`StochasticCatBoostRanker`, which builds this object, the learn pool
    (labels = :func:`encode_row_index`) and the callbacks. Direct use::

        adapter = CatBoostObjective(obj, labels, query_offsets)
        pool = Pool(X, label=encode_row_index(len(labels)), group_id=group_index)
        CatBoost(dict(loss_function=adapter, eval_metric="NDCG:top=5", boosting_type="Plain",
                      bootstrap_type="Bernoulli")).fit(pool, callbacks=[adapter])

    (the callback advances ``iteration``; call :meth:`reset` before re-using the object).

    Args:
      objective: object with ``grad_hess(scores, labels, query_offsets, iteration)``.
      labels: true relevance labels in learn-row order.
      query_offsets: CSR query offsets of the learn rows.
      sglb: optional :class:`stochrank_objectives.sglb.SGLB`; only its gradient noise is used
        (``grad += sglb.noise(n, iteration)``, variance ``2 / (lr T)`` per document). Shrinkage
        is CatBoost's native ``model_shrink_rate`` (or the per-tree loop's), never ``sglb``'s.
      route: ``"pointer"`` (whole-buffer view) or ``"per_tree"`` (serve derivatives computed
        by :meth:`serve` at given scores).
    """

    no_jit = True  # CatBoost must not try to numba-compile calc_ders_range

    def __init__(self, objective, labels, query_offsets, *, sglb: SGLB | None = None,
                 route: str = "pointer"):
        check_objective_and_sglb(objective, sglb)
        if route not in ("pointer", "per_tree"):
            raise ValueError(f"route must be 'pointer' or 'per_tree', got {route!r}")
        self.objective = objective
        self.labels = as_float_array(labels, "labels")
        self.query_offsets = validate_query_offsets(query_offsets, self.labels.shape[0])
        self.n_rows = int(self.labels.shape[0])
        self._encoded = encode_row_index(self.n_rows)
        self.sglb = sglb
        self.route = route
        self._lock = threading.Lock()
        self.reset()

    # -- state ----------------------------------------------------------------------------
    def reset(self):
        """Forget all training state (iteration 0, no cached derivatives)."""
        self.iteration = 0
        self.layout_error = None
        self.n_calls = 0          # calc_ders_range calls
        self.n_passes = 0         # full passes over the learn rows (pointer route)
        self.n_evaluations = 0    # grad_hess evaluations
        self._served = 0
        self._seen = np.zeros(self.n_rows, dtype=bool)
        self._pass_scores = None
        self._pass_ders = None
        self._pass_iteration = -1
        self._cache_iteration = -1
        self._cache_scores = None
        self._cache_ders = None

    def release(self):
        """Drop the per-row arrays after training (the object stays usable after :meth:`reset`)."""
        self._pass_scores = self._pass_ders = self._cache_scores = self._cache_ders = None

    def __deepcopy__(self, memo):
        return self  # CatBoost.fit deep-copies its params; training state must stay on this object

    def __getstate__(self):
        state = self.__dict__.copy()
        del state["_lock"]
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._lock = threading.Lock()

    # -- derivatives ----------------------------------------------------------------------
    def derivatives(self, scores: np.ndarray) -> np.ndarray:
        """``(n, 2)`` array ``[der1, der2] = [-grad (+ noise), -hess]`` at ``scores`` for the
        current iteration (cached: the same scores in the same iteration are not recomputed)."""
        if (self._cache_iteration == self.iteration and self._cache_scores is not None
                and np.array_equal(scores, self._cache_scores)):
            return self._cache_ders
        grad, hess = self.objective.grad_hess(scores, self.labels, self.query_offsets,
                                              iteration=self.iteration)
        shape = (self.n_rows,)  # a scalar (e.g. constant hessian) broadcasts, as before
        grad = np.broadcast_to(np.asarray(grad, dtype=np.float64), shape)
        hess = np.broadcast_to(np.asarray(hess, dtype=np.float64), shape)
        ders = np.empty((self.n_rows, 2))
        # CatBoost maximises: der1 = -grad, der2 = -hess (one fused pass, finiteness included)
        if not _negated_pairs(grad, hess, ders):
            raise FloatingPointError(f"the objective returned NaN/inf derivatives at iteration "
                                     f"{self.iteration}")
        if self.sglb is not None and self.sglb.diffusion_temperature is not None:
            # -grad - noise == -(grad + noise) exactly (rounding is symmetric under negation)
            ders[:, 0] -= self.sglb.noise(self.n_rows, self.iteration)
        self.n_evaluations += 1
        self._cache_iteration = self.iteration
        self._cache_scores = scores
        self._cache_ders = ders
        return ders

    def serve(self, scores: np.ndarray):
        """Per-tree route: the next fit is served the derivatives at ``scores`` (float64)."""
        with self._lock:
            scores = np.array(scores, dtype=np.float64)  # a copy: the caller updates its own
            self._pass_scores = scores
            self._pass_scores32 = scores.astype(np.float32).astype(np.float64)
            self._pass_ders = self.derivatives(scores)

    # -- the CatBoost protocol --------------------------------------------------------------
    def after_iteration(self, info) -> bool:
        with self._lock:
            self.iteration += 1
        return True

    def calc_ders_range(self, approxes, targets, weights):
        with self._lock:
            self.n_calls += 1
            if self.layout_error is not None:
                raise LayoutError(self.layout_error)
            try:
                if weights is not None:
                    raise LayoutError("CatBoost passed object weights; the adapter builds "
                                      "unweighted pools only")
                if self.route == "pointer":
                    return self._pointer_chunk(approxes, targets)
                return self._served_chunk(approxes, targets)
            except LayoutError as exc:
                self.layout_error = str(exc)
                raise

    def _pointer_chunk(self, approxes, targets):
        n = approxes.shape[0]
        if n == 0:
            return np.empty((0, 2))
        if (approxes.dtype != np.float64 or targets.dtype != np.float32
                or not approxes.flags.c_contiguous or not targets.flags.c_contiguous
                or targets.shape[0] != n):
            raise LayoutError("unexpected approx/target array layout")
        # the chunk's first row from its first label; _check_chunk then compares every label
        # with the encoded rows start..stop-1 (float32 equality = decoded row equality, as the
        # encoding is exact), which is decode_row_index + "rows == arange(start, stop)"
        first = float(targets[0]) * _ROW_INVERSE
        if not 0.0 <= first <= self.n_rows - n or first != int(first):
            raise LayoutError(_NOT_SLICE)
        start = int(first)
        stop = start + n
        if self._served == 0:  # first chunk of a pass: view the whole buffers
            if not np.array_equal(targets, self._encoded[start:stop]):
                raise LayoutError(_NOT_SLICE)  # checked before the views are built
            full_targets = _buffer_view(targets.ctypes.data - 4 * start, ctypes.c_float,
                                        self.n_rows)
            if not np.array_equal(full_targets, self._encoded):
                raise LayoutError("the target buffer is not the learn rows in original order")
            view = _buffer_view(approxes.ctypes.data - 8 * start, ctypes.c_double, self.n_rows)
            if not (self._pass_iteration == self.iteration and self._pass_scores is not None
                    and np.array_equal(view, self._pass_scores)):
                # a new approx (otherwise: another pass, e.g. leaf estimation, at the same
                # approx in the same iteration reuses the snapshot and its derivatives)
                scores = view.copy()
                self._pass_ders = self.derivatives(scores)
                self._pass_scores = scores
                self._pass_iteration = self.iteration
            self.n_passes += 1
        code = _check_chunk(approxes, targets, self._encoded, self._pass_scores, self._seen,
                            start)
        if code != _CHUNK_OK:
            raise LayoutError(_NOT_SLICE if code == _CHUNK_NOT_SLICE else
                              "a row was passed twice in one pass" if code == _CHUNK_TWICE else
                              "the approx buffer changed during a pass")
        self._served += n
        if self._served == self.n_rows:
            self._served = 0
            self._seen[:] = False
        return self._pass_ders[start:stop]

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


# ------------------------------------------------------------------------------------------
# Defaults derived from the objective
# ------------------------------------------------------------------------------------------


def _format_number(value) -> str:
    return repr(float(value)).rstrip("0").rstrip(".") if isinstance(value, float) else str(value)


def default_eval_metric(objective) -> str:
    """CatBoost's own metric string matching ``objective.metric_spec`` (see the module notes)."""
    spec = getattr(objective, "metric_spec", None)
    metric = getattr(spec, "metric", None)
    if metric is None:
        raise ValueError(
            f"{type(objective).__name__} has no metric_spec: pass eval_metric='NDCG:top=10' (or "
            "any CatBoost metric); CatBoost requires one with a Python objective")
    parts = []
    if spec.top is not None:
        parts.append(f"top={spec.top}")
    if metric in ("NDCG", "DCG"):
        parts.append("type=" + ("Exp" if spec.gain == "exp2" else "Base"))
    elif metric == "MRR":
        parts.append(f"border={_format_number(float(spec.threshold))}")
    elif metric == "PFOUND":
        parts.append(f"decay={_format_number(float(spec.decay))}")
        metric = "PFound"
    elif metric == "FILTEREDDCG":
        # CatBoost's FilteredDCG eval metric keeps the documents scored >= 0 in their *input*
        # order (the scores only filter), which is not what the objective optimises
        raise ValueError(
            "CatBoost's FilteredDCG eval metric ranks the kept documents in input order, unlike "
            "StochasticRank(metric='FilteredDCG'): pass eval_metric explicitly (e.g. "
            "'FilteredDCG:type=Base;denominator=Position' to log CatBoost's own)")
    elif metric != "ERR":
        raise ValueError(f"no CatBoost metric for {metric!r} with the same definition: pass "
                         f"eval_metric explicitly")
    return metric + (":" + ";".join(parts) if parts else "")


def _skip_train(metric):
    """Add ``hints=skip_train~true`` to a metric string (learn labels are row indices)."""
    if not isinstance(metric, str) or "hints=" in metric:
        return metric
    return metric + (";" if ":" in metric else ":") + "hints=skip_train~true"


def _eval_labels(objective, labels, eval_metric_given: bool) -> np.ndarray:
    """Eval-set labels for CatBoost: mapped to ERR probabilities when the default ERR metric
    stands for an objective with ``grade_max``."""
    spec = getattr(objective, "metric_spec", None)
    if (not eval_metric_given and spec is not None and spec.metric == "ERR"
            and spec.grade_max is not None):
        return spec.gain_and_continuation(labels)[0]
    return labels


def _group_index(query_offsets: np.ndarray) -> np.ndarray:
    return np.repeat(np.arange(query_offsets.shape[0] - 1, dtype=np.int64),
                     np.diff(query_offsets))


def _offsets(n_rows, group_id, query_offsets, what) -> np.ndarray:
    if (group_id is None) == (query_offsets is None):
        raise ValueError(f"{what}: pass exactly one of group_id (one query id per row, each "
                         "query's rows contiguous) or query_offsets")
    if group_id is not None:
        group_id = np.asarray(group_id)
        if group_id.shape != (n_rows,):
            raise ValueError(f"{what}: group_id has shape {group_id.shape}, expected ({n_rows},)")
        return query_offsets_from_qid(group_id)
    return validate_query_offsets(query_offsets, n_rows)


def _features(X, what: str):
    """Features for a Pool: arrays and DataFrames as given, other array-likes (lists of rows)
    through numpy (an object array when they hold strings, e.g. categorical columns)."""
    if hasattr(X, "shape"):
        return X
    try:
        array = np.asarray(X)
        if array.dtype.kind in "USO":
            array = np.asarray(X, dtype=object)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{what} must be a 2-d array-like (array, DataFrame or list of rows), "
                        f"got {type(X).__name__}: {exc}") from None
    if array.ndim != 2:
        raise TypeError(f"{what} must be a 2-d array-like (array, DataFrame or list of rows), "
                        f"got {type(X).__name__} of shape {array.shape}")
    return array


def _learn_features(X):
    if isinstance(X, Pool):
        raise TypeError("pass the learn features as an array or DataFrame, not a Pool (the "
                        "adapter builds the learn pool with its own labels)")
    return _features(X, "X")


def _check_label_domain(objective, labels: np.ndarray, what: str) -> None:
    """The objective's label-domain check (e.g. ERR/PFound probabilities in [0, 1]) before
    CatBoost starts, so that it surfaces as a ValueError naming the field, not as a
    CatBoostError wrapping a traceback from inside training."""
    spec = getattr(objective, "metric_spec", None)
    if spec is None:
        return
    try:
        spec.gain_and_continuation(labels)
    except ValueError as exc:
        raise ValueError(f"{what}: {exc}") from None


# ------------------------------------------------------------------------------------------
# The user-facing ranker
# ------------------------------------------------------------------------------------------


class StochasticCatBoostRanker:
    """A CatBoost ranker trained with a grouped objective of this package.

    Args:
      objective: e.g. ``StochasticRank(metric="NDCG", top=5)``; any object with
        ``grad_hess(scores, labels, query_offsets, iteration)``.
      route: ``"auto"`` (default), ``"pointer"`` or ``"per_tree"`` (see the module notes).
      **catboost_params: CatBoost parameters (``iterations``, ``learning_rate``, ``depth``,
        ``l2_leaf_reg``, ``random_seed``, ``thread_count``, ``eval_metric``, ``langevin``,
        ``diffusion_temperature``, ``model_shrink_rate``, ...). ``loss_function`` is set by the
        adapter. Defaults that differ from CatBoost's: ``boosting_type="Plain"``,
        ``bootstrap_type="Bernoulli"`` with ``subsample=0.8``, target-free CTRs, the eval metric
        of the objective, ``allow_writing_files=False``, ``verbose=False``.

    Attributes after ``fit``: ``model_`` (a ``catboost.CatBoost`` loaded from the trained
    model, so it holds no reference to the objective), ``route_``, ``evals_result_``,
    ``best_iteration_``, ``best_score_``, ``eval_metric_``, ``n_gradient_evaluations_``,
    ``fit_seconds_``, ``n_features_in_``, ``feature_importances_``.
    """

    def __init__(self, objective, *, route: str = "auto", **catboost_params):
        self.objective = objective
        self.route = route
        self.catboost_params = dict(catboost_params)

    # -- scikit-learn style parameters ----------------------------------------------------
    def get_params(self, deep: bool = True) -> dict:
        return {"objective": self.objective, "route": self.route, **self.catboost_params}

    def set_params(self, **params):
        for name in ("objective", "route"):
            if name in params:
                setattr(self, name, params.pop(name))
        self.catboost_params.update(params)
        return self

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.get_params().items())
        return f"{type(self).__name__}({args})"

    # -- parameter resolution --------------------------------------------------------------
    def _resolve(self, n_rows: int, has_cat: bool):
        """CatBoost params, the route and the SGLB settings for one fit."""
        if self.route not in _ROUTES:
            raise ValueError(f"route must be one of {_ROUTES}, got {self.route!r}")
        p = dict(self.catboost_params)
        for canonical, aliases in _ALIASES.items():
            for alias in aliases:
                if alias in p:
                    if canonical in p:
                        raise ValueError(f"both {canonical!r} and its synonym {alias!r} given")
                    p[canonical] = p.pop(alias)
        for name in ("loss_function", "objective"):
            if name in p:
                raise ValueError(f"{name} is set by the adapter; pass the objective instead")
        if str(p.get("task_type", "CPU")).upper() != "CPU":
            raise ValueError("CatBoost runs Python objectives on CPU only (task_type='CPU')")
        for name in ("text_features", "embedding_features"):
            if p.get(name):
                raise ValueError(f"{name} are not supported: their estimators read the learn "
                                 "labels, which are row indices here")
        boosting = p.setdefault("boosting_type", "Plain")
        if boosting != "Plain":
            raise ValueError(
                f"boosting_type={boosting!r} is not supported: ordered boosting needs "
                "per-document derivatives from prefix models, which a query-level objective "
                "cannot provide; use boosting_type='Plain'")
        if "bootstrap_type" not in p:
            if "bagging_temperature" in p:
                p["bootstrap_type"] = "Bayesian"
            else:
                p["bootstrap_type"] = "Bernoulli"
                p.setdefault("subsample", 0.8)
        p.setdefault("learning_rate", 0.03)  # CatBoost's default for Python objectives
        p.setdefault("iterations", 1000)
        p.setdefault("random_seed", 0)
        p.setdefault("allow_writing_files", False)
        if not any(k in p for k in ("verbose", "logging_level", "silent", "verbose_eval")):
            p["verbose"] = False
        p["eval_metric"] = _skip_train(p.get("eval_metric") or default_eval_metric(self.objective))
        if "custom_metric" in p:
            cm = p["custom_metric"]
            p["custom_metric"] = ([_skip_train(m) for m in cm] if isinstance(cm, (list, tuple))
                                  else _skip_train(cm))

        # categorical features: only target-free statistics
        if has_cat:
            for name in ("simple_ctr", "combinations_ctr", "per_feature_ctr"):
                value = p.get(name)
                text = repr(value)
                if value is not None and any(t in text for t in _TARGET_CTRS):
                    raise ValueError(
                        f"{name}={value!r} uses target statistics, but the learn labels are row "
                        "indices here; use 'Counter' CTRs or one-hot encoding")
            if not any(k in p for k in ("simple_ctr", "combinations_ctr", "per_feature_ctr")):
                p["simple_ctr"] = ["Counter"]
                p["combinations_ctr"] = ["Counter"]

        # SGLB
        langevin = p.pop("langevin", None)
        temperature = p.pop("diffusion_temperature", None)
        if p.pop("posterior_sampling", False):
            if p.get("model_shrink_mode", "Constant") != "Constant":
                raise ValueError("posterior_sampling requires model_shrink_mode='Constant'")
            langevin, temperature = True, float(n_rows)
            p["model_shrink_rate"] = 1.0 / (2.0 * n_rows)
        if langevin is None and temperature is not None and temperature > 0:
            langevin = True
        sglb = None
        if langevin:
            if temperature is None:
                temperature = 10000.0
            if "model_shrink_rate" not in p:
                p["model_shrink_rate"] = (0.01 if p.get("model_shrink_mode") == "Decreasing"
                                          else 0.001)
            # the noise source only (shrinkage stays CatBoost's, see the module notes)
            sglb = SGLB(learning_rate=p["learning_rate"], model_shrink_rate=0.0,
                        diffusion_temperature=temperature, seed=int(p["random_seed"]))

        route = self.route
        if has_cat and not p.get("has_time", False):
            if route == "pointer":
                raise ValueError("route='pointer' needs has_time=True with categorical features "
                                 "(otherwise CatBoost permutes the rows); pass has_time=True or "
                                 "route='auto'")
            if route == "auto":
                warnings.warn("categorical features without has_time=True: CatBoost permutes "
                              "the rows, so the adapter trains one tree per fit (about 3x "
                              "slower); pass has_time=True (rows in time/query order) for the "
                              "fast route", RuntimeWarning, stacklevel=3)
                route = "per_tree"
        if route == "auto":
            route = "pointer"
        return p, route, sglb

    # -- fit ---------------------------------------------------------------------------------
    def fit(self, X, y, group_id=None, *, query_offsets=None, eval_set=None, cat_features=None,
            early_stopping_rounds=None, use_best_model=None, callbacks=None):
        """Train on ``X`` with relevance labels ``y``, queries given by ``group_id`` or offsets.

        Args:
          X: learn features (array, DataFrame or list of rows), rows of a query contiguous.
          y: relevance labels (ints or floats, >= 0), in the objective's label domain (e.g.
            ERR/PFound probabilities in [0, 1]; checked before training starts).
          group_id / query_offsets: the queries (exactly one).
          eval_set: ``(X, y, group_id)``, a ``catboost.Pool`` with real labels and group ids,
            or a list of them. Early stopping and ``use_best_model`` follow the last one.
          cat_features: categorical column indices or names (as in CatBoost).
          early_stopping_rounds, use_best_model: as in ``CatBoost.fit``.
          callbacks: extra CatBoost callbacks (pointer route only).
        """
        import time

        X = _learn_features(X)
        n = int(X.shape[0])
        labels = as_float_array(y, "y", n)
        if np.any(labels < 0):
            raise ValueError("y must be non-negative relevance labels")
        _check_label_domain(self.objective, labels, "y")
        offs = _offsets(n, group_id, query_offsets, "fit")
        has_cat = bool(cat_features is not None and len(cat_features))
        params, route, sglb = self._resolve(n, has_cat)
        eval_given = bool(self.catboost_params.get("eval_metric"))
        eval_pools = self._eval_pools(eval_set, cat_features, eval_given)
        if early_stopping_rounds is None:
            early_stopping_rounds = params.pop("early_stopping_rounds", None)
        if use_best_model is None:
            use_best_model = params.pop("use_best_model", None)

        learn = Pool(X, label=encode_row_index(n), group_id=_group_index(offs),
                     cat_features=cat_features)
        adapter = CatBoostObjective(self.objective, labels, offs, sglb=sglb, route="pointer")
        self._cat_features = cat_features
        started = time.perf_counter()
        if route == "pointer":
            try:
                model, history, best = self._fit_pointer(adapter, learn, eval_pools, params,
                                                         early_stopping_rounds, use_best_model,
                                                         callbacks)
            except CatBoostError:
                if adapter.layout_error is None or self.route == "pointer":
                    raise
                warnings.warn(f"pointer route failed its layout guard ({adapter.layout_error}); "
                              "retraining with one tree per fit", RuntimeWarning, stacklevel=2)
                route = "per_tree"
        if route == "per_tree":
            if callbacks:
                raise ValueError("callbacks are not supported on the per-tree route")
            adapter = CatBoostObjective(self.objective, labels, offs, sglb=sglb, route="per_tree")
            model, history, best = self._fit_per_tree(adapter, X, learn, cat_features,
                                                      eval_pools, params,
                                                      early_stopping_rounds, use_best_model)
        self.fit_seconds_ = time.perf_counter() - started
        self.route_ = route
        self.eval_metric_ = params["eval_metric"]
        self.evals_result_ = history
        self.best_iteration_, self.best_score_ = best
        self.n_gradient_evaluations_ = adapter.n_evaluations
        self.n_iterations_ = adapter.iteration
        adapter.release()
        self.model_ = _detached(model)
        self.n_features_in_ = len(self.model_.feature_names_)
        return self

    def _eval_pools(self, eval_set, cat_features, eval_given):
        if eval_set is None:
            return []
        items = eval_set if isinstance(eval_set, list) else [eval_set]
        pools = []
        for i, item in enumerate(items):
            if isinstance(item, Pool):
                if np.size(item.get_baseline()):
                    raise ValueError("eval_set Pools with a baseline are not supported")
                pools.append(item)
                continue
            if not isinstance(item, tuple) or len(item) != 3:
                raise TypeError("eval_set entries must be (X, y, group_id) tuples or Pools")
            Xe, ye, ge = item
            Xe = _features(Xe, f"eval_set[{i}] X")
            ne = int(Xe.shape[0])
            ye = as_float_array(ye, f"eval_set[{i}] y", ne)
            if not eval_given:  # the default eval metric is the objective's own
                _check_label_domain(self.objective, ye, f"eval_set[{i}] y")
            oe = _offsets(ne, ge, None, f"eval_set[{i}]")
            pools.append(Pool(Xe, label=_eval_labels(self.objective, ye, eval_given),
                              group_id=_group_index(oe), cat_features=cat_features))
        return pools

    def _fit_pointer(self, adapter, learn, eval_pools, params, early_stopping_rounds,
                     use_best_model, callbacks):
        model = CatBoost(dict(params, loss_function=adapter))
        model.fit(learn, eval_set=eval_pools or None, early_stopping_rounds=early_stopping_rounds,
                  use_best_model=use_best_model, callbacks=[adapter] + list(callbacks or []))
        history = {k: v for k, v in model.get_evals_result().items()
                   if k != "learn" or any(v.values())}  # learn values are skipped (hints)
        if not eval_pools:
            return model, history, (None, {})
        best_it = model.get_best_iteration()
        last = "validation" if len(eval_pools) == 1 else f"validation_{len(eval_pools) - 1}"
        best_score = {last: {k: v[best_it] for k, v in history.get(last, {}).items()}}
        return model, history, (best_it, best_score)

    def _fit_per_tree(self, adapter, X, learn, cat_features, eval_pools, params,
                      early_stopping_rounds, use_best_model):
        p = dict(params)
        n_trees = int(p.pop("iterations"))
        rate = float(p.pop("model_shrink_rate", 0.0) or 0.0)
        mode = p.pop("model_shrink_mode", "Constant")
        seed = int(p.pop("random_seed"))
        verbose = p.get("verbose", False)
        p["verbose"] = False
        p.pop("metric_period", None)
        od_wait = early_stopping_rounds
        for key in ("od_wait", "od_type", "od_pval"):
            value = p.pop(key, None)
            if key == "od_wait" and od_wait is None:
                od_wait = value
        if int(p.get("leaf_estimation_iterations", 1)) != 1:
            raise ValueError("the per-tree route supports leaf_estimation_iterations=1 only")
        lr32 = float(np.float32(p["learning_rate"]))
        metric = p["eval_metric"]
        if eval_pools and not isinstance(metric, str):
            raise ValueError("the per-tree route evaluates string eval_metrics only")
        maximize = _is_maximizable(metric)
        feature_pool = Pool(X, cat_features=cat_features)
        # Quantise the learn pool once (halves each fit's cost); same borders as a single fit.
        quantization = {k: p[k] for k in _QUANTIZATION_PARAMS if k in p}
        try:
            learn.quantize(random_seed=seed, **quantization)
        except CatBoostError:  # pragma: no cover - CatBoost then quantises in every fit
            pass
        eval_labels = [np.asarray(e.get_label(), dtype=np.float64) for e in eval_pools]
        eval_groups = [np.asarray(e.get_group_id_hash()) for e in eval_pools]
        scores = np.zeros(adapter.n_rows)
        eval_scores = [np.zeros(e.num_row()) for e in eval_pools]
        names = (["validation"] if len(eval_pools) == 1
                 else [f"validation_{i}" for i in range(len(eval_pools))])
        p.pop("custom_metric", None)  # only the eval metric is tracked on this route
        metric_name = None  # CatBoost's name for it, read from the first fit
        history = {name: {} for name in names}
        models, factors = [], []
        best_it, best_value = None, None
        for t in range(n_trees):
            factor = _shrink_factor(rate, lr32, mode, t)
            if factor != 1.0:
                scores *= factor
                for es in eval_scores:
                    es *= factor
            factors.append(factor)
            adapter.iteration = t
            adapter.serve(scores)
            if t > 0:  # tree 0 starts from 0 without a baseline (so eval sets need none)
                learn.set_baseline(adapter._pass_scores32)
            tree = CatBoost(dict(p, iterations=1, random_seed=(seed + t) % 2 ** 32,
                                 loss_function=adapter))
            tree.fit(learn, eval_set=eval_pools if (t == 0 and eval_pools) else None)
            scores += tree.predict(feature_pool, prediction_type="RawFormulaVal")
            models.append(tree)
            if t == 0 and eval_pools:
                metric_name = next(iter(tree.get_evals_result()[names[-1]]))
                history = {name: {metric_name: []} for name in names}
            for name, pool, es, ye, ge in zip(names, eval_pools, eval_scores, eval_labels,
                                              eval_groups):
                es += tree.predict(pool, prediction_type="RawFormulaVal")
                value = _catboost_eval_metric(ye, es, metric, group_id=ge)[0]
                history[name][metric_name].append(value)
            if eval_pools:
                value = history[names[-1]][metric_name][-1]
                if best_value is None or (value > best_value if maximize else value < best_value):
                    best_it, best_value = t, value
                if verbose and (t % max(1, int(verbose)) == 0 or t == n_trees - 1):
                    print(f"{t}:\t{metric_name} = {value:.6g}\tbest = {best_value:.6g} ({best_it})")
                if od_wait is not None and t - best_it >= int(od_wait):
                    break
        adapter.iteration = len(models)
        keep = len(models)
        if eval_pools and (use_best_model is None or use_best_model):
            keep = best_it + 1
        weights = [float(np.prod(factors[t + 1:keep])) for t in range(keep)]
        model = sum_models(models[:keep], weights=weights)
        best = (best_it, {names[-1]: {metric_name: best_value}} if eval_pools else {})
        return model, history, best

    # -- prediction ----------------------------------------------------------------------
    def predict(self, X, ntree_end: int = 0) -> np.ndarray:
        """Raw ranking scores (``RawFormulaVal``) for ``X`` (array, DataFrame or Pool)."""
        if not hasattr(self, "model_"):
            raise RuntimeError("call fit before predict")
        data = X if isinstance(X, Pool) else Pool(_features(X, "X"),
                                                  cat_features=self._cat_features)
        return self.model_.predict(data, prediction_type="RawFormulaVal", ntree_end=ntree_end)

    @property
    def feature_importances_(self) -> np.ndarray:
        """CatBoost's default feature importance of the fitted model
        (``model_.get_feature_importance()``), one value per feature (``n_features_in_``)."""
        if not hasattr(self, "model_"):
            raise AttributeError(f"this {type(self).__name__} is not fitted yet: call fit first")
        return np.asarray(self.model_.get_feature_importance(), dtype=np.float64)

    def save_model(self, fname, format: str = "cbm", **kwargs):
        """``catboost.CatBoost.save_model`` of the trained model (loadable without this package)."""
        if not hasattr(self, "model_"):
            raise RuntimeError("call fit before save_model")
        self.model_.save_model(fname, format=format, **kwargs)


def _shrink_factor(rate: float, lr32: float, mode: str, t: int) -> float:
    """CatBoost's model-shrink factor applied before tree ``t`` (0-based); CatBoost stores the
    rate and the learning rate as float32 and computes the factor in double."""
    if t == 0 or rate == 0.0:
        return 1.0
    rate = float(np.float32(rate))
    return 1.0 - rate * lr32 if mode == "Constant" else 1.0 - rate / t


def _is_maximizable(metric) -> bool:
    from catboost.core import is_maximizable_metric

    return bool(is_maximizable_metric(metric))


def _detached(model: CatBoost) -> CatBoost:
    """A copy of ``model`` loaded from its serialised form: no Python objective attached."""
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "model.cbm")
        model.save_model(path)
        clean = CatBoost()
        clean.load_model(path)
    return clean
