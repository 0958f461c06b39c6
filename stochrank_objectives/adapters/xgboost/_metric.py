"""``XGBMetric``: a metric of this package as an XGBoost ``custom_metric``."""

from __future__ import annotations

import numpy as np
import xgboost as xgb

from .._common import EvalMetric, as_scores
from ._objective import dmatrix_groups, dmatrix_weights

__all__ = ["XGBMetric"]


class XGBMetric(EvalMetric):
    """A ranking metric of :mod:`stochrank_objectives.metrics` as an XGBoost ``custom_metric``.

    ``metric(predt, dmatrix) -> (name, value)``; pass ``maximize=True`` to ``xgb.train``. With
    DMatrix weights (one per query group) the value is the weighted mean over queries.

    Example::

        xgb.train(params, dtrain, evals=[(dvalid, "valid")], maximize=True,
                  custom_metric=XGBMetric.from_string("NDCG@5"))

    Args:
      see :class:`~stochrank_objectives.eval_metric.EvalMetric` (metric name, cutoff,
      metric options).

    Returns:
      when called, ``(name, value)`` (higher is better).
    """

    def __call__(self, predt: np.ndarray, dmat: xgb.DMatrix) -> tuple[str, float]:
        predt = as_scores(predt)
        labels, offsets = dmatrix_groups(dmat, predt.shape[0], "evaluation")
        return self.name, self.value(predt, labels, offsets, dmatrix_weights(dmat, offsets))
