"""``LGBMMetric``: a ranking metric of this package as a LightGBM eval function."""

from __future__ import annotations

from ...groups import GroupedData
from .._common import BoosterMetric, as_scores
from ._inputs import MISSING, call_arguments, grouped

__all__ = ["LGBMMetric"]


class LGBMMetric(BoosterMetric):
    """A ranking metric of :mod:`stochrank_objectives.metrics` as a LightGBM eval function.

    Callable as ``feval(preds, eval_data)`` (``lgb.train``) and as ``(y_true, y_pred, weight,
    group)`` (``LGBMRanker(...).fit(eval_metric=...)``). With weights in the evaluation data
    (``lgb.Dataset(..., weight=w)``, one per row and the same for the rows of a query) the value
    is the weighted mean over queries.

    Example::

        lgb.train(params, train_set, valid_sets=[valid], feval=LGBMMetric("NDCG", 5))

    Args:
      see :class:`~stochrank_objectives.eval_metric.EvalMetric` (metric name, cutoff,
      metric options).

    Returns:
      when called, ``(name, value, True)`` (higher is better).
    """

    def __call__(self, preds_or_y_true, eval_data_or_y_pred, weight=MISSING, group=MISSING):
        preds, labels, sizes, weight, container = call_arguments(
            "LGBMMetric", preds_or_y_true, eval_data_or_y_pred, weight, group)
        preds = as_scores(preds)

        def build():
            labels_, offsets = grouped(labels, sizes, preds.shape[0], "evaluation data")
            return GroupedData(labels_, offsets, weights=weight,
                               names={"weights": "the evaluation data's weight"})

        # each eval set validated once: LightGBM keeps its arrays as objects
        data = self._data.get(container, (labels, sizes, weight), build)
        return self.name, self.value_grouped(preds, data), True
