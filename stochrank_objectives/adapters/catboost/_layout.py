"""The row-index label channel and the pointer route's per-chunk layout guard (numba)."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike
from numba import njit

MAX_ROWS = 2 ** 24
"""Most learn rows the float32 row-index label channel can encode exactly."""

_ROW_SCALE = 2.0 ** -24
ROW_INVERSE = 2.0 ** 24
NOT_SLICE = ("a chunk is not a contiguous slice of the original row order (rows are permuted: "
              "Ordered boosting or categorical features without has_time=True)")


class LayoutError(RuntimeError):
    """CatBoost's calls do not have the layout the pointer route relies on.

    Example::

        ranker = StochasticCatBoostRanker(objective, route="per_tree")  # the fallback route

    Args:
      message: what differed from the expected layout.
    """


def encode_row_index(n_rows: int) -> np.ndarray:
    """Learn labels carrying the row index: ``i * 2**-24`` in float32 (exact for ``i < 2**24``).

    Example:

    >>> decode_row_index(encode_row_index(3)).tolist()
    [0, 1, 2]

    Args:
      n_rows: learn rows (at most ``MAX_ROWS``).

    Returns:
      float32 array of length ``n_rows``.
    """
    if n_rows > MAX_ROWS:
        raise ValueError(
            f"{n_rows} learn rows: the CatBoost adapter passes the row index through the float32 "
            f"label, which is exact only up to {MAX_ROWS} rows; train on a subsample of queries "
            "or split the data")
    return (np.arange(n_rows, dtype=np.float64) * _ROW_SCALE).astype(np.float32)


def decode_row_index(targets: ArrayLike) -> np.ndarray:
    """Inverse of :func:`encode_row_index`; raises :class:`LayoutError` on other values.

    Example:

    >>> decode_row_index(encode_row_index(2)).tolist()
    [0, 1]

    Args:
      targets: the labels CatBoost passes to the objective.

    Returns:
      int64 row indices.
    """
    scaled = np.asarray(targets, dtype=np.float64) * (1.0 / _ROW_SCALE)
    rows = scaled.astype(np.int64)
    if not np.array_equal(rows, scaled):
        raise LayoutError("the targets CatBoost passed are not encoded row indices")
    return rows


def buffer_view(address: int, ctype, n: int) -> np.ndarray:
    return np.ctypeslib.as_array((ctype * n).from_address(address))


CHUNK_NOT_SLICE, CHUNK_TWICE, CHUNK_CHANGED = 1, 2, 3
"""The guard's failures, returned negated by :func:`serve_chunk`."""


@njit(cache=True)
def serve_chunk(approxes, targets, encoded, pass_scores, seen, served):  # pragma: no cover
    """The pointer route's per-chunk layout guard and bookkeeping, in one call and one fused
    pass over the chunk: CatBoost calls the objective once per block of rows, holding the GIL
    (about 150 blocks per tree at 20k rows, 128 of them in leaf estimation), so what the guard
    costs per call is paid once per block by every CatBoost thread in turn.

    Returns the chunk's first learn row ``start`` (then the rows are marked served, ``served[0]``
    counts them, and a pass that has served every row resets both), or ``-CHUNK_NOT_SLICE`` when
    the chunk is not the contiguous slice ``encoded[start:start + n]`` of the learn rows (its
    first label is no encoded row index that fits, or a later label differs),
    ``-CHUNK_TWICE`` when a row was already served in this pass, ``-CHUNK_CHANGED`` when
    ``approxes`` differs from the pass's snapshot ``pass_scores`` (failures in that order of
    precedence; nothing is marked). ``n >= 1`` rows; the caller checked the dtypes."""
    n = approxes.shape[0]
    n_rows = encoded.shape[0]
    first = np.float64(targets[0]) * ROW_INVERSE  # exact: the encoding is i * 2**-24
    if not (0.0 <= first <= n_rows - n) or first != np.floor(first):  # NaN fails both ways
        return -CHUNK_NOT_SLICE
    start = np.int64(first)
    stop = start + n
    # counts on slices, not early exits (the loop vectorises: ~0.5 us for 1000 rows against
    # ~1.5 us with the flags or-ed in); the precedence is applied after it
    expected = encoded[start:stop]
    served_before = seen[start:stop]
    snapshot = pass_scores[start:stop]
    not_slice = 0
    twice = 0
    changed = 0
    for i in range(n):
        not_slice += np.int32(targets[i] != expected[i])
        twice += np.int32(served_before[i])
        changed += np.int32(approxes[i] != snapshot[i])
    if not_slice:
        return -CHUNK_NOT_SLICE
    if twice:
        return -CHUNK_TWICE
    if changed:
        return -CHUNK_CHANGED
    seen[start:stop] = True
    served[0] += n
    if served[0] == n_rows:  # the pass is complete: the next chunk starts a new one
        served[0] = 0
        seen[:] = False
    return start


@njit(cache=True)
def negated_pairs(grad, hess, out):  # pragma: no cover
    """``out[:, 0] = -grad``, ``out[:, 1] = -hess``; False when any value is NaN or inf."""
    finite = True
    for i in range(grad.shape[0]):
        g = grad[i]
        h = hess[i]
        if not (np.isfinite(g) and np.isfinite(h)):
            finite = False
        out[i, 0] = -g
        out[i, 1] = -h
    return finite

