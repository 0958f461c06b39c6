"""Numba kernels: the per-document sums of a CCS sample through one-sided Gauss transforms.

On the sort path of :func:`.ccs.ccs_query` and :func:`.ccs.ccs_counting_query`, once a query's
windows hold many breakpoints, the ``O(n^2)`` direct sums are replaced by the transforms of
:mod:`.gauss_transform` (``O(n K)``, error below ``1.7e-12 sum |J|`` per document).
"""

import numpy as np
from numba import njit

from .gauss_transform import DEFAULT_BOX_WIDTH, count_boxes, one_sided_gauss_sums
from .gaussian import _conditional_mean, gaussian_kernel
from .noisy_order import PATH_AUTO, PATH_FAST, _breakpoint_window

# The transform's cost per box of a document's window, in direct kernel evaluations, and the
# fewest breakpoints for which it is considered (measured: see _use_fast_sums).
FAST_SUM_COST = 16.0
FAST_SUM_MIN_DOCS = 256


@njit(cache=True, inline="always")
def _first_zero_below(ys, mean, inv_s, gi, p, start, stop, skip_zero, gs, ds, pos_weight):
    """The "below" sum of the first document with continuation 0: the products of the
    breakpoints below it skip it (``skip_zero``), and end at the second zero."""
    acc = 0.0
    for u in range(max(start, p + 1), stop):
        prod = skip_zero[u]
        if prod == 0.0:
            break
        t = u - 1
        jump = prod * (gi * (pos_weight[t] - ds[u] * pos_weight[t + 1]) - gs[u] * pos_weight[t])
        acc += jump * gaussian_kernel((ys[u] - mean) * inv_s)
    return acc


@njit(cache=True, inline="always")
def _use_fast_sums(path, searchable, s, window):
    """Whether the per-document breakpoint sums of the sort path go through the one-sided
    Gauss transform (:mod:`.gauss_transform`) instead of direct windowed sums.

    Direct sums cost about ``n * n_window`` kernel evaluations (``n_window``: breakpoints within
    ``window * s`` of a document), the transform about ``n * FAST_SUM_COST * n_boxes_window``
    with ``n_boxes_window <= 2 window / box_width + 2`` boxes of its Hermite series. Automatic
    rule: at least ``FAST_SUM_MIN_DOCS`` breakpoints, and more breakpoints expected in a window
    (the query's density times its width) than the transform's cost in kernel evaluations.
    """
    if path == PATH_FAST:
        return True
    if path != PATH_AUTO:
        return False
    n_src = searchable.shape[0]
    if n_src < FAST_SUM_MIN_DOCS:
        return False
    spread = searchable[0] - searchable[n_src - 1]
    window_width = 2.0 * window * s
    expected = n_src if spread <= window_width else n_src * window_width / spread
    most_boxes = 2.0 * window / DEFAULT_BOX_WIDTH + 2.0  # a window spans at most these
    boxes = count_boxes(searchable, n_src, DEFAULT_BOX_WIDTH * s, int(most_boxes) + 1)
    return expected > FAST_SUM_COST * min(boxes, most_boxes)


@njit(cache=True, inline="always")
def _transformed_sums(shifted, noise, noise_sum, sigma, translation, order, ys, n_search, up_w,
                      down_w, s, window):
    """``(means, up_sums, down_sums)``: the conditional means of the documents in ``order`` and
    their one-sided Gauss sums over the breakpoints ``ys[:n_search]``, one row per weight row."""
    n = order.shape[0]
    means = np.empty(n)
    for p in range(n):
        doc = order[p]
        means[p] = _conditional_mean(shifted[doc], noise[doc], noise_sum, n, sigma, translation)
    up_sums = np.empty((up_w.shape[0], n))
    down_sums = np.empty((down_w.shape[0], n))
    one_sided_gauss_sums(ys, n_search, means, up_w, down_w, s, window, up_sums, down_sums)
    return means, up_sums, down_sums


@njit(cache=True)
def _cascade_fast_sums(shifted, gain, cont, noise, noise_sum, sigma, translation, order, ys,
                       n_search, up_end, zero_end, first_zero, skip_zero, gs, ds, up_a, up_b,
                       up_c, down_a, down_b, down_c, pos_weight, s, window, coef, out):
    """The per-document sums of :func:`ccs_query` (sort path) by one-sided Gauss transforms.

    The jump above a document ``(g_i, d_i)`` is ``g_i A_u - B_u + d_i C_u`` and below it
    ``(g_i A'_u - B'_u) / d_i + C'_u``: three transforms per side, with the coefficients set to
    0 where the direct loops stop (``u >= up_end`` above, ``u >= zero_end`` below). Error per
    document: ``coef * eps * (|g_i| sum|A| + sum|B| + |d_i| sum|C| + ...)``, ``eps`` of
    :func:`~.gauss_transform.truncation_bound` (1.7e-12 at the defaults).
    """
    n = order.shape[0]
    up_w = np.zeros((3, n_search))
    down_w = np.zeros((3, n_search))
    m = min(up_end, n_search)
    up_w[0, :m] = up_a[:m]
    up_w[1, :m] = up_b[:m]
    up_w[2, :m] = up_c[:m]
    m = min(zero_end, n_search)
    down_w[0, 1:m] = down_a[1:m]
    down_w[1, 1:m] = down_b[1:m]
    down_w[2, 1:m] = down_c[1:m]
    means, up_sums, down_sums = _transformed_sums(shifted, noise, noise_sum, sigma, translation,
                                                  order, ys, n_search, up_w, down_w, s, window)
    inv_s = 1.0 / s
    searchable = ys[:n_search]
    for p in range(n):
        doc = order[p]
        gi = gain[doc]
        di = cont[doc]
        acc = gi * up_sums[0, p] - up_sums[1, p] + di * up_sums[2, p]
        if di > 0.0:
            acc += (gi * down_sums[0, p] - down_sums[1, p]) / di + down_sums[2, p]
        elif p == first_zero:
            start, stop = _breakpoint_window(searchable, means[p], window * s)
            acc += _first_zero_below(ys, means[p], inv_s, gi, p, start, stop, skip_zero, gs, ds,
                                     pos_weight)
        out[doc] -= coef * acc


@njit(cache=True)
def _counting_fast_sums(shifted, relevant, noise, noise_sum, sigma, translation, order, ys,
                        n_search, n_slots, up_if_relevant, up_if_irrelevant, down_if_relevant,
                        down_if_irrelevant, s, window, coef, out):
    """The per-document sums of :func:`ccs_counting_query` (sort path) by one-sided Gauss
    transforms: two per side (a relevant and an irrelevant moving document), error as in
    :func:`_cascade_fast_sums`."""
    up_w = np.zeros((2, n_search))
    down_w = np.zeros((2, n_search))
    m = min(n_slots, n_search)
    up_w[0, :m] = up_if_relevant[:m]
    up_w[1, :m] = up_if_irrelevant[:m]
    down_w[0, 1:] = down_if_relevant[1:n_search]
    down_w[1, 1:] = down_if_irrelevant[1:n_search]
    _, up_sums, down_sums = _transformed_sums(shifted, noise, noise_sum, sigma, translation,
                                              order, ys, n_search, up_w, down_w, s, window)
    for p in range(order.shape[0]):
        doc = order[p]
        which = 0 if relevant[doc] > 0.0 else 1
        out[doc] -= coef * (up_sums[which, p] + down_sums[which, p])
