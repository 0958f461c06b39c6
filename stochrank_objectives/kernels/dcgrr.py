"""StochasticRank kernels for the learning-to-select-with-order loss DCG-RR.

Documents keep their input order and a score ``z_i > 0`` shows document ``i``; see
:class:`stochrank_objectives.objectives.dcgrr.StochasticRankDCGRR` for the estimator.
"""

import math

import numpy as np
from numba import njit, prange

from .common import zeroed_outputs
from .rng import fill_noise_row, noise_rows

INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)


@njit(cache=True, inline="always")
def _dcgrr_query_ccs(z, r, y, sigma, out, prefix, s0, s1):
    """Adds one sample's CCS gradient of ``-DCG-RR`` for one query to ``out``.

    ``y``: the noisy scores; ``b_j = 1{y_j > 0}``. For document ``i`` (others fixed) the loss is
    ``const + J_i 1{x_i > 0}`` with ``J_i = -(r_i / (1 + c_i) - T_i)``, ``c_i`` the number of
    included documents before ``i`` and ``T_i = sum_{j > i, b_j} r_j / ((1 + c'_j)(2 + c'_j))``
    the loss of the later included documents pushed down one rank (``c'_j`` counts the included
    documents before ``j`` other than ``i``). The estimate is ``J_i phi(z_i / sigma) / sigma``.
    """
    n = z.shape[0]
    cnt = 0
    for j in range(n):
        prefix[j] = cnt
        if y[j] > 0.0:
            cnt += 1
    acc0 = 0.0
    acc1 = 0.0
    for j in range(n - 1, -1, -1):
        s0[j] = acc0  # sum over later included docs, counts including doc j's own inclusion
        s1[j] = acc1  # the same with one included document fewer before them
        if y[j] > 0.0:
            c = prefix[j]
            acc0 += r[j] / ((1.0 + c) * (2.0 + c))
            if c >= 1:
                acc1 += r[j] / (c * (1.0 + c))
    for i in range(n):
        if y[i] > 0.0:
            tail = s1[i]  # i included: later counts drop by one without i
        else:
            tail = s0[i]
        jump = -(r[i] / (1.0 + prefix[i]) - tail)
        x = z[i] / sigma
        out[i] += jump * INV_SQRT_2PI * math.exp(-0.5 * x * x) / sigma



def dcgrr_ccs(scores, labels, query_offsets, sigma, noise, n_samples, seed, iteration):
    """CCS gradient of ``-E DCG-RR(z + sigma e)``, averaged over the noise draws.

    Example::

        dcgrr_ccs(z, r, offs, 0.5, np.empty((0, 0)), 4, seed, t)  # seeded streams
        dcgrr_ccs(z, r, offs, 0.5, draw_noise(offs, 4, seed, t), 0, 0, 0)  # the same numbers

    Source: Ustimenko & Prokhorenkova (2020), supplement C.3.

    Args:
      scores, labels, query_offsets: grouped arrays (labels are the relevances).
      sigma: noise scale (> 0).
      noise: explicit unit normals ``(n_samples, n_docs)``; an empty array (``noise.size ==
        0``) means draw query ``q``, sample ``k`` from the stream ``stream_key(seed, iteration,
        q, k)`` -- the normals of ``draw_grouped_normals``, so both paths agree bit for bit.
      n_samples, seed, iteration: the seeded draws (ignored with explicit noise, whose rows
        are the draws).

    Returns:
      float64 array: the gradient of the loss per document.
    """
    _, grad, _ = zeroed_outputs(scores.shape[0], 0)
    _dcgrr_ccs_into(scores, labels, query_offsets, sigma, noise, n_samples, seed, iteration, grad)
    return grad


@njit(cache=True, parallel=True)
def _dcgrr_ccs_into(scores, labels, query_offsets, sigma, noise, n_samples, seed, iteration,
                    grad):
    """:func:`dcgrr_ccs` into the zeroed ``grad`` its caller allocates
    (:func:`~.common.zeroed_outputs`)."""
    n_samples = noise_rows(noise, n_samples)
    for q in prange(query_offsets.shape[0] - 1):
        lo = query_offsets[q]
        n = query_offsets[q + 1] - lo
        if n == 0:
            continue
        e = np.empty(n)
        y = np.empty(n)
        prefix = np.empty(n, dtype=np.int64)
        s0 = np.empty(n)
        s1 = np.empty(n)
        out = np.zeros(n)
        for k in range(n_samples):
            fill_noise_row(noise, k, lo, seed, iteration, q, e)
            for i in range(n):
                y[i] = scores[lo + i] + sigma * e[i]
            _dcgrr_query_ccs(scores[lo:lo + n], labels[lo:lo + n], y, sigma, out, prefix, s0, s1)
        for i in range(n):
            grad[lo + i] = out[i] / n_samples


@njit(cache=True, parallel=True)
def dcgrr_values(scores, labels, query_offsets):
    """Per query ``DCG-RR = sum_i r_i 1{z_i > 0} / (1 + sum_{j < i} 1{z_j > 0})``."""
    nq = query_offsets.shape[0] - 1
    out = np.zeros(nq)
    for q in prange(nq):
        cnt = 0
        total = 0.0
        for i in range(query_offsets[q], query_offsets[q + 1]):
            if scores[i] > 0.0:
                cnt += 1
                total += labels[i] / cnt
        out[q] = total
    return out
