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


CHUNK_OK, CHUNK_NOT_SLICE, CHUNK_TWICE, _CHUNK_CHANGED = 0, 1, 2, 3


@njit(cache=True)
def check_chunk(approxes, targets, encoded, pass_scores, seen, start):  # pragma: no cover
    """The per-chunk layout guard in one pass over the chunk (numba: ~1 us for 1000 rows
    against ~10 us for the same checks as separate numpy calls). Returns
    ``CHUNK_NOT_SLICE`` when ``targets != encoded[start:start + n]`` (the chunk is not the
    contiguous slice of the learn rows starting at row ``start``), ``CHUNK_TWICE`` when a row
    of the chunk was already served in this pass, ``_CHUNK_CHANGED`` when ``approxes`` differs
    from this pass's snapshot, and otherwise marks the rows as served and returns ``CHUNK_OK``.
    The caller checks ``0 <= start`` and ``start + n <= encoded.size``."""
    n = approxes.shape[0]
    for i in range(n):
        if targets[i] != encoded[start + i]:
            return CHUNK_NOT_SLICE
    for i in range(n):
        if seen[start + i]:
            return CHUNK_TWICE
    for i in range(n):
        if approxes[i] != pass_scores[start + i]:
            return _CHUNK_CHANGED
    for i in range(n):
        seen[start + i] = True
    return CHUNK_OK


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

