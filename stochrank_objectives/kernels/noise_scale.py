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


@njit(cache=True, inline="always")
def _before(a, b):
    """``a`` sorts before ``b`` in NumPy's ascending order (NaN last)."""
    return a < b or (b != b and a == a)


@njit(cache=True)
def _select(values, k):
    """``values`` rearranged in place so that ``values[k]`` is the value that NumPy's ascending
    sort puts at ``k`` (Hoare's selection, ``O(n)`` expected steps); returns it. The value is
    an order statistic, so it is exactly the sorted array's, whatever the rearrangement."""
    lo = 0
    hi = values.shape[0] - 1
    while lo < hi:
        pivot = values[(lo + hi) // 2]
        i = lo
        j = hi
        while i <= j:
            while _before(values[i], pivot):
                i += 1
            while _before(pivot, values[j]):
                j -= 1
            if i <= j:
                values[i], values[j] = values[j], values[i]
                i += 1
                j -= 1
        if k <= j:
            hi = j
        elif k >= i:
            lo = i
        else:
            break
    return values[k]


@njit(cache=True)
def region_floor(scores, lo, hi, region):
    """The lowest of the ``region`` highest scores of ``scores[lo:hi]``; ``-inf`` when
    ``region`` is 0 or covers the list (the region is then the whole list). The value of
    ``np.sort(scores[lo:hi])[n - region]``, selected in ``O(n)`` instead of sorted."""
    n = hi - lo
    if region <= 0 or region >= n:
        return -np.inf
    return _select(scores[lo:hi].copy(), n - region)


@njit(cache=True, inline="always")
def _region_spread(scores, lo, hi, floor):
    """``(m, mean, sum of squares about the mean)`` of the scores ``>= floor`` in ``lo:hi``."""
    m = 0
    total = 0.0
    for i in range(lo, hi):
        if scores[i] >= floor:
            m += 1
            total += scores[i]
    mean = total / m
    ss = 0.0
    for i in range(lo, hi):
        if scores[i] >= floor:
            ss += (scores[i] - mean) * (scores[i] - mean)
    return m, mean, ss


@njit(cache=True)
def _query_scale(scores, lo, hi, sigma, nu, relative, region):
    """:func:`query_noise_scale` of the query ``lo:hi`` (compiled apart from the parallel loop,
    which then compiles in a fraction of the time)."""
    if not relative:
        return sigma
    var = 0.0
    if hi > lo:  # the whole list when region_floor is -inf
        m, _, ss = _region_spread(scores, lo, hi, region_floor(scores, lo, hi, region))
        var = ss / m
    return sigma * math.sqrt(var + nu * nu)


@njit(cache=True)
def _two_spreads(scores, lo0, lo1, hi1):
    """The whole-list ``ss / n`` of :func:`_region_spread` (0 for an empty query) of the
    adjacent queries ``lo0:lo1`` and ``lo1:hi1``. Each sum runs in document order, so the
    values are those of one query at a time; the two queries' loops run side by side because
    a sum in order is a chain of additions, each waiting on the last one's latency, and two
    independent chains overlap (half the time of :func:`_query_scale` on lists of ~100)."""
    n0 = lo1 - lo0
    n1 = hi1 - lo1
    common = n0 if n0 < n1 else n1  # (no min(): one overload fewer to compile on a first fit)
    total0 = 0.0
    total1 = 0.0
    for j in range(common):
        total0 += scores[lo0 + j]
        total1 += scores[lo1 + j]
    for j in range(n1, n0):
        total0 += scores[lo0 + j]
    for j in range(n0, n1):
        total1 += scores[lo1 + j]
    mean0 = total0 / n0 if n0 > 0 else 0.0
    mean1 = total1 / n1 if n1 > 0 else 0.0
    ss0 = 0.0
    ss1 = 0.0
    for j in range(common):
        c0 = scores[lo0 + j] - mean0
        c1 = scores[lo1 + j] - mean1
        ss0 += c0 * c0
        ss1 += c1 * c1
    for j in range(n1, n0):
        c0 = scores[lo0 + j] - mean0
        ss0 += c0 * c0
    for j in range(n0, n1):
        c1 = scores[lo1 + j] - mean1
        ss1 += c1 * c1
    return (ss0 / n0 if n0 > 0 else 0.0), (ss1 / n1 if n1 > 0 else 0.0)


@njit(cache=True, parallel=True)
def query_noise_scale(scores, query_offsets, sigma, nu, relative, region=0):
    """Per-query noise scale: ``sigma`` (absolute), or ``sigma * rho_q`` (relative) with

        rho_q = sqrt(mean_{i in T} (z_i - mean_T z)^2 + nu^2),

    the root mean square of the centred scores of the query's region ``T``, floored by ``nu``
    so that a query of tied scores (every query at iteration 0) is still smoothed. ``T`` is
    the whole list (``region = 0``, default) or its ``region`` highest-scored documents (ties
    at the region's floor included, :func:`region_floor`): on a list of hundreds, the spread of
    the whole list is that of the documents far below any cutoff.
    """
    n_queries = query_offsets.shape[0] - 1
    out = np.empty(n_queries)
    # two queries at a time: the whole lists' spreads side by side (_two_spreads); one parallel
    # loop for every case (each costs a second of compilation on a first fit)
    for pair in prange((n_queries + 1) // 2):
        q = 2 * pair
        if q + 1 < n_queries and relative and region <= 0:
            var0, var1 = _two_spreads(scores, query_offsets[q], query_offsets[q + 1],
                                      query_offsets[q + 2])
            out[q] = sigma * math.sqrt(var0 + nu * nu)
            out[q + 1] = sigma * math.sqrt(var1 + nu * nu)
            continue
        out[q] = _query_scale(scores, query_offsets[q], query_offsets[q + 1], sigma, nu,
                              relative, region)
        if q + 1 < n_queries:
            out[q + 1] = _query_scale(scores, query_offsets[q + 1], query_offsets[q + 2], sigma,
                                      nu, relative, region)
    return out


@njit(cache=True)
def _subtract_region_radial(grad, scores, lo, hi, dot, sfa, nu, region):
    """``g <- g - sfa * dot / (||c_T||^2 + m nu^2) * c_T`` over the region ``T`` of one query
    (see :func:`center_and_accelerate`)."""
    floor = region_floor(scores, lo, hi, region)
    m, mean, ss = _region_spread(scores, lo, hi, floor)
    k = sfa * dot / (ss + m * nu * nu)
    if k != 0.0:
        for i in range(lo, hi):
            if scores[i] >= floor:
                grad[i] -= k * (scores[i] - mean)


@njit(cache=True)
def _center_and_accelerate_query(grad, scores, lo, hi, center, sfa, nu, relative,
                                 translation_invariant, region):
    """:func:`center_and_accelerate` of the query ``lo:hi`` (compiled apart from the parallel
    loop, which then compiles in a fraction of the time)."""
    n = hi - lo
    if not translation_invariant:
        if n == 0 or sfa == 0.0:
            return
        zmean = _mean(scores, lo, hi)
        dot = 0.0
        cnorm2 = 0.0
        znorm2 = 0.0
        for i in range(lo, hi):
            dot += grad[i] * scores[i]
            cnorm2 += (scores[i] - zmean) * (scores[i] - zmean)
            znorm2 += scores[i] * scores[i]
        if relative and 0 < region < n:
            _subtract_region_radial(grad, scores, lo, hi, dot, sfa, nu, region)
        elif relative:
            k = sfa * dot / (cnorm2 + n * nu * nu)
            for i in range(lo, hi):
                grad[i] -= k * (scores[i] - zmean)
        else:
            denom = math.sqrt(znorm2) + nu
            k = sfa * dot / (denom * denom)
            for i in range(lo, hi):
                grad[i] -= k * scores[i]
        return
    if n < 2:
        for i in range(lo, hi):
            grad[i] = 0.0
        return
    if not (sfa != 0.0 and (n > 2 or relative)):
        if center:
            gmean = _mean(grad, lo, hi)
            for i in range(lo, hi):
                grad[i] -= gmean
        return
    # the same sums as centring, then the radial products, in two passes instead of four: each
    # sum is still taken in document order, so the values are those of the separate passes
    grad_total = 0.0
    score_total = 0.0
    for i in range(lo, hi):
        grad_total += grad[i]
        score_total += scores[i]
    gmean = grad_total / n if center else 0.0
    zmean = score_total / n
    dot = 0.0
    norm2 = 0.0
    for i in range(lo, hi):
        g = grad[i] - gmean
        grad[i] = g
        c = scores[i] - zmean
        dot += g * c
        norm2 += c * c
    if relative and 0 < region < n:
        _subtract_region_radial(grad, scores, lo, hi, dot, sfa, nu, region)
        return
    if relative:
        denom2 = norm2 + n * nu * nu
    else:
        denom = math.sqrt(norm2) + nu
        denom2 = denom * denom
    k = sfa * dot / denom2
    if k != 0.0:
        for i in range(lo, hi):
            grad[i] -= k * (scores[i] - zmean)


@njit(cache=True, parallel=True)
def center_and_accelerate(grad, scores, query_offsets, center, sfa, nu, relative,
                          translation_invariant=True, region=0):
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

    Relative smoothing over a ``region`` (the noise scale of the ``m`` highest-scored documents
    ``T``, :func:`query_noise_scale`): ``grad rho = c_T / (m rho)`` with ``c_T = z - mean_T z``
    on ``T`` and 0 elsewhere, so the same derivation gives
    ``g <- g - sfa * <g, c> / (||c_T||_2^2 + m nu^2) * c_T`` (``<g, z>`` without translation
    invariance); the region's boundary moves only where two scores cross, a null set.
    """
    n_queries = query_offsets.shape[0] - 1
    for q in prange(n_queries):
        _center_and_accelerate_query(grad, scores, query_offsets[q], query_offsets[q + 1], center,
                                     sfa, nu, relative, translation_invariant, region)


def abs_over_query_scale(grad, query_offsets, query_scales):
    """``|g_i| / s_q`` for each document ``i`` of query ``q`` (the abs-gradient curvature
    before its floor): one parallel pass instead of repeating the scales per document."""
    # NumPy allocates: Numba's large arrays come back from the system page by page each call
    out = np.empty(grad.shape[0])
    _abs_over_query_scale_into(grad, query_offsets, query_scales, out)
    return out


@njit(cache=True, parallel=True)
def _abs_over_query_scale_into(grad, query_offsets, query_scales, out):
    """:func:`abs_over_query_scale` into ``out``."""
    for q in prange(query_offsets.shape[0] - 1):
        scale = query_scales[q]
        for i in range(query_offsets[q], query_offsets[q + 1]):
            out[i] = abs(grad[i]) / scale


@njit(cache=True, parallel=True)
def scale_in_place(grad, hess, scale):
    """``grad *= scale`` and ``hess *= scale`` in one parallel pass (the unit-mean hessian's
    rescaling; the same products as NumPy's, element by element)."""
    for i in prange(grad.shape[0]):
        grad[i] *= scale
        hess[i] *= scale
