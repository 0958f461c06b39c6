"""Numba kernels: the order of a query's noisy scores, as much of it as a CCS sample needs.

A CCS sample needs the noisy scores ``y = a + sigma * e`` of a query in descending order -- all
of them (argsort, ``O(n log n)``), or only the ``m`` best when only those can be breakpoints
with a jump (kept sorted by insertion for small ``m``, else a min-heap: ``O(n + m log m)`` in a
random order); ``path`` picks
between them (``PATH_*`` below), and selects the per-document summation of the sort path.
"""

import math

import numpy as np
from numba import njit

from ..stable_order import keep_best, sift_down_min

# Paths of the noisy-score ordering (the ``path`` argument of the CCS kernels).
PATH_AUTO = 0  # selection when it pays (rule in :func:`use_selection`), else the full sort
PATH_SORT = 1  # always argsort the whole query, exact per-document sums
PATH_SELECT = 2  # always select the breakpoints that can jump (tests)
PATH_FAST = 3  # sort, then one-sided Gauss transforms for the per-document sums (tests)
# Selection of the ``m`` best noisy scores replaces the full sort once ``m * SELECT_FACTOR <= n``.
SELECT_FACTOR = 3


@njit(cache=True, inline="always")
def _descending_search(sorted_desc, value, stop_at_equal):
    """First index of a descending array whose value is below ``value`` (or equal to it, with
    ``stop_at_equal``), by binary search."""
    lo = 0
    hi = sorted_desc.shape[0]
    while lo < hi:
        mid = (lo + hi) >> 1
        x = sorted_desc[mid]
        if x > value or (x == value and not stop_at_equal):
            lo = mid + 1
        else:
            hi = mid
    return lo


@njit(cache=True, inline="always")
def _first_not_above(sorted_desc, value):
    """First index whose value is <= ``value`` in a descending array (binary search)."""
    return _descending_search(sorted_desc, value, True)


@njit(cache=True, inline="always")
def _first_below(sorted_desc, value):
    """First index whose value is < ``value`` in a descending array (binary search)."""
    return _descending_search(sorted_desc, value, False)


@njit(cache=True, inline="always")
def breakpoint_window(searchable, mean, half_width):
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
def use_selection(path, m, n):
    """Whether to order only the ``m`` best noisy scores of ``n`` (else sort them all).

    Selection costs ``O(n + R log m + m log m)`` (a min-heap of the ``m`` best: each noisy
    score is compared with the heap's minimum, ``R`` of them replace it, about ``m ln(n/m)``
    in a random order and at most ``n``; up to ``INSERTION_SELECT_MAX`` selected, ``O(n + R m)``
    by insertion, cheaper there), the full sort ``O(n log n)``. Automatic rule: select
    when ``m * SELECT_FACTOR <= n``. Measured per ``ccs_query`` call, with the heap (NDCG,
    n = 12 to 1000, random document order, on a loaded 2-core machine), selection took
    0.06-0.8x the sort path's time for m <= 11 (the smaller m / n, the less), 0.8-0.9x at
    m = n / 3 and 0.96-1.06x at m = n / 2. Worst case measured: documents in ascending order
    of widely spread scores (every score replaces the heap's minimum, few breakpoints in each
    window): 0.15-0.9x for m <= 11, but 1.1-1.3x for m = 26 .. n / 3 (n = 100, 1000).
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


# Up to this many selected, the best so far are kept sorted by insertion while that costs
# fewer than ``n + m^2 (1/2 + ln(n / m))`` moves, twice what a random order costs (on
# MSLR-shaped lists at NDCG@10's grown cutoffs, m = 11-32, 0.65x the heap's time); then, or
# for more, in a min-heap (O(log m) per document entering): documents in ascending order,
# where every one enters, would cost m moves each (2.2x the full sort at m = 32, n = 100-1000;
# with the switch 1.7-2.1x at n = 100, 1.0-1.2x at n = 1000).
INSERTION_SELECT_MAX = 32


@njit(cache=True)
def _select_noisy_scores(shifted, noise, sigma, m, ys, order):
    """Fill ``ys[:m]`` with the ``m`` largest noisy scores in descending order and ``order``
    (length ``m``) with their documents; return ``order``.

    ``m <= INSERTION_SELECT_MAX``: the best so far, descending, in ``ys[:m]``; a noisy score
    above the lowest of them is inserted in its place (the lowest drops out). Once that has
    moved ``n + m^2 (1/2 + ln(n / m))`` entries (documents in ascending order), or for a
    larger ``m``: a min-heap of the best ``m`` so far (the descending buffer reversed is one),
    then heap sort (the minimum goes to the end), which leaves ``ys[:m]`` descending. Ties
    have probability zero.
    """
    n = shifted.shape[0]
    first_heaped = m  # the first document the heap takes
    if m <= INSERTION_SELECT_MAX:
        budget = n + m * m * (0.5 + math.log(n / m))  # twice a random order's moves
        first_heaped = -1  # none: the insertion took every document
        kept = 0
        for i in range(n):
            end = kept if kept < m else m - 1  # where an entering score starts moving up
            kept, _, position = keep_best(ys, order, kept, m, shifted[i] + sigma * noise[i], i)
            if position == m:
                continue
            budget -= end - position
            if budget < 0 and i >= m:
                first_heaped = i + 1
                _reverse(ys, order, m)  # descending -> ascending, a min-heap
                break
        if first_heaped < 0:
            return order
    else:
        for i in range(m):
            ys[i] = shifted[i] + sigma * noise[i]
            order[i] = i
        for pos in range(m // 2 - 1, -1, -1):
            sift_down_min(ys, order, pos, m)
    lowest = ys[0]
    for i in range(first_heaped, n):
        y = shifted[i] + sigma * noise[i]
        if y > lowest:
            ys[0] = y
            order[0] = i
            sift_down_min(ys, order, 0, m)
            lowest = ys[0]
    for end in range(m - 1, 0, -1):
        y = ys[end]
        doc = order[end]
        ys[end] = ys[0]
        order[end] = order[0]
        ys[0] = y
        order[0] = doc
        sift_down_min(ys, order, 0, end)
    return order


@njit(cache=True, inline="always")
def _reverse(ys, order, m):
    """Reverse ``ys[:m]`` and ``order[:m]`` in place."""
    for j in range(m // 2):
        k = m - 1 - j
        ys[j], ys[k] = ys[k], ys[j]
        order[j], order[k] = order[k], order[j]


@njit(cache=True)
def second_zero_position(shifted, cont, noise, sigma):
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


# The k-th relevant document is found by insertion into the k best so far (O(n k)); beyond
# this many, the bound is not worth its search and every position stays a breakpoint.
MAX_RANKED_RELEVANT = 32


@njit(cache=True)
def kth_relevant_position(shifted, relevant, noise, sigma, k):
    """Position, in the noisy order, of the ``k``-th best relevant document (``relevant > 0``;
    ``n`` if there are fewer than ``k``, or if ``k > MAX_RANKED_RELEVANT``; with tied noisy
    scores the last position it can take). A counting metric whose weight vanishes from ``k - 1``
    relevant documents above on (``ccs_counting_query`` with a depth) has no breakpoint below it
    that can jump."""
    n = shifted.shape[0]
    if k > MAX_RANKED_RELEVANT or k < 1:
        return n
    best = np.empty(k)  # descending, the k best relevant noisy scores so far
    n_best = 0
    for i in range(n):
        if relevant[i] > 0.0:
            y = shifted[i] + sigma * noise[i]
            if n_best == k and y <= best[k - 1]:
                continue
            j = n_best if n_best < k else k - 1
            while j > 0 and best[j - 1] < y:
                best[j] = best[j - 1]
                j -= 1
            best[j] = y
            if n_best < k:
                n_best += 1
    if n_best < k:
        return n
    kth = best[k - 1]
    not_below = 0
    for i in range(n):
        if shifted[i] + sigma * noise[i] >= kth:
            not_below += 1
    return not_below - 1


@njit(cache=True, inline="always")
def order_noisy_scores(shifted, noise, sigma, m, select, ys, order_buffer):
    """The ``m`` best documents by noisy score, descending (their scores in ``ys[:m]``, the
    documents in ``order_buffer[:m]``) if ``select``; else the full order (``m`` is then
    ignored, all ``n`` scores in ``ys``, the order a new array)."""
    if select:
        return _select_noisy_scores(shifted, noise, sigma, m, ys, order_buffer[:m])
    return _sort_noisy_scores(shifted, noise, sigma, ys)
