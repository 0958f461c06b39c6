"""A booster-independent eval metric: a metric of :mod:`stochrank_objectives.metrics` with its
cutoff, tie policy and options checked once, as the rankers, the adapters' ``LGBMMetric`` /
``XGBMetric``, CatBoost's metric mapping, ``scoring`` and the benchmarks use it.

Example:

>>> EvalMetric.from_string("NDCG@5")
EvalMetric('NDCG', 5, ties='worst', name='NDCG@5')
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from . import metrics as _metrics
from .groups import GroupedData
from .metric_spec import MetricSpec
from .metric_values import evaluate_validated

__all__ = ["EvalMetric", "objective_metric"]

#: options of a metric function that say how it is evaluated, not what it measures
_EVALUATION_OPTIONS = ("no_relevant", "order")


class EvalMetric:
    """A ranking metric of :mod:`stochrank_objectives.metrics`, checked at construction.

    Args:
      metric: ``"NDCG"``, ``"ERR"``, ``"MRR"`` (or ``"DCG"``, ``"precision"``, ``"MAP"``,
        ``"Recall"``, ...: :func:`stochrank_objectives.metrics.evaluate`).
      k: cutoff (``None`` = whole list).
      ties: tie policy, ``"worst"`` (pessimistic, default), ``"best"``, ``"input_order"``...
      name: the name in the booster's logs (default ``"NDCG@5"`` style, plus ``[ties]`` when
        not ``"worst"``).
      **options: metric options (``gain=``, ``grade_max=``, ``threshold=``, ``no_relevant=``).
    """

    def __init__(self, metric: str = "NDCG", k: int | None = None, *, ties: str = "worst",
                 name: str | None = None, **options: Any) -> None:
        self.metric = str(metric)
        self.k = k
        self.ties = ties
        self.options = dict(options)
        # Fail now on a bad name, cutoff or option rather than after the first tree; on no
        # query, which checks them all without compiling the metric's kernels (seconds on a
        # process's first fit, which needs them only if it evaluates).
        _metrics.evaluate(self.metric, np.zeros(0), np.zeros(0), np.array([0]), k,
                          ties=ties, **self.options)
        #: the metric's definition (the options that define it; ``no_relevant`` and FilteredDCG's
        #: ``order`` are how it is evaluated)
        self.spec = MetricSpec.make(self.metric, k, **{key: value for key, value in
                                                       self.options.items()
                                                       if key not in _EVALUATION_OPTIONS})
        if name is None:
            name = self.metric.upper() + ("" if k is None else f"@{k}")
            name += "" if ties == "worst" else f"[{ties}]"
        self.name = name

    @classmethod
    def from_string(cls, spec: str) -> EvalMetric:
        """``"NDCG@5"`` -> ``cls("NDCG", 5)``; ``"MRR"`` -> ``cls("MRR")``."""
        name, _, k = str(spec).partition("@")
        if k and not k.isdigit():
            raise ValueError(f"eval_metric {spec!r}: the cutoff after '@' must be a positive "
                             f"integer, e.g. 'NDCG@5', 'ERR@10' or 'MRR'")
        return cls(name, int(k) if k else None)

    def __repr__(self) -> str:
        options = "".join(f", {key}={value!r}" for key, value in self.options.items())
        return (f"{type(self).__name__}({self.metric!r}, {self.k!r}, ties={self.ties!r}, "
                f"name={self.name!r}{options})")

    def value(self, preds: ArrayLike, labels: ArrayLike, query_offsets: ArrayLike,
              weights: ArrayLike | None = None) -> float:
        """The mean over queries (weighted by ``weights``, one per query or per document)."""
        return float(_metrics.evaluate(self.metric, preds, labels, query_offsets, self.k,
                                       ties=self.ties, weights=weights, **self.options))

    def value_grouped(self, preds: ArrayLike, data: GroupedData) -> float:
        """:meth:`value` over validated grouped data (its weights, if any): what the
        boosters' eval functions call every round on the data they validated once; only the
        scores are checked.

        Example:

        >>> data = GroupedData(np.array([1.0, 0.0]), [0, 2])
        >>> EvalMetric("NDCG", 1).value_grouped(np.array([0.0, 1.0]), data)
        0.0
        """
        options = self.options
        return float(evaluate_validated(
            self.spec, data.checked_scores(preds), data.labels, data.query_offsets,
            ties=self.ties, no_relevant=options.get("no_relevant"),
            order=options.get("order", "score"), weights=data.weights))


def objective_metric(objective) -> EvalMetric:
    """The objective's own metric with worst-order ties: ``StochasticRank(metric="NDCG",
    top=5)`` -> ``EvalMetric("NDCG", 5)`` (its gain, threshold, ``grade_max`` or decay too).

    Objectives without a ``metric_spec`` use their ``metric``/``top`` attributes when these
    name a metric, else NDCG (at ``top``). The rankers' ``score`` and default ``eval_metric``.
    """
    spec = getattr(objective, "metric_spec", None)
    if spec is not None and getattr(spec, "metric", None) is not None:
        return EvalMetric(spec.metric, spec.top, **_metrics.metric_options(spec))
    top = getattr(objective, "top", None)
    try:
        return EvalMetric(getattr(objective, "metric", "NDCG"), top)
    except (TypeError, ValueError):
        return EvalMetric("NDCG", top)


