"""Model selection with scikit-learn: a ranking scorer that receives ``qid`` by metadata routing.

Example::

    import sklearn
    from sklearn.model_selection import GridSearchCV, GroupKFold

    sklearn.set_config(enable_metadata_routing=True)
    search = GridSearchCV(StochasticXGBRanker(StochasticRank(top=5)),
                          {"objective__sigma": [0.1, 0.3]}, cv=GroupKFold(3),
                          scoring=ranking_scorer("NDCG", 5))
    search.fit(X, y, qid=qid, groups=qid)

The rankers request ``qid`` for ``fit`` and ``score`` by default, the scorer for scoring, and
``GroupKFold`` takes ``groups``: so every fold keeps whole queries and sees its own ``qid``.
Without metadata routing the scorer never receives ``qid`` and says so.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from .groups import as_float_array, query_offsets_from_qid, query_weights

__all__ = ["ranking_scorer"]


def ranking_scorer(metric: str = "NDCG", k: int | None = 5, *, ties: str = "worst",
                   **options: Any) -> Callable[..., float]:
    """A scikit-learn scorer: the mean over queries of ``metric@k`` on ``estimator.predict(X)``.

    Example::

        sklearn.set_config(enable_metadata_routing=True)
        cross_validate(ranker, X, y, params={"qid": qid, "groups": qid}, cv=GroupKFold(3),
                       scoring=ranking_scorer("NDCG", 5))

    Args:
      metric: ``"NDCG"``, ``"ERR"``, ``"MRR"``, ``"DCG"``, ``"precision"``, ``"MAP"``,
        ``"Recall"``, ...
        (:func:`stochrank_objectives.metrics.evaluate`).
      k: cutoff (``None`` = whole list).
      ties: tie policy, ``"worst"`` (default: a constant model does not score well).
      **options: metric options (``gain=``, ``grade_max=``, ``threshold=``, ...).

    Returns:
      a scorer whose ``qid`` (one query id per row, queries contiguous) and ``sample_weight``
      (query weights, one per row and equal within a query: the weighted mean over queries)
      are requested through metadata routing; higher is better.
    """
    import sklearn
    from sklearn.metrics import make_scorer

    from .eval_metric import EvalMetric

    definition = EvalMetric(metric, k, ties=ties, **options)  # checks the name and options

    def ranking_metric(y_true, y_pred, *, qid=None, sample_weight=None):
        if qid is None:
            raise ValueError(
                f"ranking_scorer({definition.name!r}) needs qid= (one query id per row): turn "
                "on metadata routing, sklearn.set_config(enable_metadata_routing=True), and pass "
                "qid to fit, e.g. GridSearchCV(...).fit(X, y, qid=qid, groups=qid)")
        scores = np.asarray(y_pred, dtype=np.float64).reshape(-1)
        labels = as_float_array(y_true, "y", scores.shape[0])
        qid = np.asarray(qid)
        if qid.shape != scores.shape:
            raise ValueError(f"qid has shape {qid.shape}, expected ({scores.shape[0]},)")
        offsets = query_offsets_from_qid(qid)
        if sample_weight is not None:  # query weights: the weighted mean over queries
            sample_weight = query_weights(sample_weight, offsets, "sample_weight")
        return definition.value(scores, labels, offsets, sample_weight)

    ranking_metric.__name__ = f"ranking_{definition.name}"
    scorer = make_scorer(ranking_metric, response_method="predict")
    with sklearn.config_context(enable_metadata_routing=True):
        scorer = scorer.set_score_request(qid=True, sample_weight=True)
    return scorer
