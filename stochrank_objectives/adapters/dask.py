"""Dask adapter: train with ``lightgbm.dask`` and ``xgboost.dask`` on data partitioned by query.

No gradient mathematics lives here. The module provides

* partition helpers: :func:`check_query_partitions` (raises :class:`SplitQueryError` if a
  query is cut by a partition boundary -- both boosting libraries would silently treat the
  pieces as two queries) and :func:`repartition_by_query` (moves the boundaries to query
  starts, keeping the row order and balancing the row counts);
* input builders: :func:`lightgbm_inputs` (``X, y, group`` for ``DaskLGBMRanker.fit``, with a
  ``group`` array chunked exactly like the frame's partitions) and :func:`xgboost_dmatrix`
  (a ``DaskDMatrix`` whose ``qid`` is the global query number, non-decreasing on every worker);
* objectives that put :class:`~stochrank_objectives.adapters.lightgbm.LGBMObjective` /
  :class:`~stochrank_objectives.adapters.xgboost.XGBObjective` on the workers:
  :class:`DaskLGBMObjective` and :class:`DaskXGBObjective` (plus :func:`train_xgboost`).

Both libraries need ``pyarrow`` (``dask.dataframe``) and an explicit ``import xgboost.dask``
/ ``lightgbm`` with Dask installed (``pip install stochrank_objectives[dask]``).

LightGBM (``lightgbm.DaskLGBMRanker``)::

    from distributed import Client
    import lightgbm as lgb
    from stochrank_objectives import SGLB, StochasticRank
    from stochrank_objectives.adapters.dask import (DaskLGBMObjective, lightgbm_inputs,
                                                    query_layout, repartition_by_query)

    client = Client("tcp://scheduler:8786")
    # df: a dask DataFrame with columns qid, label and features; the rows of a query contiguous
    df = repartition_by_query(df, "qid").persist()
    layout = query_layout(df, "qid", "label")      # checks; per-partition sizes and digests
    X, y, group = lightgbm_inputs(df, "qid", "label", layout=layout)
    obj = DaskLGBMObjective(StochasticRank(metric="NDCG", top=5), sglb=SGLB(0.1, 0.01, 1e4),
                            layout=layout)
    ranker = lgb.DaskLGBMRanker(objective=obj, n_estimators=100, metric="None", time_out=5)
    ranker.fit(X, y, group=group, callbacks=[obj.callback()])   # the callback is required
    booster = obj.finalize(ranker)     # a lightgbm.Booster; SGLB: c^T baked into the leaves

XGBoost (``xgboost.dask.train`` with ``obj=``)::

    dtrain = xgboost_dmatrix(client, df, "qid", "label", layout=layout)
    out = train_xgboost(client, {"max_depth": 6}, dtrain, 100, StochasticRank(top=5),
                        sglb=SGLB(0.1, 0.01, 1e4), layout=layout)
    booster = out["booster"]           # finalised (F_T) on the workers

``DaskXGBObjective`` is the raw form: ``xgboost.dask.train(client, {**DEFAULT_PARAMS, ...},
dtrain, n, obj=obj, callbacks=[obj.callback()])``.

How it works on the workers. Both libraries concatenate the Dask partitions a worker holds
into one local data set (a *shard*) and call the objective with that shard's labels and query
sizes only. The objective objects shipped to the workers are light, picklable front-ends: at
the start of every training run (the callback's first call) each worker thread builds its own
``LGBMObjective`` / ``XGBObjective`` and drives it with that adapter's own callback, so no state
is shared between workers, also not between in-process workers (``processes=False``).

SGLB and noise in distributed mode. Shrinkage is exactly the single-machine schedule: every
worker sets the same per-tree learning rate ``lr * c^-(t+1)`` and evaluates its objective at
``c^(t+1) * G_t``; the finished model is scaled by ``c^T`` once (LightGBM:
:meth:`DaskLGBMObjective.finalize`; XGBoost: on the workers at the end of training). The
Langevin noise keeps its law (independent ``N(0, 2 / (lr T))`` per document), but the one
``SeedSequence([seed, t])`` stream of a single machine would give every shard the *same*
draws. With a :class:`QueryLayout`, each worker cuts its shard back into the original
partitions (matched by row count, query count and a BLAKE2 digest of labels and query sizes)
and draws the noise of partition ``p`` from ``SeedSequence([seed, t, p])``
(:class:`PartitionSGLB`); an objective with its own ``seed`` parameter (StochasticRank,
SoftRank, Gumbel, ...) is called once per partition, as a copy seeded from
``SeedSequence([seed, p])``. So the noise depends on the partitioning only -- not on which worker
holds a partition, nor in which order. Without a layout the whole shard is one block keyed by
its digest (then the noise also depends on the placement). A run is bit-reproducible when the
placement is fixed too: XGBoost reusing one ``DaskDMatrix`` is; ``lightgbm.dask`` re-places the
parts and re-assigns machine ranks on every ``fit``, which changes the distributed histogram
bins (the trees) even for deterministic objectives.
"""

from __future__ import annotations

import copy
import hashlib
import threading
import uuid

import numpy as np
import pandas as pd
import xgboost as xgb

from ..sglb import SGLB
from .lightgbm import LGBMObjective
from .xgboost import DEFAULT_PARAMS, XGBObjective

__all__ = ["SplitQueryError", "check_query_partitions", "repartition_by_query",
           "rechunk_by_query", "query_layout", "QueryLayout", "lightgbm_inputs",
           "xgboost_dmatrix", "DaskLGBMObjective", "DaskXGBObjective", "train_xgboost",
           "PartitionSGLB", "partition_digest"]


class SplitQueryError(ValueError):
    """A query's rows lie in more than one partition (or are not contiguous)."""


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
    ``npartitions`` (default: the frame's current number) partitions; no partition is empty.
    Only the query-id column is computed to find the bounds; the result is lazy (persist it).
    The rows of each query must already be contiguous (else :class:`SplitQueryError`).
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

    Returns ``(qid, *arrays)`` rechunked along axis 0 at the query starts nearest to an even
    split into ``nchunks`` chunks (default: ``qid``'s current number). Rows of a query must be
    contiguous.
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


# -- inputs for the boosting libraries --------------------------------------------------------
def _features(df, qid, label, features):
    if features is None:
        features = [c for c in df.columns if c not in (qid, label)]
    return list(features)


def _sizes(df, qid, layout):
    if layout is None:
        return check_query_partitions(df, qid)
    if layout.npartitions != df.npartitions:
        raise ValueError(f"the layout has {layout.npartitions} partitions, the frame "
                         f"{df.npartitions}: compute it from this frame")
    return layout.sizes


def lightgbm_inputs(df, qid: str, label: str, features=None, layout=None):
    """``(X, y, group)`` for ``DaskLGBMRanker.fit(X, y, group=group)``.

    Checks the partitions (:func:`check_query_partitions`) and builds ``group``, the query sizes,
    as a dask Array with exactly one chunk per partition of ``df`` (LightGBM pairs the chunks of
    ``group`` with the partitions of ``X``). ``features`` defaults to all other columns;
    ``layout`` (:func:`query_layout` of ``df``) saves the pass over the query ids.
    """
    import dask.array as da

    sizes = _sizes(df, qid, layout)
    if any(s.size == 0 for s in sizes):
        raise ValueError("the frame has empty partitions; use repartition_by_query first")
    group = da.concatenate([da.from_array(s, chunks=(s.size,)) for s in sizes])
    return df[_features(df, qid, label, features)], df[label], group


def _query_numbers(part, first: int):
    _, lengths = _runs(part.to_numpy())
    return pd.Series(np.repeat(np.arange(first, first + lengths.size, dtype=np.int64), lengths),
                     index=part.index, name=part.name)


def xgboost_dmatrix(client, df, qid: str, label: str, features=None, layout=None, **kwargs):
    """An ``xgboost.dask.DaskDMatrix`` with ``qid`` = the global query number (0, 1, ...).

    Checks the partitions first. The original query ids may be any values; XGBoost needs them
    non-decreasing on each worker, which the global numbering (in row order) gives as long as a
    worker concatenates its partitions in order, as ``xgboost.dask`` does. ``layout``: as in
    :func:`lightgbm_inputs`. ``kwargs`` go to ``DaskDMatrix`` (not ``weight``: the objectives
    take none).
    """
    import dask
    import dask.dataframe as dd
    from xgboost import dask as dxgb

    sizes = _sizes(df, qid, layout)
    firsts = np.concatenate([[0], np.cumsum([s.size for s in sizes])])
    parts = df[qid].to_delayed()
    numbers = dd.from_delayed(
        [dask.delayed(_query_numbers)(p, int(f)) for p, f in zip(parts, firsts[:-1])],
        meta=pd.Series(dtype=np.int64, name=qid), verify_meta=False)
    return dxgb.DaskDMatrix(client, df[_features(df, qid, label, features)], df[label],
                            qid=numbers, **kwargs)


# -- per-partition seeding --------------------------------------------------------------------
def partition_digest(labels, query_sizes) -> tuple[int, ...]:
    """Four 32-bit words identifying a block of rows: BLAKE2b of its labels (as float32, the
    precision both libraries hand to the objective) and its query sizes (int64)."""
    h = hashlib.blake2b(digest_size=16)
    h.update(np.ascontiguousarray(labels, dtype=np.float32).tobytes())
    h.update(np.ascontiguousarray(query_sizes, dtype=np.int64).tobytes())
    return tuple(int(v) for v in np.frombuffer(h.digest(), dtype="<u4"))


def _partition_stats(qid_values, label_values):
    qids, lengths = _runs(qid_values)
    return qids, lengths, partition_digest(np.asarray(label_values).ravel(), lengths)


class QueryLayout:
    """Query sizes and content digests of each partition of a frame (see :func:`query_layout`).

    Given to :class:`DaskLGBMObjective` / :class:`DaskXGBObjective` / :func:`train_xgboost`, it
    lets every worker cut its shard back into the original partitions (matched by row count,
    query count and digest), so that noise is keyed by ``(seed, iteration, partition index)``:
    the same whichever worker holds a partition, and in whatever order.
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
        """Cut a worker's shard into partitions: ``[(key, row0, row1, query0, query1), ...]``
        with ``key = (partition index,)``; raises RuntimeError if the shard is not made of
        whole partitions of this layout."""
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
    """Check the partitions of ``df`` (:class:`SplitQueryError` if a query is split) and return
    their :class:`QueryLayout`; one pass over the ``qid`` and ``label`` columns."""
    import dask

    for col in (qid, label):
        if col not in df.columns:
            raise KeyError(f"no column {col!r} in the frame")
    stats = dask.compute(*[dask.delayed(_partition_stats)(q, y) for q, y in
                           zip(df[qid].to_delayed(), df[label].to_delayed())])
    _raise_layout(*_split_errors([(q, n) for q, n, _ in stats]))
    return QueryLayout([n for _, n, _ in stats], [d for _, _, d in stats])


class _Segmenter:
    """Worker side: the partitions (or the whole shard) of the arrays the adapter passes."""

    def __init__(self, layout: QueryLayout | None):
        self.layout = layout
        self._arrays = None
        self.segments = None

    def __call__(self, labels, offsets):
        if self._arrays is None or self._arrays[0] is not labels or self._arrays[1] is not offsets:
            offsets = np.asarray(offsets, dtype=np.int64)
            if self.layout is None:  # no layout: one segment, keyed by the shard's content
                key = partition_digest(labels, np.diff(offsets))
                cuts = [(key, 0, int(offsets[-1]), 0, offsets.size - 1)]
            else:
                cuts = self.layout.segments(labels, offsets)
            self.segments = [(key, r0, r1, labels[r0:r1], offsets[q0:q1 + 1] - r0)
                             for key, r0, r1, q0, q1 in cuts]
            self._arrays = (labels, offsets)
        return self.segments


class PartitionSGLB(SGLB):
    """:class:`~stochrank_objectives.sglb.SGLB` with noise keyed per partition.

    Same shrinkage, learning rates and noise law; on a worker the noise of iteration ``t`` for
    the rows of partition ``p`` is drawn from ``default_rng(SeedSequence([seed, t, p]))`` (or,
    without a layout, ``[seed, t, *shard digest]``). Outside a worker (no segmenter) it is the
    plain SGLB noise.
    """

    def __init__(self, learning_rate: float = 0.1, model_shrink_rate: float = 0.001,
                 diffusion_temperature: float | None = 10000.0, seed: int = 0):
        super().__init__(learning_rate, model_shrink_rate, diffusion_temperature, seed)
        self.segmenter = None
        self._segments = None

    @classmethod
    def from_sglb(cls, sglb: SGLB, segmenter: _Segmenter | None = None) -> "PartitionSGLB":
        new = cls(sglb.learning_rate, sglb.model_shrink_rate, sglb.diffusion_temperature,
                  sglb.seed)
        new.segmenter = segmenter
        return new

    def grad_hess(self, objective, raw_scores, labels, query_offsets, iteration: int):
        if self.segmenter is not None:
            self._segments = self.segmenter(labels, query_offsets)
        return super().grad_hess(objective, raw_scores, labels, query_offsets, iteration)

    def noise(self, n_docs: int, iteration: int) -> np.ndarray:
        base = super().noise(0, iteration)  # validates; zeros without noise
        segments = self._segments
        if segments is None or self.diffusion_temperature is None:
            return super().noise(n_docs, iteration)
        if segments and segments[-1][2] != int(n_docs):
            raise RuntimeError(f"noise for {n_docs} documents, the shard has {segments[-1][2]}")
        draws = [base]
        for key, r0, r1, _, _ in segments:
            rng = np.random.default_rng(np.random.SeedSequence([self.seed, int(iteration), *key]))
            draws.append(self.noise_std * rng.standard_normal(r1 - r0))
        return np.concatenate(draws)


def _reseeded(objective, key):
    """A copy of ``objective`` with ``seed`` derived from ``(seed, *key)``, if it has a seed."""
    get_params = getattr(objective, "get_params", None)
    params = get_params() if callable(get_params) else {}
    if "seed" not in params or not callable(getattr(objective, "set_params", None)):
        return objective
    seed = int(np.random.SeedSequence([int(params["seed"]), *key]).generate_state(1)[0])
    new = copy.deepcopy(objective)
    new.set_params(seed=seed)
    return new


class _PartitionSeeded:
    """Protocol objective on a worker: the wrapped objective, called once per partition of the
    shard with a copy reseeded from ``(seed, partition key)``; results concatenated. (All of
    this package's objectives are sums over queries, so this equals one call on the shard
    except for the noise streams.)"""

    def __init__(self, objective, segmenter: _Segmenter):
        self.objective = objective
        self.segmenter = segmenter
        self._copies = {}

    def __repr__(self) -> str:
        return f"_PartitionSeeded({self.objective!r})"

    def grad_hess(self, scores, labels, query_offsets, iteration: int = 0):
        scores = np.asarray(scores, dtype=np.float64)
        grads, hesses = [], []
        for key, r0, r1, seg_labels, seg_offsets in self.segmenter(labels, query_offsets):
            obj = self._copies.get(key)
            if obj is None:
                obj = self._copies[key] = _reseeded(self.objective, key)
            g, h = obj.grad_hess(scores[r0:r1], seg_labels, seg_offsets, iteration=iteration)
            grads.append(np.asarray(g, dtype=np.float64))
            hesses.append(np.asarray(h, dtype=np.float64))
        if len(grads) == 1:
            return grads[0], hesses[0]
        return np.concatenate(grads), np.concatenate(hesses)


# -- objectives shipped to the workers --------------------------------------------------------
_LOCAL = threading.local()


def _thread_runs() -> dict:
    runs = getattr(_LOCAL, "runs", None)
    if runs is None:
        runs = _LOCAL.runs = {}
    return runs


class _DaskFrontEnd:
    """Picklable front-end; the real adapter lives per worker thread, per training run."""

    _adapter_type = None
    _name = ""

    def __init__(self, objective, sglb: SGLB | None = None, layout: QueryLayout | None = None):
        self._adapter_type(objective, sglb=sglb)  # validates both
        if layout is not None and not isinstance(layout, QueryLayout):
            raise TypeError(f"layout must be a QueryLayout or None, got {type(layout).__name__}")
        self.objective = objective
        self.sglb = sglb
        self.layout = layout
        self._token = uuid.uuid4().hex

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.objective!r}, sglb={self.sglb!r})"

    def _start(self):
        segmenter = _Segmenter(self.layout)
        sglb = None if self.sglb is None else PartitionSGLB.from_sglb(self.sglb, segmenter)
        adapter = self._adapter_type(_PartitionSeeded(copy.deepcopy(self.objective), segmenter),
                                     sglb=sglb)
        runs = _thread_runs()
        runs.clear()  # one run per worker thread at a time; drop finished ones
        runs[self._token] = (adapter, adapter.callback())
        return runs[self._token]

    def _state(self):
        state = _thread_runs().get(self._token)
        if state is None:
            raise RuntimeError(f"{type(self).__name__} needs its callback on the workers: pass "
                               f"{self._name}")
        return state

    def _stop(self):
        return _thread_runs().pop(self._token, None)


class DaskLGBMObjective(_DaskFrontEnd):
    """Custom objective for ``lightgbm.DaskLGBMRanker(objective=...)``.

    Pass ``callbacks=[obj.callback()]`` to ``fit`` (always, not only with SGLB): it starts a
    fresh :class:`~stochrank_objectives.adapters.lightgbm.LGBMObjective` on every worker for
    every run and sets the iteration (and the SGLB learning rate). After training with SGLB,
    call :meth:`finalize` on the returned model. See the module docstring for seeding.
    """

    _adapter_type = LGBMObjective
    _name = "DaskLGBMRanker(...).fit(..., callbacks=[obj.callback()])"

    def __call__(self, y_true, y_pred, weight, group):
        return self._state()[0](y_true, y_pred, weight, group)

    def _start(self):
        state = super()._start()
        state[0]._hub.token = self._token  # the workers mark the booster as this front end's
        return state

    def callback(self):
        return _DaskLGBMCallback(self)

    def finalize(self, model):
        """Bake ``c^T`` into the leaves of a trained ``DaskLGBMRanker``/Booster; returns the
        ``lightgbm.Booster`` (unchanged without SGLB). Like ``LGBMObjective.finalize``, it
        refuses a model this front end did not train (e.g. one reloaded from a file)."""
        adapter = LGBMObjective(self.objective, sglb=self.sglb)
        adapter._hub.token = self._token
        return adapter.finalize(model)


class _DaskLGBMCallback:
    def __init__(self, front: DaskLGBMObjective):
        self.order = 10
        self.before_iteration = True
        self.front = front

    def __call__(self, env) -> None:
        if env.iteration == env.begin_iteration:
            state = self.front._start()
        else:
            state = self.front._state()
        state[1](env)


class DaskXGBObjective(_DaskFrontEnd):
    """Custom objective for ``xgboost.dask.train(..., obj=obj, callbacks=[obj.callback()])``.

    The callback is required; with SGLB it returns the finalised booster (``F_T``) from the
    workers. :func:`train_xgboost` does all of this. Use ``DEFAULT_PARAMS`` (``base_score=0``).
    """

    _adapter_type = XGBObjective
    _name = "xgboost.dask.train(..., obj=obj, callbacks=[obj.callback()])"

    def __call__(self, predt, dtrain):
        return self._state()[0](predt, dtrain)

    def callback(self) -> xgb.callback.TrainingCallback:
        return _DaskXGBCallback(self)


class _DaskXGBCallback(xgb.callback.TrainingCallback):
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
                  **kwargs) -> dict:
    """``xgboost.dask.train`` with one of this package's objectives.

    ``params`` are merged over ``DEFAULT_PARAMS``; with ``sglb`` the learning rate is
    ``sglb.learning_rate``. Returns ``xgboost.dask.train``'s dict (``booster``, ``history``);
    with SGLB the booster is already finalised. ``kwargs`` go to ``xgboost.dask.train``
    (``evals``, ``custom_metric``, ...).
    """
    from xgboost import dask as dxgb

    for bad in ("objective", "obj"):
        if bad in params:
            raise ValueError(f"{bad!r} cannot be an XGBoost parameter here; pass objective")
    params = {**DEFAULT_PARAMS, **params}
    if sglb is not None:
        sglb.check_iterations(int(num_boost_round), np.float32)
        params["learning_rate"] = sglb.learning_rate
    obj = DaskXGBObjective(objective, sglb=sglb, layout=layout)
    return dxgb.train(client, params, dtrain, num_boost_round, obj=obj,
                      callbacks=[obj.callback(), *(callbacks or [])], **kwargs)
