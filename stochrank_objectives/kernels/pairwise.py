"""Pairwise lambda kernels: LambdaMART (NDCG/MRR), LambdaLoss NDCG-Loss2++ and the
emulations of LightGBM's ``lambdarank`` (its sigmoid table, float32 sums) and XGBoost's
``rank:ndcg`` (topk pairs).

Each returns the gradient of the **loss** and a diagonal hessian per document (see
:mod:`stochrank_objectives.objectives.lambda_family`).
"""

import math
from typing import NamedTuple

import numpy as np
from numba import njit, prange

from .common import LN2, zeroed_outputs, order_desc, query_rows, sigmoid, softplus

KIND_NDCG = 0
KIND_MRR = 1

# LightGBM's sigmoid lookup (a fact of its implementation, restated): 2^20 bins over
# [-25 / sigma, 25 / sigma]; bin i holds 1 / (1 + exp(sigma * x_i)), x_i = i / factor + lo,
# factor = bins / (hi - lo); arguments outside the range are clamped to the end bins.
LGB_SIGMOID_BINS = 1024 * 1024
LGB_SCORE_NORM_EPS = float(np.float32(0.01))  # LightGBM adds the float literal 0.01f


class LambdaSettings(NamedTuple):
    """How :func:`lambdamart_grad_hess` weighs and scales the pairs of a query.

    Fields: ``kind`` (``KIND_NDCG`` or ``KIND_MRR``), ``sigma`` (the sigmoid's scale),
    ``score_norm`` (divide each pair's weight by ``eps + |ds|``), ``norm`` (scale the query by
    ``log2(1 + L) / L``) and ``lightgbm_float32`` (accumulate in float32 like LightGBM).
    """

    kind: int
    sigma: float
    score_norm: bool
    norm: bool
    lightgbm_float32: bool


class SigmoidLookup(NamedTuple):
    """The sigmoid of :func:`lambdamart_grad_hess`: LightGBM's lookup ``table`` over
    ``[lo, hi]`` with ``factor`` bins per unit (an empty table: the exact sigmoid), and the
    ``score_norm_eps`` added to ``|ds|`` under ``score_norm``."""

    table: np.ndarray
    lo: float
    hi: float
    factor: float
    score_norm_eps: float


@njit(cache=True)
def lightgbm_sigmoid_table(sigma):
    """``(table, lo, hi, factor)`` of LightGBM's lambdarank sigmoid lookup for ``sigma``."""
    lo = -50.0 / sigma / 2.0
    hi = -lo
    factor = LGB_SIGMOID_BINS / (hi - lo)
    table = np.empty(LGB_SIGMOID_BINS)
    for i in range(LGB_SIGMOID_BINS):
        x = i / factor + lo
        table[i] = 1.0 / (1.0 + math.exp(x * sigma))
    return table, lo, hi, factor


# -- LambdaMART ------------------------------------------------------------------------------
@njit(cache=True, inline="always")
def _first_relevant(order, gains, find_relevant):
    """Positions of the first and second relevant documents of ``order`` (``n`` when absent,
    and both ``n`` unless ``find_relevant``)."""
    n = order.shape[0]
    first = n
    second = n
    if find_relevant:
        for p in range(n):
            if gains[order[p]] > 0.0:
                if first == n:
                    first = p
                else:
                    second = p
                    break
    return first, second


@njit(cache=True, inline="always")
def _mrr_swap_delta(pa, pb, rel_a, first, second, w):
    """|MRR change| from swapping positions ``pa < pb`` whose relevance differs.

    ``first``/``second``: positions of the first two relevant documents (n if none);
    ``w``: reciprocal-rank weights, zero from the cutoff on.
    """
    if rel_a:  # the relevant document moves down from pa to pb
        if pa != first:
            return 0.0
        new_first = pb if pb < second else second
        return abs(w[first] - w[new_first])
    # the relevant document at pb moves up to pa
    if pa < first:
        return abs(w[pa] - w[first])
    return 0.0


@njit(cache=True, inline="always")
def _ordered_pair(labels, order, a, b):
    """``(h, l, p_h, p_l)`` for positions ``a < b`` of ``order``: the more relevant document
    ``h``, the other ``l`` and their positions; ``h = -1`` when the labels are equal."""
    ia = order[a]
    ib = order[b]
    if labels[ia] == labels[ib]:
        return -1, -1, a, b
    if labels[ia] > labels[ib]:
        return ia, ib, a, b
    return ib, ia, b, a


@njit(cache=True, inline="always")
def _lambda_pair(kind, labels, gains, weights, inv_ideal_q, order, a, b, first, second):
    """``(h, l, |Delta M_hl|)`` of the pair at positions ``a < b``; the weight is 0 when the
    pair does not count (equal labels, or for MRR equal relevance)."""
    h, low, ph, pl = _ordered_pair(labels, order, a, b)
    if h < 0:
        return h, low, 0.0
    if kind == KIND_NDCG:
        w = (gains[h] - gains[low]) * abs(weights[ph] - weights[pl])
        return h, low, w * inv_ideal_q
    rel_a = gains[order[a]] > 0.0
    if rel_a == (gains[order[b]] > 0.0):
        return h, low, 0.0
    return h, low, _mrr_swap_delta(a, b, rel_a, first, second, weights)


@njit(cache=True, inline="always")
def _lgb_rho(ds, sigma, lookup):
    """``1 / (1 + exp(sigma ds))``: LightGBM's lookup table (a :class:`SigmoidLookup`) when it
    has entries."""
    table, t_lo, t_hi, t_factor, _ = lookup
    n_bins = table.shape[0]
    if n_bins == 0:
        return sigmoid(-sigma * ds)
    if ds <= t_lo:
        return table[0]
    if ds >= t_hi:
        return table[n_bins - 1]
    return table[min(int((ds - t_lo) * t_factor), n_bins - 1)]


@njit(cache=True, inline="always")
def _lambdamart_query(s, gains, labels, inv_ideal_q, weights, pair_top, settings, lookup, grad,
                      hess):
    """One query of :func:`lambdamart_grad_hess`, written into its rows ``grad``, ``hess``."""
    kind, sigma, score_norm, norm, lgb_float32 = settings
    score_norm_eps = lookup.score_norm_eps
    n = s.shape[0]
    order = order_desc(s)
    first, second = _first_relevant(order, gains, kind == KIND_MRR)
    lam = np.zeros(n)
    hes = np.zeros(n)
    lam32 = np.zeros(n, dtype=np.float32)
    hes32 = np.zeros(n, dtype=np.float32)
    apply_score_norm = score_norm and s[order[0]] != s[order[n - 1]]
    total = 0.0
    for a in range(min(n - 1, pair_top)):
        for b in range(a + 1, n):
            h, low, w = _lambda_pair(kind, labels, gains, weights, inv_ideal_q, order, a, b,
                                     first, second)
            if w == 0.0:
                continue
            ds = s[h] - s[low]
            if apply_score_norm:
                w /= score_norm_eps + abs(ds)
            rho = _lgb_rho(ds, sigma, lookup)
            p_hess = rho * (1.0 - rho)
            p_lambda = rho * (-sigma * w)
            p_hess = p_hess * (sigma * sigma * w)
            if lgb_float32:
                lam32[low] = np.float32(lam32[low] - np.float32(p_lambda))
                hes32[low] = np.float32(hes32[low] + np.float32(p_hess))
                lam32[h] = np.float32(lam32[h] + np.float32(p_lambda))
                hes32[h] = np.float32(hes32[h] + np.float32(p_hess))
            else:
                lam[low] -= p_lambda
                hes[low] += p_hess
                lam[h] += p_lambda
                hes[h] += p_hess
            total -= 2.0 * p_lambda
    factor = 1.0
    if norm and total > 0.0:
        factor = math.log2(1.0 + total) / total
    for i in range(n):
        if lgb_float32:
            if norm and total > 0.0:
                grad[i] = np.float32(np.float64(lam32[i]) * factor)
                hess[i] = np.float32(np.float64(hes32[i]) * factor)
            else:
                grad[i] = lam32[i]
                hess[i] = hes32[i]
        else:
            grad[i] = lam[i] * factor
            hess[i] = hes[i] * factor


def lambdamart_grad_hess(scores, gains, labels, query_offsets, inv_ideal, weights, pair_top,
                         settings, lookup):
    """LambdaMART lambdas: ``(grad, hess)`` of the loss, per document.

    ``settings``: a :class:`LambdaSettings` (``kind``, ``sigma``, ``score_norm``, ``norm``,
    ``lightgbm_float32``); ``lookup``: a :class:`SigmoidLookup`.

    For every pair (positions ``a < b`` in the current stable order, ``a < pair_top``) whose
    labels differ, with ``h`` the more relevant document and ``l`` the other, ``ds = s_h - s_l``:

        W    = |Delta M_hl|  (metric change from swapping the two; for NDCG
               (g_h - g_l) |weights[p_h] - weights[p_l]| inv_ideal)
        W   /= eps + |ds|   if score_norm and the query's best score != worst score
        rho  = 1 / (1 + exp(sigma ds))    (LightGBM's lookup table when it has entries)
        grad_h -= sigma W rho,  grad_l += sigma W rho,  hess_h, hess_l += sigma^2 W rho (1 - rho)

    With ``norm`` and ``L = sum_pairs 2 sigma W rho > 0`` the query's grad and hess are scaled
    by ``log2(1 + L) / L``. ``lightgbm_float32`` accumulates in float32 like LightGBM (its
    score_t).
    ``kind``: ``KIND_NDCG`` (``gains``) or ``KIND_MRR`` (``gains`` = relevance 0/1).
    """
    _, grad, hess = zeroed_outputs(scores.shape[0], 0)
    _lambdamart_grad_hess_into(scores, gains, labels, query_offsets, inv_ideal, weights, pair_top,
                               settings, lookup, grad=grad, hess=hess)
    return grad, hess


@njit(cache=True, parallel=True)
def _lambdamart_grad_hess_into(scores, gains, labels, query_offsets, inv_ideal, weights, pair_top,
                               settings, lookup, grad, hess):
    """:func:`lambdamart_grad_hess` into zeroed outputs its caller allocates
    (:func:`~.common.zeroed_outputs`)."""
    for q in prange(query_offsets.shape[0] - 1):
        lo, hi, active = query_rows(query_offsets, inv_ideal, q)
        if active:
            _lambdamart_query(scores[lo:hi], gains[lo:hi], labels[lo:hi], inv_ideal[q], weights,
                              pair_top, settings, lookup, grad[lo:hi], hess[lo:hi])


@njit(cache=True, parallel=True)
def lambdamart_surrogate(scores, gains, labels, query_offsets, inv_ideal, weights, pair_top,
                         kind, sigma):
    """Per query ``sum_pairs |Delta M_hl| log(1 + exp(-sigma (s_h - s_l)))`` (weights frozen)."""
    out = np.zeros(query_offsets.shape[0] - 1)
    for q in prange(out.shape[0]):
        lo, hi, active = query_rows(query_offsets, inv_ideal, q)
        if not active:
            continue
        s = scores[lo:hi]
        order = order_desc(s)
        first, second = _first_relevant(order, gains[lo:hi], kind == KIND_MRR)
        total = 0.0
        for a in range(min(hi - lo - 1, pair_top)):
            for b in range(a + 1, hi - lo):
                h, low, w = _lambda_pair(kind, labels[lo:hi], gains[lo:hi], weights, inv_ideal[q],
                                         order, a, b, first, second)
                if w != 0.0:
                    total += w * softplus(-sigma * (s[h] - s[low]))
        out[q] = total
    return out


# -- LambdaLoss NDCG-Loss2++ ------------------------------------------------------------------
@njit(cache=True, inline="always")
def _lambdaloss_query(s, gains, labels, inv_ideal_q, sigma, mu, grad, hess):
    """One query of :func:`lambdaloss_ndcg2pp`: adds to its rows ``grad``, ``hess``; its loss."""
    n = s.shape[0]
    order = order_desc(s)
    inv_d = np.empty(n + 1)  # inv_d[r] = 1 / log2(1 + r), r = 1 .. n
    inv_d[0] = 0.0
    for r in range(1, n + 1):
        inv_d[r] = 1.0 / math.log2(1.0 + r)
    rank = np.empty(n, dtype=np.int64)
    for p in range(n):
        rank[order[p]] = p + 1
    total = 0.0
    for i in range(n):
        for j in range(n):
            if not labels[i] > labels[j]:
                continue
            dg = abs(gains[i] - gains[j]) * inv_ideal_q
            gap = abs(rank[i] - rank[j])
            w = dg * (abs(inv_d[rank[i]] - inv_d[rank[j]])
                      + mu * abs(inv_d[gap] - inv_d[gap + 1]))
            if w == 0.0:
                continue
            x = sigma * (s[i] - s[j])
            total += w * softplus(-x) / LN2
            pr = sigmoid(x)
            g = w * sigma / LN2 * (1.0 - pr)
            hh = w * sigma * sigma / LN2 * pr * (1.0 - pr)
            grad[i] -= g
            grad[j] += g
            hess[i] += hh
            hess[j] += hh
    return total


def lambdaloss_ndcg2pp(scores, gains, labels, query_offsets, inv_ideal, sigma, mu):
    """``(loss per query, grad, hess)`` of LambdaLoss NDCG-Loss2++ (weights frozen).

    Pairs ``y_i > y_j``; ``G = gain * inv_ideal``; ``r`` = 1-based ranks of the stable order;
    ``D(p) = log2(1 + p)``:

        w_ij = |G_i - G_j| (|1/D(r_i) - 1/D(r_j)| + mu |1/D(|r_i - r_j|) - 1/D(|r_i - r_j| + 1)|)
        l_ij = w_ij log2(1 + exp(-sigma (s_i - s_j)))
        dl/ds_i = -dl/ds_j = -w_ij sigma / ln2 * sigmoid(-sigma (s_i - s_j))
        d2l/ds_i^2 = d2l/ds_j^2 = w_ij sigma^2 / ln2 * p (1 - p),  p = sigmoid(sigma (s_i - s_j)).
    """
    loss, grad, hess = zeroed_outputs(scores.shape[0], query_offsets.shape[0] - 1)
    _lambdaloss_ndcg2pp_into(scores, gains, labels, query_offsets, inv_ideal, sigma, mu, loss=loss,
                             grad=grad, hess=hess)
    return loss, grad, hess


@njit(cache=True, parallel=True)
def _lambdaloss_ndcg2pp_into(scores, gains, labels, query_offsets, inv_ideal, sigma, mu, loss,
                             grad, hess):
    """:func:`lambdaloss_ndcg2pp` into zeroed outputs its caller allocates
    (:func:`~.common.zeroed_outputs`)."""
    for q in prange(loss.shape[0]):
        lo, hi, active = query_rows(query_offsets, inv_ideal, q)
        if active:
            loss[q] = _lambdaloss_query(scores[lo:hi], gains[lo:hi], labels[lo:hi], inv_ideal[q],
                                        sigma, mu, grad[lo:hi], hess[lo:hi])


# -- XGBoost rank:ndcg (topk pairs) ------------------------------------------------------------
@njit(cache=True, inline="always")
def _xgboost_query(s, gains, labels, inv_ideal_q, discounts, pair_top, sigma, grad, hess,
                   score_norm=False, norm=False):
    """One query of :func:`xgboost_lambdarank_ndcg`, added to its rows ``grad``, ``hess``."""
    n = s.shape[0]
    order = order_desc(s)
    apply_score_norm = score_norm and s[order[0]] != s[order[n - 1]]
    total = 0.0
    for a in range(min(n, pair_top)):
        for b in range(a + 1, n):
            h, low, ph, pl = _ordered_pair(labels, order, a, b)
            if h < 0:
                continue
            w = abs((gains[h] - gains[low]) * (discounts[ph] - discounts[pl]))
            w *= inv_ideal_q
            ds = s[h] - s[low]
            if apply_score_norm:
                w /= abs(ds) + 0.01
            p = sigmoid(sigma * ds)
            gpair = (p - 1.0) * sigma * w
            hpair = 2.0 * sigma * sigma * max(p * (1.0 - p), 1e-16) * w
            grad[h] += gpair
            grad[low] -= gpair
            hess[h] += hpair
            hess[low] += hpair
            total -= 2.0 * gpair
    if norm and total > 0.0:
        factor = math.log2(1.0 + total) / total
        for i in range(n):
            grad[i] *= factor
            hess[i] *= factor


def xgboost_lambdarank_ndcg(scores, gains, labels, query_offsets, inv_ideal, discounts, pair_top,
                            sigma, score_norm, norm):
    """``(grad, hess)`` of XGBoost's ``rank:ndcg`` with ``lambdarank_pair_method="topk"``.

    Pairs: positions ``a < min(n, pair_top)``, ``b > a`` of the stable order by score descending,
    labels different; ``h`` the more relevant, ``l`` the other, ``ds = s_h - s_l``:

        W = |g_h - g_l| |discounts[p_h] - discounts[p_l]| inv_ideal    (untruncated discounts,
                                                                     IDCG truncated at pair_top)
        W /= |ds| + 0.01          if score_norm and the query's best score != worst score
        p = sigmoid(sigma ds);    grad_h += (p - 1) sigma W,  grad_l -= (p - 1) sigma W,
        hess_h, hess_l += 2 sigma^2 max(p (1 - p), 1e-16) W

    and with ``norm`` and ``L = sum_pairs 2 (1 - p) sigma W > 0`` the query's grad and hess are
    scaled by ``log2(1 + L) / L``. XGBoost has ``sigma = 1``.
    """
    _, grad, hess = zeroed_outputs(scores.shape[0], 0)
    _xgboost_lambdarank_ndcg_into(scores, gains, labels, query_offsets, inv_ideal, discounts,
                                  pair_top, sigma, score_norm, norm, grad=grad, hess=hess)
    return grad, hess


@njit(cache=True, parallel=True)
def _xgboost_lambdarank_ndcg_into(scores, gains, labels, query_offsets, inv_ideal, discounts,
                                  pair_top, sigma, score_norm, norm, grad, hess):
    """:func:`xgboost_lambdarank_ndcg` into zeroed outputs its caller allocates
    (:func:`~.common.zeroed_outputs`)."""
    for q in prange(query_offsets.shape[0] - 1):
        lo, hi, active = query_rows(query_offsets, inv_ideal, q)
        if active:
            _xgboost_query(scores[lo:hi], gains[lo:hi], labels[lo:hi], inv_ideal[q], discounts,
                           pair_top, sigma, grad[lo:hi], hess[lo:hi], score_norm=score_norm,
                           norm=norm)
