"""Numba kernels: the per-query noise scale of the smoothing and the post-processing of a CCS
or REINFORCE gradient (centring, Scale-Free Acceleration, the relative-smoothing correction);
the formulas in context: :mod:`stochrank_objectives.kernels.ccs`."""

import math

import numpy as np
from numba import njit, prange


@njit(cache=True, inline="always")
def _mean(values, lo, hi):
    """Mean of ``values[lo:hi]`` (summed in order)."""
    total = 0.0
    for i in range(lo, hi):
        total += values[i]
    return total / (hi - lo)


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
            zmean = _mean(scores, lo, hi)
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
            zmean = _mean(scores, lo, hi)
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
            gmean = _mean(grad, lo, hi)
            for i in range(lo, hi):
                grad[i] -= gmean
        if sfa != 0.0 and (n > 2 or relative):
            zmean = _mean(scores, lo, hi)
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
