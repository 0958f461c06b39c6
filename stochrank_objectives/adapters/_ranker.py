"""What every ranker adds to its booster's own ranker, written once.

The rankers are the boosters' rankers (``StochasticLGBMRanker(StochasticRankerBase,
lightgbm.LGBMRanker)``, and so on): parameters, eval sets, data containers, model files and
fitted attributes are inherited. :class:`StochasticRankerBase` holds only what the package adds
to all three and does the same way in each: a fit that leaves the ranker unfitted when it fails
(or when a Ctrl-C was swallowed on its way), scikit-learn's nested ``objective__*`` /
``sglb__*`` parameters in scikit-learn's order, the objective's own check of the whole training
data, :meth:`~StochasticRankerBase.explainer`, and the query-level ``score`` of scikit-learn's
model selection. No booster is imported here.

Example::

    isinstance(StochasticLGBMRanker(), StochasticRankerBase)   # True, as for every ranker
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Callable, Iterator

import numpy as np
from sklearn.base import BaseEstimator

from ..groups import as_float_array, query_weights
from ._common import EvalMetric, objective_metric
from ._interrupts import sigints_recorded
from ._ranker_inputs import query_offsets
from ._ranker_settings import default_objective

__all__ = ["StochasticRankerBase", "is_package_metric"]


def is_package_metric(metric: Any) -> bool:
    """Whether an ``eval_metric`` entry is the package's: an ``EvalMetric``, or a name with a
    capital letter (``"NDCG@5"``, ``"MRR"``). LightGBM's and XGBoost's metric names are lower
    case (``"ndcg@5"``, ``"map"``) and LightGBM ignores an unknown name silently, so the case
    tells them apart."""
    return isinstance(metric, EvalMetric) or (isinstance(metric, str)
                                              and metric != metric.lower())


class StochasticRankerBase:
    """The package's part of a ranker, mixed in before the booster's own ranker class.

    A subclass sets ``_booster_name`` and implements ``_forget_fit`` (drop every fitted
    attribute); :meth:`explainer` explains ``_shap_model()`` (``booster_`` unless overridden).
    """

    _booster_name = "booster"

    def _forget_fit(self) -> None:  # pragma: no cover - each ranker forgets its own fields
        raise NotImplementedError

    @contextmanager
    def _fit_guard(self) -> Iterator[None]:
        """The body of ``fit``: on any exception (or a KeyboardInterrupt something swallowed,
        see :mod:`._interrupts`) the ranker forgets its fit, so that it is never half-updated
        (an earlier fit's model beside the new data's attributes)."""
        try:
            with sigints_recorded() as sigints:
                yield
            if sigints:
                raise KeyboardInterrupt("Ctrl-C during fit, lost on its way (e.g. while Numba "
                                        "compiled a kernel): the model may be incomplete")
        except BaseException:
            self._forget_fit()
            raise

    def _set_params_nested(self, params: dict, set_plain: Callable[..., Any]) -> Any:
        """``set_params`` with scikit-learn's nested ``objective__*`` / ``sglb__*`` names,
        in scikit-learn's order: the top-level parameters first (``set_plain``: the booster
        ranker's own ``set_params``), so that ``sglb=`` and ``sglb__*`` work in one call
        (``set_params(**other.get_params(deep=True))``); ``objective__*`` on
        ``objective=None`` first sets :func:`default_objective`."""
        nested = {key: value for key, value in params.items()
                  if "__" in key and key.partition("__")[0] in ("objective", "sglb")}
        plain = {key: value for key, value in params.items() if key not in nested}
        if any(key.startswith("sglb__") for key in nested) and plain.get(
                "sglb", getattr(self, "sglb", None)) is None:
            raise ValueError("sglb__* parameters need an SGLB schedule: pass sglb=SGLB(...) "
                             "(or set_params(sglb=SGLB(...))) first")
        set_plain(**plain)
        if any(key.startswith("objective__") for key in nested) and getattr(
                self, "objective", None) is None:
            set_plain(objective=default_objective())
        if nested:
            BaseEstimator.set_params(self, **nested)
        return self

    @staticmethod
    def _check_training_queries(objective: Any, query_offsets: Any) -> None:
        """The objective's own check of the whole training data, where it has one
        (``check_training_queries``: e.g. a Recall cutoff that covers every list)."""
        check = getattr(objective, "check_training_queries", None)
        if callable(check):
            check(query_offsets)

    def _shap_model(self) -> Any:
        return self.booster_  # type: ignore[attr-defined]  # the booster's ranker has it

    def _fitted_feature_names(self) -> Any:
        """The columns of the DataFrame the ranker was fitted on, or None (an array)."""
        return getattr(self, "feature_names_in_", None)

    def explainer(self, data: Any = None, **kwargs: Any) -> Any:
        """A ``shap.TreeExplainer`` of the fitted model, with the fitted DataFrame's column
        names.

        Example::

            explanation = ranker.explainer()(X_test)   # needs ``pip install shap``
            explanation.base_values + explanation.values.sum(axis=1)   # == ranker.predict(X_test)

        ``shap.TreeExplainer(ranker)`` works as well (SHAP recognises the native rankers, and
        these are). Each row's base value plus its SHAP values equals ``predict`` (to float32
        rounding for XGBoost; under SGLB ``c^T`` is in the trees). A ranking uses only the
        score differences within a query: compare the SHAP values of one query's documents.

        Args:
          data: background data for ``feature_perturbation="interventional"``, or None (the
            trees' own cover). SHAP takes no background data for CatBoost models.
          **kwargs: passed to ``shap.TreeExplainer``; ``feature_names`` defaults to the
            columns of the DataFrame the ranker was fitted on.

        Returns:
          The ``shap.TreeExplainer``. Raises ``AttributeError`` before ``fit``, ``ImportError``
          when SHAP is not installed.
        """
        model = self._shap_model()
        try:
            import shap
        except ImportError as exc:
            raise ImportError(f"{type(self).__name__}.explainer needs SHAP: pip install shap "
                              "(it is shap.TreeExplainer(ranker))") from exc
        names = self._fitted_feature_names()
        if names is not None and "feature_names" not in kwargs:
            kwargs["feature_names"] = [str(name) for name in names]
        return shap.TreeExplainer(model, data, **kwargs)

    def _query_score(self, X: Any, y: Any, qid: Any, group: Any, sample_weight: Any,
                     objective: Any) -> float:
        """The mean over queries of ``objective``'s metric (worst-order ties) of
        ``predict(X)``, weighted by ``sample_weight`` (query weights): what the rankers'
        ``score(qid=)`` returns and scikit-learn's model selection maximises."""
        scores = np.asarray(self.predict(X),  # type: ignore[attr-defined]
                            dtype=np.float64).reshape(-1)
        labels = as_float_array(y, "y", scores.shape[0])
        offsets = query_offsets(scores.shape[0], qid, group, "score")
        if sample_weight is not None:
            sample_weight = query_weights(sample_weight, offsets, "sample_weight")
        return objective_metric(objective).value(scores, labels, offsets, sample_weight)
