"""Parity of an exported artefact with the booster it was exported from.

:func:`check_export` scores the rows through the artefact with its engine's rule, by code that
reads only the artefact (:mod:`._evaluate`: onnxruntime for ONNX; small evaluators written from
each engine's documented tree semantics for the JSON payloads), and compares with the booster's
own raw scores of the same float32 rows.

Every row given is compared, by construction: ``qid`` must hold one id per row, each
evaluator must return one score per row (else a ``ValueError`` naming the target), and the
report counts the rows compared. A DataFrame is read by position only once its column names are
the model's (as the ranker's ``predict`` requires); a frame with other names or another order is
refused, naming the columns.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..groups import query_offsets_from_qid
from ._readers import raw_scores
from ._registry import resolve, write

__all__ = ["ParityReport", "check_export"]


@dataclass(frozen=True)
class ParityReport:
    """How an artefact scores rows against the booster.

    ``max_abs_diff``: the largest absolute difference of scores; ``same_ranking``: whether
    every query orders its documents the same (every pair compares the same way, ties
    included); ``queries_reordered``: how many do not.

    Example::

        print(check_export(ranker, "onnx", X, qid=qid))  # ONNX: 950 rows, 40 queries, ...

    Args:
      target, n_rows, n_queries, max_abs_diff, same_ranking, queries_reordered: as above.
    """

    target: str
    n_rows: int
    n_queries: int
    max_abs_diff: float
    same_ranking: bool
    queries_reordered: int

    def __str__(self) -> str:
        return (f"{self.target}: {self.n_rows} rows, {self.n_queries} queries, max |diff| "
                f"{self.max_abs_diff:.3g}, {'same ranking' if self.same_ranking else ''}"
                f"{'' if self.same_ranking else f'{self.queries_reordered} queries reordered'}")


def _reordered(a: np.ndarray, b: np.ndarray, offsets: np.ndarray) -> int:
    count = 0
    for lo, hi in zip(offsets[:-1], offsets[1:]):
        x, y = a[lo:hi], b[lo:hi]
        if not np.array_equal(np.sign(x[:, None] - x[None, :]), np.sign(y[:, None] - y[None, :])):
            count += 1
    return count


def _generated_names(n: int) -> tuple[list[str], ...]:
    """The names boosters make up for an array's columns (XGBoost / this package, LightGBM,
    CatBoost): a model named so was not fitted on named columns."""
    return ([f"f{i}" for i in range(n)], [f"Column_{i}" for i in range(n)],
            [str(i) for i in range(n)])


def _fitted_names(model, ensemble) -> list[str] | None:
    """The column names ``model`` was fitted with, or None (fitted on an array)."""
    from ..adapters import StochasticRankerBase

    names = getattr(model, "feature_names_in_", None)  # this package's and sklearn's models
    if names is not None or isinstance(model, StochasticRankerBase):
        return None if names is None else [str(n) for n in names]
    own = [str(n) for n in ensemble.feature_names]
    return None if own in _generated_names(len(own)) else own


def _check_columns(X, fitted: list[str] | None, exported: list[str]) -> None:
    """Refuse a DataFrame whose string column names are not the model's (or the export's)
    feature names in order, as the ranker's ``predict`` refuses it."""
    columns = getattr(X, "columns", None)
    if columns is None or fitted is None or not all(isinstance(c, str) for c in columns):
        return
    columns = list(columns)
    if columns == fitted or columns == list(exported):
        return
    missing = [c for c in fitted if c not in columns]
    extra = [c for c in columns if c not in fitted]
    if not missing and not extra and len(columns) == len(fitted):
        k = next(i for i, (a, b) in enumerate(zip(columns, fitted)) if a != b)
        raise ValueError(
            f"X's columns are the model's features in another order (column {k} is "
            f"{columns[k]!r}, the model's feature {k} is {fitted[k]!r}): check_export reads X "
            "by position, as the booster does, and the ranker's predict refuses this frame; "
            "pass X[names] with names the model's feature names in order (feature_names_in_)")
    raise ValueError(
        f"X's columns are not the model's features: missing {missing[:5]}"
        f"{' ...' if len(missing) > 5 else ''}, not the model's {extra[:5]}"
        f"{' ...' if len(extra) > 5 else ''}; the ranker's predict refuses this frame too: pass "
        "a frame with the model's feature names in order (feature_names_in_), or an array")


def check_export(model, target: str, X, qid=None, *, exported=None, feature_names=None,
                 **options) -> ParityReport:
    """Score ``X`` through ``model``'s export to ``target`` and compare with the booster.

    Example::

        report = check_export(ranker, "solr", X_test, qid=qid_test)
        assert report.max_abs_diff < 1e-5 and report.same_ranking

    Args:
      model: a fitted ranker of this package, a booster or a booster's scikit-learn model.
      target: ``"onnx"``, ``"vespa"``, ``"elasticsearch"`` (or ``"opensearch"``), ``"solr"``.
      X: rows in the model's feature order (an array or a DataFrame); NaN is a missing value
        (for Solr: an absent feature, see :func:`~stochrank_objectives.export.to_solr`). A
        DataFrame's string column names must be the model's feature names in order (or the
        exported names), when the model was fitted with names: else a ``ValueError`` names
        the columns, as the ranker's ``predict`` refuses such a frame.
      qid: query ids of the rows, one per row of ``X`` (each query's rows adjacent); None: one
        query. Another length is refused, naming both lengths.
      exported: the artefact to check; None exports ``model`` now, with ``feature_names`` and
        the writer's ``options`` (the same ones as the ``to_<target>`` function).

    Returns:
      A :class:`ParityReport`.
    """
    spec, booster, ensemble, names = resolve(model, target, feature_names)
    if exported is None:
        exported = write(spec, ensemble, names, options)
    X32 = np.asarray(X, dtype=np.float32)
    if X32.ndim != 2 or X32.shape[1] != len(names):
        raise ValueError(f"X must have {len(names)} columns (the model's features), got shape "
                         f"{X32.shape}")
    _check_columns(X, _fitted_names(model, ensemble), names)
    n = X32.shape[0]
    if qid is None:
        offsets = np.array([0, n], dtype=np.int64)
    else:
        ids = np.asarray(qid)
        if ids.ndim != 1 or ids.shape[0] != n:
            count = f"{ids.shape[0]} ids" if ids.ndim == 1 else f"shape {ids.shape}"
            raise ValueError(f"qid has {count}, X has {n} rows: pass one query id per row of X "
                             "(every row is compared)")
        offsets = np.asarray(query_offsets_from_qid(ids), dtype=np.int64)
    expected = np.asarray(raw_scores(booster, X32), dtype=np.float64)
    got = np.asarray(spec.score(exported, X32, names, **options), dtype=np.float64)
    for what, scores in (("the booster", expected), (f"{spec.title}'s evaluator", got)):
        if scores.shape != (n,):
            raise ValueError(f"{what} returned scores of shape {scores.shape} for {n} rows: "
                             f"one score per row is compared ({spec.title})")
    if offsets[0] != 0 or offsets[-1] != n:  # every row in one query: by construction
        raise AssertionError(f"query offsets {offsets[[0, -1]]} do not cover the {n} rows")
    reordered = _reordered(expected, got, offsets)
    return ParityReport(spec.title, int(n), int(offsets.size - 1),
                        float(np.max(np.abs(expected - got), initial=0.0)), reordered == 0,
                        reordered)
