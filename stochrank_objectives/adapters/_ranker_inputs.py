"""The rankers' data checks: features, query groups and labels, each error naming the argument.

Every booster would otherwise answer these inputs in its own way, or not at all: LightGBM
refuses a list of rows and fails with ``Check failed: (num_data) > (0)`` on empty data, XGBoost
trains a constant model on it, and any booster trains a constant model when no query has two
documents of different relevance.

Example:

>>> X, n_rows, n_cols = as_matrix([[0.0, 1.0], [2.0, 3.0]], "X")
>>> type(X).__name__, n_rows, n_cols
('ndarray', 2, 2)
"""

from __future__ import annotations

import warnings

import numpy as np

from ..groups import query_offsets_from_qid, query_offsets_from_sizes

__all__ = ["as_matrix", "column_names", "query_offsets", "check_training_queries"]


def as_matrix(X, where: str):
    """``(X, n_rows, n_cols)``: arrays and DataFrames (anything with a 2-d ``shape``) as given,
    any other 2-d array-like (a list of rows) through numpy (an object array when it holds
    strings, e.g. categorical columns). The CatBoost ranker refuses a ``catboost.Pool`` in fit."""
    if not hasattr(X, "shape"):
        try:
            array = np.asarray(X)
            if array.dtype.kind in "USO":
                array = np.asarray(X, dtype=object)
        except (TypeError, ValueError) as exc:
            raise TypeError(f"{where} must be a 2-d array-like (array, DataFrame or list of "
                            f"rows), got {type(X).__name__}: {exc}") from None
        X = array
    shape = tuple(X.shape)
    if len(shape) != 2:
        raise TypeError(f"{where} must be a 2-d array-like (array, DataFrame or list of rows), "
                        f"got {type(X).__name__} of shape {shape}")
    return X, int(shape[0]), int(shape[1])


def column_names(X):
    """The string column names of a DataFrame as an object array, else None."""
    columns = getattr(X, "columns", None)
    if columns is None:
        return None
    names = [str(c) if isinstance(c, str) else None for c in columns]
    return None if None in names else np.asarray(names, dtype=object)


def query_offsets(n_rows: int, qid, group, where: str) -> np.ndarray:
    """CSR query offsets from ``qid`` (one id per row, queries contiguous) or ``group`` sizes."""
    if (qid is None) == (group is None):
        raise ValueError(f"{where}: pass exactly one of qid= (one query id per row, the rows of "
                         "a query contiguous) or group= (the number of rows of each query)")
    if qid is not None:
        qid = np.asarray(qid)
        if qid.shape != (n_rows,):
            raise ValueError(f"{where}: qid has shape {qid.shape}, expected ({n_rows},) (one "
                             "query id per row of X)")
        return query_offsets_from_qid(qid)
    offsets = query_offsets_from_sizes(np.asarray(group).ravel())
    if offsets[-1] != n_rows:
        raise ValueError(f"{where}: group sizes sum to {offsets[-1]} but X has {n_rows} rows")
    return offsets


def check_training_queries(labels: np.ndarray, offsets: np.ndarray) -> None:
    """Refuse training data with nothing to rank; warn when every query's gradient is zero.

    Raises a ``ValueError`` when ``X`` has no rows or every query has a single document, and
    warns (``UserWarning``) when every query's labels are all equal: the ranking metric of each
    query is then the same for every order, so every query's gradient is zero and the booster
    trains a constant model.
    """
    n_rows = labels.shape[0]
    if n_rows == 0:
        raise ValueError("X has 0 rows: fit needs at least one query of two or more documents")
    sizes = np.diff(offsets)
    if sizes.max() < 2:
        raise ValueError(f"every query of qid/group has a single document ({n_rows} rows in "
                         f"{sizes.size} queries): there is nothing to rank; fit needs at least "
                         "one query of two or more documents")
    starts = offsets[:-1][sizes > 0]
    if np.array_equal(np.minimum.reduceat(labels, starts), np.maximum.reduceat(labels, starts)):
        warnings.warn("y: the labels of every query are all equal, so every query's gradient is "
                      "zero and the booster trains a constant model; check y and qid/group",
                      UserWarning, stacklevel=4)
