"""Numba kernels for the baseline ranking objectives (see :mod:`stochrank_objectives.baselines`).

Every kernel takes grouped arrays (``query_offsets`` CSR offsets, see ``groups.py``), loops over
queries with ``prange`` (each query writes only its own rows, so the result does not depend on
the thread count) and returns the gradient of the **loss** and a hessian (diagonal).

Orders are stable sorts by score descending (ties in input order, as LightGBM and XGBoost do);
ranks and positions are 0-based in the code (``rank = position + 1`` in the formulas).
"""

import math

import numpy as np
from numba import njit, prange, uint64

from .rng import _mix64, stream_key

LN2 = math.log(2.0)
KIND_NDCG = 0
KIND_MRR = 1

# LightGBM's sigmoid lookup (a fact of its implementation, restated): 2^20 bins over
# [-25 / sigma, 25 / sigma]; bin i holds 1 / (1 + exp(sigma * x_i)), x_i = i / factor + lo,
# factor = bins / (hi - lo); arguments outside the range are clamped to the end bins.
LGB_SIGMOID_BINS = 1024 * 1024
LGB_SCORE_NORM_EPS = float(np.float32(0.01))  # LightGBM adds the float literal 0.01f

_GUMBEL_SALT = uint64(0x47554D42) << uint64(32)  # keeps Gumbel streams apart from the normals
_INV_2_53 = 1.0 / 9007199254740992.0


# -- helpers -------------------------------------------------------------------------------
@njit(cache=True, inline="always")
def _order_desc(s):
    """Positions -> indices: stable sort by score descending (ties keep input order)."""
    return np.argsort(-s, kind="mergesort")


@njit(cache=True, inline="always")
def _softplus(x):
    """``log(1 + exp(x))`` without overflow."""
    if x > 0.0:
        return x + math.log1p(math.exp(-x))
    return math.log1p(math.exp(x))


@njit(cache=True, inline="always")
def _sigmoid(x):
    """``1 / (1 + exp(-x))`` without overflow."""
    if x >= 0.0:
        return 1.0 / (1.0 + math.exp(-x))
    e = math.exp(x)
    return e / (1.0 + e)


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


@njit(cache=True)
def dcg_discounts(n, top):
    """``1 / log2(p + 2)`` for ``p < top`` (0 from ``top`` on), length ``n + 1``."""
    w = np.zeros(n + 1)
    for p in range(min(n, top)):
        w[p] = 1.0 / math.log2(2.0 + p)
    return w


@njit(cache=True)
def reciprocal_weights(n, top):
    """``1 / (p + 1)`` for ``p < top`` (0 from ``top`` on), length ``n + 1``."""
    w = np.zeros(n + 1)
    for p in range(min(n, top)):
        w[p] = 1.0 / (p + 1.0)
    return w


@njit(cache=True, parallel=True)
def inverse_ideal_dcg(gains, sort_key, query_offsets, discounts, top):
    """Per query ``1 / sum_{p < top} discounts[p] * gain_(p)`` (0 when that sum is 0).

    ``gain_(p)`` is the gain of the document at position ``p`` when the documents are sorted
    by ``sort_key`` descending (the gains themselves, or LightGBM's labels).
    """
    nq = query_offsets.shape[0] - 1
    out = np.zeros(nq)
    for q in prange(nq):
        lo = query_offsets[q]
        hi = query_offsets[q + 1]
        order = _order_desc(sort_key[lo:hi])
        total = 0.0
        for p in range(min(hi - lo, top)):
            total += discounts[p] * gains[lo + order[p]]
        if total > 0.0:
            out[q] = 1.0 / total
    return out


# -- LambdaMART ------------------------------------------------------------------------------
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


@njit(cache=True, parallel=True)
def lambdamart_grad_hess(scores, gains, labels, query_offsets, inv_ideal, weights, pair_top,
                         kind, sigma, score_norm, norm, lgb_float32, table, t_lo, t_hi, t_factor,
                         score_norm_eps):
    """LambdaMART lambdas: ``(grad, hess)`` of the loss, per document.

    For every pair (positions ``a < b`` in the current stable order, ``a < pair_top``) whose
    labels differ, with ``h`` the more relevant document and ``l`` the other, ``ds = s_h - s_l``:

        W    = |Delta M_hl|  (metric change from swapping the two; for NDCG
               (g_h - g_l) |weights[p_h] - weights[p_l]| inv_ideal)
        W   /= eps + |ds|   if score_norm and the query's best score != worst score
        rho  = 1 / (1 + exp(sigma ds))    (LightGBM's lookup ``table`` when table.size > 0)
        grad_h -= sigma W rho,  grad_l += sigma W rho,  hess_h, hess_l += sigma^2 W rho (1 - rho)

    With ``norm`` and ``L = sum_pairs 2 sigma W rho > 0`` the query's grad and hess are scaled
    by ``log2(1 + L) / L``. ``lgb_float32`` accumulates in float32 like LightGBM (its score_t).
    ``kind``: ``KIND_NDCG`` (``gains``) or ``KIND_MRR`` (``gains`` = relevance 0/1).
    """
    n_docs = scores.shape[0]
    nq = query_offsets.shape[0] - 1
    grad = np.zeros(n_docs)
    hess = np.zeros(n_docs)
    use_table = table.shape[0] > 0
    n_bins = table.shape[0]
    for q in prange(nq):
        lo = query_offsets[q]
        hi = query_offsets[q + 1]
        n = hi - lo
        if n < 2 or inv_ideal[q] == 0.0:
            continue
        s = scores[lo:hi]
        order = _order_desc(s)
        pos = np.empty(n, dtype=np.int64)
        for p in range(n):
            pos[order[p]] = p
        first = n
        second = n
        if kind == KIND_MRR:
            for p in range(n):
                if gains[lo + order[p]] > 0.0:
                    if first == n:
                        first = p
                    else:
                        second = p
                        break
        lam = np.zeros(n)
        hes = np.zeros(n)
        lam32 = np.zeros(n, dtype=np.float32)
        hes32 = np.zeros(n, dtype=np.float32)
        apply_score_norm = score_norm and s[order[0]] != s[order[n - 1]]
        total = 0.0
        last = min(n - 1, pair_top)
        for a in range(last):
            ia = order[a]
            for b in range(a + 1, n):
                ib = order[b]
                if labels[lo + ia] == labels[lo + ib]:
                    continue
                if labels[lo + ia] > labels[lo + ib]:
                    h = ia
                    low = ib
                else:
                    h = ib
                    low = ia
                if kind == KIND_NDCG:
                    w = (gains[lo + h] - gains[lo + low]) * abs(weights[pos[h]] - weights[pos[low]])
                    w = w * inv_ideal[q]
                else:
                    if (gains[lo + ia] > 0.0) == (gains[lo + ib] > 0.0):
                        continue
                    w = _mrr_swap_delta(a, b, gains[lo + ia] > 0.0, first, second, weights)
                if w == 0.0:
                    continue
                ds = s[h] - s[low]
                if apply_score_norm:
                    w /= score_norm_eps + abs(ds)
                if use_table:
                    if ds <= t_lo:
                        rho = table[0]
                    elif ds >= t_hi:
                        rho = table[n_bins - 1]
                    else:
                        rho = table[min(int((ds - t_lo) * t_factor), n_bins - 1)]
                else:
                    rho = _sigmoid(-sigma * ds)
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
                    grad[lo + i] = np.float32(np.float64(lam32[i]) * factor)
                    hess[lo + i] = np.float32(np.float64(hes32[i]) * factor)
                else:
                    grad[lo + i] = lam32[i]
                    hess[lo + i] = hes32[i]
            else:
                grad[lo + i] = lam[i] * factor
                hess[lo + i] = hes[i] * factor
    return grad, hess


@njit(cache=True, parallel=True)
def lambdamart_surrogate(scores, gains, labels, query_offsets, inv_ideal, weights, pair_top,
                         kind, sigma):
    """Per query ``sum_pairs |Delta M_hl| log(1 + exp(-sigma (s_h - s_l)))`` (weights frozen)."""
    nq = query_offsets.shape[0] - 1
    out = np.zeros(nq)
    for q in prange(nq):
        lo = query_offsets[q]
        hi = query_offsets[q + 1]
        n = hi - lo
        if n < 2 or inv_ideal[q] == 0.0:
            continue
        s = scores[lo:hi]
        order = _order_desc(s)
        pos = np.empty(n, dtype=np.int64)
        for p in range(n):
            pos[order[p]] = p
        first = n
        second = n
        if kind == KIND_MRR:
            for p in range(n):
                if gains[lo + order[p]] > 0.0:
                    if first == n:
                        first = p
                    else:
                        second = p
                        break
        total = 0.0
        for a in range(min(n - 1, pair_top)):
            ia = order[a]
            for b in range(a + 1, n):
                ib = order[b]
                if labels[lo + ia] == labels[lo + ib]:
                    continue
                h, low = (ia, ib) if labels[lo + ia] > labels[lo + ib] else (ib, ia)
                if kind == KIND_NDCG:
                    w = (gains[lo + h] - gains[lo + low]) * abs(weights[pos[h]] - weights[pos[low]])
                    w = w * inv_ideal[q]
                else:
                    if (gains[lo + ia] > 0.0) == (gains[lo + ib] > 0.0):
                        continue
                    w = _mrr_swap_delta(a, b, gains[lo + ia] > 0.0, first, second, weights)
                total += w * _softplus(-sigma * (s[h] - s[low]))
        out[q] = total
    return out


# -- LambdaLoss NDCG-Loss2++ ------------------------------------------------------------------
@njit(cache=True, parallel=True)
def lambdaloss_ndcg2pp(scores, gains, labels, query_offsets, inv_ideal, sigma, mu):
    """``(loss per query, grad, hess)`` of LambdaLoss NDCG-Loss2++ (weights frozen).

    Pairs ``y_i > y_j``; ``G = gain * inv_ideal``; ``r`` = 1-based ranks of the stable order;
    ``D(p) = log2(1 + p)``:

        w_ij = |G_i - G_j| (|1/D(r_i) - 1/D(r_j)| + mu |1/D(|r_i - r_j|) - 1/D(|r_i - r_j| + 1)|)
        l_ij = w_ij log2(1 + exp(-sigma (s_i - s_j)))
        dl/ds_i = -dl/ds_j = -w_ij sigma / ln2 * sigmoid(-sigma (s_i - s_j))
        d2l/ds_i^2 = d2l/ds_j^2 = w_ij sigma^2 / ln2 * p (1 - p),  p = sigmoid(sigma (s_i - s_j)).
    """
    n_docs = scores.shape[0]
    nq = query_offsets.shape[0] - 1
    grad = np.zeros(n_docs)
    hess = np.zeros(n_docs)
    loss = np.zeros(nq)
    for q in prange(nq):
        lo = query_offsets[q]
        hi = query_offsets[q + 1]
        n = hi - lo
        if n < 2 or inv_ideal[q] == 0.0:
            continue
        s = scores[lo:hi]
        order = _order_desc(s)
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
                if not labels[lo + i] > labels[lo + j]:
                    continue
                dg = abs(gains[lo + i] - gains[lo + j]) * inv_ideal[q]
                gap = abs(rank[i] - rank[j])
                w = dg * (abs(inv_d[rank[i]] - inv_d[rank[j]])
                          + mu * abs(inv_d[gap] - inv_d[gap + 1]))
                if w == 0.0:
                    continue
                x = sigma * (s[i] - s[j])
                total += w * _softplus(-x) / LN2
                pr = _sigmoid(x)
                g = w * sigma / LN2 * (1.0 - pr)
                hh = w * sigma * sigma / LN2 * pr * (1.0 - pr)
                grad[lo + i] -= g
                grad[lo + j] += g
                hess[lo + i] += hh
                hess[lo + j] += hh
        loss[q] = total
    return loss, grad, hess


# -- ApproxNDCG ------------------------------------------------------------------------------
@njit(cache=True, parallel=True)
def approx_ndcg(scores, gains, query_offsets, inv_ideal, eta):
    """``(loss per query, grad, exact hessian diagonal)`` of ApproxNDCG (Qin, Liu, Li 2010).

    ``pi_i = 1 + sum_{j != i} sigmoid(eta (s_j - s_i))``, ``loss = -sum_i G_i / log2(1 + pi_i)``
    with ``G = gain * inv_ideal``. With ``sig_ij = sigmoid(eta (s_j - s_i))``,
    ``q_ij = sig_ij (1 - sig_ij)`` and ``a_i = G_i / (ln2 (1 + pi_i) log2(1 + pi_i)^2)``
    (``d loss / d pi_i``):

        grad_k = eta sum_{j != k} q_kj (a_j - a_k)
        hess_k = sum_i phi_i'' (d pi_i / d s_k)^2 + eta^2 [a_k sum_j q_kj (1 - 2 sig_kj)
                                                          + sum_{i != k} a_i q_ik (1 - 2 sig_ik)]

    where ``phi_i'' = -G_i (1 + 2 / (ln2 D_i)) / (ln2 (1 + pi_i)^2 D_i^2)``, ``D_i = log2(1 + pi_i)``,
    ``d pi_k / d s_k = -eta sum_j q_kj`` and ``d pi_i / d s_k = eta q_ik`` for ``i != k``.
    """
    n_docs = scores.shape[0]
    nq = query_offsets.shape[0] - 1
    grad = np.zeros(n_docs)
    hess = np.zeros(n_docs)
    loss = np.zeros(nq)
    for q in prange(nq):
        lo = query_offsets[q]
        hi = query_offsets[q + 1]
        n = hi - lo
        if n < 2 or inv_ideal[q] == 0.0:
            continue
        sig = np.empty((n, n))  # sig[i, j] = sigmoid(eta (s_j - s_i))
        for i in range(n):
            sig[i, i] = 0.0
            for j in range(i + 1, n):
                v = _sigmoid(eta * (scores[lo + j] - scores[lo + i]))
                sig[i, j] = v
                sig[j, i] = 1.0 - v
        a = np.empty(n)
        phi2 = np.empty(n)
        total = 0.0
        for i in range(n):
            pi = 1.0
            for j in range(n):
                pi += sig[i, j]
            d = math.log2(1.0 + pi)
            g = gains[lo + i] * inv_ideal[q]
            total -= g / d
            a[i] = g / (LN2 * (1.0 + pi) * d * d)
            phi2[i] = -g * (1.0 + 2.0 / (LN2 * d)) / (LN2 * (1.0 + pi) * (1.0 + pi) * d * d)
        loss[q] = total
        for k in range(n):
            gk = 0.0
            self_slope = 0.0  # d pi_k / d s_k / (-eta)
            self_curv = 0.0
            cross = 0.0
            for j in range(n):
                if j == k:
                    continue
                qk = sig[k, j] * (1.0 - sig[k, j])
                gk += qk * (a[j] - a[k])
                self_slope += qk
                self_curv += qk * (1.0 - 2.0 * sig[k, j])
                # d pi_j / d s_k = eta q_jk; second derivative eta^2 q_jk (1 - 2 sig_jk)
                cross += phi2[j] * (eta * qk) ** 2 + eta * eta * a[j] * qk * (1.0 - 2.0 * sig[j, k])
            grad[lo + k] = eta * gk
            hess[lo + k] = (phi2[k] * (eta * self_slope) ** 2 + eta * eta * a[k] * self_curv
                            + cross)
    return loss, grad, hess


# -- ListNet ---------------------------------------------------------------------------------
@njit(cache=True, parallel=True)
def listnet(scores, targets, query_offsets, active):
    """``(loss per query, grad, hess)`` of ListNet's top-one cross-entropy.

    ``targets`` holds each active query's top-one label distribution ``P_y`` (summing to 1);
    ``P_s = softmax(s)``; ``loss = -sum_i P_y,i log P_s,i``, ``grad = P_s - P_y``,
    ``hess = P_s (1 - P_s)`` (the exact diagonal). Inactive queries contribute nothing.
    """
    n_docs = scores.shape[0]
    nq = query_offsets.shape[0] - 1
    grad = np.zeros(n_docs)
    hess = np.zeros(n_docs)
    loss = np.zeros(nq)
    for q in prange(nq):
        lo = query_offsets[q]
        hi = query_offsets[q + 1]
        if hi - lo < 2 or not active[q]:
            continue
        m = scores[lo]
        for i in range(lo, hi):
            m = max(m, scores[i])
        z = 0.0
        for i in range(lo, hi):
            z += math.exp(scores[i] - m)
        log_z = m + math.log(z)
        total = 0.0
        for i in range(lo, hi):
            log_p = scores[i] - log_z
            p = math.exp(log_p)
            total -= targets[i] * log_p
            grad[i] = p - targets[i]
            hess[i] = p * (1.0 - p)
        loss[q] = total
    return loss, grad, hess


# -- Gumbel noise ----------------------------------------------------------------------------
@njit(cache=True)
def fill_standard_gumbel(key, out):
    """Fill ``out`` with Gumbel(0, 1) draws ``-log(-log U)``, ``U`` uniform on the open (0, 1)."""
    state = key
    for i in range(out.shape[0]):
        state += uint64(0x9E3779B97F4A7C15)
        u = (float(_mix64(state) >> uint64(11)) + 0.5) * _INV_2_53
        out[i] = -math.log(-math.log(u))


@njit(cache=True, parallel=True)
def draw_grouped_gumbel(query_offsets, n_samples, seed, iteration):
    """Gumbel(0, 1) draws of shape ``(n_samples, n_docs)``; query ``q`` sample ``k`` from the
    stream keyed by ``(seed, iteration, q, k)`` (salted apart from the Gaussian streams)."""
    nq = query_offsets.shape[0] - 1
    out = np.empty((n_samples, query_offsets[-1]))
    for q in prange(nq):
        lo = query_offsets[q]
        hi = query_offsets[q + 1]
        for k in range(n_samples):
            fill_standard_gumbel(stream_key(seed, iteration, q, uint64(k) + _GUMBEL_SALT),
                                 out[k, lo:hi])
    return out
