"""Numba kernels: the StochasticRank gradient by Coordinate Conditional Sampling -- one sample of
one query (:func:`ccs_query` for the cascades, :func:`ccs_counting_query` for Precision and AP)
and the gradient of a grouped set averaged over noise rows (:func:`ccs_gradient`).

The driver of :mod:`stochrank_objectives.kernels.ccs` (formulas there): it alone holds the
noise scale ``sigma``, hands it to the two lowest modules (:mod:`.noisy_order` for the order of
the noisy scores, :mod:`.gaussian` for the conditional law), and gives the summation strategies
(direct sums here, :mod:`.fast_sums` through :mod:`.gauss_transform`) only the sorted sample.
"""

import threading
from typing import NamedTuple

import numpy as np
from numba import njit, prange

from ..common import query_cutoff_weights, query_rows
from ..rng import fill_noise_row, noise_rows
from .fast_sums import (CascadeJumps, CountingJumps, FirstZero, SortedSample, cascade_fast_sums,
                        counting_fast_sums, first_zero_below, use_fast_sums)
from .gauss_transform import INV_SQRT2, hermite_functions, one_sided_gauss_sums, scaled_powers
from .gaussian import (DEFAULT_WINDOW, FASTMATH, INV_SQRT_2PI, conditional_law, conditional_mean,
                       conditional_means, gaussian_kernel, in_window, outside_buffers,
                       subtract_outside)
from .noisy_order import (PATH_AUTO, PATH_SORT, breakpoint_window, kth_relevant_position,
                          order_noisy_scores, second_zero_position, use_selection)

__all__ = ["ccs_query", "ccs_counting_query", "ccs_gradient", "CCSOptions", "QueryMetric"]

class CCSOptions(NamedTuple):
    """How the CCS kernels compute a sample, and which kernel of the metric family.

    Fields: ``translation`` (the translation conditional law, else the coordinate law),
    ``window`` (breakpoint window in conditional standard deviations), ``path`` (``PATH_*`` of
    :mod:`.noisy_order`), ``counting`` (Precision/AP/MRR with reach:
    :func:`ccs_counting_query`, else the cascade kernel :func:`ccs_query`), ``average`` (AP
    rather than Precision), ``fixed_last`` (each query's last document is FilteredDCG's
    noise-free virtual document), and the counting kernel's weight of the relevant documents
    above, ``count_decay`` (``rho``: ``c(h)`` gains a factor ``rho^h``) and ``count_depth``
    (``K``: ``c(h) = 0`` from ``h = K`` on; 0 = no depth).
    """

    translation: bool = True
    window: float = DEFAULT_WINDOW
    path: int = PATH_AUTO
    counting: bool = False
    average: bool = False
    fixed_last: bool = False
    count_decay: float = 1.0
    count_depth: int = 0


class QueryMetric(NamedTuple):
    """One query's metric arrays for :func:`ccs_query` and :func:`ccs_counting_query`.

    Fields: ``gain`` (per document; the binary relevance for Precision/AP), ``continuation``
    (per document), ``position_weights`` ``w_p``, ``cutoff`` ``T`` and ``scale`` (the factor of
    the query's raw value: 1 / IDCG for NDCG, 1 / R for AP).
    """

    gain: np.ndarray
    continuation: np.ndarray
    position_weights: np.ndarray
    cutoff: int
    scale: float


# Scratch floats per document: the cascade kernel's own (its coefficient arrays; plus 2), the
# counting kernel's, and the sums of the documents outside the selected breakpoints (means,
# accumulator and the gathered rows) after either; _query_samples adds the noise row.
CASCADE_WORK = 11
COUNTING_WORK = 6
OUTSIDE_WORK = 6
QUERY_WORK = max(CASCADE_WORK, COUNTING_WORK) + OUTSIDE_WORK + 1

# Up to this many breakpoints, the documents outside them sum breakpoint-major (vectorised,
# but blind to the window); beyond, per document over its window. With widely spread scores
# (most breakpoints outside each window) the breakpoint-major sums cost 2x the sort path at
# m = 125, n = 1000; at m = 11 they are cheaper in every case measured.
BREAKPOINT_MAJOR_MAX = 16


@njit(cache=True, inline="always", fastmath=FASTMATH)
def _breakpoint_major_sums(ys, n_up, jumps_above, gain, cont, means, inv_s, half_width, acc):
    """``acc[i] += sum_{u < n_up} (g_i A_u - B_u + d_i C_u) phi((y_u - m_i) / s)`` (``(A, B, C)``
    = ``jumps_above``) over the breakpoints within ``half_width`` of ``m_i``, breakpoint-major:
    the inner loops over the documents are long and vectorise (the window is a mask,
    :func:`in_window`)."""
    up_a, up_b, up_c = jumps_above
    for u in range(n_up):
        y = ys[u]
        a = up_a[u]
        b = up_b[u]
        c = up_c[u]
        for i in range(means.shape[0]):
            mean = means[i]
            term = (gain[i] * a - b + cont[i] * c) * gaussian_kernel((y - mean) * inv_s)
            acc[i] += in_window(term, y, mean, half_width)


# Documents whose conditional means lie within CLUSTER_MAX_OFFSET noise deviations of one
# centre (every score equal, as at iteration 0: the means then differ by the translation law's
# sigma * e_i / (n - 1) only) share a Taylor series of the Gaussian factor about that centre:
# phi(x - t) = sum_k t^k / k! He_k(x) phi(x). Its truncation after CLUSTER_TERMS terms is below
# 0.434 t^P / sqrt(P!) (Cramer's bound |He_P(x)| exp(-x^2 / 4) <= 1.0865 sqrt(P!)) = 2.3e-14 of
# the summed |jumps| at t = 0.1, P = 10, so n sums over m breakpoints cost O(P (n + m)).
CLUSTER_MAX_OFFSET = 0.1
CLUSTER_TERMS = 10


@njit(cache=True, inline="always")
def _one_kind(gain, cont):
    """Whether every document of the query has the same ``(g, d)`` (a query of one label)."""
    for i in range(1, gain.shape[0]):
        if gain[i] != gain[0] or cont[i] != cont[0]:
            return False
    return True


@njit(cache=True, inline="always", fastmath=FASTMATH)
def _horner(moments, t):
    """``sum_k moments[k] t^k``."""
    last = moments.shape[0] - 1
    total = moments[last]
    for k in range(last - 1, -1, -1):
        total = total * t + moments[k]
    return total


@njit(cache=True, fastmath=FASTMATH)
def _clustered_sums(ys, n_up, jumps_above, gain, cont, means, inv_s, half_width, acc):
    """:func:`_above_every_breakpoint`'s sums by one Taylor series when every mean lies within
    ``CLUSTER_MAX_OFFSET`` deviations of their centre and every breakpoint within every
    document's window (the direct sums would then skip none); returns whether it applied.

    With ``tau_u = (y_u - c) / (s sqrt 2)`` and ``r_i = (m_i - c) / (s sqrt 2)``: ``sum_u J_u
    phi((y_u - m_i) / s) = sum_k r_i^k M_k`` with the moments ``M_k = sum_u J_u h_k(tau_u) /
    k!`` (the Hermite functions of :func:`~.gauss_transform.hermite_functions`), one set per
    jump coefficient ``(A, B, C)``, combined per document as ``g_i M^A - M^B + d_i M^C``. In a
    query of one label the moments are those of the jumps themselves, computed as the direct
    sums compute them: jumps that are all exactly 0 then give exactly 0 (the combination would
    leave a rounding residue, which the hessian's normalisation of a call of flat queries
    would scale up to unit gradients)."""
    n = means.shape[0]
    lowest = means[0]
    highest = means[0]
    widest = 2.0 * CLUSTER_MAX_OFFSET / inv_s
    for i in range(1, n):  # on spread scores this stops after a few documents
        lowest = min(lowest, means[i])
        highest = max(highest, means[i])
        if highest - lowest > widest:
            return False
    if ys[0] > lowest + half_width or ys[n_up - 1] < highest - half_width:
        return False
    center = 0.5 * (lowest + highest)
    one_kind = _one_kind(gain, cont)
    up_a, up_b, up_c = jumps_above
    # in the Hermite functions' variable (:mod:`.gauss_transform`): phi(x - t) = exp(-(tau -
    # r)^2) with tau = x / sqrt 2 and r = t / sqrt 2, = sum_k r^k / k! h_k(tau)
    inv_width = inv_s * INV_SQRT2
    herm = np.empty(CLUSTER_TERMS)
    moment_a = np.zeros(CLUSTER_TERMS)  # one kind: the moments of the jumps
    moment_b = np.zeros(CLUSTER_TERMS)
    moment_c = np.zeros(CLUSTER_TERMS)
    for u in range(n_up):
        hermite_functions((ys[u] - center) * inv_width, herm)
        if one_kind:
            jump = gain[0] * up_a[u] - up_b[u] + cont[0] * up_c[u]
            for k in range(CLUSTER_TERMS):
                moment_a[k] += jump * herm[k]
        else:
            for k in range(CLUSTER_TERMS):
                moment_a[k] += up_a[u] * herm[k]
                moment_b[k] += up_b[u] * herm[k]
                moment_c[k] += up_c[u] * herm[k]
    inv_factorial = np.empty(CLUSTER_TERMS)
    scaled_powers(1.0, inv_factorial)  # 1 / k!
    moment_a *= inv_factorial
    moment_b *= inv_factorial
    moment_c *= inv_factorial
    if one_kind:
        for i in range(n):
            acc[i] = _horner(moment_a, (means[i] - center) * inv_width)
        return True
    for i in range(n):
        r = (means[i] - center) * inv_width
        acc[i] = gain[i] * _horner(moment_a, r) - _horner(moment_b, r) + cont[i] * _horner(
            moment_c, r)
    return True


@njit(cache=True, inline="always", fastmath=FASTMATH)
def _above_every_breakpoint(ys, n_up, jumps_above, gain, cont, means, inv_s, half_width, acc,
                            scratch):
    """``acc[i] = sum_{u < n_up} (g_i A_u - B_u + d_i C_u) phi((y_u - m_i) / s)`` (``(A, B, C)``
    = ``jumps_above``) over the breakpoints within ``half_width`` of ``m_i``: the sums of the
    documents below every breakpoint that can jump (selection path), which need no position.

    The documents whose window does not reach the lowest breakpoint keep 0 (on trained scores,
    most of a long query). The others, gathered into contiguous rows, sum breakpoint-major when
    the breakpoints are few, so that the inner loops over the documents are long and vectorise
    (the window is a mask with the bounds of :func:`breakpoint_window`); many: per document
    over its window only. Means clustered within a tenth of a deviation (equal scores, as at
    iteration 0, when every window holds every breakpoint): one Taylor series,
    :func:`_clustered_sums`. ``scratch``: ``(floats, rows)``, ``4 n`` floats and ``n``
    integers for the gathered rows."""
    if n_up == 0:
        return
    if _clustered_sums(ys, n_up, jumps_above, gain, cont, means, inv_s, half_width, acc):
        return
    up_a, up_b, up_c = jumps_above
    floats, rows = scratch
    n = means.shape[0]
    lowest_reached = ys[n_up - 1] - half_width
    if n_up > BREAKPOINT_MAJOR_MAX:
        slots = ys[:n_up]
        for i in range(n):
            mean = means[i]
            if mean < lowest_reached:
                continue
            start, stop = breakpoint_window(slots, mean, half_width)
            gi = gain[i]
            di = cont[i]
            total = 0.0
            for u in range(start, stop):
                x = (ys[u] - mean) * inv_s
                total += (gi * up_a[u] - up_b[u] + di * up_c[u]) * gaussian_kernel(x)
            acc[i] = total
        return
    n_rows = 0
    for i in range(n):
        if means[i] >= lowest_reached:
            rows[n_rows] = i
            n_rows += 1
    if 2 * n_rows > n:  # gathering would cost more than it saves (e.g. equal scores)
        _breakpoint_major_sums(ys, n_up, jumps_above, gain, cont, means, inv_s, half_width, acc)
        return
    row_mean = floats[:n_rows]
    row_gain = floats[n:n + n_rows]
    row_cont = floats[2 * n:2 * n + n_rows]
    row_acc = floats[3 * n:3 * n + n_rows]
    for k in range(n_rows):
        i = rows[k]
        row_mean[k] = means[i]
        row_gain[k] = gain[i]
        row_cont[k] = cont[i]
        row_acc[k] = 0.0
    _breakpoint_major_sums(ys, n_up, jumps_above, row_gain, row_cont, row_mean, inv_s,
                           half_width, row_acc)
    for k in range(n_rows):
        acc[rows[k]] = row_acc[k]


@njit(cache=True, fastmath=FASTMATH)
def ccs_query(shifted, noise, sigma, query, options, factor, out, work, index_work):
    """Add ``factor`` x one CCS sample of ``d L_sigma / d z`` for one query into ``out``.

    ``shifted``: the shifted scores ``a``; ``noise``: the unit normals ``e``; ``query``: a
    :class:`QueryMetric`; ``options``: the :class:`CCSOptions` (``translation``, ``window``,
    ``path``). ``work`` is scratch space of at least ``CASCADE_WORK * n + 2`` floats,
    ``index_work`` of ``2 * n`` integers (nothing is allocated per sample on the selection
    path).

    With the sampled order fixed, the jump at the breakpoint in position ``u`` is affine in
    the moving document's ``(g_i, d_i)``: for a breakpoint above it (slot ``t = u``)
    ``J = g_i A_u - B_u + d_i C_u``; below it (slot ``t = u - 1``, the product then skips
    the document) ``J = (g_i A'_u - B'_u) / d_i + C'_u``. The six coefficient arrays are built
    once per sample, so the per-document sums are branch-free loops.

    Only the breakpoints at positions ``u <= min(top, n - 1, z)`` can jump (``z``: position of
    the second zero continuation, :func:`second_zero_position`), so only the
    ``m = min(top, n - 1, z) + 1`` best noisy scores need an order. ``path`` (``PATH_AUTO``:
    see :func:`use_selection`) picks between sorting the whole query and selecting those
    ``m`` (``O(n + m log m)`` in a random order). A document outside them sits below every
    breakpoint that can jump: its "below" sum is empty and its "above" sum runs over all of
    them, so it needs no position. Both paths give the
    same sample.
    """
    gain, cont, pos_weight, top, scale = query
    translation, window, path = options.translation, options.window, options.path
    n = shifted.shape[0]
    if n < 2 or scale == 0.0:
        return
    n_slots = min(top, n - 1)  # slots t with a possibly non-zero jump: t < min(top, n - 1)
    m = n_slots + 1
    if path != PATH_SORT:
        m = min(m, second_zero_position(shifted, cont, noise, sigma) + 1)
    select = use_selection(path, m, n)
    ys = work[:n]
    gs = work[n:2 * n]
    ds = work[2 * n:3 * n]
    prefix = work[3 * n:4 * n + 1]  # prefix[u] = prod_{v<u} d_v
    skip_zero = work[4 * n + 1:5 * n + 2]  # the same product with the first zero left out
    up_a = work[5 * n + 2:6 * n + 2]
    up_b = work[6 * n + 2:7 * n + 2]
    up_c = work[7 * n + 2:8 * n + 2]
    down_a = work[8 * n + 2:9 * n + 2]
    down_b = work[9 * n + 2:10 * n + 2]
    down_c = work[10 * n + 2:11 * n + 2]
    outside = work[CASCADE_WORK * n + 2:(CASCADE_WORK + OUTSIDE_WORK) * n + 2]
    order = order_noisy_scores(shifted, noise, sigma, m, select, ys, index_work[:n])
    n_ordered = order.shape[0]
    # Only breakpoints at positions u <= n_slots can jump, and none beyond a zero continuation.
    n_search = min(n_slots + 1, n_ordered)
    for p in range(n_search):
        doc = order[p]
        gs[p] = gain[doc]
        ds[p] = cont[doc]
    prefix[0] = 1.0
    skip_zero[0] = 1.0
    first_zero = n
    for p in range(n_search):
        prefix[p + 1] = prefix[p] * ds[p]
        if ds[p] == 0.0 and first_zero == n:
            first_zero = p
            skip_zero[p + 1] = skip_zero[p]
        else:
            skip_zero[p + 1] = skip_zero[p] * ds[p]
    for u in range(n_search):
        pg = prefix[u] * gs[u]
        if u < n_slots:
            up_a[u] = prefix[u] * (pos_weight[u] - ds[u] * pos_weight[u + 1])
            up_b[u] = pg * pos_weight[u]
            up_c[u] = pg * pos_weight[u + 1]
        if u > 0:
            down_a[u] = prefix[u] * (pos_weight[u - 1] - ds[u] * pos_weight[u])
            down_b[u] = pg * pos_weight[u - 1]
            down_c[u] = pg * pos_weight[u]

    s, noise_sum = conditional_law(noise, sigma, translation)
    inv_s = 1.0 / s
    coef = factor * scale * INV_SQRT_2PI * inv_s
    zero_end = min(first_zero + 1, n_search)
    up_end = min(zero_end, n_slots)  # breakpoints above the document sit in slots t = u < n_slots
    searchable = ys[:n_search]
    zero = FirstZero(first_zero, skip_zero, gs, ds, pos_weight)
    if not select and use_fast_sums(path, searchable, s, window):
        means = conditional_means(shifted, noise, noise_sum, sigma, translation, order)
        cascade_fast_sums(SortedSample(order, ys, n_search, means, s, window), gain, cont,
                          CascadeJumps(up_a, up_b, up_c, up_end, down_a, down_b, down_c,
                                       zero_end), zero, coef, out)
        return

    for p in range(n_ordered):
        doc = order[p]
        mean = conditional_mean(shifted[doc], noise[doc], noise_sum, n, sigma, translation)
        gi = gain[doc]
        di = cont[doc]
        start, stop = breakpoint_window(searchable, mean, window * s)
        acc = 0.0
        for u in range(start, min(p, stop, up_end)):
            x = (ys[u] - mean) * inv_s
            acc += (gi * up_a[u] - up_b[u] + di * up_c[u]) * gaussian_kernel(x)
        if di > 0.0:
            inv_di = 1.0 / di
            below = 0.0
            for u in range(max(start, p + 1), min(stop, zero_end)):
                x = (ys[u] - mean) * inv_s
                below += ((gi * down_a[u] - down_b[u]) * inv_di + down_c[u]) * gaussian_kernel(x)
            acc += below
        elif p == first_zero:
            acc += first_zero_below(ys, mean, inv_s, gi, p, start, stop, zero)
        out[doc] -= coef * acc
    if not select:
        return
    # The other documents sit below every breakpoint that can jump (the ordered documents'
    # sums, done above, are zeroed by subtract_outside).
    means, acc = outside_buffers(shifted, noise, noise_sum, sigma, translation, outside)
    _above_every_breakpoint(ys, up_end, (up_a, up_b, up_c), gain, cont, means, inv_s, window * s,
                            acc, (outside[2 * n:], index_work[n:]))
    subtract_outside(order, coef, acc, out)


@njit(cache=True, inline="always")
def _count_weight(h, average, decay, depth):
    """``c(h)`` of :func:`ccs_counting_query` with ``h`` relevant documents above: ``(h + 1 if
    average else 1) * decay^h``, and 0 from ``h = depth`` on (``depth > 0``)."""
    if depth > 0 and h >= depth:
        return 0.0
    c = h + 1.0 if average else 1.0
    if decay != 1.0:
        c *= decay ** h
    return c


@njit(cache=True, fastmath=FASTMATH)
def ccs_counting_query(shifted, noise, sigma, query, options, factor, out, work, index_work):
    """Add ``factor`` x one CCS sample of ``d L_sigma / d z`` for Precision@k, AP@k or MRR
    with a reach.

    ``query.gain`` is the binary relevance (``query.continuation`` is not read);
    ``options.average`` picks AP over Precision, ``options.count_decay`` and
    ``options.count_depth`` weigh the relevant documents above (MRR's reach); ``work`` and
    ``index_work`` are scratch space of ``COUNTING_WORK * n`` floats and ``2 * n`` integers.
    The loss is
    ``L = -scale * sum_{p<T} w_p rel_{s_p} c(H_{p-1})`` with the prefix count ``H_{p-1}`` of
    relevant documents above position ``p`` and

    * Precision@k (``average=False``): ``c = 1``, ``w_p = 1/k``, ``scale = 1``;
    * AP@k (``average=True``): ``c(h) = h + 1`` (precision at ``p`` = ``(h + 1)/(p + 1)``),
      ``w_p = 1/(p + 1)``, ``scale = 1/R`` (R = relevant documents of the query);
    * MRR with reach ``rho`` and depth ``K``: ``c(h) = rho^h`` for ``h < K``, else 0,
      ``w_p = 1/(p + 1)``, ``scale = 1`` (``training_metric.with_reach``).

    Swapping the moving document ``i`` with the other ``o`` at slots ``t, t + 1`` changes only
    those two terms; with ``h`` the relevant others above slot ``t``, for any ``c``

        M(i above o) - M(i below o) = (rel_i - rel_o) c(h) (w_t - w_{t+1}),

    (``rel_i c(h) w_t + rel_o c(h + rel_i) w_{t+1}`` minus the same with ``i`` and ``o``
    exchanged: both vanish unless ``rel_i != rel_o``, and then the second ``c`` is ``c(h)``). In the
    sampled order, a breakpoint at position ``u`` above ``i`` has ``t = u`` and ``h = H_u``
    (relevant documents at positions ``< u``); below ``i`` it has ``t = u - 1`` and
    ``h = H_u - rel_i``. The per-breakpoint coefficients for a relevant and an irrelevant moving
    document are built once per sample, so the per-document sums are plain loops over the
    ``min(top, n - 1) + 1`` breakpoints that can jump (windowed as in :func:`ccs_query`, and
    like it ordering only those breakpoints when ``path`` selects). With a depth ``K`` no
    breakpoint below the ``(K + 1)``-th relevant document can jump (``c`` vanishes there for
    either moving document), so unless ``path`` is ``PATH_SORT`` the breakpoints end there
    (:func:`~.noisy_order.kth_relevant_position`).
    """
    relevant, _, pos_weight, top, scale = query
    translation, window, path = options.translation, options.window, options.path
    average, decay, depth = options.average, options.count_decay, options.count_depth
    n = shifted.shape[0]
    if n < 2 or scale == 0.0:
        return
    n_slots = min(top, n - 1)
    n_search = n_slots + 1
    if depth > 0 and path != PATH_SORT:
        n_search = min(n_search,
                       kth_relevant_position(shifted, relevant, noise, sigma, depth + 1) + 1)
    up_end = min(n_slots, n_search)  # breakpoints above the document: slots t = u < up_end
    select = use_selection(path, n_search, n)
    ys = work[:n]
    rels = work[n:2 * n]
    up_if_relevant = work[2 * n:3 * n]
    up_if_irrelevant = work[3 * n:4 * n]
    down_if_relevant = work[4 * n:5 * n]
    down_if_irrelevant = work[5 * n:6 * n]
    outside = work[COUNTING_WORK * n:(COUNTING_WORK + OUTSIDE_WORK) * n]
    order = order_noisy_scores(shifted, noise, sigma, n_search, select, ys, index_work[:n])
    n_ordered = order.shape[0]
    for p in range(n_search):
        rels[p] = relevant[order[p]]
    count_above = 0.0  # relevant documents at positions < u
    for u in range(n_search):
        rel_u = rels[u]
        c = _count_weight(count_above, average, decay, depth)
        if u < up_end:
            # the moving document sits below: h = count_above
            dw = pos_weight[u] - pos_weight[u + 1]
            up_if_relevant[u] = (1.0 - rel_u) * c * dw
            up_if_irrelevant[u] = -rel_u * c * dw
        if u > 0:
            # the moving document is among the count_above: h = count_above - rel_i (a relevant
            # one has count_above >= 1)
            dw = pos_weight[u - 1] - pos_weight[u]
            c_without = (_count_weight(count_above - 1.0, average, decay, depth)
                         if count_above >= 1.0 else 0.0)
            down_if_relevant[u] = (1.0 - rel_u) * c_without * dw
            down_if_irrelevant[u] = -rel_u * c * dw
        count_above += rel_u

    s, noise_sum = conditional_law(noise, sigma, translation)
    inv_s = 1.0 / s
    coef = factor * scale * INV_SQRT_2PI * inv_s
    searchable = ys[:n_search]
    if not select and use_fast_sums(path, searchable, s, window):
        means = conditional_means(shifted, noise, noise_sum, sigma, translation, order)
        counting_fast_sums(SortedSample(order, ys, n_search, means, s, window), relevant,
                           CountingJumps(up_if_relevant, up_if_irrelevant, down_if_relevant,
                                         down_if_irrelevant, up_end), coef, out)
        return
    for p in range(n_ordered):
        doc = order[p]
        mean = conditional_mean(shifted[doc], noise[doc], noise_sum, n, sigma, translation)
        if relevant[doc] > 0.0:
            up = up_if_relevant
            down = down_if_relevant
        else:
            up = up_if_irrelevant
            down = down_if_irrelevant
        start, stop = breakpoint_window(searchable, mean, window * s)
        acc = 0.0
        for u in range(start, min(p, stop, up_end)):
            acc += up[u] * gaussian_kernel((ys[u] - mean) * inv_s)
        for u in range(max(start, p + 1), stop):
            acc += down[u] * gaussian_kernel((ys[u] - mean) * inv_s)
        out[doc] -= coef * acc
    if not select:
        return
    # below every breakpoint: only the "above" sum, as in ccs_query with the coefficient
    # written ``rel * (up_rel - up_irr) + up_irr`` (relevance is binary)
    means, acc = outside_buffers(shifted, noise, noise_sum, sigma, translation, outside)
    slope = up_if_relevant[:up_end] - up_if_irrelevant[:up_end]
    no_continuation_term = np.zeros(up_end)
    jumps_above = (slope, -up_if_irrelevant[:up_end], no_continuation_term)
    _above_every_breakpoint(ys, up_end, jumps_above, relevant, relevant, means, inv_s,
                            window * s, acc, (outside[2 * n:], index_work[n:]))
    subtract_outside(order, coef, acc, out)


class _CascadeOptions(CCSOptions):
    """No longer used: the options' type of the cascade kernel in Numba caches written before
    each kernel got a parallel driver of its own. Numba unpickles a kernel's cache index before it
    compares the source's stamp, so without this class a stale cache beside the sources (an
    upgrade in place) would raise instead of compiling again."""

    __slots__ = ()


class _CountingOptions(CCSOptions):
    """No longer used: as :class:`_CascadeOptions`, for the counting kernel."""

    __slots__ = ()


def ccs_gradient(shifted, metric, noise, query_offsets, query_sigma, options, n_samples, seed,
                 iteration):
    """CCS gradient averaged over noise rows; query ``q`` is smoothed with noise scale
    ``query_sigma[q]``.

    ``metric``: the metric's arrays (any named tuple with the fields ``gain``, ``continuation``,
    ``position_weights``, ``cutoff``, per-query ``scale`` and ``query_cutoff`` (empty, or each
    query's own cutoff), e.g. the objectives' ``KernelArgs``); ``options``: a
    :class:`CCSOptions`. The rows are those of ``noise`` (shape ``(n_samples, n_docs)``) or,
    when ``noise`` has no rows (shape ``(0, n_docs)``), ``n_samples`` rows drawn from the (seed,
    iteration, query, sample) streams -- so the result does not depend on the thread count.
    ``options.fixed_last``: each query's last document is a fixed (noise-free) document --
    FilteredDCG's virtual document at score 0; the streams fill the real documents only, so
    their noise is the same as without it. ``options.path``: see :mod:`.noisy_order`
    (``PATH_SORT`` keeps the exact per-document sums).

    Compiled once per kernel: each kernel has a parallel driver of its own
    (:func:`_cascade_gradient`, :func:`_counting_gradient`), so the first call of a metric
    compiles only its own kernel, which the driver's loop calls directly.
    """
    _load_own_libraries_first(options)
    driver = _counting_gradient if options.counting else _cascade_gradient
    # allocated by NumPy, not in the driver: a large array Numba allocates comes back from the
    # system page by page on every call (a page fault per 4 KiB: 2 ms for a million documents),
    # where NumPy's is reused
    out = np.zeros(shifted.shape[0])
    driver(shifted, metric, (noise, query_sigma), query_offsets, options,
           (n_samples, seed, iteration), out)
    return out


_LOADED_FIRST: set = set()
_LOADING = threading.Lock()


def _load_own_libraries_first(options):
    """Load the fast-math kernels' own libraries (compiled, or from Numba's cache) before the
    drivers, leaves first, so that every process runs the same machine code.

    A compiled function that calls another holds a copy of it, linked in and optimised once more
    with the caller; under fast-math (reassociation) that copy may round differently from the
    callee's own library. The JIT engine binds a call to the first definition it holds: in a
    process that compiles the kernels, the callee's own library (compiled first, as a dependency);
    in one that loads the driver from the cache, the driver's copy -- so the first training after
    an install differed from every later one in the last bits. A call on a two-document query
    here loads (or compiles) each kernel's own library first in every process, for the argument
    types the drivers pass (``options`` itself: its field types are the signature's)."""
    key = bool(options.counting)
    if key in _LOADED_FIRST:
        return
    with _LOADING:
        if key in _LOADED_FIRST:
            return
        n = 2
        ys = np.array([1.0, 0.0])
        zeros = np.zeros(n)
        _clustered_sums(ys, 1, (zeros, zeros, zeros), zeros, zeros, ys, 1.0, 1.0, np.zeros(n))
        weights = np.zeros((3, n))
        one_sided_gauss_sums(ys, n, ys, weights, weights, 1.0, 1.0, np.empty((3, n)),
                             np.empty((3, n)))
        query = QueryMetric(zeros, np.ones(n), np.ones(n + 1), 1, 1.0)
        sample = ccs_counting_query if options.counting else ccs_query
        sample(ys, zeros, 1.0, query, options, 1.0, np.zeros(n), np.empty(QUERY_WORK * n + 2),
               np.empty(2 * n, dtype=np.int64))
        _LOADED_FIRST.add(key)


@njit(cache=True, inline="always")
def _query_samples(q, shifted, metric, smoothing, query_offsets, options, stream, out, sample):
    """The samples of query ``q`` into ``out``, with ``sample`` (:func:`ccs_query` or
    :func:`ccs_counting_query`) computing each; ``smoothing``: ``(noise, query_sigma)``,
    ``stream``: ``(n_samples, seed, iteration)``.

    The body of both drivers' parallel loops, inlined there: a compiled function that takes a
    kernel as an argument is never found again in Numba's cache (the dispatcher's type does
    not compare equal once unpickled), and an overload choosing the kernel is compiled on its
    own first, one more function holding the kernel's machine code (~3 s of a first fit)."""
    noise, query_sigma = smoothing
    n_samples, seed, iteration = stream
    n_rows = noise_rows(noise, n_samples)
    # FilteredDCG's fixed document takes no draw from the streams (explicit rows are used whole)
    n_fixed = 1 if options.fixed_last and noise.shape[0] == 0 else 0
    lo, hi, active = query_rows(query_offsets, metric.scale, q)
    if not active:
        return
    n = hi - lo
    work = np.empty(QUERY_WORK * n + 2)  # the kernels' scratch, then the noise row
    buf = work[(QUERY_WORK - 1) * n + 2:]
    index_work = np.empty(2 * n, dtype=np.int64)
    weights, cutoff = query_cutoff_weights(metric.position_weights, metric.cutoff,
                                           metric.query_cutoff, q)
    query = QueryMetric(metric.gain[lo:hi], metric.continuation[lo:hi], weights, cutoff,
                        metric.scale[q])
    for k in range(n_rows):
        fill_noise_row(noise, k, lo, seed, iteration, q, buf[:n - n_fixed])
        buf[n - n_fixed:] = 0.0
        sample(shifted[lo:hi], buf, query_sigma[q], query, options, 1.0 / n_rows, out[lo:hi],
               work, index_work)


@njit(cache=True, parallel=True)
def _cascade_gradient(shifted, metric, smoothing, query_offsets, options, stream, out):
    """The parallel driver of the cascade kernel, :func:`ccs_query` (see
    :func:`_query_samples`), adding into the zeroed ``out``."""
    for q in prange(query_offsets.shape[0] - 1):
        _query_samples(q, shifted, metric, smoothing, query_offsets, options, stream, out,
                       ccs_query)


@njit(cache=True, parallel=True)
def _counting_gradient(shifted, metric, smoothing, query_offsets, options, stream, out):
    """The parallel driver of the counting kernel, :func:`ccs_counting_query` (see
    :func:`_query_samples`), adding into the zeroed ``out``."""
    for q in prange(query_offsets.shape[0] - 1):
        _query_samples(q, shifted, metric, smoothing, query_offsets, options, stream, out,
                       ccs_counting_query)
