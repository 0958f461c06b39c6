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
* :func:`top_pairs_and_mass`, :func:`mass_derivatives` -- DCG/NDCG with every later partner
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

from .common import order_desc, query_rows, sigmoid, softplus, zeroed_loss_grad_hess
from .rng import LOGISTIC_SALT, fill_logistic_ratios, fill_standard_normal, stream_key
from .stable_order import (MAX_BUCKET, SortWorkspace, bucket_order,  # noqa: F401
                           bucket_order_in_range, sort_workspace, top_order)

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
    longer than ``top`` go through :func:`top_pairs_and_mass` and :func:`mass_derivatives`:
    below ``top`` every discount is 0, so a first document's pairs with all the documents
    below the top differ only in the partner's gain."""
    return ((settings.mode == MODE_DCG or settings.mode == MODE_NDCG)
            and settings.neighbors <= 0 and settings.top < n)


@njit(cache=True)
def top_pairs_and_mass(order, labels, gains, discounts, inv_ideal_q, mass, winners, losers,
                       weights):
    """The pairs of one order of DCG/NDCG with every later partner, in two parts (``T`` =
    ``len(order)``, the top of the order; ``D_K = 0`` below it):

    * ``mass[a] += D_k`` for the document ``a`` at each top position ``k``: summed over the
      orders, the pair ``{a, b}`` then weighs ``|g_a - g_b| (mass_a + mass_b)`` times
      ``inv_ideal_q`` (:func:`mass_derivatives`), which is exact for each order in which one
      of the two is in the top and the other below it (and counts 0 where both are below);
    * for two documents both in the top (``a`` at ``k`` above ``b`` at ``m``), where the masses
      count ``D_k + D_m`` instead of the pair's ``D_k - D_m``, the correction ``-2 |g_a - g_b|
      D_m`` as a stored pair (a negative weight; the pair's total stays ``|g_a - g_b| (D_k -
      D_m) >= 0``).

    Returns the number of pairs written."""
    count = 0
    for k in range(order.shape[0]):
        a = order[k]
        mass[a] += discounts[k]
        for m in range(k + 1, order.shape[0]):
            b = order[m]
            if labels[a] != labels[b]:
                w = -2.0 * abs(gains[a] - gains[b]) * discounts[m] * inv_ideal_q
                count = _emit(labels, a, b, w, count, winners, losers, weights)
    return count


@njit(cache=True)
def mass_derivatives(s, e, labels, gains, mass, inv_ideal_q, grad, hess, with_loss):
    """:func:`add_pair_derivatives` of the pairs ``{a, b}`` of documents of different labels of
    which at least one has mass, weight ``|g_a - g_b| (mass_a + mass_b) inv_ideal_q``: the
    documents below the top of :func:`top_pairs_and_mass`, in one pass over the documents with
    mass instead of a pass per order. Each pair is visited once, from its first document with
    mass (at iteration 0 nearly every document reaches some order's top, so nearly every pair
    has two). Returns the loss term when ``with_loss`` (else 0)."""
    total = 0.0
    for a in range(s.shape[0]):
        if mass[a] == 0.0:
            continue
        la = labels[a]
        ga = gains[a]
        for b in range(s.shape[0]):
            lb = labels[b]
            if lb == la or (b < a and mass[b] != 0.0):   # equal labels, or visited from b
                continue
            w = abs(ga - gains[b]) * (mass[a] + mass[b]) * inv_ideal_q
            winner, loser = (a, b) if la > lb else (b, a)
            _add_pair(s, e, winner, loser, w, grad, hess)
            if with_loss:
                total += w * softplus(s[loser] - s[winner])
    return total


@njit(cache=True, inline="always")
def _yetirank_query(s, labels, gains, discounts, inv_ideal_q, settings, stream, with_loss, grad,
                    hess):
    """One query of :func:`yetirank_grad_hess`, written into its rows; returns its loss.
    ``stream``: ``(iteration, query)``, the key of the query's noise with ``settings.seed``."""
    iteration, q = stream
    n = s.shape[0]
    shortcut = below_top_shortcut(n, settings)
    # with the shortcut only the top is ordered and stored as pairs; the rest goes by the masses
    length = settings.top if shortcut else needed_positions(n, settings)
    size = 0 if settings.mode == MODE_CLASSIC else max_pairs(length, settings)  # pairs stored
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
    total = 0.0
    for k in range(rounds):
        order = noisy_order(s, settings.noise, settings.noise_power,
                            (settings.seed, iteration, q, k), length, buf, work)
        if settings.mode == MODE_CLASSIC:
            total += classic_derivatives(order, labels, s, e, settings.decay, grad, hess,
                                         with_loss)
            continue
        if shortcut:
            count = top_pairs_and_mass(order[:length], labels, gains, discounts, inv_ideal_q,
                                       mass, winners, losers, weights)
        else:
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


@njit(cache=True, parallel=True)
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
    loss, grad, hess = zeroed_loss_grad_hess(scores.shape[0], query_offsets.shape[0] - 1)
    for q in prange(loss.shape[0]):
        lo, hi, active = query_rows(query_offsets, keep, q)
        if active:
            loss[q] = _yetirank_query(scores[lo:hi], labels[lo:hi], gains[lo:hi], discounts,
                                      keep[q], settings, (iteration, q), with_loss, grad[lo:hi],
                                      hess[lo:hi])
    return loss, grad, hess
