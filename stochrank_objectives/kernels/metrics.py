"""Numba kernels for ranking metrics over grouped arrays, with explicit tie policies.

Every cascade metric here has the form (supplement D of the StochasticRank paper)

    M(z) = scale_q * sum_{p < T} w_p * g(r_{s_p}) * prod_{u < p} d(r_{s_u}),

with ``s`` the documents sorted by score (descending), ``w_p`` a position weight (zero from
position ``T`` on), ``g`` the per-document gain and ``d`` the per-document probability of
continuing past it. NDCG/DCG have ``d = 1``; ERR and MRR have ``d = 1 - g``. The per-document
``g`` and ``d`` are precomputed from the labels by the caller (see
``metric_spec.py``), so one kernel serves every metric.

Tie policies (documents with equal scores):

* ``TIE_WORST`` -- less relevant first (the paper's R1, CatBoost's rule);
* ``TIE_BEST`` -- more relevant first;
* ``TIE_INPUT`` -- input order (LightGBM and XGBoost behaviour: a stable sort);
* ``TIE_EXPECTED`` -- the exact mean over all orderings of each tied block; only for additive
  metrics (``d = 1``), where each document in a block of positions ``[a, b)`` gets the mean
  weight ``mean(w[a:b])``.
"""

import numpy as np
from numba import njit, prange

TIE_WORST = 0
TIE_BEST = 1
TIE_INPUT = 2
TIE_EXPECTED = 3


@njit(cache=True, inline="always")
def _tied_block_end(scores, order, start):
    """End (exclusive) of the block of positions from ``start`` on whose scores tie."""
    n = order.shape[0]
    stop = start + 1
    while stop < n and scores[order[stop]] == scores[order[start]]:
        stop += 1
    return stop


@njit(cache=True)
def tie_sorted_order(scores, labels, tie_policy):
    """Positions -> document indices, by score descending, ties resolved by ``tie_policy``.

    For ``TIE_EXPECTED`` the order within a tied block is input order; callers average the
    position weights over the block.
    """
    order = np.argsort(-scores, kind="mergesort")
    if tie_policy == TIE_INPUT or tie_policy == TIE_EXPECTED:
        return order
    n = order.shape[0]
    start = 0
    while start < n:
        stop = _tied_block_end(scores, order, start)
        if stop - start > 1:
            block = order[start:stop].copy()
            key = np.empty(stop - start)
            for j in range(stop - start):
                key[j] = labels[block[j]] if tie_policy == TIE_WORST else -labels[block[j]]
            inner = np.argsort(key, kind="mergesort")
            for j in range(stop - start):
                order[start + j] = block[inner[j]]
        start = stop
    return order


@njit(cache=True)
def cascade_value_sorted(order, gain, cont, pos_weight, top):
    """sum_{p < top} w_p g_{s_p} prod_{u<p} d_{s_u} for a given order (unnormalised)."""
    t = min(top, order.shape[0])
    total = 0.0
    prod = 1.0
    for p in range(t):
        doc = order[p]
        total += pos_weight[p] * gain[doc] * prod
        prod *= cont[doc]
        if prod == 0.0:
            break
    return total


@njit(cache=True)
def expected_additive_value(scores, order, gain, pos_weight, top):
    """Exact mean of an additive metric (d = 1) over all orderings of tied blocks."""
    n = order.shape[0]
    t = min(top, n)
    total = 0.0
    start = 0
    while start < n and start < t:
        stop = _tied_block_end(scores, order, start)
        wsum = 0.0
        for p in range(start, min(stop, t)):
            wsum += pos_weight[p]
        gsum = 0.0
        for p in range(start, stop):
            gsum += gain[order[p]]
        total += wsum * gsum / (stop - start)
        start = stop
    return total


@njit(cache=True)
def ideal_cascade_value(gain, cont, pos_weight, top):
    """Best achievable value: documents by gain descending (optimal for d = 1 - g and d = 1)."""
    order = np.argsort(-gain, kind="mergesort")
    return cascade_value_sorted(order, gain, cont, pos_weight, top)


@njit(cache=True, parallel=True)
def ideal_values(gain, cont, query_offsets, pos_weight, top, query_cutoff):
    """Per-query ideal (maximal) metric value, e.g. IDCG@k for NDCG's normalisation, at the
    cutoff ``top`` or, when ``query_cutoff`` is not empty, at each query's own cutoff (at most
    ``top``: ``pos_weight`` is read below it only)."""
    nq = query_offsets.shape[0] - 1
    out = np.zeros(nq)
    for q in prange(nq):
        lo = query_offsets[q]
        hi = query_offsets[q + 1]
        t = query_cutoff[q] if query_cutoff.shape[0] > 0 else top
        if hi > lo:
            out[q] = ideal_cascade_value(gain[lo:hi], cont[lo:hi], pos_weight, t)
    return out


@njit(cache=True, parallel=True)
def cascade_metric_per_query(scores, labels, gain, cont, query_offsets, pos_weight, top,
                             tie_policy):
    """Per-query raw (unnormalised) cascade metric under a tie policy."""
    nq = query_offsets.shape[0] - 1
    out = np.zeros(nq)
    for q in prange(nq):
        lo = query_offsets[q]
        hi = query_offsets[q + 1]
        if hi == lo:
            continue
        s = scores[lo:hi]
        order = tie_sorted_order(s, labels[lo:hi], tie_policy)
        if tie_policy == TIE_EXPECTED:
            out[q] = expected_additive_value(s, order, gain[lo:hi], pos_weight, top)
        else:
            out[q] = cascade_value_sorted(order, gain[lo:hi], cont[lo:hi], pos_weight, top)
    return out


@njit(cache=True, parallel=True)
def average_precision_per_query(scores, labels, relevant, query_offsets, top, tie_policy):
    """Per-query average precision: mean over relevant documents of precision at their rank.

    Relevant documents ranked at or beyond ``top`` count as retrieved with precision 0
    (trec_eval's ``map_cut`` convention: the divisor is the number of relevant documents).
    """
    nq = query_offsets.shape[0] - 1
    out = np.zeros(nq)
    for q in prange(nq):
        lo = query_offsets[q]
        hi = query_offsets[q + 1]
        n_rel = 0.0
        for i in range(lo, hi):
            n_rel += relevant[i]
        if n_rel == 0.0:
            continue
        order = tie_sorted_order(scores[lo:hi], labels[lo:hi], tie_policy)
        hits = 0.0
        total = 0.0
        for p in range(min(top, hi - lo)):
            if relevant[lo + order[p]] > 0.0:
                hits += 1.0
                total += hits / (p + 1.0)
        out[q] = total / n_rel
    return out
