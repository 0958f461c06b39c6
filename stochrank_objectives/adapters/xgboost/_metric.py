"""``XGBMetric``: a metric of this package as an XGBoost ``custom_metric``."""

from __future__ import annotations

import numpy as np
import xgboost as xgb

from ...groups import GroupedData
from .._common import BoosterMetric, as_scores
from .._handoff import handed_off
from ._objective import XGBOOST_HANDOFF, dmatrix_groups, dmatrix_weights, same_fields

__all__ = ["XGBMetric"]


class XGBMetric(BoosterMetric):
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

        def build():
            labels, offsets = dmatrix_groups(dmat, predt.shape[0], "evaluation")
            return GroupedData(labels, offsets, weights=dmatrix_weights(dmat, offsets))

        # each eval DMatrix validated once per training: the rankers' training callback
        # forgets the kept data when a training starts (forget); a metric used without it
        # compares the DMatrix's fields with the kept data every round
        verify = None if self._trusted else same_fields(dmat, True)
        data = self._data.get(dmat, (), build, verify)
        if data.n_docs != predt.shape[0]:
            raise ValueError(f"length mismatch in the evaluation data: {predt.shape[0]} "
                             f"predictions, {data.n_docs} labels")
        with handed_off(XGBOOST_HANDOFF):
            return self.name, self.value_grouped(predt, data)

    #: set by the training that uses this metric (the package's rankers), cleared after it:
    #: the eval DMatrix objects of one training do not change during it
    _trusted = False

    def forget(self, trusted: bool = False) -> None:
        """Forget the kept eval data (a training starts, ``trusted``: the rankers' training,
        whose eval DMatrix objects do not change; or ends)."""
        self._data.clear()
        self._trusted = trusted
