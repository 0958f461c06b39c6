"""Grouped ranking data: one representation used everywhere.

A ranking data set is three flat arrays:

* ``scores`` -- float64, one model score per document;
* ``labels`` -- float64, one relevance label per document;
* ``query_offsets`` -- int64, CSR-style, length ``n_queries + 1``: the documents of
  query ``q`` are rows ``query_offsets[q]:query_offsets[q + 1]``.  The first offset is 0,
  offsets never decrease and the last one equals the number of documents.

Optional query weights (:func:`query_weights`): one non-negative float per query; the loss and
the metrics become weighted means over queries.

:class:`GroupedData` carries all of a data set's per-query inputs in one validated object
(labels, offsets and, optionally, query weights, display positions and initial scores): the
rankers build one per data set at the edge and hand it down.

The documents of one query are contiguous. Empty queries are allowed in the offsets (they
contribute nothing); one-document queries get zero gradients.

Example:

>>> import numpy as np
>>> query_offsets_from_sizes([3, 2])
array([0, 3, 5])
>>> query_offsets_from_qid(np.array([7, 7, 7, 2, 2]))
array([0, 3, 5])
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

__all__ = [
    "query_offsets_from_sizes",
    "query_offsets_from_qid",
    "query_sizes",
    "as_float_array",
    "validate_query_offsets",
    "validate_grouped",
    "as_noise",
    "query_weights",
    "document_weights",
    "GroupedData",
    "check_positions",
]


def query_offsets_from_sizes(sizes: ArrayLike) -> np.ndarray:
    """Offsets (length ``len(sizes) + 1``) from the number of documents per query.

    Example:

    >>> query_offsets_from_sizes([2, 3]).tolist()
    [0, 2, 5]

    Args:
      sizes: non-negative integers, one per query, in row order (LightGBM's ``group``).

    Returns:
      int64 array ``[0, sizes[0], sizes[0] + sizes[1], ...]``.
    """
    sizes = np.asarray(sizes)
    if sizes.ndim != 1:
        raise ValueError(f"group sizes must be one-dimensional, got shape {sizes.shape}")
    if sizes.size and not np.issubdtype(sizes.dtype, np.integer):
        if not np.all(np.isfinite(sizes)) or np.any(sizes != np.round(sizes)):
            raise TypeError("group sizes must be integers (documents per query)")
    sizes = sizes.astype(np.int64)
    if np.any(sizes < 0):
        raise ValueError("group sizes must be non-negative")
    offsets = np.zeros(sizes.size + 1, dtype=np.int64)
    np.cumsum(sizes, out=offsets[1:])
    return offsets


def query_offsets_from_qid(qid: ArrayLike) -> np.ndarray:
    """Offsets from a per-document query id column whose queries are contiguous.

    Ids need not be sorted, but all rows of one query must be adjacent; otherwise a
    ``ValueError`` names the first id that reappears (sort the rows by qid, stably, first).
    A NaN or infinite id is refused with the first row holding it (NaN equals no other NaN,
    so its rows would otherwise read as separate queries).

    Example:

    >>> query_offsets_from_qid([7, 7, 3, 3, 3]).tolist()
    [0, 2, 5]

    Args:
      qid: one query id per document (any hashable numeric or string dtype).

    Returns:
      int64 offsets, one query per run of equal ids.
    """
    qid = np.asarray(qid)
    if qid.ndim != 1:
        raise ValueError(f"qid must be one-dimensional, got shape {qid.shape}")
    if qid.size == 0:
        return np.zeros(1, dtype=np.int64)
    if qid.dtype.kind in "fc":
        _check_finite_qid(qid)
    starts = np.flatnonzero(qid[1:] != qid[:-1]) + 1
    run_ids = qid[np.concatenate(([0], starts))]
    uniq, counts = np.unique(run_ids, return_counts=True)
    if np.any(counts > 1):
        bad = uniq[np.argmax(counts > 1)]
        raise ValueError(
            f"qid {bad!r} appears in {counts.max()} separate runs: the rows of a query must "
            "be contiguous; sort the data by qid (stably) before building groups"
        )
    return np.concatenate(([0], starts, [qid.size])).astype(np.int64)


def _check_finite_qid(qid: np.ndarray) -> None:
    finite = np.isfinite(qid)
    if finite.all():
        return
    row = int(np.argmin(finite))
    value = qid[row]
    shown = "NaN" if np.isnan(value) else ("inf" if value.real > 0 else "-inf")
    same = np.isnan(qid) if shown == "NaN" else (qid == value)
    raise ValueError(f"qid has {shown} at row {row} (first of {int(same.sum())}): query ids "
                     "must be finite; give every query a finite (or integer) id")


def query_sizes(query_offsets) -> np.ndarray:
    """Documents per query (the inverse of :func:`query_offsets_from_sizes`)."""
    return np.diff(np.asarray(query_offsets, dtype=np.int64))


def as_float_array(values, name: str, n: int | None = None) -> np.ndarray:
    """A contiguous float64 1-d copy/view of ``values``, rejecting NaN/inf and bad lengths."""
    try:
        arr = np.ascontiguousarray(values, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{name} must be numeric, got {type(values).__name__}") from exc
    if arr.ndim != 1:
        if arr.ndim == 2 and 1 in arr.shape:
            arr = np.ascontiguousarray(arr.ravel())
        else:
            raise ValueError(f"{name} must be one-dimensional, got shape {arr.shape}")
    if n is not None and arr.shape[0] != n:
        raise ValueError(f"{name} has {arr.shape[0]} entries but there are {n} documents")
    if not np.all(np.isfinite(arr)):
        bad = int(np.flatnonzero(~np.isfinite(arr))[0])
        raise ValueError(f"{name} contains NaN or inf (first at index {bad})")
    return arr


def validate_query_offsets(query_offsets, n_docs: int) -> np.ndarray:
    """Check CSR offsets against ``n_docs`` and return them as contiguous int64."""
    offs = np.asarray(query_offsets)
    if offs.ndim != 1 or offs.size < 1:
        raise ValueError("query_offsets must be a 1-d array of length n_queries + 1")
    if offs.size and not np.issubdtype(offs.dtype, np.integer):
        if not np.all(np.isfinite(offs)) or np.any(offs != np.round(offs)):
            raise TypeError("query_offsets must be integers")
    offs = np.ascontiguousarray(offs, dtype=np.int64)
    if offs[0] != 0:
        raise ValueError(f"query_offsets must start at 0, got {offs[0]}")
    if np.any(np.diff(offs) < 0):
        raise ValueError("query_offsets must be non-decreasing (CSR offsets of contiguous queries)")
    if offs[-1] != n_docs:
        raise ValueError(
            f"query_offsets end at {offs[-1]} but there are {n_docs} documents: "
            "the offsets must cover every document exactly once"
        )
    return offs


def validate_grouped(scores, labels, query_offsets) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Validate and convert a grouped triple; returns ``(scores, labels, query_offsets)``.

    Raises ``ValueError``/``TypeError`` naming the field for mismatched lengths, NaN/inf,
    negative labels and malformed offsets.
    """
    labels = as_float_array(labels, "labels")
    n = labels.shape[0]
    scores = as_float_array(scores, "scores", n)
    if np.any(labels < 0):
        raise ValueError("labels must be non-negative (relevance grades or probabilities)")
    offs = validate_query_offsets(query_offsets, n)
    return scores, labels, offs


def as_noise(noise, n_docs: int) -> np.ndarray:
    """Explicit unit normals for an estimator: shape ``(n_samples, n_docs)`` (a 1-d array is one
    sample), finite, contiguous float64."""
    noise = np.ascontiguousarray(noise, dtype=np.float64)
    if noise.ndim == 1:
        noise = noise[None, :]
    if noise.ndim != 2 or noise.shape[1] != n_docs:
        raise ValueError(f"noise must have shape (n_samples, {n_docs}), got {noise.shape}")
    if not np.all(np.isfinite(noise)):
        raise ValueError("noise contains NaN or inf")
    return noise


def query_weights(weights, query_offsets, name: str = "weights") -> np.ndarray:
    """One float64 weight per query, from one weight per query or one per document.

    A weight per document (length = the number of documents) must be the same for all the
    documents of a query (the weight of a ranked list; XGBoost and CatBoost rankers weigh
    groups too): otherwise a ``ValueError`` names the first query whose documents differ.
    Otherwise the length must be the number of queries. Refused, with the index of the first
    offender: NaN, inf or negative weights, and weights that are all 0 (nothing to learn).
    A weight of 0 leaves a query out; an integer weight ``w`` counts a query ``w`` times.

    Example:

    >>> query_weights([2.0, 2.0, 2.0, 0.5, 0.5], [0, 3, 5]).tolist()
    [2.0, 0.5]
    >>> query_weights([1.0, 3.0], [0, 3, 5]).tolist()
    [1.0, 3.0]

    Args:
      weights: per-query or per-document weights (``None`` is not accepted here).
      query_offsets: CSR offsets of the queries (validated by the caller).
      name: how the messages name the weights (``"sample_weight"``, ...).

    Returns:
      float64 array of length ``n_queries``.
    """
    offs = np.asarray(query_offsets, dtype=np.int64)
    n_queries, n_docs = offs.size - 1, int(offs[-1])
    try:
        w = np.asarray(weights, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{name} must be numeric, got {type(weights).__name__}") from exc
    w = w.ravel() if w.ndim == 2 and 1 in w.shape else w
    if w.ndim != 1 or w.shape[0] not in (n_docs, n_queries):
        raise ValueError(f"{name} has shape {w.shape}: expected one weight per document "
                         f"({n_docs}) or one per query ({n_queries})")
    bad = ~np.isfinite(w) | (w < 0)
    if bad.any():
        i = int(np.argmax(bad))
        raise ValueError(f"{name} must be finite and non-negative, got {float(w[i])!r} at "
                         f"index {i}")
    if w.shape[0] == n_docs and n_docs != n_queries:
        w = _one_per_query(w, offs, name)
    nonempty = np.diff(offs) > 0
    if nonempty.any() and not np.any(w[nonempty] > 0):
        raise ValueError(f"{name}: every query's weight is 0: nothing would be "
                         "learnt or measured; give at least one query a positive weight")
    return np.ascontiguousarray(w)


def _one_per_query(w: np.ndarray, offs: np.ndarray, name: str) -> np.ndarray:
    sizes = query_sizes(offs)
    starts = np.minimum(offs[:-1], max(w.shape[0] - 1, 0))
    first = w[starts] if w.size else np.zeros(sizes.size)
    differs = w != np.repeat(first, sizes)
    if differs.any():
        row = int(np.argmax(differs))
        q = int(np.searchsorted(offs, row, side="right") - 1)
        raise ValueError(
            f"{name}: the documents of query {q} (rows {offs[q]}..{offs[q + 1] - 1}) have "
            f"different weights ({float(first[q])!r} at row {offs[q]}, {float(w[row])!r} at row "
            f"{row}): a "
            "weight belongs to a whole query (the loss and the metrics are weighted means over "
            "queries); give every document of a query its query's weight")
    return first


def document_weights(weights, query_offsets) -> np.ndarray:
    """Each document's query weight: ``weights[q]`` repeated over the documents of query ``q``."""
    return np.repeat(np.asarray(weights, dtype=np.float64), query_sizes(query_offsets))


@dataclass(frozen=True, eq=False)
class GroupedData:
    """What the queries of one data set carry, validated once: labels, query offsets and,
    optionally, query weights, display positions and initial scores.

    Example:

    >>> data = GroupedData([1.0, 0.0, 2.0, 0.0, 0.0], [0, 2, 5], weights=[1.0, 1.0, 3.0, 3.0, 3.0])
    >>> data.n_queries, data.weights.tolist(), data.document_weights().tolist()
    (2, [1.0, 3.0], [1.0, 1.0, 3.0, 3.0, 3.0])

    The rankers build one per data set (the training data and each eval set) from what ``fit``
    receives, each check naming the argument, and every part downstream -- the booster's data
    container, the objective adapters, the eval metrics -- reads it instead of re-validating
    loose arrays. It pickles (to ship to Dask workers) and is immutable
    (``dataclasses.replace`` gives a validated copy with fields replaced): the objectives key
    what they derive from it (gains, ideal DCGs) by the object, so its arrays must not be
    modified in place.

    Args:
      labels: relevance labels, one per document (finite, >= 0), float64.
      query_offsets: CSR offsets (:func:`validate_query_offsets`).
      weights: ``None``, or query weights (one per query, or one per document equal within a
        query; :func:`query_weights`), stored one per query.
      positions: ``None``, or each document's 0-based display position (integers >= 0).
      init_scores: ``None``, or each document's initial score (finite float64): the booster
        starts from it (LightGBM ``init_score``, XGBoost ``base_margin``, CatBoost
        ``baseline``).
      names: how the messages name each field, e.g. ``{"labels": "y", "weights":
        "sample_weight"}`` (default: the field names).
    """

    labels: np.ndarray
    query_offsets: np.ndarray
    weights: np.ndarray | None = None
    positions: np.ndarray | None = None
    init_scores: np.ndarray | None = None
    names: dict | None = None

    def __post_init__(self) -> None:
        names = dict(self.names or {})

        def name(field: str) -> str:
            return names.get(field, field)

        labels = as_float_array(self.labels, name("labels"))
        if np.any(labels < 0):
            raise ValueError(f"{name('labels')} must be non-negative relevance labels")
        n = labels.shape[0]
        offsets = validate_query_offsets(self.query_offsets, n)
        set_ = object.__setattr__
        set_(self, "labels", labels)
        set_(self, "query_offsets", offsets)
        if self.weights is not None:
            set_(self, "weights", query_weights(self.weights, offsets, name("weights")))
        if self.positions is not None:
            set_(self, "positions", check_positions(self.positions, n, name("positions")))
        if self.init_scores is not None:
            set_(self, "init_scores", as_float_array(self.init_scores, name("init_scores"), n))
        set_(self, "names", names or None)

    @property
    def n_docs(self) -> int:
        """The number of documents (rows)."""
        return int(self.labels.shape[0])

    @property
    def n_queries(self) -> int:
        """The number of queries."""
        return int(self.query_offsets.shape[0] - 1)

    @property
    def sizes(self) -> np.ndarray:
        """Documents per query (LightGBM's ``group``)."""
        return query_sizes(self.query_offsets)

    def document_weights(self) -> np.ndarray | None:
        """Each document's query weight (``None`` without weights), computed on the first call
        and kept: the objectives read it every boosting round."""
        if self.weights is None:
            return None
        cached = self.__dict__.get("_document_weights")
        if cached is None:  # one assignment: threads at most compute it twice
            cached = document_weights(self.weights, self.query_offsets)
            object.__setattr__(self, "_document_weights", cached)
        return cached

    def checked_scores(self, scores, name: str = "scores") -> np.ndarray:
        """``scores`` (one per document of this data) as finite contiguous float64: the only
        check an objective makes per boosting round, as the scores are new every round."""
        return as_float_array(scores, name, self.n_docs)


def check_positions(positions, n_rows, name: str = "position"):
    """0-based display positions as int64, one per row; refused if not whole numbers >= 0.

    >>> check_positions([0, 2.0, 1], 3).tolist()
    [0, 2, 1]

    Args:
      positions: the display position of each row (0 = the top of the list).
      n_rows: the number of rows they must cover.
      name: the argument named in the messages.

    Returns:
      The positions, int64; ValueError names the fix otherwise.
    """
    pos = np.asarray(positions)
    if pos.shape != (n_rows,):
        raise ValueError(f"{name} must have one entry per row ({n_rows}), got shape "
                         f"{pos.shape}")
    if not np.issubdtype(pos.dtype, np.integer):
        if not np.all(np.isfinite(pos)) or np.any(pos != np.round(pos)):
            raise ValueError(f"{name} must hold integer display positions (0 = top)")
        pos = pos.astype(np.int64)
    if pos.size and pos.min() < 0:
        row = int(np.argmax(pos < 0))
        raise ValueError(f"{name} must be >= 0 (0 = the top of the list): row {row} has "
                         f"{pos[row]}; pass 0-based display positions")
    return pos.astype(np.int64)
