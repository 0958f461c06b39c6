"""Shared helpers of the ranking-loss kernels: stable orders, safe sigmoids, DCG discounts.

Orders are stable sorts by score descending (ties keep input order, as LightGBM and XGBoost do);
positions are 0-based in the code (``rank = position + 1`` in the formulas). Every kernel of
:mod:`.pairwise`, :mod:`.smooth_rank` and :mod:`.dcgrr` takes grouped arrays (``query_offsets``
CSR offsets, see ``groups.py``) and loops over queries with ``prange``: each query writes only
its own rows, so the result does not depend on the thread count.
"""

import math

import numpy as np
from numba import njit, prange

LN2 = math.log(2.0)


@njit(cache=True)
def copy_into(dst, src):
    """``dst[i] = src[i]`` for every ``i`` of ``src`` (``dst`` at least as long). A NumPy slice
    assignment ``dst[:] = src`` does the same but compiles NumPy's shape-mismatch message (string
    formatting): about 7 s of the first compile of a kernel chain that uses one."""
    for i in range(src.shape[0]):
        dst[i] = src[i]


@njit(cache=True, inline="always")
def order_desc(s):
    """Positions -> indices: stable sort by score descending (ties keep input order)."""
    return np.argsort(-s, kind="mergesort")


@njit(cache=True, inline="always")
def softplus(x):
    """``log(1 + exp(x))`` without overflow."""
    if x > 0.0:
        return x + math.log1p(math.exp(-x))
    return math.log1p(math.exp(x))


@njit(cache=True, inline="always")
def sigmoid(x):
    """``1 / (1 + exp(-x))`` without overflow."""
    if x >= 0.0:
        return 1.0 / (1.0 + math.exp(-x))
    e = math.exp(x)
    return e / (1.0 + e)


def zeroed_outputs(n_docs, n_queries):
    """Zeroed outputs of a per-query kernel, ``(loss per query, grad, hess per document)``,
    allocated by NumPy for the kernel to write into.

    Not allocated inside the kernels: a large array that Numba allocates comes back from the
    system page by page on every call (a fault per 4 KiB page on its first write: about 2 ms
    per array of a million documents, measured), where NumPy's are reused."""
    return np.zeros(n_queries), np.zeros(n_docs), np.zeros(n_docs)


@njit(cache=True, inline="always")
def query_rows(query_offsets, keep, q):
    """``(lo, hi, active)`` of query ``q``: its rows ``lo:hi`` and whether it has a gradient
    at all (two documents or more and ``keep[q]`` nonzero, e.g. the inverse ideal DCG)."""
    lo = query_offsets[q]
    hi = query_offsets[q + 1]
    return lo, hi, hi - lo >= 2 and keep[q] != 0


@njit(cache=True, inline="always")
def query_cutoff_weights(position_weights, cutoff, query_cutoff, q):
    """``(w, T)`` of query ``q``: the metric's position weights and cutoff or, where the query
    has its own smaller cutoff ``T_q = query_cutoff[q]`` (``query_cutoff`` not empty), ``T_q``
    and the weights zeroed from ``T_q`` on (a copy of length ``T_q + 2``: the kernels read
    ``w_p`` for ``p <= T`` only)."""
    if query_cutoff.shape[0] == 0 or query_cutoff[q] >= cutoff:
        return position_weights, cutoff
    t = query_cutoff[q]
    w = np.zeros(t + 2)
    copy_into(w, position_weights[:t])
    return w, t


@njit(cache=True)
def dcg_discounts(n, top):
    """``1 / log2(p + 2)`` for ``p < top`` (0 from ``top`` on), length ``n + 1``."""
    w = np.zeros(n + 1)
    for p in range(min(n, top)):
        w[p] = 1.0 / math.log2(2.0 + p)
    return w


@njit(cache=True)
def reciprocal_weights(n, top):
    """``1 / (p + 1)`` for ``p < top`` (0 from ``top`` on), length ``n + 1``."""
    w = np.zeros(n + 1)
    for p in range(min(n, top)):
        w[p] = 1.0 / (p + 1.0)
    return w


@njit(cache=True, parallel=True)
def inverse_ideal_dcg(gains, sort_key, query_offsets, discounts, top):
    """Per query ``1 / sum_{p < top} discounts[p] * gain_(p)`` (0 when that sum is 0).

    ``gain_(p)`` is the gain of the document at position ``p`` when the documents are sorted
    by ``sort_key`` descending (the gains themselves, or LightGBM's labels).
    """
    nq = query_offsets.shape[0] - 1
    out = np.zeros(nq)
    for q in prange(nq):
        lo = query_offsets[q]
        hi = query_offsets[q + 1]
        order = order_desc(sort_key[lo:hi])
        total = 0.0
        for p in range(min(hi - lo, top)):
            total += discounts[p] * gains[lo + order[p]]
        if total > 0.0:
            out[q] = 1.0 / total
    return out

