"""Numba kernels: the REINFORCE (score-function) estimate of the smoothed loss's gradient, the
baseline CCS is compared with; same protocol and noise streams as :mod:`.ccs`.

The noisy scores ``a + sigma e`` are ranked whole for each sample (the loss needs the full
order); ``metric`` is the metric's named arrays as in :func:`.ccs.ccs_gradient`."""

import numpy as np
from numba import njit, prange

from .common import query_cutoff_weights, query_rows
from .metrics import TIE_WORST, cascade_value_sorted, tie_sorted_order
from .rng import fill_noise_row, noise_rows


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
def reinforce_gradient(shifted, labels, metric, noise, query_offsets, query_sigma, n_samples,
                       seed, iteration):
    """REINFORCE gradient averaged over the rows of ``noise`` (shape ``(n_samples, n_docs)``), or,
    when ``noise`` has no rows, over ``n_samples`` rows drawn from the (seed, iteration, query,
    sample) streams of :func:`.ccs.ccs_gradient`."""
    gain = metric.gain
    cont = metric.continuation
    query_scale = metric.scale
    n_rows = noise_rows(noise, n_samples)
    out = np.zeros(shifted.shape[0])
    for q in prange(query_offsets.shape[0] - 1):
        lo, hi, active = query_rows(query_offsets, query_scale, q)
        if not active:
            continue
        rows = np.empty((n_rows, hi - lo))
        for k in range(n_rows):
            fill_noise_row(noise, k, lo, seed, iteration, q, rows[k])
        weights, cutoff = query_cutoff_weights(metric.position_weights, metric.cutoff,
                                               metric.query_cutoff, q)
        reinforce_query(shifted[lo:hi], labels[lo:hi], gain[lo:hi], cont[lo:hi], rows, weights,
                        cutoff, query_scale[q], query_sigma[q], out[lo:hi])
    return out
