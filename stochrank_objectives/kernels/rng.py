"""Counter-based Gaussian noise: one independent, reproducible stream per (seed, iteration, query, sample).

Numba's ``np.random`` keeps one state per thread, so which query a thread happens to draw
for would change the numbers with the thread count. Here every stream is a pure function
of its key instead: a SplitMix64 sequence seeded by hashing ``(seed, iteration, query,
sample)``, turned into standard normals by the Box-Muller transform. The same key gives
bit-identical noise on any number of threads.
"""

import math

import numpy as np
from numba import njit, prange, uint64

_GOLDEN = uint64(0x9E3779B97F4A7C15)
_MIX1 = uint64(0xBF58476D1CE4E5B9)
_MIX2 = uint64(0x94D049BB133111EB)
_TWO_PI = 2.0 * math.pi
_INV_2_53 = 1.0 / 9007199254740992.0


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


@njit(cache=True, parallel=True)
def draw_grouped_normals(query_offsets, n_samples, seed, iteration):
    """Standard normals of shape ``(n_samples, n_docs)``, query ``q`` sample ``k`` from its own stream."""
    n_queries = query_offsets.shape[0] - 1
    out = np.empty((n_samples, query_offsets[-1]))
    for q in prange(n_queries):
        lo = query_offsets[q]
        hi = query_offsets[q + 1]
        for k in range(n_samples):
            fill_standard_normal(stream_key(seed, iteration, q, k), out[k, lo:hi])
    return out
