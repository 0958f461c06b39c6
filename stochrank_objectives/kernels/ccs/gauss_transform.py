"""Numba kernels: one-sided Gauss transforms in O(n K) by Hermite expansion of boxes.

The CCS sums of a full-list loss (:mod:`stochrank_objectives.kernels.ccs`) are, for every
document at position ``p`` of the sampled order with conditional mean ``m_p``, sums over the
breakpoints above it (``u < p``) or below it (``u > p``) of affine weights times a Gaussian
kernel::

    up_w(p)   = sum_{u < p} w_u exp(-(y_u - m_p)^2 / (2 s^2)),
    down_w(p) = sum_{u > p} w_u exp(-(y_u - m_p)^2 / (2 s^2)),

``y`` descending. Summed directly that is ``O(n^2)`` once the window of ``window * s`` around
``m_p`` holds most of the query. Here the sorted sources are cut into boxes of width
``h = box_width * s`` (consecutive positions, so a box is a range of ``u``), each with centre
``c``. With ``t = (y - c) / (s sqrt 2)`` and ``tau = (m - c) / (s sqrt 2)`` the generating
function of the (physicists') Hermite polynomials gives

    exp(-(tau - t)^2) = sum_{k >= 0} t^k / k! * h_k(tau),    h_k(tau) = H_k(tau) exp(-tau^2),

so a box contributes ``sum_{k < K} M_k h_k(tau)`` with moments ``M_k = sum_u w_u t_u^k / k!``
(Greengard & Strain's fast Gauss transform, 1991, in one dimension). A target's own box is
split at its position by prefix moments, accumulated while the targets are swept in order, so
the one-sided sums cost ``O(K)`` per box in the window: ``O(n K (2 window / box_width + 3))``
for the query, memory ``O(n_boxes K)``.

Error bound. Cramer's inequality ``|H_k(x)| exp(-x^2/2) <= 1.086435 * 2^(k/2) sqrt(k!)`` and
``|t| <= box_width / (2 sqrt 2)`` bound the tail of each source's series by

    eps(K, b) = 1.086435 * rho^K / sqrt(K!) / (1 - rho / sqrt(K + 1)),   rho = b / 2 < sqrt(K+1),

uniformly in ``tau`` (:func:`truncation_bound`): every computed sum differs from the exact one
over the same sources by at most ``eps * sum |w_u|``. Boxes entirely outside the window are
skipped like the direct kernel's breakpoints (each skipped term is below ``phi(window)`` of its
weight). The defaults ``K = 24``, ``b = 2`` give ``eps = 1.7e-12``.
"""

import math

import numpy as np
from numba import njit

from .gaussian import FASTMATH

INV_SQRT2 = 1.0 / math.sqrt(2.0)
CRAMER_CONSTANT = 1.086435

#: Terms of each box's Hermite series and box width in conditional standard deviations.
DEFAULT_TERMS = 24
DEFAULT_BOX_WIDTH = 2.0


def truncation_bound(n_terms: int = DEFAULT_TERMS, box_width: float = DEFAULT_BOX_WIDTH) -> float:
    """``eps``: the largest error of each computed sum per unit of ``sum |w_u|`` (module doc)."""
    rho = box_width / 2.0
    if rho >= math.sqrt(n_terms + 1.0):
        raise ValueError(f"box_width={box_width} is too wide for n_terms={n_terms}: the bound "
                         "needs box_width / 2 < sqrt(n_terms + 1)")
    log_tail = n_terms * math.log(rho) - 0.5 * math.lgamma(n_terms + 1.0) if rho > 0 else -math.inf
    return CRAMER_CONSTANT * math.exp(log_tail) / (1.0 - rho / math.sqrt(n_terms + 1.0))


@njit(cache=True, inline="always")
def _box_end(ys, u, n_src, width):
    """End (exclusive) of the box that starts at source ``u``: the sources within ``width``
    below ``ys[u]`` (descending ``ys``)."""
    top = ys[u]
    u += 1
    while u < n_src and top - ys[u] <= width:
        u += 1
    return u


@njit(cache=True)
def count_boxes(ys, n_src, width, limit):
    """Number of boxes of width ``width`` that cover the descending ``ys[:n_src]``, counted up
    to ``limit`` (a caller that only compares it with ``limit`` stops there)."""
    n_boxes = 0
    u = 0
    while u < n_src and n_boxes < limit:
        u = _box_end(ys, u, n_src, width)
        n_boxes += 1
    return n_boxes


@njit(cache=True, inline="always", fastmath=FASTMATH)
def hermite_functions(tau, out):
    """``out[k] = H_k(tau) exp(-tau^2)`` by the three-term recurrence (stable forward)."""
    n_terms = out.shape[0]
    h_prev = math.exp(-tau * tau)
    out[0] = h_prev
    if n_terms == 1:
        return
    h = 2.0 * tau * h_prev
    out[1] = h
    for k in range(1, n_terms - 1):
        h_next = 2.0 * tau * h - 2.0 * k * h_prev
        out[k + 1] = h_next
        h_prev = h
        h = h_next


@njit(cache=True, inline="always", fastmath=FASTMATH)
def scaled_powers(t, out):
    """``out[k] = t^k / k!``."""
    v = 1.0
    for k in range(out.shape[0]):
        out[k] = v
        v *= t / (k + 1.0)


@njit(cache=True, inline="always", fastmath=FASTMATH)
def _add_series(moments, herm, sums, p):
    """``sums[w, p] += sum_k moments[w, k] herm[k]`` for every weight ``w``."""
    for w in range(moments.shape[0]):
        total = 0.0
        for k in range(herm.shape[0]):
            total += moments[w, k] * herm[k]
        sums[w, p] += total


@njit(cache=True, fastmath=FASTMATH)
def one_sided_gauss_sums(ys, n_src, means, up_w, down_w, s, window, up_sums, down_sums,
                         n_terms=DEFAULT_TERMS, box_width=DEFAULT_BOX_WIDTH):
    """Fill ``up_sums`` and ``down_sums`` (shapes ``(W_up, n)``, ``(W_down, n)``) for targets
    at positions ``p = 0 .. n - 1`` with conditional means ``means[p]``.

    Sources: the descending breakpoints ``ys[:n_src]`` with weights ``up_w[:, u]`` (summed
    over ``u < p``) and ``down_w[:, u]`` (over ``u > p``). A target at ``p >= n_src`` sits below
    every source. Error: module docstring.

    Args:
      ys: descending noisy scores (at least ``n_src``).
      n_src: number of sources.
      means: the targets' conditional means, by position (length ``n``).
      up_w, down_w: weights, shape ``(W, n_src)`` or wider.
      s: the kernel's standard deviation; window: boxes farther than ``window * s`` are skipped.
      up_sums, down_sums: outputs, overwritten.
      n_terms, box_width: ``K`` and ``b`` of the error bound.
    """
    n = means.shape[0]
    n_up = up_w.shape[0]
    n_down = down_w.shape[0]
    up_sums[:, :] = 0.0
    down_sums[:, :] = 0.0
    if n_src == 0:
        return
    width = box_width * s
    inv = INV_SQRT2 / s
    half_width = window * s
    start = np.empty(n_src + 1, dtype=np.int64)  # box b holds sources start[b]:start[b + 1]
    n_boxes = 0
    u = 0
    while u < n_src:
        start[n_boxes] = u
        u = _box_end(ys, u, n_src, width)
        n_boxes += 1
    start[n_boxes] = n_src
    center = np.empty(n_boxes)
    high = np.empty(n_boxes)
    low = np.empty(n_boxes)
    mom_up = np.zeros((n_boxes, n_up, n_terms))
    mom_down = np.zeros((n_boxes, n_down, n_terms))
    powers = np.empty(n_terms)
    for b in range(n_boxes):
        high[b] = ys[start[b]]
        low[b] = ys[start[b + 1] - 1]
        center[b] = high[b] - 0.5 * width
        for u in range(start[b], start[b + 1]):
            scaled_powers((ys[u] - center[b]) * inv, powers)
            for w in range(n_up):
                wu = up_w[w, u]
                for k in range(n_terms):
                    mom_up[b, w, k] += wu * powers[k]
            for w in range(n_down):
                wd = down_w[w, u]
                for k in range(n_terms):
                    mom_down[b, w, k] += wd * powers[k]

    herm = np.empty(n_terms)
    prefix_up = np.zeros((n_up, n_terms))
    rest_down = np.zeros((n_down, n_terms))  # the own box's moments at positions > p
    box = 0
    for p in range(n):
        m = means[p]
        if p < n_src:
            while start[box + 1] <= p:
                box += 1
            if p == start[box]:
                prefix_up[:, :] = 0.0
                # element by element: an array-to-array slice assignment compiles NumPy's
                # shape-mismatch message (string formatting), 7 of this kernel's 12 s
                for w in range(n_down):
                    for k in range(n_terms):
                        rest_down[w, k] = mom_down[box, w, k]
            # the own box: sources before p above, after p below
            scaled_powers((ys[p] - center[box]) * inv, powers)
            for w in range(n_down):
                wd = down_w[w, p]
                for k in range(n_terms):
                    rest_down[w, k] -= wd * powers[k]
            if low[box] <= m + half_width and high[box] >= m - half_width:
                hermite_functions((m - center[box]) * inv, herm)
                _add_series(prefix_up, herm, up_sums, p)
                _add_series(rest_down, herm, down_sums, p)
            for w in range(n_up):
                wu = up_w[w, p]
                for k in range(n_terms):
                    prefix_up[w, k] += wu * powers[k]
            own = box
        else:
            own = n_boxes  # below every source
        # boxes above (higher scores): stop once a whole box is above the window
        for b in range(own - 1, -1, -1):
            if low[b] > m + half_width:
                break
            if high[b] >= m - half_width:
                hermite_functions((m - center[b]) * inv, herm)
                _add_series(mom_up[b], herm, up_sums, p)
        for b in range(own + 1, n_boxes):
            if high[b] < m - half_width:
                break
            if low[b] <= m + half_width:
                hermite_functions((m - center[b]) * inv, herm)
                _add_series(mom_down[b], herm, down_sums, p)
