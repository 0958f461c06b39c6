"""Query-aligned partitions: checks, repartitioning and the per-partition layout.

LightGBM and XGBoost concatenate the Dask partitions a worker holds and take every run of equal
query ids (LightGBM: every ``group`` entry) as one query, so a query cut by a partition boundary
silently becomes two queries. This module finds such cuts (:func:`check_query_partitions`,
:class:`SplitQueryError`) and moves partition boundaries to query starts
(:func:`repartition_by_query`, :func:`rechunk_by_query`); :mod:`.layout` records each
partition's query sizes and digest.

A frame's partitions are always read from the frame itself (:func:`frame_parts`), never from
one of its columns: dask fuses the partitions of a narrow read, so ``df["qid"]`` of a frame
read from 3 parquet files may come in 2 partitions, which would hide a query cut by a file
boundary and misplace every partition bound computed from it.

Example::

    df = repartition_by_query(dd.read_parquet("train/"), "qid").persist()  # whole queries
    sizes = check_query_partitions(df, "qid")   # raises SplitQueryError if a query is split
"""

from __future__ import annotations

import numpy as np
import pandas as pd

__all__ = ["SplitQueryError", "check_query_partitions", "repartition_by_query",
           "rechunk_by_query"]


class SplitQueryError(ValueError):
    """A query's rows lie in more than one partition (or are not contiguous).

    Example::

        ddf = ddf.set_index("qid", sorted=True)  # keeps each query inside one partition

    Args:
      message: which query id was split, and where.
    """


# -- query layout of a partitioned collection -------------------------------------------------
def query_runs(values) -> tuple[np.ndarray, np.ndarray]:
    """Run-length encoding of one partition's query ids: (qid of each run, run lengths)."""
    q = np.asarray(values)
    if q.ndim != 1:
        q = q.ravel()
    if q.size == 0:
        return q[:0], np.zeros(0, dtype=np.int64)
    change = np.empty(q.size, dtype=bool)
    change[0] = True
    change[1:] = q[1:] != q[:-1]
    starts = np.flatnonzero(change)
    return q[starts], np.diff(np.append(starts, q.size)).astype(np.int64)


def frame_parts(df, *columns) -> list:
    """The partitions of a dask DataFrame as delayed pandas frames, cut exactly like ``df``.

    ``columns`` must be columns of ``df`` (KeyError naming the missing one otherwise).
    """
    import dask.dataframe as dd

    if not isinstance(df, dd.DataFrame):
        raise TypeError(f"expected a dask DataFrame, got {type(df).__name__}")
    for col in columns:
        if col is None:
            raise ValueError("pass qid=, the name of the query-id column")
        if col not in df.columns:
            raise KeyError(f"no column {col!r} in the frame (columns: {list(df.columns)})")
    return list(df.to_delayed())


def _column_runs(part, column):
    return query_runs(part[column].to_numpy())


def _layout(data, qid):
    """Per-partition runs of query ids of a frame (+ column), a Series or a 1-d Array."""
    import dask
    import dask.array as da
    import dask.dataframe as dd

    if isinstance(data, dd.DataFrame):
        parts = [dask.delayed(_column_runs)(p, qid) for p in frame_parts(data, qid)]
    elif isinstance(data, dd.Series):
        parts = [dask.delayed(query_runs)(p) for p in data.to_delayed()]
    elif isinstance(data, da.Array):
        if data.ndim != 1:
            raise ValueError(f"a query-id array must be 1-d, got shape {data.shape}")
        parts = [dask.delayed(query_runs)(p) for p in data.to_delayed().ravel()]
    else:
        raise TypeError("expected a dask DataFrame (with qid= a column name), a dask Series or a "
                        f"1-d dask Array of query ids, got {type(data).__name__}")
    return list(dask.compute(*parts))


def split_errors(runs):
    """Messages for queries cut by a boundary and queries whose rows are not contiguous."""
    split, seen, duplicated = [], {}, []
    prev = None  # (partition, qid) of the last run of the last non-empty partition
    for p, (qids, _) in enumerate(runs):
        if qids.size == 0:
            continue
        for j, q in enumerate(qids.tolist()):
            continued = j == 0 and prev is not None and prev[1] == q
            if continued:
                split.append((q, prev[0], p))
                continue
            if q in seen:
                duplicated.append((q, seen[q], p))
            else:
                seen[q] = p
        prev = (p, qids.tolist()[-1])
    return split, duplicated


def raise_layout(split, duplicated, what="partition"):
    if duplicated:
        q, p0, p1 = duplicated[0]
        raise SplitQueryError(
            f"{len(duplicated)} query id(s) occur in non-contiguous blocks of rows, e.g. query "
            f"{q!r} in {what}s {p0} and {p1}: the rows of each query must be contiguous "
            "(sort the data by query first; repartitioning cannot fix this)")
    if split:
        q, p0, p1 = split[0]
        raise SplitQueryError(
            f"{len(split)} query(ies) are split across {what}s, e.g. query {q!r} continues from "
            f"{what} {p0} into {what} {p1}. LightGBM and XGBoost would silently treat the pieces "
            "as separate queries; use stochrank_objectives.adapters.dask.repartition_by_query "
            "(or rechunk_by_query for arrays) first")


def refuse_empty_partitions(sizes, what: str = "frame") -> None:
    """Raise ValueError naming the empty partitions among ``sizes`` (per partition, its query
    sizes), with the fix. Shared by both libraries' input builders and the front ends: a
    worker whose partitions are all empty has no query, which XGBoost answers with a failed
    ring allreduce and LightGBM with an error of its own, neither naming the partition."""
    empty = [p for p, s in enumerate(sizes) if len(s) == 0]
    if empty:
        shown = ", ".join(map(str, empty[:5])) + (", ..." if len(empty) > 5 else "")
        raise ValueError(
            f"{len(empty)} of the {len(sizes)} partitions of the {what} are empty (partition "
            f"{shown}): LightGBM and XGBoost need rows in every partition; use "
            "stochrank_objectives.adapters.dask.repartition_by_query(df, qid) first (it leaves "
            "no partition empty)")


def check_query_partitions(data, qid=None) -> list[np.ndarray]:
    """Check that no query is split across partitions; return each partition's query sizes.

    Example::

        sizes = check_query_partitions(df, "qid")   # [array([12, 8, ...]), ...]

    Args:
      data: a dask DataFrame (then ``qid`` is the query-id column), or a dask Series or 1-d
        dask Array of query ids (chunks = partitions).
      qid: column name, for a DataFrame.

    Returns:
      One int64 array per partition: the number of rows of each query in it, in row order
      (empty for an empty partition). Raises :class:`SplitQueryError` if a query continues
      from one partition into the next, or if a query's rows are not contiguous.
    """
    runs = _layout(data, qid)
    raise_layout(*split_errors(runs))
    return [lengths for _, lengths in runs]


def _global_query_starts(runs):
    """Global row offsets of the query starts (merging queries cut by boundaries)."""
    split, duplicated = split_errors(runs)
    raise_layout([], duplicated)
    starts, row, prev_q = [], 0, None
    have_prev = False
    for qids, lengths in runs:
        for j, (q, n) in enumerate(zip(qids.tolist(), lengths.tolist())):
            if not (j == 0 and have_prev and q == prev_q):
                starts.append(row)
            row += n
        if qids.size:
            prev_q, have_prev = qids.tolist()[-1], True
    return np.asarray(starts + [row], dtype=np.int64)


def _cut_points(query_starts, n_parts: int) -> np.ndarray:
    """Partition bounds at query starts, nearest to an even split into ``n_parts``."""
    total = int(query_starts[-1])
    inner = query_starts[1:-1]
    cuts = []
    for k in range(1, n_parts):
        if inner.size == 0:
            break
        target = total * k / n_parts
        i = int(np.searchsorted(inner, target))
        best = [inner[j] for j in (i - 1, i) if 0 <= j < inner.size]
        cuts.append(int(min(best, key=lambda v: abs(v - target))))
    return np.unique(np.asarray([0, *cuts, total], dtype=np.int64))


def _slice_rows(part, lo: int, hi: int):
    return part.iloc[lo:hi]


def _concat_frames(pieces):
    return pd.concat(pieces) if len(pieces) > 1 else pieces[0]


def repartition_by_query(df, qid: str, npartitions: int | None = None):
    """A dask DataFrame with the same rows, in the same order, and no query split.

    Partition bounds are moved to the query starts nearest to an even split of the rows into
    ``npartitions`` partitions; no partition is empty. The frame is computed once to find the
    bounds (all its columns: see the module note), and the result is lazy (persist it).

    Example::

        df = repartition_by_query(dd.read_parquet("train/"), "qid", npartitions=8).persist()

    Args:
      df: a dask DataFrame whose rows of each query are contiguous (else
        :class:`SplitQueryError`).
      qid: the query-id column.
      npartitions: number of partitions of the result (default: the frame's current number, e.g.
        one per file read).

    Returns:
      A lazy dask DataFrame with the same rows in the same order, cut at query starts.
    """
    import dask
    import dask.dataframe as dd

    if not isinstance(df, dd.DataFrame):
        raise TypeError(f"expected a dask DataFrame, got {type(df).__name__} (for dask arrays "
                        "use rechunk_by_query)")
    if npartitions is not None and int(npartitions) < 1:
        raise ValueError(f"npartitions must be >= 1, got {npartitions}")
    # The query runs and the row slices come from the same parts, so their bounds agree.
    old_parts = frame_parts(df, qid)
    runs = list(dask.compute(*[dask.delayed(_column_runs)(p, qid) for p in old_parts]))
    starts = _global_query_starts(runs)
    if starts[-1] == 0:
        raise ValueError("the frame has no rows")
    bounds = _cut_points(starts, len(old_parts) if npartitions is None else int(npartitions))
    old = np.concatenate([[0], np.cumsum([int(lengths.sum()) for _, lengths in runs])])
    new_parts = []
    for a, b in zip(bounds[:-1], bounds[1:]):
        pieces = []
        for p in range(len(old_parts)):
            lo, hi = max(a, old[p]), min(b, old[p + 1])
            if lo < hi:
                pieces.append(dask.delayed(_slice_rows)(old_parts[p], int(lo - old[p]),
                                                        int(hi - old[p])))
        new_parts.append(dask.delayed(_concat_frames)(pieces))
    return dd.from_delayed(new_parts, meta=df._meta, verify_meta=False)


def rechunk_by_query(qid, *arrays, nchunks: int | None = None):
    """Rechunk a 1-d dask Array of query ids, and arrays with the same rows, by whole queries.

    Example::

        qid, X, y = rechunk_by_query(qid, X, y, nchunks=4)

    Args:
      qid: 1-d dask Array of query ids; the rows of a query must be contiguous.
      arrays: dask Arrays with as many rows as ``qid``.
      nchunks: number of chunks along axis 0 (default: ``qid``'s current number).

    Returns:
      ``(qid, *arrays)`` rechunked along axis 0 at the query starts nearest to an even split
      (other axes in one chunk).
    """
    import dask.array as da

    if not isinstance(qid, da.Array) or qid.ndim != 1:
        raise TypeError("qid must be a 1-d dask Array")
    runs = _layout(qid, None)
    starts = _global_query_starts(runs)
    n = int(starts[-1])
    for i, arr in enumerate(arrays):
        if not isinstance(arr, da.Array) or arr.shape[0] != n:
            raise ValueError(f"arrays[{i}] must be a dask Array with {n} rows")
    n_chunks = qid.numblocks[0] if nchunks is None else int(nchunks)
    chunks = tuple(int(v) for v in np.diff(_cut_points(starts, n_chunks)))
    return (qid.rechunk((chunks,)),
            *[arr.rechunk({0: chunks, **{k: -1 for k in range(1, arr.ndim)}}) for arr in arrays])
