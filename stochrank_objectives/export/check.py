"""Parity of an exported artefact with the booster it was exported from.

:func:`check_export` scores the rows through the artefact with its engine's rule, by code that
reads only the artefact (:mod:`._evaluate`: onnxruntime for ONNX; small evaluators written from
each engine's documented tree semantics for the JSON payloads), and compares with the booster's
own raw scores of the same float32 rows.
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
        (for Solr: an absent feature, see :func:`~stochrank_objectives.export.to_solr`).
      qid: query ids of the rows (each query's rows adjacent); None: one query.
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
    expected = raw_scores(booster, X32)
    got = np.asarray(spec.score(exported, X32, names, **options), dtype=np.float64)
    offsets = (np.array([0, X32.shape[0]]) if qid is None
               else np.asarray(query_offsets_from_qid(qid), dtype=np.int64))
    reordered = _reordered(expected, got, offsets)
    return ParityReport(spec.title, int(X32.shape[0]), int(offsets.size - 1),
                        float(np.max(np.abs(expected - got), initial=0.0)), reordered == 0,
                        reordered)
