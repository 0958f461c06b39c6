"""The per-row training inputs, checked on the client before any worker trains.

The objectives check their labels and query weights on every call, on each worker's shard. On
Dask that is too late: one worker refuses mid-training, in its own shard's row and query
numbers, while the others wait for it in the boosting library's collectives (LightGBM: the next
fit on the same client could hang or crash a worker). The input builders
(:func:`~.inputs.lightgbm_inputs`, :func:`~.inputs.xgboost_dmatrix`) therefore run
:func:`check_training_inputs` first: one pass over the frame's partitions returns small
per-partition summaries (query runs, the first refused row, whether a weight is positive), and
the client raises with the frame's own row and query numbers (0-based, counted over the whole
frame, as ``df.compute()`` numbers them).

The rules are the package's validators (:func:`~stochrank_objectives.groups.validate_grouped`
for the labels, :func:`~stochrank_objectives.groups.query_weights` for the weights), applied to
each partition; where one refuses, bisection with the same validator (over the partition's
leading queries, then over that query's leading rows) finds the first refused row.

Example::

    sizes = check_training_inputs(df, "qid", "label", "w", layout, "lightgbm_inputs")
"""

from __future__ import annotations

import numpy as np

from ...groups import query_offsets_from_sizes, query_weights, validate_grouped
from .layout import partition_digest
from .partitions import (frame_parts, query_runs, raise_layout, refuse_empty_partitions,
                         split_errors)

__all__ = ["check_training_inputs"]


def _labels_refused(labels) -> bool:
    try:
        validate_grouped(np.zeros(labels.shape[0]), labels, [0, labels.shape[0]])
    except ValueError:
        return True
    return False


def _weights_refused(w, offsets) -> bool:
    """Whether query_weights refuses these rows for a reason of their own: one more query, of
    weight 1, keeps out its refusal of all-zero weights (a property of the whole frame)."""
    try:
        query_weights(np.append(w, 1.0), np.append(offsets, offsets[-1] + 1))
    except ValueError:
        return True
    return False


def _first(refused, n: int) -> int:
    """The smallest ``k`` in ``1..n`` with ``refused(k)`` (which is monotone and true at n)."""
    lo, hi = 1, n
    while lo < hi:
        mid = (lo + hi) // 2
        if refused(mid):
            hi = mid
        else:
            lo = mid + 1
    return lo


def _floats(column):
    """A column as float64, a missing value (``pd.NA``) as NaN; None if it is not numeric."""
    try:
        return column.to_numpy(dtype=np.float64, na_value=np.nan)
    except (TypeError, ValueError):
        return None


def _summary(part, qid, label, weight, with_digest):
    """One partition, on a worker: its query runs and the first row the validators refuse, in
    the partition's own numbers (the client adds the partition's offsets)."""
    qids, sizes = query_runs(part[qid].to_numpy())
    offsets = query_offsets_from_sizes(sizes)
    n = int(offsets[-1])
    out = {"qids": qids, "sizes": sizes, "label": None, "weight": None, "label_type": None,
           "weight_type": None, "positive": False, "digest": None}
    labels = _floats(part[label])
    if labels is None:
        out["label_type"] = str(part[label].dtype)
        return out
    if n and _labels_refused(labels):
        row = _first(lambda k: _labels_refused(labels[:k]), n) - 1
        out["label"] = (row, float(labels[row]))
    if with_digest:
        out["digest"] = partition_digest(labels, sizes)
    if weight is None or n == 0:
        return out
    w = _floats(part[weight])
    if w is None:
        out["weight_type"] = str(part[weight].dtype)
        return out
    if _weights_refused(w, offsets):
        q = _first(lambda k: _weights_refused(w[:offsets[k]], offsets[:k + 1]), sizes.size) - 1
        a, b = int(offsets[q]), int(offsets[q + 1])
        row = a + _first(lambda k: _weights_refused(w[a:a + k], np.array([0, k])), b - a) - 1
        out["weight"] = (q, row, float(w[row]), float(w[a]))
        return out
    try:
        query_weights(w, offsets)
        out["positive"] = True
    except ValueError:   # valid rows: only "every query's weight is 0" is left
        pass
    return out


def _shown(value: float) -> str:
    if np.isnan(value):
        return "NaN"
    if np.isinf(value):
        return "inf" if value > 0 else "-inf"
    return repr(value)


def check_training_inputs(df, qid: str, label: str, weight: str | None, layout, who: str):
    """Check a frame's query partitions, labels and weights before training; return each
    partition's query sizes.

    One ``dask.compute`` of small per-partition summaries (the frame is read once); nothing is
    trained. Raises, in this order: :class:`~.partitions.SplitQueryError` for a query split
    across partitions (without ``layout``); ``ValueError`` naming the layout's partition that
    is not this frame's (with ``layout``), the empty partitions, the first refused label (NaN,
    inf or negative), the first refused weight (NaN, inf, negative, or different within a
    query), weights that are 0 for every query, or 0 for every query of one partition (a
    worker holding only that partition would refuse it mid-training); ``TypeError`` for a
    non-numeric label or weight column. Rows and queries are numbered over the whole frame,
    from 0.

    Example::

        sizes = check_training_inputs(df, "qid", "label", None, None, "xgboost_dmatrix")

    Args:
      df: a dask DataFrame partitioned by query.
      qid, label: its query-id and label columns; weight: its query-weight column, or None.
      layout: the frame's :class:`~.layout.QueryLayout`, or None (then the partitions are
        checked for split queries, as :func:`~.partitions.check_query_partitions` does).
      who: the caller, for the messages.

    Returns:
      One int64 array of query sizes per partition.
    """
    import dask

    parts = frame_parts(df, qid, label, *([weight] if weight is not None else []))
    if layout is not None and layout.npartitions != len(parts):
        raise ValueError(f"the layout has {layout.npartitions} partitions, the frame "
                         f"{len(parts)}: compute it from this frame (query_layout(df, ...))")
    summaries = dask.compute(*[dask.delayed(_summary)(p, qid, label, weight, layout is not None)
                               for p in parts])
    if layout is None:
        raise_layout(*split_errors([(s["qids"], s["sizes"]) for s in summaries]))
    for column, key in ((label, "label_type"), (weight, "weight_type")):
        dtype = next((s[key] for s in summaries if s[key]), None)
        if dtype is not None:
            raise TypeError(f"{who}: column {column!r} must be numeric, got dtype {dtype}")
    if layout is None:
        sizes = [s["sizes"] for s in summaries]
    else:
        for p, s in enumerate(summaries):
            if (not np.array_equal(s["sizes"], layout.sizes[p])
                    or s["digest"] != layout.digests[p]):
                raise ValueError(
                    f"{who}: partition {p} of the frame ({int(s['sizes'].sum())} rows, "
                    f"{s['sizes'].size} queries) does not match the layout's partition {p}: "
                    "pass the layout of this very frame (query_layout(df, qid, label)), "
                    "computed after any repartitioning")
        sizes = layout.sizes
    refuse_empty_partitions(sizes)   # one check, the same message, for both libraries
    numbers = _Numbers(sizes, [s["qids"] for s in summaries])
    for p, s in enumerate(summaries):
        if s["label"] is not None:
            row, value = s["label"]
            raise ValueError(
                f"{who}: label column {label!r} has {_shown(value)} at "
                f"{numbers.row(p, row)}: labels must be finite and non-negative (relevance "
                "grades); fix or drop that query's rows before training")
    if weight is not None:
        _check_weights(summaries, numbers, weight, who)
    return sizes


class _Numbers:
    """The frame's row and query numbers of a partition's rows and queries."""

    def __init__(self, sizes, qids):
        self.offsets = [query_offsets_from_sizes(s) for s in sizes]
        self.rows = np.cumsum([0] + [int(o[-1]) for o in self.offsets])
        self.queries = np.cumsum([0] + [o.size - 1 for o in self.offsets])
        self.qids = qids

    def query(self, p: int, q: int) -> str:
        """``"query Q (rows a..b, qid v)"`` of partition ``p``'s query ``q``."""
        a, b = self.rows[p] + self.offsets[p][q], self.rows[p] + self.offsets[p][q + 1] - 1
        qid = self.qids[p][q]
        qid = qid.item() if hasattr(qid, "item") else qid
        return f"query {self.queries[p] + q} (rows {a}..{b}, qid {qid!r})"

    def row(self, p: int, row: int, q: int | None = None) -> str:
        """``"row R (query Q, rows a..b, qid v)"`` of partition ``p``'s row ``row``."""
        if q is None:
            q = int(np.searchsorted(self.offsets[p], row, side="right")) - 1
        query = self.query(p, q).replace(" (", ", ", 1)
        return f"row {self.rows[p] + row} ({query}"


def _check_weights(summaries, numbers: _Numbers, weight: str, who: str) -> None:
    for p, s in enumerate(summaries):
        if s["weight"] is None:
            continue
        q, row, value, first = s["weight"]
        if np.isfinite(value) and value >= 0:   # refused for differing from the query's first
            first_row = numbers.rows[p] + numbers.offsets[p][q]
            raise ValueError(
                f"{who}: weight column {weight!r} differs within {numbers.query(p, q)}: "
                f"{_shown(first)} at row {first_row}, {_shown(value)} at row "
                f"{numbers.rows[p] + row}; a weight belongs to a whole query: give every row "
                "of a query its query's weight")
        raise ValueError(
            f"{who}: weight column {weight!r} has {_shown(value)} at "
            f"{numbers.row(p, row, q)}: a query weight must be finite and non-negative (0 "
            "leaves the query out); give every row of that query one such weight")
    if not any(s["positive"] for s in summaries):
        raise ValueError(f"{who}: weight column {weight!r} is 0 for every query: nothing would "
                         "be learnt; give at least one query a positive weight")
    for p, s in enumerate(summaries):
        if not s["positive"]:
            raise ValueError(
                f"{who}: weight column {weight!r} is 0 for every query of partition {p} (rows "
                f"{numbers.rows[p]}..{numbers.rows[p + 1] - 1}): a worker holding only that "
                "partition has nothing to learn, and its objective refuses it mid-training; "
                f"drop the queries of weight 0 (df[df[{weight!r}] > 0]: training leaves them "
                "out anyway), then repartition_by_query(df, qid)")
