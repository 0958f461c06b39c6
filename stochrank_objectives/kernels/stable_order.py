"""Stable descending orders of float arrays (ties in input order) for the YetiRank kernels:
:func:`top_order` (the first ``m`` positions, by a heap) and :func:`bucket_order` /
:func:`bucket_order_in_range` (the full order, by a bucket sort into a reusable
:class:`SortWorkspace`); :func:`keep_best` and :func:`sift_down_min`, the sorted buffer
and the min-heap of the best values so far, which the CCS kernels' top-m selection shares.
"""

from typing import NamedTuple

import numpy as np
from numba import njit


@njit(cache=True, inline="always")
def _worse(z, i, j):
    """Whether document ``i`` ranks below ``j``: a smaller ``z``, or an equal one later in the
    input (the stable order)."""
    return z[i] < z[j] or (z[i] == z[j] and i > j)


@njit(cache=True)
def _sift_down(z, heap, pos, size):
    """Restore the heap ``heap[:size]`` (the worst document at the root) below ``pos``."""
    doc = heap[pos]
    while True:
        child = 2 * pos + 1
        if child >= size:
            break
        if child + 1 < size and _worse(z, heap[child + 1], heap[child]):
            child += 1
        if _worse(z, heap[child], doc):
            heap[pos] = heap[child]
            pos = child
        else:
            break
    heap[pos] = doc


@njit(cache=True, inline="always")
def keep_best(keys, order, kept, length, value, doc):
    """Insert ``doc`` by ``value`` into the descending ``keys[:kept]`` (``order`` alike), after
    the values it does not exceed, keeping at most ``length``; returns the new ``kept``, the
    value that dropped out (``-inf`` when none did) and the position ``doc`` took (``length``
    when it was not kept; the entries moved are those between it and the old end)."""
    dropped = -np.inf
    if kept == length:
        if not keys[length - 1] < value:
            return kept, value, length
        dropped = keys[length - 1]
        kept -= 1
    p = kept
    while p > 0 and keys[p - 1] < value:
        keys[p] = keys[p - 1]
        order[p] = order[p - 1]
        p -= 1
    keys[p] = value
    order[p] = doc
    return kept + 1, dropped, p


@njit(cache=True, inline="always")
def sift_down_min(keys, docs, pos, size):
    """Restore the min-heap ``keys[:size]`` of floats (their documents in ``docs``, moved
    alike) below ``pos``: the heap of the best ``m`` values so far, in the CCS kernels' top-m
    selection and YetiLoss's proxy bound."""
    key = keys[pos]
    doc = docs[pos]
    while True:
        child = 2 * pos + 1
        if child >= size:
            break
        if child + 1 < size and keys[child + 1] < keys[child]:
            child += 1
        if keys[child] < key:
            keys[pos] = keys[child]
            docs[pos] = docs[child]
            pos = child
        else:
            break
    keys[pos] = key
    docs[pos] = doc


@njit(cache=True)
def top_order(z, m):
    """The first ``m`` positions of the stable descending order of ``z`` (ties in input order),
    in ``O(n + m log m)`` for a random order: a heap of the ``m`` best so far, then heap sort."""
    heap = np.arange(m)
    for pos in range(m // 2 - 1, -1, -1):
        _sift_down(z, heap, pos, m)
    for i in range(m, z.shape[0]):
        if z[i] > z[heap[0]]:  # i comes after every kept document: a tie ranks it below
            heap[0] = i
            _sift_down(z, heap, 0, m)
    for end in range(m - 1, 0, -1):
        doc = heap[end]
        heap[end] = heap[0]
        heap[0] = doc
        _sift_down(z, heap, 0, end)
    return heap


class SortWorkspace(NamedTuple):
    """Scratch arrays of :func:`bucket_order` for lists of up to ``len(keys)`` documents."""

    order: np.ndarray  # int64, n: the order written
    keys: np.ndarray  # float64, n: the values in that order
    bucket: np.ndarray  # int64, n: each document's bucket
    counts: np.ndarray  # int64, BUCKETS_PER_VALUE n + 1: bucket sizes, then starts


#: buckets per value in :func:`bucket_order`: fewer values share a bucket (noisy scores crowd
#: the middle of their range), so the insertion sort has less to do, while the counting and
#: the prefix sum grow with the count; on the YetiRank benchmark 1, 2, 3, 4 took 1.45, 1.07,
#: 1.00, 0.98 (relative), so 3 (4 gains little for a third more counts)
BUCKETS_PER_VALUE = 3


@njit(cache=True)
def sort_workspace(n):
    """A :class:`SortWorkspace` for lists of up to ``n`` documents."""
    return SortWorkspace(np.empty(n, dtype=np.int64), np.empty(n), np.empty(n, dtype=np.int64),
                         np.empty(BUCKETS_PER_VALUE * n + 1, dtype=np.int64))


#: the largest bucket :func:`bucket_order` insertion-sorts; a larger one means clustered values
#: (e.g. an outlier score), which go to the merge sort instead
MAX_BUCKET = 64


@njit(cache=True)
def bucket_order(z, work):
    """The stable descending order of ``z`` (ties in input order) into ``work.order[:n]``, by a
    bucket sort; returns False (``work`` then undefined) when it does not apply: a span of the
    values that is not finite or too small to scale, or a bucket of more than
    ``MAX_BUCKET`` values.

    ``m = BUCKETS_PER_VALUE n`` buckets of equal width between the largest and the smallest
    value, bucket ``min(floor((max - z) m / span), m - 1)``: monotone in ``z`` (IEEE
    subtraction and multiplication by a positive constant are monotone), so a larger value
    never lands in a later bucket and equal values share one. A counting sort keeps the input
    order within each bucket, and an insertion sort that moves a value only past strictly
    smaller ones sorts the buckets: the result is the unique stable order, the same as a stable
    sort's, in ``O(n)`` expected steps for smooth values (noisy scores) instead of
    ``O(n log n)``. The work is :func:`bucket_order_in_range`'s.
    """
    hi = z[0]
    lo = z[0]
    for i in range(z.shape[0]):
        hi = max(hi, z[i])
        lo = min(lo, z[i])
    return bucket_order_in_range(z, lo, hi, work)


@njit(cache=True, error_model="numpy")
def bucket_order_in_range(z, lo, hi, work):
    """:func:`bucket_order` given ``lo`` and ``hi``, the smallest and the largest value of
    ``z`` (a caller that forms ``z`` gets them in the same pass). ``error_model="numpy"``: the
    one division has a nonzero divisor, and without Numba's zero check the bucket pass is
    vectorised."""
    n = z.shape[0]
    order, keys, bucket, counts = work
    span = hi - lo
    if span == 0.0:  # all equal (or one document): the input order
        for i in range(n):
            order[i] = i
        return True
    if not span < np.inf:
        return False
    m = BUCKETS_PER_VALUE * n
    scale = m / span
    if not scale < np.inf:  # a subnormal span
        return False
    for i in range(n):
        bucket[i] = min(np.int64((hi - z[i]) * scale), m - 1)
    counts[: m + 1] = 0
    crowded = False
    for i in range(n):
        size = counts[bucket[i] + 1] + 1
        counts[bucket[i] + 1] = size
        crowded |= size > MAX_BUCKET
    if crowded:
        return False
    for b in range(m):
        counts[b + 1] += counts[b]
    for i in range(n):  # counting sort: stable within a bucket
        b = bucket[i]
        p = counts[b]
        counts[b] = p + 1
        keys[p] = z[i]
        order[p] = i
    for i in range(1, n):  # insertion sort: values move past strictly smaller ones only
        k = keys[i]
        if keys[i - 1] < k:
            doc = order[i]
            j = i - 1
            while j >= 0 and keys[j] < k:
                keys[j + 1] = keys[j]
                order[j + 1] = order[j]
                j -= 1
            keys[j + 1] = k
            order[j + 1] = doc
    return True
