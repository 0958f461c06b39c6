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

from .rng import _mix64, fill_standard_normal, stream_key

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
_INV_SQRT_2PI_B = 1.0 / math.sqrt(2.0 * math.pi)


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
def _ranking(s, gains, find_relevant):
    """Order (positions -> documents), positions (documents -> positions) and, if asked, the
    positions of the first and second relevant documents (``n`` when absent)."""
    n = s.shape[0]
    order = _order_desc(s)
    pos = np.empty(n, dtype=np.int64)
    for p in range(n):
        pos[order[p]] = p
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
    return order, pos, first, second


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
        order, pos, first, second = _ranking(s, gains[lo:hi], kind == KIND_MRR)
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
        order, pos, first, second = _ranking(s, gains[lo:hi], kind == KIND_MRR)
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


# -- SmoothNDCG (Chapelle & Wu 2010) ---------------------------------------------------------
@njit(cache=True, parallel=True)
def smooth_ndcg(scores, gains, query_offsets, inv_ideal, weights, smoothing):
    """``(loss per query, grad)`` of SmoothNDCG (Chapelle & Wu 2010, eqs. 7, 8, 10, appendix B).

    ``d(j)``: the document at 0-based position ``j`` of the stable order by score descending;
    ``u_pj = s_p - s_d(j)``, ``e_pj = exp(-u_pj^2 / smoothing)``, ``E_j = sum_p e_pj``,
    ``N_j = sum_p G_p e_pj`` with ``G = gains``; ``W_j = weights[j] * inv_ideal`` (zero from the
    cutoff on, so positions beyond it are skipped):

        A = sum_j W_j N_j / E_j                                      (= sum_ij G_i D(j) h_ij)
        dA/ds_p (p != d(j)) += (2 / smoothing) W_j e_pj u_pj (N_j - G_p E_j) / E_j^2
        dA/ds_d(j)          += (2 / smoothing) W_j (E_j sum_i G_i e_ij u_ij
                                                    - N_j sum_i e_ij u_ij) / E_j^2

    (the second line is appendix B's ``E_j sum G e f - (sum G e)(sum e f)`` written with
    differences, which are exact for large scores). ``loss = -A``, ``grad = -dA/ds``; each
    position costs O(m), so a query costs O(m min(m, k)).
    """
    n_docs = scores.shape[0]
    nq = query_offsets.shape[0] - 1
    grad = np.zeros(n_docs)
    loss = np.zeros(nq)
    two_over = 2.0 / smoothing
    for q in prange(nq):
        lo = query_offsets[q]
        hi = query_offsets[q + 1]
        n = hi - lo
        if n < 2 or inv_ideal[q] == 0.0:
            continue
        s = scores[lo:hi]
        g = gains[lo:hi]
        order = _order_desc(s)
        e = np.empty(n)
        u = np.empty(n)
        total = 0.0
        for j in range(n):
            wj = weights[j] * inv_ideal[q]
            if wj == 0.0:
                break
            c = order[j]
            big_e = 0.0
            big_n = 0.0
            geu = 0.0
            eu = 0.0
            for p in range(n):
                up = s[p] - s[c]
                ep = math.exp(-up * up / smoothing)
                u[p] = up
                e[p] = ep
                big_e += ep
                big_n += g[p] * ep
                geu += g[p] * ep * up
                eu += ep * up
            total += wj * big_n / big_e
            inv_e2 = 1.0 / (big_e * big_e)
            for p in range(n):
                if p != c:
                    grad[lo + p] -= two_over * wj * e[p] * u[p] * (big_n - g[p] * big_e) * inv_e2
            grad[lo + c] -= two_over * wj * (big_e * geu - big_n * eu) * inv_e2
        loss[q] = -total
    return loss, grad


# -- StochasticRank for the LSO loss DCG-RR ------------------------------------------------------
@njit(cache=True, inline="always")
def _dcgrr_query_ccs(z, r, y, sigma, out, prefix, s0, s1):
    """Adds one sample's CCS gradient of ``-DCG-RR`` for one query to ``out``.

    ``y``: the noisy scores; ``b_j = 1{y_j > 0}``. For document ``i`` (others fixed) the loss is
    ``const + J_i 1{x_i > 0}`` with ``J_i = -(r_i / (1 + c_i) - T_i)``, ``c_i`` the number of
    included documents before ``i`` and ``T_i = sum_{j > i, b_j} r_j / ((1 + c'_j)(2 + c'_j))``
    the loss of the later included documents pushed down one rank (``c'_j`` counts the included
    documents before ``j`` other than ``i``). The estimate is ``J_i phi(z_i / sigma) / sigma``.
    """
    n = z.shape[0]
    cnt = 0
    for j in range(n):
        prefix[j] = cnt
        if y[j] > 0.0:
            cnt += 1
    acc0 = 0.0
    acc1 = 0.0
    for j in range(n - 1, -1, -1):
        s0[j] = acc0  # sum over later included docs, counts including doc j's own inclusion
        s1[j] = acc1  # the same with one included document fewer before them
        if y[j] > 0.0:
            c = prefix[j]
            acc0 += r[j] / ((1.0 + c) * (2.0 + c))
            if c >= 1:
                acc1 += r[j] / (c * (1.0 + c))
    for i in range(n):
        if y[i] > 0.0:
            tail = s1[i]  # i included: later counts drop by one without i
        else:
            tail = s0[i]
        jump = -(r[i] / (1.0 + prefix[i]) - tail)
        x = z[i] / sigma
        out[i] += jump * _INV_SQRT_2PI_B * math.exp(-0.5 * x * x) / sigma



@njit(cache=True, parallel=True)
def dcgrr_ccs_from_noise(scores, labels, noise, query_offsets, sigma):
    """CCS gradient of ``-E DCG-RR(z + sigma e)`` averaged over the rows of ``noise``."""
    n_docs = scores.shape[0]
    n_samples = noise.shape[0]
    nq = query_offsets.shape[0] - 1
    grad = np.zeros(n_docs)
    for q in prange(nq):
        lo = query_offsets[q]
        hi = query_offsets[q + 1]
        n = hi - lo
        if n == 0:
            continue
        y = np.empty(n)
        prefix = np.empty(n, dtype=np.int64)
        s0 = np.empty(n)
        s1 = np.empty(n)
        out = np.zeros(n)
        for k in range(n_samples):
            for i in range(n):
                y[i] = scores[lo + i] + sigma * noise[k, lo + i]
            _dcgrr_query_ccs(scores[lo:hi], labels[lo:hi], y, sigma, out, prefix, s0, s1)
        for i in range(n):
            grad[lo + i] = out[i] / n_samples
    return grad


@njit(cache=True, parallel=True)
def dcgrr_ccs_seeded(scores, labels, query_offsets, sigma, n_samples, seed, iteration):
    """As :func:`dcgrr_ccs_from_noise` with the unit normals of query ``q``, sample ``k`` drawn
    from the stream ``stream_key(seed, iteration, q, k)`` (those of ``draw_grouped_normals``)."""
    n_docs = scores.shape[0]
    nq = query_offsets.shape[0] - 1
    grad = np.zeros(n_docs)
    for q in prange(nq):
        lo = query_offsets[q]
        hi = query_offsets[q + 1]
        n = hi - lo
        if n == 0:
            continue
        e = np.empty(n)
        y = np.empty(n)
        prefix = np.empty(n, dtype=np.int64)
        s0 = np.empty(n)
        s1 = np.empty(n)
        out = np.zeros(n)
        for k in range(n_samples):
            fill_standard_normal(stream_key(seed, iteration, q, k), e)
            for i in range(n):
                y[i] = scores[lo + i] + sigma * e[i]
            _dcgrr_query_ccs(scores[lo:hi], labels[lo:hi], y, sigma, out, prefix, s0, s1)
        for i in range(n):
            grad[lo + i] = out[i] / n_samples
    return grad


@njit(cache=True, parallel=True)
def dcgrr_values(scores, labels, query_offsets):
    """Per query ``DCG-RR = sum_i r_i 1{z_i > 0} / (1 + sum_{j < i} 1{z_j > 0})``."""
    nq = query_offsets.shape[0] - 1
    out = np.zeros(nq)
    for q in prange(nq):
        cnt = 0
        total = 0.0
        for i in range(query_offsets[q], query_offsets[q + 1]):
            if scores[i] > 0.0:
                cnt += 1
                total += labels[i] / cnt
        out[q] = total
    return out


# -- XGBoost rank:ndcg (topk pairs) ------------------------------------------------------------
@njit(cache=True, parallel=True)
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
    n_docs = scores.shape[0]
    nq = query_offsets.shape[0] - 1
    grad = np.zeros(n_docs)
    hess = np.zeros(n_docs)
    for q in prange(nq):
        lo = query_offsets[q]
        hi = query_offsets[q + 1]
        n = hi - lo
        if n < 2 or inv_ideal[q] == 0.0:
            continue
        s = scores[lo:hi]
        order = _order_desc(s)
        apply_score_norm = score_norm and s[order[0]] != s[order[n - 1]]
        total = 0.0
        for a in range(min(n, pair_top)):
            ia = order[a]
            for b in range(a + 1, n):
                ib = order[b]
                if labels[lo + ia] == labels[lo + ib]:
                    continue
                if labels[lo + ia] > labels[lo + ib]:
                    h, low, ph, pl = ia, ib, a, b
                else:
                    h, low, ph, pl = ib, ia, b, a
                w = abs((gains[lo + h] - gains[lo + low]) * (discounts[ph] - discounts[pl]))
                w *= inv_ideal[q]
                ds = s[h] - s[low]
                if apply_score_norm:
                    w /= abs(ds) + 0.01
                p = _sigmoid(sigma * ds)
                gpair = (p - 1.0) * sigma * w
                hpair = 2.0 * sigma * sigma * max(p * (1.0 - p), 1e-16) * w
                grad[lo + h] += gpair
                grad[lo + low] -= gpair
                hess[lo + h] += hpair
                hess[lo + low] += hpair
                total -= 2.0 * gpair
        if norm and total > 0.0:
            factor = math.log2(1.0 + total) / total
            for i in range(lo, hi):
                grad[i] *= factor
                hess[i] *= factor
    return grad, hess
