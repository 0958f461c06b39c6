"""YetiRank and YetiLoss kernels: noisy permutations -> weighted pairs -> pairwise-logistic
derivatives at the noise-free scores (see :mod:`stochrank_objectives.objectives.yetirank` for the
definitions and their sources).

One concern per function:

* :func:`noisy_order` -- the order of one permutation: the query's scores plus the noise of the
  stream keyed by ``(seed, iteration, query, permutation)``, stable-sorted descending (a bucket
  sort; where it declines, only the leading positions the pairs can reach,
  :func:`needed_positions`, by :func:`top_order`);
* :func:`permutation_pairs` -- the weighted pairs ``(winner, loser, w)`` of one order
  (:func:`classic_pairs` for YetiRank, :func:`yetiloss_pairs` for the metric modes);
* :func:`noisy_top_order` -- the same order's first positions alone, for logistic noise and a
  short prefix, without a logarithm per document (:func:`logistic_top_order`);
* :func:`top_derivatives`, :func:`mass_derivatives` -- DCG/NDCG with every later partner
  (``num_neighbors = -1``) of a list longer than ``top``: the pairs inside the top per order,
  and those with the documents below it summed over the orders first (their discount is 0);
* :func:`add_pair_derivatives` -- the gradient and diagonal hessian of
  ``sum_pairs w log(1 + exp(-(s_winner - s_loser)))``, weights held fixed;
* :func:`yetirank_grad_hess` -- the driver, ``prange`` over queries; each query is computed
  by one thread and its noise is keyed by the query, so the result is bit-identical on any
  number of threads.

Positions are 0-based here (the 1-based position of the formulas is ``p + 1``).
"""

import math
from typing import NamedTuple

import numpy as np
from numba import njit, prange, uint64

from .common import order_desc, query_rows, sigmoid, softplus, zeroed_outputs
from .rng import LOGISTIC_SALT, fill_logistic_ratios, fill_standard_normal, stream_key
from .stable_order import (MAX_BUCKET, SortWorkspace, bucket_order,  # noqa: F401
                           bucket_order_in_range, keep_best, sift_down_min, sort_workspace,
                           top_order)

MODE_CLASSIC = 0
MODE_DCG = 1
MODE_NDCG = 2
MODE_MRR = 3
MODE_ERR = 4
MODE_MAP = 5

NOISE_LOGISTIC = 0
NOISE_GAUSS = 1
NOISE_NONE = 2

#: the factor of every Classic pair weight (CatBoost 1.2.10's constant)
CLASSIC_SCALE = 0.15


class YetiSettings(NamedTuple):
    """The parameters of :func:`yetirank_grad_hess`, validated by the objective.

    Fields: ``mode`` (a ``MODE_*`` code), ``top`` (the last first position of a YetiLoss pair,
    1-based; a huge value for an unlimited list), ``neighbors`` (partners after each first
    position; ``<= 0``: all later positions), ``permutations`` (noisy orders per query),
    ``decay`` (Classic), ``noise`` (a ``NOISE_*`` code), ``noise_power`` (the Gaussian
    standard deviation) and ``seed``.
    """

    mode: int
    top: int
    neighbors: int
    permutations: int
    decay: float
    noise: int
    noise_power: float
    seed: int


@njit(cache=True)
def noisy_order(s, noise, noise_power, stream, length, buf, work):
    """The first ``length`` positions (documents) of ``z = s + e`` sorted descending (stable:
    ties keep input order): the full order by :func:`bucket_order_in_range` (a view of
    ``work.order``), or where that does not apply :func:`top_order` when ``3 length <=
    len(s)``, else a stable merge sort. (The bucket sort of all ``n`` documents is faster than
    the heap's first ``length``, even for ``length`` 11 of 120: the heap's comparisons are
    unpredictable branches.)

    ``e`` is permutation ``k`` of query ``q`` (``stream = (seed, iteration, q, k)``): standard
    logistic (``NOISE_LOGISTIC``, salted apart from the Gaussian streams), ``N(0,
    noise_power^2)`` (``NOISE_GAUSS``) or 0 (``NOISE_NONE``). ``buf``: scratch of ``len(s)``;
    ``work``: a :func:`sort_workspace` of at least ``len(s)``. One pass forms ``z`` and its
    range (for the logistic noise it also takes the logarithms of the odds, whose loop is
    bound by the calls to ``log`` anyway).
    """
    seed, iteration, q, k = stream
    n = s.shape[0]
    if noise == NOISE_GAUSS:
        fill_standard_normal(stream_key(seed, iteration, q, k), buf)
    elif noise == NOISE_LOGISTIC:
        fill_logistic_ratios(stream_key(seed, iteration, q, uint64(k) + LOGISTIC_SALT), buf)
    lo = np.inf
    hi = -np.inf
    for i in range(n):
        if noise == NOISE_GAUSS:
            z = s[i] + noise_power * buf[i]
        elif noise == NOISE_LOGISTIC:
            z = math.log(buf[i]) + s[i]  # fill_standard_logistic's draw, plus the score
        else:
            z = s[i]
        buf[i] = z
        lo = min(lo, z)
        hi = max(hi, z)
    if bucket_order_in_range(buf, lo, hi, work):
        return work.order[:n]
    if 3 * length <= n:
        return top_order(buf, length)
    for i in range(n):
        buf[i] = -buf[i]
    return np.argsort(buf, kind="mergesort")  # ascending -z: descending z, ties in input order


#: :func:`logistic_top_order`'s relative margin below its proxy threshold; the proxy's rounding
#: is below 1e-10 on the log scale while every score is within ``PROXY_MAX_SCORE`` of 0
PROXY_MARGIN = 1e-9
PROXY_MAX_SCORE = 1e5
#: the smallest proxy threshold it trusts: below it the proxies of other documents may
#: have underflowed
PROXY_MIN_KEY = 1e-280
#: :func:`logistic_top_order` serves prefixes of at most ``1 / PROXY_LIST_SHARE`` of the list
#: (on shorter lists the full order is as cheap), and takes at most ``PROXY_SHARE`` times the
#: prefix as candidates from a guessed bound
PROXY_LIST_SHARE = 3
PROXY_SHARE = 8
#: the counts :func:`proxy_bound` tries before it falls back to a heap
PROXY_STEPS = 16
#: the next order's guessed bound: the last order's ``length``-th proxy times this (its ``z``
#: lower by ``log 2``: the ``length``-th noisy score varies by less between permutations)
PROXY_GUESS = 0.5


@njit(cache=True)
def kth_largest_proxy(ratios, e, length, work):
    """The ``length``-th largest of ``ratios e`` (a min-heap in ``work.keys[:length]``, the
    documents in ``work.order``)."""
    heap = work.keys
    docs = work.order
    for i in range(length):
        heap[i] = ratios[i] * e[i]
        docs[i] = i
    for pos in range(length // 2 - 1, -1, -1):
        sift_down_min(heap, docs, pos, length)
    for i in range(length, ratios.shape[0]):
        y = ratios[i] * e[i]
        if y > heap[0]:
            heap[0] = y
            docs[0] = i
            sift_down_min(heap, docs, 0, length)
    return heap[0]


@njit(cache=True, error_model="numpy")
def count_at_least(ratios, e, bound):
    """How many documents have ``ratios e >= bound`` (a vectorised count)."""
    count = 0
    for i in range(ratios.shape[0]):
        count += 1 if ratios[i] * e[i] >= bound else 0
    return count


@njit(cache=True)
def proxy_bound(ratios, e, length, guess):
    """A bound that between ``length`` and ``PROXY_SHARE length`` proxies ``ratios e`` reach,
    found from ``guess`` (``1``, the best noise-free proxy, where it is none) by halving or
    doubling it, a vectorised count each time; 0 where ``PROXY_STEPS`` counts find none or it
    falls below ``PROXY_MIN_KEY``."""
    bound = guess if guess >= PROXY_MIN_KEY else 1.0
    for _ in range(PROXY_STEPS):
        reach = count_at_least(ratios, e, bound)
        if reach < length:
            bound *= 0.5
            if not bound >= PROXY_MIN_KEY:
                return 0.0
        elif reach > PROXY_SHARE * length:
            bound *= 2.0
        else:
            return bound
    return 0.0


@njit(cache=True)
def proxy_candidates(ratios, e, bound, candidates):
    """The documents with ``ratios e >= bound (1 - PROXY_MARGIN)`` into ``candidates``, in input
    order, without a branch per document; returns their count."""
    threshold = bound * (1.0 - PROXY_MARGIN)
    count = 0
    for i in range(ratios.shape[0]):
        candidates[count] = i
        count += 1 if ratios[i] * e[i] >= threshold else 0
    return count


@njit(cache=True)
def proxy_order(ratios, e, length, candidates, count, work):
    """The first ``length`` of ``candidates`` by their proxies ``y = ratios e``, descending;
    empty unless every neighbour of the result, and the best candidate left out, lies more
    than ``PROXY_MARGIN`` (relative) below the one before it: then their exact ``z`` keep the
    same order, without ties (see :func:`logistic_top_order`)."""
    keys = work.keys
    order = work.order
    kept = 0
    out = -np.inf  # the best proxy left out
    for j in range(count):
        doc = candidates[j]
        kept, dropped, _ = keep_best(keys, order, kept, length, ratios[doc] * e[doc], doc)
        out = max(out, dropped)
    factor = 1.0 - PROXY_MARGIN
    for p in range(1, length):
        if not keys[p] < keys[p - 1] * factor:
            return order[:0]
    if not out < keys[length - 1] * factor:
        return order[:0]
    return order[:length]


@njit(cache=True)
def exact_candidate_order(s, ratios, length, candidates, count, work):
    """The first ``length`` of ``candidates`` by their exact ``z = log(ratios) + s``,
    descending, ties in input order."""
    keys = work.keys
    order = work.order
    kept = 0
    for j in range(count):
        doc = candidates[j]
        kept, _, _ = keep_best(keys, order, kept, length, math.log(ratios[doc]) + s[doc], doc)
    return order[:length]


@njit(cache=True, inline="always")
def logistic_top_order(s, e, ratios, length, guess, work):
    """The first ``length`` positions of the stable descending order of ``z = log(ratios) + s``
    (:func:`noisy_order`'s logistic ``z``, the same values) without a logarithm per document;
    an empty array where it declines (the caller then orders all of ``z``).

    ``e = exp(s - max(s))`` (:func:`exp_scores`) makes ``y = ratios e`` a proxy of ``exp(z -
    max(s))``, monotone in ``z`` up to rounding. For a bound ``Y`` that at least ``length``
    proxies reach -- ``guess`` where the count confirms it (the caller's estimate from the
    previous order), else the ``length``-th largest proxy (:func:`kth_largest_proxy`) -- only
    the documents with ``y >= Y (1 - PROXY_MARGIN)`` are candidates: every other document has
    ``length`` documents whose ``z`` is larger by about the margin, far above the rounding of
    either side while ``|s| <= PROXY_MAX_SCORE`` (the caller's condition), so it is not among
    the first ``length``. The candidates are ordered by their proxies where those are that far
    apart (:func:`proxy_order`), else by their exact ``z`` (:func:`exact_candidate_order`):
    the result is exactly the stable sort's prefix. It declines when ``Y < PROXY_MIN_KEY``
    (underflowed proxies could hide a document)."""
    bound = proxy_bound(ratios, e, length, guess)
    if bound == 0.0:
        bound = kth_largest_proxy(ratios, e, length, work)
        if not bound >= PROXY_MIN_KEY:
            return work.order[:0]
    candidates = work.bucket
    count = proxy_candidates(ratios, e, bound, candidates)
    order = proxy_order(ratios, e, length, candidates, count, work)
    if order.shape[0] == length:
        return order
    return exact_candidate_order(s, ratios, length, candidates, count, work)


@njit(cache=True, inline="always")
def noisy_top_order(s, e, stream, length, guess, buf, work):
    """:func:`noisy_order`'s first ``length`` positions with logistic noise, by
    :func:`logistic_top_order` (the caller checks the scores' range); an empty array where
    that declines, and the caller then takes :func:`noisy_order` (the same positions; calling
    it from here would compile it a second time). Both are inlined into the per-order loop:
    the calls cost ~0.1 ms of a 3 ms call on 20k documents, and the first compilation is
    shorter without them (13.6 s against 13.9 s for YetiLoss's first gradient; inlining the
    helpers they call as well added 3-4 s for no further gain)."""
    seed, iteration, q, k = stream
    fill_logistic_ratios(stream_key(seed, iteration, q, uint64(k) + LOGISTIC_SALT), buf)
    return logistic_top_order(s, e, buf, length, guess, work)


@njit(cache=True)
def needed_positions(n, settings):
    """How many leading positions of an order the pairs can reach: all for Classic and for
    ``num_neighbors = -1``, else ``min(n, top + num_neighbors)``."""
    if settings.mode == MODE_CLASSIC or settings.neighbors <= 0 or settings.top >= n:
        return n
    return min(n, settings.top + settings.neighbors)


@njit(cache=True, inline="always")
def _emit(labels, a, b, w, count, winners, losers, weights):
    """Store the pair of documents ``a``, ``b`` (labels differ) as (winner, loser, ``w``)."""
    if labels[a] > labels[b]:
        winners[count] = a
        losers[count] = b
    else:
        winners[count] = b
        losers[count] = a
    weights[count] = w
    return count + 1


@njit(cache=True)
def classic_pairs(order, labels, decay, winners, losers, weights):
    """YetiRank's pairs: neighbours at positions ``p, p + 1`` whose labels differ, weight
    ``CLASSIC_SCALE * decay^p * |r_a - r_b|`` (the exponent counts equal-label neighbours too).
    Returns the number of pairs written."""
    count = 0
    factor = CLASSIC_SCALE
    for p in range(order.shape[0] - 1):
        a = order[p]
        b = order[p + 1]
        if labels[a] != labels[b]:
            count = _emit(labels, a, b, factor * abs(labels[a] - labels[b]), count, winners,
                          losers, weights)
        factor *= decay
    return count


@njit(cache=True, inline="always")
def _first_relevant(order, labels):
    """0-based position of the first document with label > 0 (``n`` when none)."""
    for p in range(order.shape[0]):
        if labels[order[p]] > 0.0:
            return p
    return order.shape[0]


@njit(cache=True)
def yetiloss_pairs(order, labels, gains, discounts, inv_ideal_q, settings, winners, losers,
                   weights):
    """YetiLoss's pairs: first position ``k < min(top, n)``, partners ``k < m <= k +
    neighbors``, labels different, weight by ``settings.mode`` (1-based ``K = k + 1``,
    ``M = m + 1``, winner ``a`` = the larger label):

    * DCG: ``|(g_a - g_b) (D_k - D_m)|`` (``discounts``: zero from ``top`` on); NDCG: that times
      ``inv_ideal_q``;
    * MRR (``k`` up to the first relevant position), MAP: pairs with one relevant member
      (label > 0) only; ``1/K - 1/M`` and ``1/K + sum of 1/J over relevant positions K < J < M``;
    * ERR: ``A |(r_a - r_b)/K + (r_b - r_a) S + Q (r_b - r_a)/M|`` with ``A`` the product of
      ``1 - r`` above ``k``, ``Q`` that product strictly between ``k`` and ``m``, ``S`` the sum
      over ``k < j < m`` of ``r_j / J`` times the product of ``1 - r`` strictly between ``k``
      and ``j``.

    Returns the number of pairs written.
    """
    mode = settings.mode
    n = order.shape[0]
    last = min(settings.top, n)
    if mode == MODE_MRR:
        last = min(last, _first_relevant(order, labels) + 1)
    reach = settings.neighbors if settings.neighbors > 0 else n
    count = 0
    above = 1.0  # ERR: product of (1 - r) over the positions before k
    for k in range(last):
        a = order[k]
        ra = labels[a]
        between = 1.0  # ERR: product of (1 - r) strictly between k and m
        cascade = 0.0  # ERR: S
        relevant = 0.0  # MAP: sum of 1/J over relevant positions strictly between k and m
        for m in range(k + 1, min(n, k + 1 + reach)):
            b = order[m]
            rb = labels[b]
            if ra != rb:
                w = 0.0
                if mode == MODE_DCG or mode == MODE_NDCG:
                    w = abs((gains[a] - gains[b]) * (discounts[k] - discounts[m]))
                    if mode == MODE_NDCG:
                        w *= inv_ideal_q
                elif mode == MODE_ERR:
                    w = above * abs((ra - rb) / (k + 1.0) + (rb - ra) * cascade
                                    + between * (rb - ra) / (m + 1.0))
                elif (ra > 0.0) != (rb > 0.0):
                    if mode == MODE_MRR:
                        w = 1.0 / (k + 1.0) - 1.0 / (m + 1.0)
                    else:
                        w = 1.0 / (k + 1.0) + relevant
                if w != 0.0:
                    count = _emit(labels, a, b, w, count, winners, losers, weights)
            if mode == MODE_ERR:
                cascade += rb / (m + 1.0) * between
                between *= 1.0 - rb
            elif mode == MODE_MAP and rb > 0.0:
                relevant += 1.0 / (m + 1.0)
        above *= 1.0 - ra
    return count


@njit(cache=True)
def max_pairs(n, settings):
    """An upper bound on the pairs of one permutation of ``n`` documents."""
    if settings.mode == MODE_CLASSIC:
        return max(n - 1, 0)
    reach = settings.neighbors if settings.neighbors > 0 else n
    total = 0
    for k in range(min(settings.top, n)):
        total += min(reach, n - 1 - k)
    return total


@njit(cache=True)
def permutation_pairs(order, labels, gains, discounts, inv_ideal_q, settings, winners, losers,
                      weights):
    """The weighted pairs of one order by ``settings.mode``: :func:`classic_pairs` or
    :func:`yetiloss_pairs`. Returns the number of pairs written."""
    if settings.mode == MODE_CLASSIC:
        return classic_pairs(order, labels, settings.decay, winners, losers, weights)
    return yetiloss_pairs(order, labels, gains, discounts, inv_ideal_q, settings, winners, losers,
                          weights)


@njit(cache=True)
def exp_scores(s, out):
    """``out = exp(s - max(s))`` (in (0, 1]), so that ``sigmoid(s_b - s_a) = out_b / (out_a +
    out_b)`` costs one division per pair."""
    top = s[0]
    for i in range(s.shape[0]):
        top = max(top, s[i])
    for i in range(s.shape[0]):
        out[i] = np.exp(s[i] - top)


@njit(cache=True, inline="always")
def max_abs(s):
    """The largest ``|s_i|``."""
    largest = 0.0
    for i in range(s.shape[0]):
        largest = max(largest, abs(s[i]))
    return largest


@njit(cache=True, inline="always")
def _add_pair(s, e, winner, loser, w, grad, hess):
    """One pair of :func:`add_pair_derivatives`: its terms added to ``grad`` and ``hess`` (the
    callers add its loss term: returned from here, it made the every-partner pass 1.6x slower)."""
    denominator = e[winner] + e[loser]
    if denominator > 1e-300:
        rho = e[loser] / denominator
    else:  # both scores far below the query's best: exp underflows
        rho = sigmoid(s[loser] - s[winner])
    grad[winner] -= w * rho
    grad[loser] += w * rho
    h = w * rho * (1.0 - rho)
    hess[winner] += h
    hess[loser] += h


@njit(cache=True)
def add_pair_derivatives(s, e, winners, losers, weights, count, grad, hess, with_loss):
    """Add the derivatives of ``sum_pairs w log(1 + exp(-(s_a - s_b)))`` (``a`` the winner,
    weights fixed) to ``grad`` and ``hess``; returns that sum when ``with_loss`` (else 0).
    ``e``: :func:`exp_scores` of ``s``::

        rho = sigmoid(s_b - s_a);  grad_a -= w rho,  grad_b += w rho,
        hess_a, hess_b += w rho (1 - rho).
    """
    total = 0.0
    for i in range(count):
        _add_pair(s, e, winners[i], losers[i], weights[i], grad, hess)
        if with_loss:
            total += weights[i] * softplus(s[losers[i]] - s[winners[i]])
    return total


@njit(cache=True)
def classic_derivatives(order, labels, s, e, decay, grad, hess, with_loss):
    """:func:`classic_pairs` and :func:`add_pair_derivatives` of one order in one pass, with
    the same floating-point operations in the same order (bit-identical), without storing the
    pairs and without a branch on the labels: the neighbours ``x, y`` are updated with the
    winner's sign chosen by value (``g - t`` is ``g + (-t)`` exactly), and a pair of equal
    labels gets the weight 0, whose terms ``-/+ 0 rho`` and ``0 rho (1 - rho)`` leave ``grad``
    and ``hess`` unchanged (they start at +0 and never hold -0). The document at position
    ``p + 1`` is the next pair's ``x``: its running sums stay in registers between the two
    pairs (the same additions in the same order, without a store and reload on the critical
    path). Returns the loss term when ``with_loss`` (else 0)."""
    total = 0.0
    factor = CLASSIC_SCALE
    x = order[0]
    lx = labels[x]
    ex = e[x]
    gx = grad[x]
    hx = hess[x]
    for p in range(1, order.shape[0]):
        y = order[p]
        ly = labels[y]
        ey = e[y]
        w = factor * abs(lx - ly)
        first = lx > ly  # x is the winner (when the labels differ)
        denominator = ex + ey
        if denominator > 1e-300:
            rho = (ey if first else ex) / denominator
        else:  # both scores far below the query's best: exp underflows
            rho = sigmoid(s[y] - s[x] if first else s[x] - s[y])
        t = w * rho
        tx = -t if first else t  # the winner's gradient term is -t, the loser's +t
        h = w * rho * (1.0 - rho)
        grad[x] = gx + tx
        hess[x] = hx + h
        gx = grad[y] + (-tx)
        hx = hess[y] + h
        if with_loss and lx != ly:
            total += w * softplus(s[y] - s[x] if first else s[x] - s[y])
        factor *= decay
        x = y
        lx = ly
        ex = ey
    grad[x] = gx
    hess[x] = hx
    return total


@njit(cache=True, inline="always")
def below_top_shortcut(n, settings):
    """Whether DCG/NDCG pairs with every later partner (``num_neighbors = -1``) of a list
    longer than ``top`` go through :func:`top_derivatives` and :func:`mass_derivatives`:
    below ``top`` every discount is 0, so a first document's pairs with all the documents
    below the top differ only in the partner's gain."""
    return ((settings.mode == MODE_DCG or settings.mode == MODE_NDCG)
            and settings.neighbors <= 0 and settings.top < n)


@njit(cache=True)
def top_derivatives(order, labels, gains, discounts, inv_ideal_q, mass, s, e, grad, hess,
                    with_loss):
    """The pairs of one order of DCG/NDCG with every later partner, in two parts (``T`` =
    ``len(order)``, the top of the order; ``D_K = 0`` below it), and their derivatives:

    * ``mass[a] += D_k`` for the document ``a`` at each top position ``k``: summed over the
      orders, the pair ``{a, b}`` then weighs ``|g_a - g_b| (mass_a + mass_b)`` times
      ``inv_ideal_q`` (:func:`mass_derivatives`), which is exact for each order in which one
      of the two is in the top and the other below it (and counts 0 where both are below);
    * for two documents both in the top (``a`` at ``k`` above ``b`` at ``m``), where the masses
      count ``D_k + D_m`` instead of the pair's ``D_k - D_m``, the correction ``-2 |g_a - g_b|
      D_m`` (a negative weight; the pair's total stays ``|g_a - g_b| (D_k - D_m) >= 0``), added
      to ``grad`` and ``hess`` as :func:`add_pair_derivatives` adds a stored pair, pairs in the
      order ``(k, m)``.

    Without storing the pairs and without a branch on the labels (as
    :func:`classic_derivatives`): a pair of equal labels gets the weight 0, whose terms leave
    ``grad`` and ``hess`` unchanged (they start at +0 and never hold -0), and the winner's sign
    is chosen by value. The first document of a row keeps its running sums in registers (it is
    in no later row). Returns the loss term when ``with_loss`` (else 0)."""
    total = 0.0
    length = order.shape[0]
    for k in range(length):
        a = order[k]
        mass[a] += discounts[k]
        la = labels[a]
        ga = gains[a]
        ea = e[a]
        grad_a = grad[a]
        hess_a = hess[a]
        for m in range(k + 1, length):
            b = order[m]
            lb = labels[b]
            w = -2.0 * abs(ga - gains[b]) * discounts[m] * inv_ideal_q
            w = w if la != lb else 0.0
            wins = la > lb  # a is the winner (when the labels differ)
            denominator = ea + e[b]
            if denominator > 1e-300:
                rho = (e[b] if wins else ea) / denominator
            else:  # both scores far below the query's best: exp underflows
                rho = sigmoid(s[b] - s[a] if wins else s[a] - s[b])
            step = w * rho
            h = w * rho * (1.0 - rho)
            grad_a += -step if wins else step
            hess_a += h
            grad[b] += step if wins else -step
            hess[b] += h
            if with_loss and la != lb:
                total += w * softplus(s[b] - s[a] if wins else s[a] - s[b])
        grad[a] = grad_a
        hess[a] = hess_a
    return total


@njit(cache=True, error_model="numpy", fastmath={"reassoc"}, inline="always")
def _mass_row(a, e, labels, gains, mass, inv_ideal_q, grad, hess):
    """The pairs of document ``a`` (it has mass) in :func:`mass_derivatives`, by partner
    ``b``: each pair's term added to the partner's ``grad[b]`` and ``hess[b]`` (``+t`` if ``a``
    wins, ``-t`` if ``b`` does), and ``(sum of -t, sum of the curvatures)``, ``a``'s own sums,
    returned; a pair that is not ``a``'s (equal labels, or visited from ``b``) adds 0. The same
    operations as :func:`_add_pair` on the same values, chosen by value instead of by a branch,
    so that the compiler vectorises the loop, its two own sums included (``fastmath=
    {"reassoc"}``: they run as one partial sum per vector lane, added up at the end; the only
    flag, so nothing else is reordered or approximated; ``error_model="numpy"``: no zero check
    on the division, whose divisor the caller has checked: ``e_a + min(e) > 1e-300``). Inlined
    into :func:`mass_derivatives`, which has the same flags."""
    la = labels[a]
    ga = gains[a]
    ma = mass[a]
    ea = e[a]
    own_grad = 0.0
    own_hess = 0.0
    for b in range(e.shape[0]):
        lb = labels[b]
        mb = mass[b]
        own = lb != la and not (b < a and mb != 0.0)
        w = abs(ga - gains[b]) * (ma + mb) * inv_ideal_q
        wins = la > lb
        rho = (e[b] if wins else ea) / (ea + e[b])
        step = w * rho
        h = w * rho * (1.0 - rho)
        term = (step if wins else -step) if own else 0.0
        curvature = h if own else 0.0
        grad[b] += term
        hess[b] += curvature
        own_grad -= term
        own_hess += curvature
    return own_grad, own_hess


# error_model="numpy", fastmath={"reassoc"}: those of the inlined _mass_row (vectorised)
@njit(cache=True, error_model="numpy", fastmath={"reassoc"})
def mass_derivatives(s, e, labels, gains, mass, inv_ideal_q, grad, hess, with_loss):
    """:func:`add_pair_derivatives` of the pairs ``{a, b}`` of documents of different labels of
    which at least one has mass, weight ``|g_a - g_b| (mass_a + mass_b) inv_ideal_q``: the
    documents below the top of :func:`top_derivatives`, in one pass over the documents with
    mass instead of a pass per order. Each pair is visited once, from its first document with
    mass (at iteration 0 nearly every document reaches some order's top, so nearly every pair
    has two). Returns the loss term when ``with_loss`` (else 0).

    Each row of pairs is one vectorised loop (:func:`_mass_row`): every partner ``b`` gets its
    terms in the order of the rows, as pair by pair, and the row's document its own sums at
    the end of the row, each summed as one partial sum per vector lane. That is the same sum
    rounded differently (differences up to ~2e-15 of the largest value against pair by pair):
    identical on any number of threads and from run to run, while two machines whose compilers
    choose other vector widths may differ in the last bits. Summed in order instead, four rows
    side by side in a second pass over stored terms, the pass took 1.6-1.8x as long (20k
    documents, 10 orders)."""
    n = s.shape[0]
    lowest = np.inf
    for b in range(n):
        lowest = min(lowest, e[b])
    total = 0.0
    for a in range(n):
        if mass[a] == 0.0:
            continue
        if e[a] + lowest > 1e-300:
            own_grad, own_hess = _mass_row(a, e, labels, gains, mass, inv_ideal_q, grad, hess)
            grad[a] += own_grad
            hess[a] += own_hess
        else:  # a denominator may underflow: pair by pair, with _add_pair's guard
            for b in range(n):
                if _not_a_row_pair(a, b, labels, mass):
                    continue
                w = abs(gains[a] - gains[b]) * (mass[a] + mass[b]) * inv_ideal_q
                winner, loser = (a, b) if labels[a] > labels[b] else (b, a)
                _add_pair(s, e, winner, loser, w, grad, hess)
        if with_loss:
            total += _mass_row_loss(a, s, labels, gains, mass, inv_ideal_q)
    return total


@njit(cache=True, inline="always")
def _not_a_row_pair(a, b, labels, mass):
    """Whether the pair of ``a`` and ``b`` is not in document ``a``'s row of
    :func:`mass_derivatives`: equal labels, or visited from ``b`` (it has mass and comes
    first)."""
    return labels[b] == labels[a] or (b < a and mass[b] != 0.0)


@njit(cache=True, inline="always")
def _mass_row_loss(a, s, labels, gains, mass, inv_ideal_q):
    """The loss term of :func:`_mass_row`'s pairs: ``sum w log(1 + exp(-(s_win - s_lose)))``."""
    total = 0.0
    for b in range(s.shape[0]):
        if _not_a_row_pair(a, b, labels, mass):
            continue
        w = abs(gains[a] - gains[b]) * (mass[a] + mass[b]) * inv_ideal_q
        total += w * softplus(s[b] - s[a] if labels[a] > labels[b] else s[a] - s[b])
    return total


@njit(cache=True, inline="always")
def _yetirank_query(s, labels, gains, discounts, inv_ideal_q, settings, stream, with_loss, grad,
                    hess):
    """One query of :func:`yetirank_grad_hess`, written into its rows; returns its loss.
    ``stream``: ``(iteration, query)``, the key of the query's noise with ``settings.seed``."""
    iteration, q = stream
    n = s.shape[0]
    shortcut = below_top_shortcut(n, settings)
    # with the shortcut only the top is ordered and paired; the rest goes by the masses
    length = settings.top if shortcut else needed_positions(n, settings)
    # pairs stored (Classic and the shortcut add theirs as they go)
    size = 0 if settings.mode == MODE_CLASSIC or shortcut else max_pairs(length, settings)
    winners = np.empty(size, dtype=np.int64)
    losers = np.empty(size, dtype=np.int64)
    weights = np.empty(size)
    buf = np.empty(n)
    work = sort_workspace(n)
    e = np.empty(n)
    exp_scores(s, e)
    mass = np.zeros(n if shortcut else 0)
    # without noise every permutation is the same order: one stands for all of them
    rounds = 1 if settings.noise == NOISE_NONE else settings.permutations
    proxy = (settings.noise == NOISE_LOGISTIC and PROXY_LIST_SHARE * length <= n
             and max_abs(s) <= PROXY_MAX_SCORE)
    guess = 0.0  # the first order finds its bound
    total = 0.0
    for k in range(rounds):
        stream_k = (settings.seed, iteration, q, k)
        order = (noisy_top_order(s, e, stream_k, length, guess, buf, work) if proxy
                 else work.order[:0])
        if order.shape[0] > 0:
            # the next bound's guess (any value is safe: logistic_top_order checks it)
            guess = PROXY_GUESS * buf[order[length - 1]] * e[order[length - 1]]
        else:
            order = noisy_order(s, settings.noise, settings.noise_power, stream_k, length, buf,
                                work)
        if settings.mode == MODE_CLASSIC:
            total += classic_derivatives(order, labels, s, e, settings.decay, grad, hess,
                                         with_loss)
            continue
        if shortcut:
            total += top_derivatives(order[:length], labels, gains, discounts, inv_ideal_q,
                                     mass, s, e, grad, hess, with_loss=with_loss)
            continue
        count = permutation_pairs(order, labels, gains, discounts, inv_ideal_q, settings,
                                  winners, losers, weights)
        total += add_pair_derivatives(s, e, winners, losers, weights, count, grad, hess,
                                       with_loss)
    if shortcut:
        total += mass_derivatives(s, e, labels, gains, mass, inv_ideal_q, grad, hess, with_loss)
    if rounds > 1:
        inv = 1.0 / rounds
        for i in range(n):
            grad[i] *= inv
            hess[i] *= inv
        total *= inv
    return total


def yetirank_grad_hess(scores, labels, gains, query_offsets, keep, discounts, settings,
                       iteration, with_loss):
    """``(loss per query, grad, hess)`` of YetiRank / YetiLoss (a :class:`YetiSettings`).

    Per query, the pairs of ``settings.permutations`` noisy orders (:func:`noisy_order`,
    :func:`permutation_pairs`) are averaged into the weights ``W`` (``1 / permutations`` each),
    and the derivatives are those of ``sum_pairs W log(1 + exp(-(s_a - s_b)))`` at the
    noise-free ``scores`` with ``W`` fixed (:func:`add_pair_derivatives`). ``keep[q]``: the
    query's inverse ideal DCG for NDCG (0: no pairs), else 1. ``gains``, ``discounts``: the
    DCG/NDCG gains per document and the discounts per 0-based position (zero from ``top`` on).
    """
    loss, grad, hess = zeroed_outputs(scores.shape[0], query_offsets.shape[0] - 1)
    _yetirank_grad_hess_into(scores, labels, gains, query_offsets, keep, discounts, settings,
                             iteration, with_loss, loss=loss, grad=grad, hess=hess)
    return loss, grad, hess


@njit(cache=True, parallel=True)
def _yetirank_grad_hess_into(scores, labels, gains, query_offsets, keep, discounts, settings,
                             iteration, with_loss, loss, grad, hess):
    """:func:`yetirank_grad_hess` into zeroed outputs its caller allocates
    (:func:`~.common.zeroed_outputs`)."""
    for q in prange(loss.shape[0]):
        lo, hi, active = query_rows(query_offsets, keep, q)
        if active:
            # int64(q): Numba types q as int64 here and as uint64 in the parallel body it
            # compiles from this loop; one stream type compiles every kernel below once
            loss[q] = _yetirank_query(scores[lo:hi], labels[lo:hi], gains[lo:hi], discounts,
                                      keep[q], settings, (iteration, np.int64(q)), with_loss,
                                      grad[lo:hi], hess[lo:hi])
