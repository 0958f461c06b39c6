"""Numba kernels: the per-document sums of a CCS sample through one-sided Gauss transforms.

On the sort path of :func:`.gradient.ccs_query` and :func:`.gradient.ccs_counting_query`, once a
query's windows hold many breakpoints, the ``O(n^2)`` direct sums are replaced by the transforms
of :mod:`.gauss_transform` (``O(n K)``, error below ``1.7e-12 sum |J|`` per document). These sums
see the sample only through its sorted noisy scores and the moving documents' conditional law
(:class:`SortedSample`): the noise scale stays with the driver.
"""

from typing import NamedTuple

import numpy as np
from numba import njit

from ..common import copy_into
from .gauss_transform import DEFAULT_BOX_WIDTH, count_boxes, one_sided_gauss_sums
from .gaussian import gaussian_kernel
from .noisy_order import PATH_AUTO, PATH_FAST, breakpoint_window

# The transform's cost per box of a document's window, in direct kernel evaluations, and the
# fewest breakpoints for which it is considered (measured: see use_fast_sums).
FAST_SUM_COST = 16.0
FAST_SUM_MIN_DOCS = 256


class SortedSample(NamedTuple):
    """One CCS sample on the sort path: its noisy scores in order and the conditional law.

    Fields: ``order`` (documents by noisy score, descending), ``ys`` (their noisy scores, the
    breakpoints), ``n_search`` (the breakpoints ``ys[:n_search]`` that can jump), ``means``
    (conditional mean of the document at each position), ``s`` (conditional standard deviation)
    and ``window`` (in units of ``s``).
    """

    order: np.ndarray
    ys: np.ndarray
    n_search: int
    means: np.ndarray
    s: float
    window: float


class FirstZero(NamedTuple):
    """What the "below" sum of the first document with continuation 0 needs (cascades).

    Fields: ``position`` of that document in the sampled order (``n`` if none), ``skip_zero``
    (prefix products of the continuations with it left out), ``gs`` and ``ds`` (gains and
    continuations by position) and the ``position_weights``.
    """

    position: int
    skip_zero: np.ndarray
    gs: np.ndarray
    ds: np.ndarray
    position_weights: np.ndarray


@njit(cache=True, inline="always")
def first_zero_below(ys, mean, inv_s, gi, p, start, stop, zero):
    """The "below" sum of the first document with continuation 0 (``zero``: a
    :class:`FirstZero`): the products of the breakpoints below it skip it, and end at the
    second zero."""
    _, skip_zero, gs, ds, pos_weight = zero
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
def use_fast_sums(path, searchable, s, window):
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
def _transformed_sums(sample, up_w, down_w):
    """``(up_sums, down_sums)``: the one-sided Gauss sums of the documents in ``sample.order``
    over the breakpoints ``ys[:n_search]``, one row per weight row."""
    n = sample.order.shape[0]
    up_sums = np.empty((up_w.shape[0], n))
    down_sums = np.empty((down_w.shape[0], n))
    one_sided_gauss_sums(sample.ys, sample.n_search, sample.means, up_w, down_w, sample.s,
                         sample.window, up_sums, down_sums)
    return up_sums, down_sums


class CascadeJumps(NamedTuple):
    """The affine jump coefficients of a cascade sample (see :func:`.gradient.ccs_query`).

    Above a document ``(g_i, d_i)`` the jump at breakpoint ``u`` is ``g_i A_u - B_u + d_i C_u``
    (``up_a``, ``up_b``, ``up_c``, for ``u < up_end``); below it
    ``(g_i A'_u - B'_u) / d_i + C'_u`` (``down_a``, ``down_b``, ``down_c``, for
    ``u < zero_end``).
    """

    up_a: np.ndarray
    up_b: np.ndarray
    up_c: np.ndarray
    up_end: int
    down_a: np.ndarray
    down_b: np.ndarray
    down_c: np.ndarray
    zero_end: int


class CountingJumps(NamedTuple):
    """The jump coefficients of a Precision/AP sample (see :func:`.gradient.ccs_counting_query`)
    for a relevant and an irrelevant moving document, above it (``u < n_slots``) and below."""

    up_if_relevant: np.ndarray
    up_if_irrelevant: np.ndarray
    down_if_relevant: np.ndarray
    down_if_irrelevant: np.ndarray
    n_slots: int


@njit(cache=True)
def cascade_fast_sums(sample, gain, cont, jumps, zero, coef, out):
    """The per-document sums of :func:`.gradient.ccs_query` (sort path) by one-sided Gauss
    transforms.

    ``sample``: a :class:`SortedSample`; ``jumps``: the :class:`CascadeJumps`; ``zero``: the
    :class:`FirstZero`. The jump above a document ``(g_i, d_i)`` is ``g_i A_u - B_u + d_i C_u``
    and below it ``(g_i A'_u - B'_u) / d_i + C'_u``: three transforms per side, with the
    coefficients set to 0 where the direct loops stop (``u >= up_end`` above, ``u >= zero_end``
    below). Error per document: ``coef * eps * (|g_i| sum|A| + sum|B| + |d_i| sum|C| + ...)``,
    ``eps`` of :func:`~.gauss_transform.truncation_bound` (1.7e-12 at the defaults).
    """
    order, ys, n_search, means, s, window = sample
    n = order.shape[0]
    up_w = np.zeros((3, n_search))
    down_w = np.zeros((3, n_search))
    m = min(jumps.up_end, n_search)
    copy_into(up_w[0], jumps.up_a[:m])
    copy_into(up_w[1], jumps.up_b[:m])
    copy_into(up_w[2], jumps.up_c[:m])
    m = min(jumps.zero_end, n_search)
    copy_into(down_w[0, 1:], jumps.down_a[1:m])
    copy_into(down_w[1, 1:], jumps.down_b[1:m])
    copy_into(down_w[2, 1:], jumps.down_c[1:m])
    up_sums, down_sums = _transformed_sums(sample, up_w, down_w)
    inv_s = 1.0 / s
    searchable = ys[:n_search]
    for p in range(n):
        doc = order[p]
        gi = gain[doc]
        di = cont[doc]
        acc = gi * up_sums[0, p] - up_sums[1, p] + di * up_sums[2, p]
        if di > 0.0:
            acc += (gi * down_sums[0, p] - down_sums[1, p]) / di + down_sums[2, p]
        elif p == zero.position:
            start, stop = breakpoint_window(searchable, means[p], window * s)
            acc += first_zero_below(ys, means[p], inv_s, gi, p, start, stop, zero)
        out[doc] -= coef * acc


@njit(cache=True)
def counting_fast_sums(sample, relevant, jumps, coef, out):
    """The per-document sums of :func:`.gradient.ccs_counting_query` (sort path) by one-sided
    Gauss transforms: two per side (a relevant and an irrelevant moving document, ``jumps``: the
    :class:`CountingJumps`), error as in :func:`cascade_fast_sums`."""
    n_search = sample.n_search
    up_w = np.zeros((2, n_search))
    down_w = np.zeros((2, n_search))
    m = min(jumps.n_slots, n_search)
    copy_into(up_w[0], jumps.up_if_relevant[:m])
    copy_into(up_w[1], jumps.up_if_irrelevant[:m])
    copy_into(down_w[0, 1:], jumps.down_if_relevant[1:n_search])
    copy_into(down_w[1, 1:], jumps.down_if_irrelevant[1:n_search])
    up_sums, down_sums = _transformed_sums(sample, up_w, down_w)
    order = sample.order
    for p in range(order.shape[0]):
        doc = order[p]
        which = 0 if relevant[doc] > 0.0 else 1
        out[doc] -= coef * (up_sums[which, p] + down_sums[which, p])
