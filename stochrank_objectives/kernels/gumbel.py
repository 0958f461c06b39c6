"""Counter-based Gumbel(0, 1) noise for the stochastic treatment E[.] (Bruch et al. 2020).

The streams are those of :mod:`.rng` (keyed by ``(seed, iteration, query, sample)``, so the
draws do not depend on the thread count) with a salted sample index, which keeps them apart
from the Gaussian streams of the same key.
"""

import math

import numpy as np
from numba import njit, prange, uint64

from .rng import _mix64, stream_key

_GUMBEL_SALT = uint64(0x47554D42) << uint64(32)
_INV_2_53 = 1.0 / 9007199254740992.0


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
