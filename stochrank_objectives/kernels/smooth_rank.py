"""Smooth-rank kernels: ApproxNDCG, ListNet and SmoothNDCG (loss per query, grad, hessian).

See :mod:`stochrank_objectives.objectives.smooth` for the objectives that call them.
"""

import math

import numpy as np
from numba import njit, prange

from .common import LN2, zeroed_outputs, order_desc, query_rows, sigmoid

# -- ApproxNDCG ------------------------------------------------------------------------------
@njit(cache=True, inline="always")
def _approx_ndcg_query(s, gains, inv_ideal_q, eta, grad, hess):
    """One query of :func:`approx_ndcg`: writes its rows ``grad``, ``hess``; returns its loss."""
    n = s.shape[0]
    sig = np.empty((n, n))  # sig[i, j] = sigmoid(eta (s_j - s_i))
    for i in range(n):
        sig[i, i] = 0.0
        for j in range(i + 1, n):
            v = sigmoid(eta * (s[j] - s[i]))
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
        g = gains[i] * inv_ideal_q
        total -= g / d
        a[i] = g / (LN2 * (1.0 + pi) * d * d)
        phi2[i] = -g * (1.0 + 2.0 / (LN2 * d)) / (LN2 * (1.0 + pi) * (1.0 + pi) * d * d)
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
        grad[k] = eta * gk
        hess[k] = phi2[k] * (eta * self_slope) ** 2 + eta * eta * a[k] * self_curv + cross
    return total


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
    loss, grad, hess = zeroed_outputs(scores.shape[0], query_offsets.shape[0] - 1)
    _approx_ndcg_into(scores, gains, query_offsets, inv_ideal, eta, loss=loss, grad=grad,
                      hess=hess)
    return loss, grad, hess


@njit(cache=True, parallel=True)
def _approx_ndcg_into(scores, gains, query_offsets, inv_ideal, eta, loss, grad, hess):
    """:func:`approx_ndcg` into zeroed outputs its caller allocates
    (:func:`~.common.zeroed_outputs`)."""
    for q in prange(loss.shape[0]):
        lo, hi, active = query_rows(query_offsets, inv_ideal, q)
        if active:
            loss[q] = _approx_ndcg_query(scores[lo:hi], gains[lo:hi], inv_ideal[q], eta,
                                         grad[lo:hi], hess[lo:hi])


# -- ListNet ---------------------------------------------------------------------------------
def listnet(scores, targets, query_offsets, active):
    """``(loss per query, grad, hess)`` of ListNet's top-one cross-entropy.

    ``targets`` holds each active query's top-one label distribution ``P_y`` (summing to 1);
    ``P_s = softmax(s)``; ``loss = -sum_i P_y,i log P_s,i``, ``grad = P_s - P_y``,
    ``hess = P_s (1 - P_s)`` (the exact diagonal). Inactive queries contribute nothing.
    """
    loss, grad, hess = zeroed_outputs(scores.shape[0], query_offsets.shape[0] - 1)
    _listnet_into(scores, targets, query_offsets, active, loss=loss, grad=grad, hess=hess)
    return loss, grad, hess


@njit(cache=True, parallel=True)
def _listnet_into(scores, targets, query_offsets, active, loss, grad, hess):
    """:func:`listnet` into zeroed outputs its caller allocates
    (:func:`~.common.zeroed_outputs`)."""
    for q in prange(loss.shape[0]):
        lo, hi, keep = query_rows(query_offsets, active, q)
        if not keep:
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


# -- SmoothNDCG (Chapelle & Wu 2010) ---------------------------------------------------------
@njit(cache=True, inline="always")
def _smooth_ndcg_query(s, g, inv_ideal_q, weights, smoothing, grad):
    """One query of :func:`smooth_ndcg`: adds ``-dA/ds`` to its rows ``grad``; returns ``A``."""
    n = s.shape[0]
    two_over = 2.0 / smoothing
    order = order_desc(s)
    e = np.empty(n)
    u = np.empty(n)
    total = 0.0
    for j in range(n):
        wj = weights[j] * inv_ideal_q
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
                grad[p] -= two_over * wj * e[p] * u[p] * (big_n - g[p] * big_e) * inv_e2
        grad[c] -= two_over * wj * (big_e * geu - big_n * eu) * inv_e2
    return total


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
    loss, grad, _ = zeroed_outputs(scores.shape[0], query_offsets.shape[0] - 1)
    _smooth_ndcg_into(scores, gains, query_offsets, inv_ideal, weights, smoothing, loss=loss,
                      grad=grad)
    return loss, grad


@njit(cache=True, parallel=True)
def _smooth_ndcg_into(scores, gains, query_offsets, inv_ideal, weights, smoothing, loss, grad):
    """:func:`smooth_ndcg` into zeroed outputs its caller allocates
    (:func:`~.common.zeroed_outputs`)."""
    for q in prange(loss.shape[0]):
        lo, hi, active = query_rows(query_offsets, inv_ideal, q)
        if active:
            loss[q] = -_smooth_ndcg_query(scores[lo:hi], gains[lo:hi], inv_ideal[q], weights,
                                          smoothing, grad[lo:hi])
