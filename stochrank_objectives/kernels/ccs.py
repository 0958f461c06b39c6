"""Numba kernels: the StochasticRank gradient of a smoothed cascade loss (CCS), REINFORCE, SFA.

Protocol shared by every kernel in this module
---------------------------------------------
Loss of one query (supplement D): ``L(z) = -scale * sum_p w_p g_{s_p} prod_{u<p} d_{s_u}``,
``s`` = documents by score descending. Smoothed loss ``L_sigma(z) = E L(z + sigma * eps)``
with ``eps ~ N(-mu * r, I)``; writing ``a = z - sigma * mu * r`` (the *shifted* scores, passed
in as ``shifted``) and ``e ~ N(0, I)`` it is ``E L(a + sigma * e)``. Kernels return
``d L_sigma / d z`` -- the gradient of the **loss** (descent direction is its negative);
CatBoost's ``Der1`` is its negation.

CCS (Theorem 3 / Corollary 1)
-----------------------------
Draw ``e``; let ``y = a + sigma * e`` be the noisy scores. For document ``i`` hold the other
documents at ``y_k`` and move ``i`` alone: the loss is a step function of its score ``x``
with breakpoints at the ``y_k``. With ``J_k`` the jump (loss just above ``y_k`` minus just
below) and ``f_i`` the conditional density of ``i``'s score,

    d L_sigma / d z_i = E[ sum_{k != i} J_k f_i(y_k) ].

Two conditional laws are available (both unbiased):

* ``translation`` (default): the loss is translation invariant, so only the scores relative
  to the others matter. Conditioning on the others' deviations from their mean leaves
  ``x ~ N(a_i + sigma * mean_{k != i} e_k, sigma^2 n / (n - 1))`` -- a Rao-Blackwellisation
  of the coordinate law, hence lower variance. At ``sigma = 1`` this is CatBoost's estimator;
  for ``sigma != 1`` CatBoost mixes units in the mean, this kernel does not.
* ``coordinate``: the paper's literal law, ``x ~ N(a_i, sigma^2)`` (eps has identity
  covariance, so conditioning on the other coordinates leaves the marginal).

Jumps in O(1): if the other documents are ``o_0, o_1, ...`` (descending) and ``P`` is the
continuation product of ``o_0..o_{t-1}``, moving ``i`` from slot ``t`` to slot ``t + 1``
(below ``o_t``) changes only two terms of the cascade:

    M(i above o_t) - M(i below o_t) = P [g_i (w_t - d_o w_{t+1}) - g_o (w_t - d_i w_{t+1})].

``P`` is a prefix product of the sampled order (before ``i``) or that product with ``i``
removed (after it); a zero continuation (ERR label 1, MRR relevant document) is handled by a
second prefix product that skips the first zero, so nothing is ever divided by zero.
Only slots ``t < top`` can jump, and none below the second zero continuation, so only the
``m <= min(top, n - 1) + 1`` best noisy scores need an order: when ``m`` is small against ``n``
they are selected in ``O(n + m log m)`` instead of sorting the query in ``O(n log n)``
(``path`` of :func:`ccs_query`), and each document sums over at most ``m`` breakpoints. For
full-list losses the breakpoints further than ``window`` conditional standard deviations from the
document's mean are skipped (each contributes below ``|J| phi(window) / s``; with the default
``window = 9`` that is ``1e-18 |J| / s`` per breakpoint), and the scan stops once ``P`` is 0.
Once a query's windows hold many breakpoints (large full lists), these ``O(n^2)`` sums are
computed instead by one-sided Gauss transforms in ``O(n K)`` (:mod:`.gauss_transform`, error
below ``1.7e-12 sum |J|`` per document; automatic rule in :func:`_use_fast_sums`).

Precision@k and AP@k are not cascades, but their adjacent-swap jumps are O(1) from the prefix
count of relevant documents: :func:`ccs_counting_query` (same protocol, same cost). PFound is a
cascade (``w_p = decay^p``, ``d = 1 - r``); FilteredDCG is a cascade over the query plus a
noise-free virtual document at score 0 with continuation 0 (``fixed_last`` in the seeded
driver), see ``objectives/metric_spec.py``.
"""

import math

import numpy as np
from numba import njit, prange

from .gauss_transform import DEFAULT_BOX_WIDTH, count_boxes, one_sided_gauss_sums
from .metrics import TIE_WORST, cascade_value_sorted, tie_sorted_order
from .rng import fill_standard_normal, stream_key

_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)
DEFAULT_WINDOW = 9.0


_FAST = {"reassoc", "contract", "nsz"}  # lets LLVM vectorise the density sums


@njit(cache=True, inline="always")
def _first_not_above(sorted_desc, value):
    """First index whose value is <= ``value`` in a descending array (binary search)."""
    lo = 0
    hi = sorted_desc.shape[0]
    while lo < hi:
        mid = (lo + hi) >> 1
        if sorted_desc[mid] > value:
            lo = mid + 1
        else:
            hi = mid
    return lo


@njit(cache=True, inline="always")
def _first_below(sorted_desc, value):
    """First index whose value is < ``value`` in a descending array (binary search)."""
    lo = 0
    hi = sorted_desc.shape[0]
    while lo < hi:
        mid = (lo + hi) >> 1
        if sorted_desc[mid] >= value:
            lo = mid + 1
        else:
            hi = mid
    return lo


@njit(cache=True, inline="always", fastmath=_FAST)
def gaussian_kernel(x):
    """``exp(-x^2 / 2)``, branch-free so that loops over breakpoints vectorise.

    ``exp(v) = (exp(-1/2) exp(v/64 + 1/2))^64`` with a degree-15 Taylor polynomial on
    ``|v/64 + 1/2| <= 1/2`` (truncation < 1e-18); six squarings leave a relative error below
    3e-14 (checked against ``math.exp`` in the tests). Arguments below -64 are clamped: the
    result, < 1.7e-28, only occurs outside the breakpoint window anyway.
    """
    v = max(-0.5 * x * x, -64.0)
    h = v * 0.015625 + 0.5
    p = 1.0 / 1307674368000.0
    p = p * h + 1.0 / 87178291200.0
    p = p * h + 1.0 / 6227020800.0
    p = p * h + 1.0 / 479001600.0
    p = p * h + 1.0 / 39916800.0
    p = p * h + 1.0 / 3628800.0
    p = p * h + 1.0 / 362880.0
    p = p * h + 1.0 / 40320.0
    p = p * h + 1.0 / 5040.0
    p = p * h + 1.0 / 720.0
    p = p * h + 1.0 / 120.0
    p = p * h + 1.0 / 24.0
    p = p * h + 1.0 / 6.0
    p = p * h + 0.5
    p = p * h + 1.0
    p = p * h + 1.0
    e = p * 0.6065306597126334  # exp(-1/2)
    e = e * e
    e = e * e
    e = e * e
    e = e * e
    e = e * e
    return e * e


# Paths of the noisy-score ordering (the ``path`` argument of the CCS kernels).
PATH_AUTO = 0  # selection when it pays (rule in :func:`_use_selection`), else the full sort
PATH_SORT = 1  # always argsort the whole query
PATH_SELECT = 2  # always select the breakpoints that can jump (tests)
PATH_FAST = 3  # sort, then one-sided Gauss transforms for the per-document sums (tests)
# The transform's cost per box of a document's window, in direct kernel evaluations, and the
# fewest breakpoints for which it is considered (measured: see _use_fast_sums).
FAST_SUM_COST = 16.0
FAST_SUM_MIN_DOCS = 256
# Selection of the ``m`` best noisy scores replaces the full sort once ``m * SELECT_FACTOR <= n``.
SELECT_FACTOR = 3
# Up to this many breakpoints, the documents outside them sum breakpoint-major (vectorised,
# but blind to the window); beyond, per document over its window. With widely spread scores
# (most breakpoints outside each window) the breakpoint-major sums cost 2x the sort path at
# m = 125, n = 1000; at m = 11 they are cheaper in every case measured.
BREAKPOINT_MAJOR_MAX = 16


@njit(cache=True, inline="always")
def _use_selection(path, m, n):
    """Whether to order only the ``m`` best noisy scores of ``n`` (else sort them all).

    Selection costs ``O(n + R log m + m log m)`` (a min-heap of the ``m`` best: each noisy
    score is compared with the heap's minimum, ``R`` of them replace it, about ``m ln(n/m)``
    in a random order and at most ``n``), the full sort ``O(n log n)``. Automatic rule: select
    when ``m * SELECT_FACTOR <= n``. Measured per ``ccs_query`` call (NDCG, n = 12 to 1000,
    random document order, on a loaded 2-core machine), selection took 0.06-0.8x the sort
    path's time for m <= 11 (the smaller m / n, the less), 0.8-0.9x at m = n / 3 and
    0.96-1.06x at m = n / 2. Worst case measured: documents in ascending order of widely
    spread scores (every score replaces the heap's minimum, few breakpoints in each window):
    0.15-0.9x for m <= 11, but 1.1-1.3x for m = 26 .. n / 3 (n = 100, 1000).
    """
    if path == PATH_SORT or path == PATH_FAST:
        return False
    if path == PATH_SELECT:
        return True
    return m * SELECT_FACTOR <= n


@njit(cache=True, inline="always")
def _sort_noisy_scores(shifted, noise, sigma, ys):
    """Fill ``ys`` with the noisy scores ``shifted + sigma * noise`` in descending order and
    return that order (ties have probability zero)."""
    n = shifted.shape[0]
    for i in range(n):
        ys[i] = -(shifted[i] + sigma * noise[i])
    order = np.argsort(ys)
    for p in range(n):
        doc = order[p]
        ys[p] = shifted[doc] + sigma * noise[doc]
    return order


@njit(cache=True, inline="always")
def _sift_down(hy, hi, pos, size):
    """Restore the min-heap ``hy[:size]`` (documents ``hi``) below ``pos``."""
    y = hy[pos]
    doc = hi[pos]
    while True:
        child = 2 * pos + 1
        if child >= size:
            break
        if child + 1 < size and hy[child + 1] < hy[child]:
            child += 1
        if hy[child] < y:
            hy[pos] = hy[child]
            hi[pos] = hi[child]
            pos = child
        else:
            break
    hy[pos] = y
    hi[pos] = doc


@njit(cache=True)
def _select_noisy_scores(shifted, noise, sigma, m, ys):
    """Fill ``ys[:m]`` with the ``m`` largest noisy scores in descending order; return their
    documents (``order``, length ``m``).

    A min-heap of the best ``m`` so far; then heap sort (the minimum goes to the end), which
    leaves ``ys[:m]`` descending. Ties have probability zero.
    """
    n = shifted.shape[0]
    order = np.empty(m, dtype=np.int64)
    for i in range(m):
        ys[i] = shifted[i] + sigma * noise[i]
        order[i] = i
    for pos in range(m // 2 - 1, -1, -1):
        _sift_down(ys, order, pos, m)
    lowest = ys[0]
    for i in range(m, n):
        y = shifted[i] + sigma * noise[i]
        if y > lowest:
            ys[0] = y
            order[0] = i
            _sift_down(ys, order, 0, m)
            lowest = ys[0]
    for end in range(m - 1, 0, -1):
        y = ys[end]
        doc = order[end]
        ys[end] = ys[0]
        order[end] = order[0]
        ys[0] = y
        order[0] = doc
        _sift_down(ys, order, 0, end)
    return order


@njit(cache=True)
def _second_zero_position(shifted, cont, noise, sigma):
    """Position, in the noisy order, of the second best document with continuation 0 (``n``
    if there are fewer than two; with tied noisy scores the last position it can take). No
    breakpoint below it can jump: the products of the documents above the first zero vanish
    after it, and the first zero's own sum (which skips it) stops at the second."""
    n = shifted.shape[0]
    n_zero = 0
    best = -np.inf
    second = -np.inf
    for i in range(n):
        if cont[i] == 0.0:
            n_zero += 1
            y = shifted[i] + sigma * noise[i]
            if y > best:
                second = best
                best = y
            elif y > second:
                second = y
    if n_zero < 2:
        return n
    not_below = 0
    for i in range(n):
        if shifted[i] + sigma * noise[i] >= second:
            not_below += 1
    return not_below - 1


@njit(cache=True, inline="always")
def _order_noisy_scores(shifted, noise, sigma, m, select, ys):
    """The ``m`` best documents by noisy score, descending (their scores in ``ys[:m]``) if
    ``select``; else the full order (``m`` is then ignored, all ``n`` scores in ``ys``)."""
    if select:
        return _select_noisy_scores(shifted, noise, sigma, m, ys)
    return _sort_noisy_scores(shifted, noise, sigma, ys)


@njit(cache=True, inline="always")
def _conditional_law(noise, sigma, translation):
    """``(s, noise_sum)``: the conditional standard deviation of a moving document's score and
    the query's noise sum (for its conditional mean, :func:`_conditional_mean`)."""
    n = noise.shape[0]
    noise_sum = 0.0
    if not translation:
        return sigma, noise_sum
    for i in range(n):
        noise_sum += noise[i]
    return sigma * math.sqrt(n / (n - 1.0)), noise_sum


@njit(cache=True, inline="always")
def _conditional_mean(shifted_doc, noise_doc, noise_sum, n, sigma, translation):
    """Mean of the moving document's score given the others (module docstring, CCS)."""
    if translation:
        return shifted_doc + sigma * (noise_sum - noise_doc) / (n - 1.0)
    return shifted_doc


@njit(cache=True, inline="always")
def _outside_buffers(shifted, noise, noise_sum, sigma, translation):
    """``(means, acc)``: every document's conditional mean and a zeroed accumulator."""
    n = shifted.shape[0]
    means = np.empty(n)
    acc = np.zeros(n)
    for i in range(n):
        means[i] = _conditional_mean(shifted[i], noise[i], noise_sum, n, sigma, translation)
    return means, acc


@njit(cache=True, inline="always")
def _subtract_outside(order, coef, acc, out):
    """``out -= coef * acc`` for the documents outside ``order`` (theirs are done)."""
    for p in range(order.shape[0]):
        acc[order[p]] = 0.0
    for i in range(out.shape[0]):
        out[i] -= coef * acc[i]


@njit(cache=True, inline="always")
def _breakpoint_window(searchable, mean, half_width):
    """``(start, stop)``: the breakpoints of ``searchable`` (descending) within ``half_width``
    of ``mean``; the others contribute below ``phi(window)`` each."""
    n_search = searchable.shape[0]
    high_value = mean + half_width
    low_value = mean - half_width
    start = 0 if searchable[0] <= high_value else _first_not_above(searchable, high_value)
    stop = n_search if searchable[n_search - 1] >= low_value else _first_below(searchable,
                                                                                low_value)
    return start, stop


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
    boxes = min(count_boxes(searchable, n_src, DEFAULT_BOX_WIDTH * s),
                2.0 * window / DEFAULT_BOX_WIDTH + 2.0)
    return expected > FAST_SUM_COST * boxes


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
    for u in range(min(up_end, n_search)):
        up_w[0, u] = up_a[u]
        up_w[1, u] = up_b[u]
        up_w[2, u] = up_c[u]
    for u in range(1, min(zero_end, n_search)):
        down_w[0, u] = down_a[u]
        down_w[1, u] = down_b[u]
        down_w[2, u] = down_c[u]
    means = np.empty(n)
    for p in range(n):
        doc = order[p]
        means[p] = _conditional_mean(shifted[doc], noise[doc], noise_sum, n, sigma, translation)
    up_sums = np.empty((3, n))
    down_sums = np.empty((3, n))
    one_sided_gauss_sums(ys, n_search, means, up_w, down_w, s, window, up_sums, down_sums)
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


@njit(cache=True, fastmath=_FAST)
def ccs_query(shifted, gain, cont, noise, pos_weight, top, scale, sigma, translation,
              window, factor, out, work, path=PATH_AUTO):
    """Add ``factor`` x one CCS sample of ``d L_sigma / d z`` for one query into ``out``.

    ``work`` is scratch space of at least ``11 * n + 2`` floats.

    With the sampled order fixed, the jump at the breakpoint in position ``u`` is affine in
    the moving document's ``(g_i, d_i)``: for a breakpoint above it (slot ``t = u``)
    ``J = g_i A_u - B_u + d_i C_u``; below it (slot ``t = u - 1``, the product then skips
    the document) ``J = (g_i A'_u - B'_u) / d_i + C'_u``. The six coefficient arrays are built
    once per sample, so the per-document sums are branch-free loops.

    Only the breakpoints at positions ``u <= min(top, n - 1, z)`` can jump (``z``: position of
    the second zero continuation, :func:`_second_zero_position`), so only the
    ``m = min(top, n - 1, z) + 1`` best noisy scores need an order. ``path`` (``PATH_AUTO``:
    see :func:`_use_selection`) picks between sorting the whole query and selecting those
    ``m`` (``O(n + m log m)`` in a random order). A document outside them sits below every
    breakpoint that can jump: its "below" sum is empty and its "above" sum runs over all of
    them, so it needs no position. Both paths give the
    same sample.
    """
    n = shifted.shape[0]
    if n < 2 or scale == 0.0:
        return
    n_slots = min(top, n - 1)  # slots t with a possibly non-zero jump: t < min(top, n - 1)
    m = n_slots + 1
    if path != PATH_SORT:
        m = min(m, _second_zero_position(shifted, cont, noise, sigma) + 1)
    select = _use_selection(path, m, n)
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
    order = _order_noisy_scores(shifted, noise, sigma, m, select, ys)
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

    s, noise_sum = _conditional_law(noise, sigma, translation)
    inv_s = 1.0 / s
    coef = factor * scale * _INV_SQRT_2PI * inv_s
    zero_end = min(first_zero + 1, n_search)
    up_end = min(zero_end, n_slots)  # breakpoints above the document sit in slots t = u < n_slots
    searchable = ys[:n_search]
    if not select and _use_fast_sums(path, searchable, s, window):
        _cascade_fast_sums(shifted, gain, cont, noise, noise_sum, sigma, translation, order, ys,
                           n_search, up_end, zero_end, first_zero, skip_zero, gs, ds, up_a, up_b,
                           up_c, down_a, down_b, down_c, pos_weight, s, window, coef, out)
        return

    for p in range(n_ordered):
        doc = order[p]
        mean = _conditional_mean(shifted[doc], noise[doc], noise_sum, n, sigma, translation)
        gi = gain[doc]
        di = cont[doc]
        start, stop = _breakpoint_window(searchable, mean, window * s)
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
            acc += _first_zero_below(ys, mean, inv_s, gi, p, start, stop, skip_zero, gs, ds,
                                     pos_weight)
        out[doc] -= coef * acc
    if not select:
        return
    # The other documents sit below every breakpoint that can jump: their "above" sum runs
    # over all of them (no position needed). Few breakpoints: breakpoint-major, so that the
    # inner loops over the documents are long and vectorise (the window is then a mask with
    # the bounds of _breakpoint_window; the ordered documents' sums are zeroed, done above);
    # many: per document over its window only.
    means, acc = _outside_buffers(shifted, noise, noise_sum, sigma, translation)
    half_width = window * s
    if up_end > BREAKPOINT_MAJOR_MAX:
        for i in range(n):
            mean = means[i]
            gi = gain[i]
            di = cont[i]
            start, stop = _breakpoint_window(searchable, mean, half_width)
            total = 0.0
            for u in range(start, min(stop, up_end)):
                x = (ys[u] - mean) * inv_s
                total += (gi * up_a[u] - up_b[u] + di * up_c[u]) * gaussian_kernel(x)
            acc[i] = total
        up_end = 0
    for u in range(up_end):
        y = ys[u]
        a = up_a[u]
        b = up_b[u]
        c = up_c[u]
        for i in range(n):
            mean = means[i]
            term = (gain[i] * a - b + cont[i] * c) * gaussian_kernel((y - mean) * inv_s)
            inside_window = (y <= mean + half_width) and (y >= mean - half_width)
            acc[i] += term if inside_window else 0.0
    _subtract_outside(order, coef, acc, out)


@njit(cache=True)
def _counting_fast_sums(shifted, relevant, noise, noise_sum, sigma, translation, order, ys,
                        n_search, n_slots, up_if_relevant, up_if_irrelevant, down_if_relevant,
                        down_if_irrelevant, s, window, coef, out):
    """The per-document sums of :func:`ccs_counting_query` (sort path) by one-sided Gauss
    transforms: two per side (a relevant and an irrelevant moving document), error as in
    :func:`_cascade_fast_sums`."""
    n = order.shape[0]
    up_w = np.zeros((2, n_search))
    down_w = np.zeros((2, n_search))
    for u in range(min(n_slots, n_search)):
        up_w[0, u] = up_if_relevant[u]
        up_w[1, u] = up_if_irrelevant[u]
    for u in range(1, n_search):
        down_w[0, u] = down_if_relevant[u]
        down_w[1, u] = down_if_irrelevant[u]
    means = np.empty(n)
    for p in range(n):
        doc = order[p]
        means[p] = _conditional_mean(shifted[doc], noise[doc], noise_sum, n, sigma, translation)
    up_sums = np.empty((2, n))
    down_sums = np.empty((2, n))
    one_sided_gauss_sums(ys, n_search, means, up_w, down_w, s, window, up_sums, down_sums)
    for p in range(n):
        doc = order[p]
        which = 0 if relevant[doc] > 0.0 else 1
        out[doc] -= coef * (up_sums[which, p] + down_sums[which, p])


@njit(cache=True, fastmath=_FAST)
def ccs_counting_query(shifted, relevant, noise, pos_weight, top, average, scale, sigma,
                       translation, window, factor, out, work, path=PATH_AUTO):
    """Add ``factor`` x one CCS sample of ``d L_sigma / d z`` for Precision@k or AP@k.

    ``relevant`` is binary; ``work`` is scratch space of at least ``6 * n`` floats. The loss is
    ``L = -scale * sum_{p<T} w_p rel_{s_p} c(H_{p-1})`` with the prefix count ``H_{p-1}`` of
    relevant documents above position ``p`` and

    * Precision@k (``average=False``): ``c = 1``, ``w_p = 1/k``, ``scale = 1``;
    * AP@k (``average=True``): ``c(h) = h + 1`` (precision at ``p`` = ``(h + 1)/(p + 1)``),
      ``w_p = 1/(p + 1)``, ``scale = 1/R`` (R = relevant documents of the query).

    Swapping the moving document ``i`` with the other ``o`` at slots ``t, t + 1`` changes only
    those two terms; with ``h`` the relevant others above slot ``t``, for both metrics

        M(i above o) - M(i below o) = (rel_i - rel_o) c(h) (w_t - w_{t+1}),

    (for AP: ``rel_i (h + rel_i)/(t+1) + rel_o (h + rel_i + rel_o)/(t+2)`` minus the same with
    ``i`` and ``o`` exchanged, which for binary relevance reduces to the line above). In the
    sampled order, a breakpoint at position ``u`` above ``i`` has ``t = u`` and ``h = H_u``
    (relevant documents at positions ``< u``); below ``i`` it has ``t = u - 1`` and
    ``h = H_u - rel_i``. The per-breakpoint coefficients for a relevant and an irrelevant moving
    document are built once per sample, so the per-document sums are plain loops over the
    ``min(top, n - 1) + 1`` breakpoints that can jump (windowed as in :func:`ccs_query`, and
    like it ordering only those breakpoints when ``path`` selects).
    """
    n = shifted.shape[0]
    if n < 2 or scale == 0.0:
        return
    n_slots = min(top, n - 1)
    n_search = n_slots + 1
    select = _use_selection(path, n_search, n)
    ys = work[:n]
    rels = work[n:2 * n]
    up_if_relevant = work[2 * n:3 * n]
    up_if_irrelevant = work[3 * n:4 * n]
    down_if_relevant = work[4 * n:5 * n]
    down_if_irrelevant = work[5 * n:6 * n]
    order = _order_noisy_scores(shifted, noise, sigma, n_search, select, ys)
    n_ordered = order.shape[0]
    for p in range(n_search):
        rels[p] = relevant[order[p]]
    count_above = 0.0  # relevant documents at positions < u
    for u in range(n_search):
        rel_u = rels[u]
        if u < n_slots:
            # the moving document sits below: h = count_above, c = h + 1 (AP) or 1
            c = count_above + 1.0 if average else 1.0
            dw = pos_weight[u] - pos_weight[u + 1]
            up_if_relevant[u] = (1.0 - rel_u) * c * dw
            up_if_irrelevant[u] = -rel_u * c * dw
        if u > 0:
            # the moving document is among the count_above: h = count_above - rel_i
            dw = pos_weight[u - 1] - pos_weight[u]
            down_if_relevant[u] = (1.0 - rel_u) * (count_above if average else 1.0) * dw
            down_if_irrelevant[u] = -rel_u * (count_above + 1.0 if average else 1.0) * dw
        count_above += rel_u

    s, noise_sum = _conditional_law(noise, sigma, translation)
    inv_s = 1.0 / s
    coef = factor * scale * _INV_SQRT_2PI * inv_s
    searchable = ys[:n_search]
    if not select and _use_fast_sums(path, searchable, s, window):
        _counting_fast_sums(shifted, relevant, noise, noise_sum, sigma, translation, order, ys,
                            n_search, n_slots, up_if_relevant, up_if_irrelevant,
                            down_if_relevant, down_if_irrelevant, s, window, coef, out)
        return
    for p in range(n_ordered):
        doc = order[p]
        mean = _conditional_mean(shifted[doc], noise[doc], noise_sum, n, sigma, translation)
        if relevant[doc] > 0.0:
            up = up_if_relevant
            down = down_if_relevant
        else:
            up = up_if_irrelevant
            down = down_if_irrelevant
        start, stop = _breakpoint_window(searchable, mean, window * s)
        acc = 0.0
        for u in range(start, min(p, stop, n_slots)):
            acc += up[u] * gaussian_kernel((ys[u] - mean) * inv_s)
        for u in range(max(start, p + 1), stop):
            acc += down[u] * gaussian_kernel((ys[u] - mean) * inv_s)
        out[doc] -= coef * acc
    if not select:
        return
    # below every breakpoint: only the "above" sum (breakpoint-major, as in ccs_query)
    means, acc = _outside_buffers(shifted, noise, noise_sum, sigma, translation)
    half_width = window * s
    n_major = n_slots
    if n_slots > BREAKPOINT_MAJOR_MAX:
        for i in range(n):
            mean = means[i]
            up = up_if_relevant if relevant[i] > 0.0 else up_if_irrelevant
            start, stop = _breakpoint_window(searchable, mean, half_width)
            total = 0.0
            for u in range(start, min(stop, n_slots)):
                total += up[u] * gaussian_kernel((ys[u] - mean) * inv_s)
            acc[i] = total
        n_major = 0
    for u in range(n_major):
        y = ys[u]
        if_relevant = up_if_relevant[u]
        if_irrelevant = up_if_irrelevant[u]
        for i in range(n):
            mean = means[i]
            rel = relevant[i]  # binary: picks one of the two coefficients exactly
            term = ((rel * if_relevant + (1.0 - rel) * if_irrelevant)
                    * gaussian_kernel((y - mean) * inv_s))
            inside_window = (y <= mean + half_width) and (y >= mean - half_width)
            acc[i] += term if inside_window else 0.0
    _subtract_outside(order, coef, acc, out)


@njit(cache=True)
def _ccs_sample(shifted, gain, cont, noise, pos_weight, top, scale, sigma, translation, window,
                factor, counting, average, out, work):
    """One CCS sample of one query with the kernel of the metric family."""
    if counting:
        ccs_counting_query(shifted, gain, noise, pos_weight, top, average, scale, sigma,
                           translation, window, factor, out, work)
    else:
        ccs_query(shifted, gain, cont, noise, pos_weight, top, scale, sigma, translation, window,
                  factor, out, work)


@njit(cache=True, parallel=True)
def ccs_gradient_from_noise(shifted, gain, cont, noise, query_offsets, query_scale, pos_weight,
                            top, query_sigma, translation, window, counting=False, average=False):
    """CCS gradient averaged over the rows of ``noise`` (shape ``(n_samples, n_docs)``);
    query ``q`` is smoothed with noise scale ``query_sigma[q]``. ``counting``: Precision
    (``average=False``) or AP (``average=True``) via :func:`ccs_counting_query`, else the
    cascade kernel :func:`ccs_query`."""
    n_queries = query_offsets.shape[0] - 1
    n_samples = noise.shape[0]
    out = np.zeros(shifted.shape[0])
    for q in prange(n_queries):
        lo = query_offsets[q]
        hi = query_offsets[q + 1]
        if hi - lo < 2 or query_scale[q] == 0.0:
            continue
        work = np.empty(11 * (hi - lo) + 2)
        for k in range(n_samples):
            _ccs_sample(shifted[lo:hi], gain[lo:hi], cont[lo:hi], noise[k, lo:hi], pos_weight,
                        top, query_scale[q], query_sigma[q], translation, window,
                        1.0 / n_samples, counting, average, out[lo:hi], work)
    return out


@njit(cache=True, parallel=True)
def ccs_gradient_seeded(shifted, gain, cont, query_offsets, query_scale, pos_weight, top,
                        query_sigma, translation, window, n_samples, seed, iteration,
                        counting=False, average=False, fixed_last=False):
    """CCS gradient with noise drawn from the (seed, iteration, query, sample) streams.

    ``fixed_last``: each query's last document is a fixed (noise-free) document -- FilteredDCG's
    virtual document at score 0; the stream fills the real documents only, so their noise is
    the same as without it (``draw_noise`` on the real queries).
    """
    n_queries = query_offsets.shape[0] - 1
    out = np.zeros(shifted.shape[0])
    for q in prange(n_queries):
        lo = query_offsets[q]
        hi = query_offsets[q + 1]
        if hi - lo < 2 or query_scale[q] == 0.0:
            continue
        n = hi - lo
        work = np.empty(12 * n + 2)
        buf = work[11 * n + 2:]
        for k in range(n_samples):
            if fixed_last:
                fill_standard_normal(stream_key(seed, iteration, q, k), buf[:n - 1])
                buf[n - 1] = 0.0
            else:
                fill_standard_normal(stream_key(seed, iteration, q, k), buf)
            _ccs_sample(shifted[lo:hi], gain[lo:hi], cont[lo:hi], buf, pos_weight, top,
                        query_scale[q], query_sigma[q], translation, window, 1.0 / n_samples,
                        counting, average, out[lo:hi], work)
    return out


@njit(cache=True)
def reinforce_query(shifted, labels, gain, cont, noise_rows, pos_weight, top, scale, sigma, out):
    """Score-function estimate ``mean_k (L(a + sigma e_k) - L(a)) e_k / sigma`` for one query.

    ``L(a)`` (worst-permutation ties) is a baseline: it does not change the expectation
    (E e = 0) and removes most of the variance.
    """
    n = shifted.shape[0]
    if n < 2 or scale == 0.0:
        return
    n_samples = noise_rows.shape[0]
    base_order = tie_sorted_order(shifted, labels, TIE_WORST)
    baseline = -scale * cascade_value_sorted(base_order, gain, cont, pos_weight, top)
    y = np.empty(n)
    for k in range(n_samples):
        for i in range(n):
            y[i] = shifted[i] + sigma * noise_rows[k, i]
        order = np.argsort(-y)
        loss = -scale * cascade_value_sorted(order, gain, cont, pos_weight, top)
        c = (loss - baseline) / (sigma * n_samples)
        if c != 0.0:
            for i in range(n):
                out[i] += c * noise_rows[k, i]


@njit(cache=True, parallel=True)
def reinforce_gradient_seeded(shifted, labels, gain, cont, query_offsets, query_scale, pos_weight,
                              top, query_sigma, n_samples, seed, iteration):
    """REINFORCE gradient with the same noise streams as :func:`ccs_gradient_seeded`."""
    n_queries = query_offsets.shape[0] - 1
    out = np.zeros(shifted.shape[0])
    for q in prange(n_queries):
        lo = query_offsets[q]
        hi = query_offsets[q + 1]
        if hi - lo < 2 or query_scale[q] == 0.0:
            continue
        rows = np.empty((n_samples, hi - lo))
        for k in range(n_samples):
            fill_standard_normal(stream_key(seed, iteration, q, k), rows[k])
        reinforce_query(shifted[lo:hi], labels[lo:hi], gain[lo:hi], cont[lo:hi], rows, pos_weight,
                        top, query_scale[q], query_sigma[q], out[lo:hi])
    return out


@njit(cache=True, parallel=True)
def reinforce_gradient_from_noise(shifted, labels, gain, cont, noise, query_offsets, query_scale,
                                  pos_weight, top, query_sigma):
    """REINFORCE gradient averaged over the rows of ``noise``."""
    n_queries = query_offsets.shape[0] - 1
    out = np.zeros(shifted.shape[0])
    for q in prange(n_queries):
        lo = query_offsets[q]
        hi = query_offsets[q + 1]
        reinforce_query(shifted[lo:hi], labels[lo:hi], gain[lo:hi], cont[lo:hi],
                        np.ascontiguousarray(noise[:, lo:hi]), pos_weight, top, query_scale[q],
                        query_sigma[q], out[lo:hi])
    return out


@njit(cache=True, parallel=True)
def query_noise_scale(scores, query_offsets, sigma, nu, relative):
    """Per-query noise scale: ``sigma`` (absolute), or ``sigma * rho_q`` (relative) with

        rho_q = sqrt(mean_i (z_i - mean z)^2 + nu^2),

    the root mean square of the query's centred scores, floored by ``nu`` so that a query of
    tied scores (every query at iteration 0) is still smoothed.
    """
    n_queries = query_offsets.shape[0] - 1
    out = np.empty(n_queries)
    for q in prange(n_queries):
        if not relative:
            out[q] = sigma
            continue
        lo = query_offsets[q]
        hi = query_offsets[q + 1]
        n = hi - lo
        var = 0.0
        if n > 0:
            zmean = 0.0
            for i in range(lo, hi):
                zmean += scores[i]
            zmean /= n
            for i in range(lo, hi):
                c = scores[i] - zmean
                var += c * c
            var /= n
        out[q] = sigma * math.sqrt(var + nu * nu)
    return out


@njit(cache=True, parallel=True)
def center_and_accelerate(grad, scores, query_offsets, center, sfa, nu, relative,
                          translation_invariant=True):
    """In place: centre each query's gradient, then remove (part of) its radial component.

    With ``c = z - mean(z)`` the centred (unshifted) scores of a query of ``n`` documents:

    * absolute smoothing -- Scale-Free Acceleration (Corollary 2, nu-regularised norm)::

          g <- g - sfa * <g, c> / (||c||_2 + nu)^2 * c,

      applied only to queries with more than two documents: with two, the centred space is
      one-dimensional and radial, so the projection would remove the whole gradient;
    * relative smoothing (noise scale ``sigma * rho(z)``, see :func:`query_noise_scale`)::

          g <- g - sfa * <g, c> / (||c||_2^2 + n nu^2) * c,

      which for ``sfa = 1`` turns the gradient ``g`` of ``E L(z + s eps)`` at fixed
      ``s = sigma rho(z)`` into the exact gradient of ``E L(z + sigma rho(z) eps)``: the
      smoothed loss ``G(z, s)`` satisfies ``G(a z, a s) = G(z, s)``, hence
      ``dG/ds = -<z, g> / s``, and ``grad rho = c / (n rho)``.

    ``translation_invariant=False`` (FilteredDCG: the loss depends on the scores, not only on
    their differences): no centring (``center`` is ignored: the gradient need not sum to 0),
    queries of one document keep their gradient, and the radial direction is ``z`` itself, the
    direction of the remaining scale invariance: ``<g, z>`` replaces ``<g, c>`` above (relative:
    the same derivation, now exact with ``<z, g>``), and absolute SFA projects out ``z``:
    ``g <- g - sfa * <g, z> / (||z||_2 + nu)^2 * z``.
    """
    n_queries = query_offsets.shape[0] - 1
    for q in prange(n_queries):
        lo = query_offsets[q]
        hi = query_offsets[q + 1]
        n = hi - lo
        if not translation_invariant:
            if n == 0 or sfa == 0.0:
                continue
            zmean = 0.0
            for i in range(lo, hi):
                zmean += scores[i]
            zmean /= n
            dot = 0.0
            cnorm2 = 0.0
            znorm2 = 0.0
            for i in range(lo, hi):
                dot += grad[i] * scores[i]
                cnorm2 += (scores[i] - zmean) * (scores[i] - zmean)
                znorm2 += scores[i] * scores[i]
            if relative:
                k = sfa * dot / (cnorm2 + n * nu * nu)
                for i in range(lo, hi):
                    grad[i] -= k * (scores[i] - zmean)
            else:
                denom = math.sqrt(znorm2) + nu
                k = sfa * dot / (denom * denom)
                for i in range(lo, hi):
                    grad[i] -= k * scores[i]
            continue
        if n < 2:
            for i in range(lo, hi):
                grad[i] = 0.0
            continue
        if center:
            gmean = 0.0
            for i in range(lo, hi):
                gmean += grad[i]
            gmean /= n
            for i in range(lo, hi):
                grad[i] -= gmean
        if sfa != 0.0 and (n > 2 or relative):
            zmean = 0.0
            for i in range(lo, hi):
                zmean += scores[i]
            zmean /= n
            dot = 0.0
            norm2 = 0.0
            for i in range(lo, hi):
                c = scores[i] - zmean
                dot += grad[i] * c
                norm2 += c * c
            if relative:
                denom2 = norm2 + n * nu * nu
            else:
                denom = math.sqrt(norm2) + nu
                denom2 = denom * denom
            k = sfa * dot / denom2
            if k != 0.0:
                for i in range(lo, hi):
                    grad[i] -= k * (scores[i] - zmean)
