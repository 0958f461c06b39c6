"""Counter-based Gaussian noise: one independent, reproducible stream per (seed, iteration, query, sample).

Numba's ``np.random`` keeps one state per thread, so which query a thread happens to draw
for would change the numbers with the thread count. Here every stream is a pure function
of its key instead: a SplitMix64 sequence seeded by hashing ``(seed, iteration, query,
sample)``, turned into standard normals by the Box-Muller transform. The same key gives
bit-identical noise on any number of threads. The Gumbel(0, 1) draws of the stochastic
treatment E[.] (Bruch et al. 2020) use the same streams with a salted sample index, and so do
the standard logistic draws of YetiRank's noisy permutations.
"""

import math

import numpy as np
from numba import njit, prange, uint64

from .common import copy_into

_GOLDEN = uint64(0x9E3779B97F4A7C15)
_MIX1 = uint64(0xBF58476D1CE4E5B9)
_MIX2 = uint64(0x94D049BB133111EB)
_TWO_PI = 2.0 * math.pi
_INV_2_53 = 1.0 / 9007199254740992.0
# Gumbel streams add this to the sample index, which keeps them apart from the Gaussian ones.
_GUMBEL_SALT = uint64(0x47554D42) << uint64(32)
# Logistic streams (YetiRank) add this one: apart from the Gaussian and Gumbel ones.
LOGISTIC_SALT = uint64(0x4C4F4749) << uint64(32)


@njit(cache=True, inline="always")
def _mix64(z):
    z = (z ^ (z >> uint64(30))) * _MIX1
    z = (z ^ (z >> uint64(27))) * _MIX2
    return z ^ (z >> uint64(31))


@njit(cache=True)
def stream_key(seed, iteration, query, sample):
    """64-bit key of one noise stream; distinct inputs give unrelated streams."""
    h = _mix64(uint64(seed) + _GOLDEN)
    h = _mix64(h ^ (uint64(iteration) + _GOLDEN * uint64(3)))
    h = _mix64(h ^ (uint64(query) + _GOLDEN * uint64(5)))
    h = _mix64(h ^ (uint64(sample) + _GOLDEN * uint64(7)))
    return h


@njit(cache=True)
def fill_standard_normal(key, out):
    """Fill ``out`` with standard normals from the stream ``key`` (Box-Muller, in pairs)."""
    state = key
    n = out.shape[0]
    i = 0
    while i < n:
        state += _GOLDEN
        a = _mix64(state)
        state += _GOLDEN
        b = _mix64(state)
        u1 = (float(a >> uint64(11)) + 1.0) * _INV_2_53  # (0, 1]: log is finite
        u2 = float(b >> uint64(11)) * _INV_2_53
        r = math.sqrt(-2.0 * math.log(u1))
        out[i] = r * math.cos(_TWO_PI * u2)
        if i + 1 < n:
            out[i + 1] = r * math.sin(_TWO_PI * u2)
        i += 2


@njit(cache=True, inline="always")
def noise_rows(noise, n_samples):
    """How many noise rows a gradient averages over: those of ``noise``, or ``n_samples``
    seeded ones when ``noise`` has no rows."""
    return noise.shape[0] if noise.shape[0] > 0 else n_samples


@njit(cache=True, inline="always")
def fill_noise_row(noise, k, lo, seed, iteration, q, row):
    """Row ``k`` of query ``q``'s noise into ``row``: ``noise[k, lo:lo + len(row)]`` when
    ``noise`` has rows, else the stream ``stream_key(seed, iteration, q, k)``."""
    if noise.shape[0] > 0:
        copy_into(row, noise[k, lo:lo + row.shape[0]])
    else:
        fill_standard_normal(stream_key(seed, iteration, q, k), row)


@njit(cache=True)
def fill_standard_gumbel(key, out):
    """Fill ``out`` with Gumbel(0, 1) draws ``-log(-log U)``, ``U`` uniform on the open (0, 1)."""
    state = key
    for i in range(out.shape[0]):
        state += _GOLDEN
        u = (float(_mix64(state) >> uint64(11)) + 0.5) * _INV_2_53
        out[i] = -math.log(-math.log(u))


@njit(cache=True, error_model="numpy")
def fill_logistic_ratios(key, out):
    """Fill ``out`` with ``U / (1 - U)``, ``U`` uniform on the open (0, 1) from the stream
    ``key``: the odds whose logarithms are the standard logistic draws of
    :func:`fill_standard_logistic`. A loop without calls or a zero-divisor check (``1 - U >=
    2^-54``; ``error_model="numpy"``), which the compiler vectorises."""
    state = key
    for i in range(out.shape[0]):
        state += _GOLDEN
        u = (float(_mix64(state) >> uint64(11)) + 0.5) * _INV_2_53
        out[i] = u / (1.0 - u)


@njit(cache=True)
def fill_standard_logistic(key, out):
    """Fill ``out`` with standard logistic draws ``log(U / (1 - U))``, ``U`` uniform on the open
    (0, 1) (mean 0, scale 1, standard deviation ``pi / sqrt(3)``): the logarithms of
    :func:`fill_logistic_ratios` (two passes, so that the first is vectorised; the same
    operations on the same values as one pass)."""
    fill_logistic_ratios(key, out)
    for i in range(out.shape[0]):
        out[i] = math.log(out[i])


@njit(cache=True, parallel=True)
def _draw_grouped(query_offsets, n_samples, seed, iteration, gumbel):
    """Draws of shape ``(n_samples, n_docs)``: query ``q`` sample ``k`` from the stream keyed by
    ``(seed, iteration, q, k)``; Gumbel draws use the sample index salted by ``_GUMBEL_SALT``."""
    out = np.empty((n_samples, query_offsets[-1]))
    for q in prange(query_offsets.shape[0] - 1):
        lo = query_offsets[q]
        hi = query_offsets[q + 1]
        for k in range(n_samples):
            if gumbel:
                fill_standard_gumbel(stream_key(seed, iteration, q, uint64(k) + _GUMBEL_SALT),
                                     out[k, lo:hi])
            else:
                fill_standard_normal(stream_key(seed, iteration, q, k), out[k, lo:hi])
    return out


def draw_grouped_normals(query_offsets, n_samples, seed, iteration):
    """Standard normals of shape ``(n_samples, n_docs)``, query ``q`` sample ``k`` from its own stream."""
    return _draw_grouped(query_offsets, n_samples, seed, iteration, False)


def draw_grouped_gumbel(query_offsets, n_samples, seed, iteration):
    """Gumbel(0, 1) draws of shape ``(n_samples, n_docs)`` for the stochastic treatment E[.] of
    Bruch et al. (2020); query ``q`` sample ``k`` from the stream keyed by ``(seed, iteration,
    q, k)``, salted apart from the Gaussian streams of the same key."""
    return _draw_grouped(query_offsets, n_samples, seed, iteration, True)
