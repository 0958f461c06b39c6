"""Per-partition seeding: noise that depends on the partitioning, not on the placement.

Both libraries concatenate the partitions a worker holds into one shard and call the objective
once per shard. The one ``SeedSequence([seed, t])`` stream of a single machine would then give
every shard the *same* draws. So, on a worker, :class:`Segmenter` cuts the shard back into the
original partitions (with a :class:`~.layout.QueryLayout`: matched by row count, query count
and digest), and

* :class:`PartitionSGLB` draws the Langevin noise of partition ``p`` at iteration ``t`` from
  :meth:`SGLB.noise <stochrank_objectives.sglb.SGLB.noise>` with ``key=(p,)``, i.e. the stream
  ``SeedSequence([seed, t, p])`` (the law, ``N(0, 2 / (lr T))`` per document, is unchanged);
* :class:`PartitionSeeded` calls an objective with its own ``seed`` parameter (StochasticRank,
  SoftRank, Gumbel, ...) once per partition, as a copy seeded from ``SeedSequence([seed, p])``.

So the noise depends on the partitioning only -- not on which worker holds a partition, nor in
which order. Without a layout the whole shard is one block keyed by its digest (then the noise
also depends on the placement).

Example::

    segmenter = Segmenter(layout)
    sglb = PartitionSGLB.from_sglb(SGLB(0.1, 0.01, 1e4), segmenter)
    grad, hess = sglb.gradient_hessian(PartitionSeeded(objective, segmenter), scores, data,
                                       iteration)
"""

from __future__ import annotations

import copy
import threading
import weakref

import numpy as np

from ...groups import GroupedData
from ...objectives import grouped_grad_hess
from ...sglb import SGLB
from .layout import QueryLayout, partition_digest

__all__ = ["PartitionSGLB"]


class Segmenter:
    """Worker side: the partitions (or the whole shard) of the arrays the adapter passes.

    The adapter hands the objective and the SGLB schedule the same label and offset arrays in
    one iteration, so the cut is computed once and reused while those arrays are unchanged.

    Example::

        for key, row0, row1, labels_p, offsets_p in Segmenter(layout)(labels, offsets): ...

    Args:
      layout: the :class:`~.layout.QueryLayout` of the trained frame, or None (the whole
        shard is one segment keyed by its digest).
    """

    def __init__(self, layout: QueryLayout | None):
        self.layout = layout
        self._entry = None      # (labels, offsets, segments) of the last call: one value
        self.segments = None    # the last segments, for inspection

    def __call__(self, labels, offsets):
        # the cache entry is read once and replaced in one assignment, so concurrent callers
        # with different arrays never return each other's segments
        entry = self._entry
        if entry is None or entry[0] is not labels or entry[1] is not offsets:
            given_offsets = offsets
            offsets = np.asarray(offsets, dtype=np.int64)
            if offsets.size < 2 or offsets[-1] == 0:
                cuts = []  # a shard without rows (a worker holding only empty partitions)
            elif self.layout is None:  # no layout: one segment, keyed by the shard's content
                key = partition_digest(labels, np.diff(offsets))
                cuts = [(key, 0, int(offsets[-1]), 0, offsets.size - 1)]
            else:
                cuts = self.layout.segments(labels, offsets)
            segments = [(key, r0, r1, labels[r0:r1], offsets[q0:q1 + 1] - r0)
                        for key, r0, r1, q0, q1 in cuts]
            entry = self._entry = (labels, given_offsets, segments)
            self.segments = segments
        return entry[2]


class PartitionSGLB(SGLB):
    """:class:`~stochrank_objectives.sglb.SGLB` with noise keyed per partition.

    Same shrinkage, learning rates and noise law; on a worker the noise of iteration ``t`` for
    the rows of partition ``p`` is drawn from ``default_rng(SeedSequence([seed, t, p]))`` (or,
    without a layout, ``[seed, t, *shard digest]``). Outside a worker (no segmenter) it is the
    plain SGLB noise.

    Example::

        sglb = PartitionSGLB.from_sglb(SGLB(learning_rate=0.1, diffusion_temperature=1e4))

    Args:
      learning_rate, model_shrink_rate, diffusion_temperature, seed: as for
        :class:`~stochrank_objectives.sglb.SGLB`.
    """

    def __init__(self, learning_rate: float = 0.1, model_shrink_rate: float = 0.001,
                 diffusion_temperature: float | None = 10000.0, seed: int = 0):
        super().__init__(learning_rate, model_shrink_rate, diffusion_temperature, seed)
        self.segmenter: Segmenter | None = None

    # The segments that grad_hess cut for the noise it then draws: kept per thread, so that
    # trainings sharing this schedule in several threads each draw their own shard's noise.
    _derived_attributes = ("_checked_params", "_thread_state")

    def _thread_local(self) -> threading.local:
        state = self.__dict__.get("_thread_state")
        if state is None:  # setdefault: two threads arriving at once keep one object
            state = self.__dict__.setdefault("_thread_state", threading.local())
        return state

    @property
    def _segments(self):
        return getattr(self._thread_local(), "segments", None)

    @_segments.setter
    def _segments(self, value) -> None:
        self._thread_local().segments = value

    @classmethod
    def from_sglb(cls, sglb: SGLB, segmenter: Segmenter | None = None) -> "PartitionSGLB":
        """The same schedule as ``sglb``, segmenting the shards with ``segmenter``.

        Example::

            shard_sglb = PartitionSGLB.from_sglb(SGLB(0.1, 0.01, 1e4, seed=3), Segmenter(layout))

        Args:
          sglb: the user's schedule (not modified).
          segmenter: the worker's :class:`Segmenter`; None gives the plain SGLB noise.

        Returns:
          A new :class:`PartitionSGLB`.
        """
        new = cls(sglb.learning_rate, sglb.model_shrink_rate, sglb.diffusion_temperature,
                  sglb.seed)
        new.segmenter = segmenter
        return new

    def grad_hess(self, objective, raw_scores, labels, query_offsets, iteration: int,
                  weights=None):
        """:meth:`SGLB.grad_hess` over a shard's loose arrays (a shard without rows may come
        with no offsets at all)."""
        return self.gradient_hessian(objective, raw_scores,
                                     shard_data(labels, query_offsets, weights), iteration)

    def gradient_hessian(self, objective, raw_scores, data, iteration: int):
        """:meth:`SGLB.gradient_hessian`, after cutting this shard (the noise needs its
        segments; the cut is kept while the shard's arrays are the same)."""
        if self.segmenter is not None:
            self._segments = self.segmenter(data.labels, data.query_offsets)
        return super().gradient_hessian(objective, raw_scores, data, iteration)

    def noise(self, n_docs: int, iteration: int, key: tuple[int, ...] = ()) -> np.ndarray:
        """The shard's noise: one :meth:`SGLB.noise` stream per segment, keyed by the segment.

        Args:
          n_docs: the shard's number of documents (must match the segments).
          iteration: the iteration ``t``.
          key: prefix of every segment's key (``()`` on the workers).

        Returns:
          ``n_docs`` draws, in shard order; the plain SGLB noise outside a worker.
        """
        segments = self._segments
        if segments is None or self.diffusion_temperature is None:
            return super().noise(n_docs, iteration, key)
        shard_rows = segments[-1][2] if segments else 0
        if shard_rows != int(n_docs):
            raise RuntimeError(f"noise for {n_docs} documents, the shard has {shard_rows}")
        plain = super().noise  # bound here: zero-argument super() fails in a comprehension
        # The empty draw validates the arguments and keeps the dtype for a shard with no rows.
        draws = [plain(0, iteration, key)]
        draws += [plain(r1 - r0, iteration, (*key, *seg_key)) for seg_key, r0, r1, _, _ in segments]
        return np.concatenate(draws)


def shard_data(labels, query_offsets, weights=None) -> GroupedData:
    """A worker shard's GroupedData from loose arrays; a shard without rows may come with no
    offsets at all (``[]``), which is the shard of no query (``[0]``)."""
    offsets = np.asarray(query_offsets)
    if offsets.size == 0:
        offsets = np.zeros(1, dtype=np.int64)
    return GroupedData(labels, offsets, weights=weights)


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


class PartitionSeeded:
    """Protocol objective on a worker: the wrapped objective, called once per partition of the
    shard with a copy reseeded from ``(seed, partition key)``; results concatenated. (All of
    this package's objectives are sums over queries, so this equals one call on the shard
    except for the noise streams.)"""

    def __init__(self, objective, segmenter: Segmenter):
        self.objective = objective
        self.segmenter = segmenter
        self._copies: dict = {}
        self._partition_entry: tuple | None = None  # (weakref to the shard's data, partitions)

    def __repr__(self) -> str:
        return f"PartitionSeeded({self.objective!r})"

    def grad_hess(self, scores, labels, query_offsets, iteration: int = 0, weights=None):
        """:meth:`gradient_hessian` over loose arrays (checked on every call)."""
        return self.gradient_hessian(scores, shard_data(labels, query_offsets, weights),
                                     iteration)

    def gradient_hessian(self, scores, data: GroupedData, iteration: int = 0):
        """The shard's ``(grad, hess)``: each partition's copy of the objective over the
        partition's rows, concatenated. The partitions' GroupedData are cut from ``data`` once
        per training data (kept while ``data`` is the same object)."""
        scores = np.asarray(scores, dtype=np.float64)
        grads, hesses = [], []
        for obj, r0, r1, part in self._partitions(data):
            g, h = grouped_grad_hess(obj, scores[r0:r1], part, iteration)
            grads.append(np.asarray(g, dtype=np.float64))
            hesses.append(np.asarray(h, dtype=np.float64))
        if not grads:  # a shard without rows has nothing to cut; its gradient is empty too
            if scores.size:
                raise RuntimeError(f"{scores.size} scores for a shard without queries: the "
                                   "booster's labels and query groups disagree")
            return np.zeros(0), np.zeros(0)
        if len(grads) == 1:
            return grads[0], hesses[0]
        return np.concatenate(grads), np.concatenate(hesses)

    def _partitions(self, data: GroupedData) -> list:
        """``[(objective copy, row0, row1, GroupedData), ...]`` of the shard's partitions."""
        entry = self._partition_entry
        if entry is not None and entry[0]() is data:
            return entry[1]
        parts, first_query = [], 0
        for key, r0, r1, seg_labels, seg_offsets in self.segmenter(data.labels,
                                                                   data.query_offsets):
            obj = self._copies.get(key)
            if obj is None:
                obj = self._copies[key] = _reseeded(self.objective, key)
            n_queries = seg_offsets.shape[0] - 1
            seg_weights = (None if data.weights is None
                           else data.weights[first_query:first_query + n_queries])
            first_query += n_queries
            parts.append((obj, r0, r1, GroupedData(seg_labels, seg_offsets, weights=seg_weights)))
        self._partition_entry = (weakref.ref(data), parts)  # one assignment (threads)
        return parts
