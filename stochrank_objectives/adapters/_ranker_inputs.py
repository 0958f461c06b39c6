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

import dataclasses
import warnings

import numpy as np
import scipy.sparse

from ..clicks import DEFAULT_CLIP, RegressionEM, check_positions, ips_labels
from ..groups import GroupedData, as_float_array, query_offsets_from_qid, query_offsets_from_sizes

__all__ = ["as_matrix", "column_names", "query_offsets", "check_training_queries",
           "check_eval_queries", "rankable_queries", "check_feature_values", "category_columns",
           "per_eval_set",
           "click_labels", "training_data", "grouped_training_data", "document_inputs",
           "refuse_inputs_without_package_objective"]

#: the GroupedData fields the rankers' fit handles by its own arguments (y, qid/group,
#: sample_weight, position, the booster's initial scores); every other field is a fit argument
#: of its own name (:func:`document_inputs`)
_HANDLED_FIELDS = ("labels", "query_offsets", "weights", "positions", "init_scores", "names")

#: rows per block of the infinity scan of a float matrix (a bounded temporary, not n x m)
_BLOCK_VALUES = 1 << 22


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
    _check_unique_columns(X, where)
    return X, int(shape[0]), int(shape[1])


def _check_unique_columns(X, where: str) -> None:
    # a DataFrame with two columns of one name: each booster fails in its own way (XGBoost
    # with an AttributeError from inside pandas), and X[name] would mean two features
    columns = getattr(X, "columns", None)
    if columns is None or len(set(columns)) == len(columns):
        return
    seen: set = set()
    duplicated = []
    for name in columns:
        if name in seen and name not in duplicated:
            duplicated.append(name)
        seen.add(name)
    raise ValueError(f"{where} has duplicate column names {duplicated}: every feature needs its "
                     "own name; rename the columns (or drop the repeated ones)")


def category_columns(X) -> frozenset:
    """Positions of the pandas category columns of a DataFrame (empty for anything else)."""
    dtypes = getattr(X, "dtypes", None)
    if dtypes is None or not hasattr(X, "iloc"):
        return frozenset()
    return frozenset(j for j, dtype in enumerate(dtypes)
                     if getattr(dtype, "name", "") == "category")


def check_feature_values(X, where: str, categorical: frozenset = frozenset(),
                         categories_how: str = "") -> None:
    """Refuse +-inf and non-numeric feature values, naming the column and its first row.

    The boosters do not agree on either: XGBoost refuses +-inf with a C++ stack trace (its
    histograms have no bin for it) while LightGBM and CatBoost train on it as an extreme value;
    a string fails in each booster's float conversion without the column. So one meaning for
    the three rankers, scikit-learn's: NaN is a missing value, +-inf is refused (replace it by
    a large finite value, or by NaN), a feature is a number.

    Args:
      X: the matrix as :func:`as_matrix` returns it; arrays, DataFrames and scipy sparse
        matrices are checked, anything else (a CatBoost ``Pool``) is left to its booster.
      where: how the messages name ``X`` (``"X"``, ``"eval_set[0] X"``).
      categorical: positions of the columns the booster reads as categories (not checked).
      categories_how: how this booster is told a column is categorical, ``{column}`` standing
        for the column (the fix offered for a string or an undeclared category column).
    """
    if scipy.sparse.issparse(X):
        _check_sparse(X, where)
    elif isinstance(X, np.ndarray):
        if X.dtype.kind in "iub":
            return
        if X.dtype.kind == "f":
            _check_float_matrix(X, where)
            return
        for j in range(X.shape[1]):
            if j not in categorical:
                _check_column(X[:, j], j, where, categories_how)
    elif hasattr(X, "dtypes") and hasattr(X, "iloc") and hasattr(X, "columns"):
        for j, (name, dtype) in enumerate(zip(X.columns, X.dtypes)):
            if j in categorical:
                continue
            column = X.iloc[:, j]
            if getattr(dtype, "name", "") == "category":
                raise ValueError(f"{where} column {name!r} has the pandas category dtype: to "
                                 f"train on it as categories, "
                                 f"{categories_how.format(column=repr(name))}; or encode it as "
                                 "numbers")
            if isinstance(dtype, np.dtype) and dtype.kind in "iub":
                continue
            if isinstance(dtype, np.dtype) and dtype.kind == "f":
                _check_finite(column.to_numpy(), repr(name), where)
            else:  # object, string or a pandas extension dtype
                _check_column(column.to_numpy(dtype=object), repr(name), where, categories_how)


def _infinite_message(where: str, column, value, row: int) -> str:
    return (f"{where} column {column} holds {value} (first at row {row}): infinite feature "
            "values are refused, as in scikit-learn (XGBoost cannot bin them, LightGBM and "
            "CatBoost would read them as extreme values); replace it by a large finite value, "
            "or by NaN for a missing value")


def _check_finite(values: np.ndarray, column, where: str) -> None:
    bad = np.isinf(values)
    if bad.any():
        row = int(np.argmax(bad))
        raise ValueError(_infinite_message(where, column, float(values[row]), row))


def _check_float_matrix(X: np.ndarray, where: str) -> None:
    step = max(1, _BLOCK_VALUES // max(1, X.shape[1]))
    for start in range(0, X.shape[0], step):
        bad = np.isinf(X[start:start + step])
        if bad.any():
            rows, cols = np.nonzero(bad)  # row-major: the first bad row, its first column
            row, col = start + int(rows[0]), int(cols[0])
            raise ValueError(_infinite_message(where, col, float(X[row, col]), row))


def _check_sparse(X, where: str) -> None:
    # only the stored values can be infinite; the implicit ones are zeros
    if X.dtype.kind != "f" or not np.isinf(X.data).any():
        return
    coo = scipy.sparse.coo_matrix(X)
    bad = np.isinf(coo.data)
    rows, cols, values = coo.row[bad], coo.col[bad], coo.data[bad]
    first = np.lexsort((cols, rows))[0]
    raise ValueError(_infinite_message(where, int(cols[first]), float(values[first]),
                                       int(rows[first])))


def _check_column(values: np.ndarray, column, where: str, categories_how: str) -> None:
    """One object column: numbers (as numpy converts them, NaN/None missing), none infinite."""
    try:
        numbers = values.astype(np.float64)
    except (TypeError, ValueError):
        for row, value in enumerate(values):
            try:
                np.float64(value)
            except (TypeError, ValueError):
                break
        raise ValueError(f"{where} column {column} holds the non-numeric value {value!r} (first "
                         f"at row {row}): the features must be numbers; encode it as numbers, "
                         f"or, to train on it as categories, "
                         f"{categories_how.format(column=column)}") from None
    _check_finite(numbers, column, where)


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
        try:
            return query_offsets_from_qid(qid)
        except ValueError as exc:
            if where == "fit":  # the training qid: the message already names it
                raise
            raise ValueError(f"{where}: {exc}") from None
    offsets = query_offsets_from_sizes(np.asarray(group).ravel())
    if offsets[-1] != n_rows:
        raise ValueError(f"{where}: group sizes sum to {offsets[-1]} but X has {n_rows} rows")
    return offsets


def per_eval_set(values, name: str, n_sets: int) -> list:
    """One entry per eval set from ``values`` (``None``: ``[None] * n_sets``), else a
    ``ValueError`` naming ``name`` (``eval_sample_weight``, ``eval_init_score``, ...)."""
    if values is None:
        return [None] * n_sets
    if not isinstance(values, (list, tuple)) or len(values) != n_sets:
        raise ValueError(f"{name} must be a list with one entry (None or an array) per eval set "
                         f"of eval_set ({n_sets}), got {type(values).__name__}"
                         + (f" of length {len(values)}" if isinstance(values, (list, tuple))
                            else ""))
    return list(values)


def document_inputs(inputs: dict, who: str) -> dict:
    """The per-document inputs among a ranker's extra fit arguments: every field of
    :class:`~stochrank_objectives.groups.GroupedData` that fit does not take by an argument of
    its own, by the field's name (a new per-document input of the objectives is a new field
    there, and then a fit argument of every ranker, which carries it to the objective inside
    the training's GroupedData). Anything else is refused as Python refuses an unexpected
    keyword argument.

    Example: ``document_inputs({}, "StochasticLGBMRanker")`` is ``{}``.

    Args:
      inputs: the fit's extra keyword arguments.
      who: the ranker's class name, for the message.

    Returns:
      The given inputs (``None`` values left out), by field name.
    """
    fields = [f.name for f in dataclasses.fields(GroupedData) if f.name not in _HANDLED_FIELDS]
    for name in inputs:
        if name not in fields:
            raise TypeError(f"{who}.fit() got an unexpected keyword argument {name!r}"
                            + (f" (per-document inputs: {', '.join(fields)})" if fields else ""))
    return {name: value for name, value in inputs.items() if value is not None}


def refuse_inputs_without_package_objective(inputs: dict, package: bool, objective) -> None:
    """Refuse per-document inputs (:func:`document_inputs`) with a booster's own objective,
    which would ignore them silently."""
    if inputs and not package:
        name = sorted(inputs)[0]
        raise ValueError(f"{name}= is read by the package's objectives; the booster's own "
                         f"objective {objective!r} would ignore it: leave it out or train a "
                         "package objective")


def training_data(X, y, n_rows: int, qid, group, position, propensity, sample_weight,
                  init_scores, init_name: str, inputs: dict | None = None):
    """``(GroupedData, propensities)`` of a ranker's training rows, validated once: labels
    (finite, non-negative), the queries of ``qid`` or ``group``, then
    :func:`grouped_training_data`."""
    labels = as_float_array(y, "y", n_rows)
    if np.any(labels < 0):
        raise ValueError("y must be non-negative relevance labels")
    offsets = query_offsets(n_rows, qid, group, "fit")
    return grouped_training_data(X, labels, offsets, position, propensity, sample_weight,
                                 init_scores, init_name, inputs)


def grouped_training_data(X, labels, offsets, position, propensity, sample_weight,
                          init_scores, init_name: str, inputs: dict | None = None):
    """``(GroupedData, propensities)`` from a ranker's checked labels and queries: the IPS
    labels of clicks when ``position`` is given (``propensities`` then, else ``None``), query
    weights, display positions, initial scores (named ``init_name`` in the messages:
    ``init_score``, ``base_margin``, ``baseline``), the other per-document inputs
    (:func:`document_inputs`), validated once, and something to rank
    (:func:`check_training_queries`)."""
    labels, propensities = click_labels(X, labels, position, propensity)
    names = {"labels": "y", "weights": "sample_weight", "init_scores": init_name,
             "positions": "position"}
    data = GroupedData(labels, offsets, weights=sample_weight, positions=position,
                       init_scores=init_scores, names=names, **(inputs or {}))
    check_training_queries(labels, offsets, data.weights)
    return data, propensities


def check_training_queries(labels: np.ndarray, offsets: np.ndarray,
                           weights: np.ndarray | None = None) -> None:
    """Refuse training data with nothing to rank; warn when every query's gradient is zero.

    Raises a ``ValueError`` when ``X`` has no rows or every query has a single document, and
    warns (``UserWarning``) when no query is rankable (:func:`rankable_queries`: every query's
    labels are all equal, or those that differ have weight 0): the ranking metric of each
    query is then the same for every order, so every gradient is zero and the booster trains a
    constant model.
    """
    n_rows = labels.shape[0]
    if n_rows == 0:
        raise ValueError("X has 0 rows: fit needs at least one query of two or more documents")
    sizes = np.diff(offsets)
    if sizes.max() < 2:
        raise ValueError(f"every query of qid/group has a single document ({n_rows} rows in "
                         f"{sizes.size} queries): there is nothing to rank; fit needs at least "
                         "one query of two or more documents")
    by_labels, weighted = _any_rankable(labels, offsets, weights)
    if by_labels and not weighted:
        warnings.warn("sample_weight: every query whose documents differ in relevance has "
                      "weight 0 (weight 0 removes a query), so every gradient is zero and the "
                      "booster trains a constant model; check sample_weight", UserWarning,
                      stacklevel=4)
    elif not by_labels:
        warnings.warn("y: the labels of every query are all equal, so every query's gradient is "
                      "zero and the booster trains a constant model; check y and qid/group",
                      UserWarning, stacklevel=4)


def check_eval_queries(labels: np.ndarray, offsets: np.ndarray, where: str,
                       early_stopping: bool, weights: np.ndarray | None = None) -> None:
    """Refuse early stopping on an eval set with nothing to rank; warn without early stopping.

    When no query of the eval set is rankable (:func:`rankable_queries`: every query has all
    its labels equal, one-document queries included, or those that differ have weight 0), its
    ranking metric is the same for every model: early stopping on it would stop after
    ``early_stopping_rounds`` rounds and keep the first tree, silently. Then a ``ValueError``
    (``early_stopping`` is true: the set is the one watched) or a ``UserWarning`` names the
    set. Some flat or weight-0 queries among rankable ones are fine.

    Args:
      labels, offsets: the eval set's labels and query offsets.
      where: its name in the messages (``"eval_set[0]"``).
      early_stopping: whether early stopping watches it.
      weights: its query weights (one per query), or None.
    """
    by_labels, weighted = _any_rankable(labels, offsets, weights)
    if weighted:
        return
    if by_labels:
        what = (f"{where}: every query whose documents differ in relevance has weight 0 "
                "(weight 0 removes a query), so the eval metric on it is a constant, the same "
                "for every model")
        fix = "give some of those queries a positive weight (check its sample weights)"
    else:
        what = (f"{where}: the labels of every query are all equal (or every query has a "
                "single document), so the eval metric on it is a constant, the same for every "
                "model")
        fix = ("pass an eval set with queries of documents of different relevance (check its "
               "y and qid)")
    if early_stopping:
        raise ValueError(f"{what}: early stopping on it would keep the first tree. "
                         f"{fix[0].upper() + fix[1:]}, or drop early_stopping_rounds")
    warnings.warn(f"{what}; {fix}", UserWarning, stacklevel=4)


def rankable_queries(labels: np.ndarray, offsets: np.ndarray,
                     weights: np.ndarray | None = None) -> np.ndarray:
    """Per query, whether its order can change a ranking metric: two documents of different
    labels, and a positive weight when query ``weights`` are given."""
    sizes = np.diff(offsets)
    rankable = np.zeros(sizes.size, dtype=bool)
    filled = sizes > 0
    if filled.any():
        starts = offsets[:-1][filled]
        rankable[filled] = (np.minimum.reduceat(labels, starts)
                            != np.maximum.reduceat(labels, starts))
    if weights is not None:
        rankable &= _positive(weights)
    return rankable


def _positive(weights) -> np.ndarray:
    return np.asarray(weights, dtype=np.float64).reshape(-1) > 0


def _any_rankable(labels: np.ndarray, offsets: np.ndarray, weights) -> tuple[bool, bool]:
    """``(whether a query has two labels, whether such a query also has a positive weight)``,
    the labels' pass made once."""
    by_labels = rankable_queries(labels, offsets)
    weighted = by_labels if weights is None else by_labels & _positive(weights)
    return bool(by_labels.any()), bool(weighted.any())


def click_labels(X, clicks, position, propensity):
    """``(labels, propensities)``: ``clicks`` unchanged without ``position``, else their IPS
    labels with the given propensities or those of regression-EM (``propensity`` ``None`` or
    a :class:`~stochrank_objectives.clicks.RegressionEM` of its settings)."""
    if position is None:
        if propensity is not None:
            raise ValueError("propensity needs position= (the display position of each row)")
        return clicks, None
    position = check_positions(position, clicks.shape[0])
    if position.size > 1 and position.min() == position.max():
        raise ValueError(f"position: every row has the same display position "
                         f"({position[0]}), which carries no position information (the IPS "
                         "labels would be the clicks rescaled); pass the 0-based display "
                         "position of each row (check that the right column was passed), or "
                         "leave position out to train on the clicks as labels")
    if propensity is None or isinstance(propensity, RegressionEM):
        em = RegressionEM() if propensity is None else propensity
        if clicks.max(initial=0.0) > 1.0:
            raise ValueError("estimating propensities needs y as clicks (0/1) or click-through "
                             "rates in [0, 1]; for click counts divide by the sessions, or "
                             "pass propensity=")
        dense = X.toarray() if hasattr(X, "toarray") else X
        try:
            dense = np.asarray(dense, dtype=np.float64)
        except (TypeError, ValueError) as exc:
            raise TypeError("estimating propensities needs numeric features; pass "
                            "propensity= instead") from exc
        propensity = em.estimate(dense, clicks, position)
    return ips_labels(clicks, position, propensity, clip=DEFAULT_CLIP), \
        np.asarray(propensity, dtype=np.float64)
