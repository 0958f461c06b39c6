"""Query-aligned partitions: checks, repartitioning and the per-partition layout.

LightGBM and XGBoost concatenate the Dask partitions a worker holds and take every run of equal
query ids (LightGBM: every ``group`` entry) as one query, so a query cut by a partition boundary
silently becomes two queries. This module finds such cuts (:func:`check_query_partitions`,
:class:`SplitQueryError`), moves partition boundaries to query starts
(:func:`repartition_by_query`, :func:`rechunk_by_query`) and records each partition's query sizes
and a content digest (:func:`query_layout`, :class:`QueryLayout`), which lets a worker cut its
shard back into the original partitions (see :mod:`.seeding`).

Example::

    df = repartition_by_query(df, "qid").persist()   # whole queries in every partition
    layout = query_layout(df, "qid", "label")        # raises SplitQueryError otherwise
"""

from __future__ import annotations

import hashlib

import numpy as np
import pandas as pd

__all__ = ["SplitQueryError", "check_query_partitions", "repartition_by_query",
           "rechunk_by_query", "partition_digest", "QueryLayout", "query_layout"]


class SplitQueryError(ValueError):
    """A query's rows lie in more than one partition (or are not contiguous).

    Example::

        ddf = ddf.set_index("qid", sorted=True)  # keeps each query inside one partition

    Args:
      message: which query id was split, and where.
    """


# -- query layout of a partitioned collection -------------------------------------------------
def _runs(values) -> tuple[np.ndarray, np.ndarray]:
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


def _qid_parts(data, qid):
    """Delayed per-partition qid values of a dask DataFrame + column, Series or 1-d Array."""
    import dask.array as da
    import dask.dataframe as dd

    if isinstance(data, dd.DataFrame):
        if qid is None:
            raise ValueError("pass qid=, the name of the query-id column")
        if qid not in data.columns:
            raise KeyError(f"no column {qid!r} in the frame (columns: {list(data.columns)})")
        return data[qid].to_delayed()
    if isinstance(data, dd.Series):
        return data.to_delayed()
    if isinstance(data, da.Array):
        if data.ndim != 1:
            raise ValueError(f"a query-id array must be 1-d, got shape {data.shape}")
        return list(data.to_delayed().ravel())
    raise TypeError("expected a dask DataFrame (with qid= a column name), a dask Series or a 1-d "
                    f"dask Array of query ids, got {type(data).__name__}")


def _layout(data, qid):
    """Per-partition runs, computed in one pass over the qid column only."""
    import dask

    parts = _qid_parts(data, qid)
    return list(dask.compute(*[dask.delayed(_runs)(p) for p in parts]))


def _split_errors(runs):
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


def _raise_layout(split, duplicated, what="partition"):
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
    _raise_layout(*_split_errors(runs))
    return [lengths for _, lengths in runs]


def _global_query_starts(runs):
    """Global row offsets of the query starts (merging queries cut by boundaries)."""
    split, duplicated = _split_errors(runs)
    _raise_layout([], duplicated)
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
    ``npartitions`` partitions; no partition is empty. Only the query-id column is computed to
    find the bounds; the result is lazy (persist it).

    Example::

        df = repartition_by_query(dd.read_parquet("train/"), "qid", npartitions=8).persist()

    Args:
      df: a dask DataFrame whose rows of each query are contiguous (else
        :class:`SplitQueryError`).
      qid: the query-id column.
      npartitions: number of partitions of the result (default: the frame's current number).

    Returns:
      A lazy dask DataFrame with the same rows in the same order, cut at query starts.
    """
    import dask
    import dask.dataframe as dd

    if not isinstance(df, dd.DataFrame):
        raise TypeError(f"expected a dask DataFrame, got {type(df).__name__} (for dask arrays "
                        "use rechunk_by_query)")
    n_parts = df.npartitions if npartitions is None else int(npartitions)
    if n_parts < 1:
        raise ValueError(f"npartitions must be >= 1, got {npartitions}")
    runs = _layout(df, qid)
    starts = _global_query_starts(runs)
    if starts[-1] == 0:
        raise ValueError("the frame has no rows")
    bounds = _cut_points(starts, n_parts)
    old = np.concatenate([[0], np.cumsum([int(lengths.sum()) for _, lengths in runs])])
    old_parts = df.to_delayed()
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


# -- layout: query sizes and content digest of every partition ---------------------------------
def partition_digest(labels, query_sizes) -> tuple[int, ...]:
    """Four 32-bit words identifying a block of rows by its content.

    The labels are hashed as float32 because that is the precision both libraries hand to the
    objective on the workers, so the driver's digest matches the worker's.

    Example::

        key = partition_digest(np.array([0.0, 1.0, 2.0]), np.array([3]))   # (w0, w1, w2, w3)

    Args:
      labels: the block's labels.
      query_sizes: the block's query sizes, in row order.

    Returns:
      A tuple of four non-negative ints: BLAKE2b (16 bytes) of the labels and the sizes (int64).
    """
    h = hashlib.blake2b(digest_size=16)
    h.update(np.ascontiguousarray(labels, dtype=np.float32).tobytes())
    h.update(np.ascontiguousarray(query_sizes, dtype=np.int64).tobytes())
    return tuple(int(v) for v in np.frombuffer(h.digest(), dtype="<u4"))


def _partition_stats(qid_values, label_values):
    qids, lengths = _runs(qid_values)
    return qids, lengths, partition_digest(np.asarray(label_values).ravel(), lengths)


class QueryLayout:
    """Query sizes and content digests of each partition of a frame (see :func:`query_layout`).

    Given to ``DaskLGBMObjective`` / ``DaskXGBObjective`` / ``train_xgboost``, it lets every
    worker cut its shard back into the original partitions (matched by row count, query count
    and digest), so that noise is keyed by ``(seed, iteration, partition index)``: the same
    whichever worker holds a partition, and in whatever order.

    Example::

        layout = QueryLayout([np.array([3, 2])], [partition_digest(labels, [3, 2])])

    Args:
      sizes: per partition, its query sizes in row order.
      digests: per partition, its :func:`partition_digest`.
    """

    def __init__(self, sizes, digests):
        self.sizes = [np.asarray(s, dtype=np.int64) for s in sizes]
        self.digests = [tuple(int(v) for v in d) for d in digests]
        if len(self.sizes) != len(self.digests):
            raise ValueError("one digest per partition is needed")

    @property
    def npartitions(self) -> int:
        return len(self.sizes)

    def __repr__(self) -> str:
        rows = [int(s.sum()) for s in self.sizes]
        return (f"QueryLayout(npartitions={self.npartitions}, rows={rows[:8]}"
                f"{'...' if len(rows) > 8 else ''})")

    def segments(self, labels, query_offsets) -> list[tuple]:
        """Cut a worker's shard into the partitions of this layout.

        The workers concatenate their partitions in an order of their own, so each partition
        is found by its shape and digest, not by its position.

        Example::

            for key, row0, row1, query0, query1 in layout.segments(labels, offsets): ...

        Args:
          labels: the shard's labels.
          query_offsets: the shard's query offsets (``0, ..., n_rows``).

        Returns:
          ``[(key, row0, row1, query0, query1), ...]`` in shard order, with
          ``key = (partition index,)``. Raises RuntimeError if the shard is not made of whole
          partitions of this layout.
        """
        offsets = np.asarray(query_offsets, dtype=np.int64)
        n_queries = offsets.size - 1
        shape = [(int(s.sum()), s.size) for s in self.sizes]
        used, segments, q = set(), [], 0
        while q < n_queries:
            row = int(offsets[q])
            match = None
            for p, (n_rows, n_q) in enumerate(shape):
                if p in used or n_q == 0 or q + n_q > n_queries:
                    continue
                if int(offsets[q + n_q]) - row != n_rows:
                    continue
                local = np.diff(offsets[q:q + n_q + 1])
                if partition_digest(labels[row:row + n_rows], local) == self.digests[p]:
                    match = p
                    break
            if match is None:
                raise RuntimeError(
                    f"rows {row}.. of a worker's training data (query {q} of {n_queries}) match no "
                    "partition of the QueryLayout: pass the layout of the very frame you train "
                    "on (query_layout(df, qid, label)), after any repartitioning")
            used.add(match)
            n_q = shape[match][1]
            segments.append(((match,), row, row + shape[match][0], q, q + n_q))
            q += n_q
        if n_queries and int(offsets[-1]) != segments[-1][2]:
            raise RuntimeError("the worker's query offsets do not cover its rows")
        return segments


def query_layout(df, qid: str, label: str) -> QueryLayout:
    """Check the partitions of ``df`` and return their :class:`QueryLayout`.

    One pass over the ``qid`` and ``label`` columns; pass the result to the input builders (it
    saves them another pass) and to the objectives (it keys the noise per partition).

    Example::

        layout = query_layout(df, "qid", "label")

    Args:
      df: a dask DataFrame, partitioned as it will be trained on (after any repartitioning).
      qid: the query-id column.
      label: the label column.

    Returns:
      The :class:`QueryLayout`. Raises :class:`SplitQueryError` if a query is split across
      partitions or its rows are not contiguous.
    """
    import dask

    for col in (qid, label):
        if col not in df.columns:
            raise KeyError(f"no column {col!r} in the frame")
    stats = dask.compute(*[dask.delayed(_partition_stats)(q, y) for q, y in
                           zip(df[qid].to_delayed(), df[label].to_delayed())])
    _raise_layout(*_split_errors([(q, n) for q, n, _ in stats]))
    return QueryLayout([n for _, n, _ in stats], [d for _, _, d in stats])
