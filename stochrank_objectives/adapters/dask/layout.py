"""Each partition's query sizes and content digest: :class:`QueryLayout`, :func:`query_layout`.

A worker concatenates the partitions it holds into one shard; the layout lets it cut the shard
back into the original partitions (matched by row count, query count and digest), so that the
noise is keyed per partition (see :mod:`.seeding`).

Example::

    layout = query_layout(df, "qid", "label")   # raises SplitQueryError if a query is split
    layout.npartitions                           # == the frame's number of partitions
"""

from __future__ import annotations

import hashlib

import numpy as np

from .partitions import frame_parts, raise_layout, query_runs, split_errors

__all__ = ["partition_digest", "QueryLayout", "query_layout"]


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


def _partition_stats(part, qid, label):
    qids, lengths = query_runs(part[qid].to_numpy())
    return qids, lengths, partition_digest(part[label].to_numpy(), lengths)


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

    One pass over the frame's own partitions (not its fused column reads, see
    :mod:`.partitions`); pass the result to the input builders (it saves them another pass) and
    to the objectives (it keys the noise per partition).

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

    stats = dask.compute(*[dask.delayed(_partition_stats)(p, qid, label)
                           for p in frame_parts(df, qid, label)])
    raise_layout(*split_errors([(q, n) for q, n, _ in stats]))
    return QueryLayout([n for _, n, _ in stats], [d for _, _, d in stats])
