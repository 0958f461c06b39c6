"""Running a serial kernel over the queries on Numba's thread count, one Python thread per
share of the documents.

Why not ``prange``: a parallel kernel holds the machine code of everything it calls three
times (the parallel loop's body, its wrapper and the kernel itself are compiled and optimised
apart, each with its callees linked in), so the parallel loop of the CCS gradient compiled for
about 10 s of the 60 s that StochasticRank's first fit took in a process with an empty cache.
The same loop in a serial kernel compiled with ``nogil=True`` holds its callees once; this
module runs it over contiguous ranges of queries on ``numba.get_num_threads()`` Python threads
(:func:`~stochrank_objectives.kernels.threads_for` lowers that count for small inputs, as it
does for the ``prange`` kernels).

A kernel run here is compiled with ``error_model="numpy"``, as Numba compiles the body of a
``prange`` loop: a division by zero gives inf or NaN instead of a check on every division.
Numba also marks a parallel body's arrays as not aliasing each other, which a serial kernel
cannot ask for: the YetiRank and LambdaMART drivers, whose inner loops vectorise on it, ran
10-30% slower per call as serial kernels, so they stay ``prange`` loops (and compile for
longer); the CCS driver's work is in the kernels it calls, and its speed did not change.

The result does not depend on the split: a kernel run here computes each query in one thread
and writes only that query's rows, so the ranges, the thread count and their timing change
only the speed (the tests compare 1, 2 and 3 threads bit for bit).
"""

from __future__ import annotations

import threading

import numba
import numpy as np

__all__ = ["query_ranges", "thread_count", "over_queries"]


def query_ranges(query_offsets: np.ndarray, n_parts: int) -> list[tuple[int, int]]:
    """At most ``n_parts`` contiguous ``(first query, end query)`` ranges covering every query,
    with about the same number of documents each (a query is never split).

    Example::

        query_ranges(np.array([0, 10, 11, 12, 30]), 2)  # [(0, 3), (3, 4)]: 12 and 18 documents
    """
    n_queries = query_offsets.shape[0] - 1
    n_parts = max(1, min(int(n_parts), n_queries))
    if n_parts == 1:
        return [(0, n_queries)]
    total = int(query_offsets[-1] - query_offsets[0])
    targets = query_offsets[0] + total * np.arange(1, n_parts) / n_parts
    # each cut: the query boundary (1 .. n_queries - 1) nearest to its share of the documents
    above = np.clip(np.searchsorted(query_offsets, targets), 1, n_queries - 1)
    below = np.maximum(above - 1, 1)
    nearer_below = (targets - query_offsets[below]) < (query_offsets[above] - targets)
    cuts = np.where(nearer_below, below, above)
    bounds = np.unique(np.concatenate(([0], cuts, [n_queries])))
    return [(int(lo), int(hi)) for lo, hi in zip(bounds[:-1], bounds[1:]) if hi > lo]


def thread_count() -> int:
    """The threads :func:`over_queries` runs on: Numba's current count (its
    ``NUMBA_NUM_THREADS``, ``numba.set_num_threads``, and :func:`~.threads_for`)."""
    return numba.get_num_threads()


def over_queries(kernel, query_offsets: np.ndarray, *args) -> None:
    """``kernel((first, end), *args)`` for the ranges of :func:`query_ranges` over
    ``numba.get_num_threads()`` threads: the first range in this thread, the others in new
    threads (the kernel must be ``nogil``, and write only its queries' rows). An exception in
    any range is raised here, after every range has finished."""
    ranges = query_ranges(query_offsets, thread_count())
    if len(ranges) == 1:
        kernel(ranges[0], *args)
        return
    errors: list[BaseException] = []

    def run(queries):
        try:
            kernel(queries, *args)
        except BaseException as error:  # raised in the calling thread below
            errors.append(error)

    workers = [threading.Thread(target=run, args=(queries,), daemon=True)
               for queries in ranges[1:]]
    for worker in workers:
        worker.start()
    try:
        kernel(ranges[0], *args)
    finally:
        for worker in workers:
            worker.join()
    if errors:
        raise errors[0]
