"""Ranking metrics over grouped arrays, with explicit tie and empty-query policies.

Protocol shared by every metric here::

    metric(scores, labels, query_offsets, k=None, *, ties="worst", no_relevant=None,
           per_query=False, **metric_options) -> float | np.ndarray

* ``scores``, ``labels``: one entry per document; ``query_offsets``: CSR offsets (see
  :mod:`stochrank_objectives.groups`).
* ``k``: cutoff (``None`` = whole list).
* ``ties``: how documents with equal scores are ordered -- ``"worst"`` (less relevant first:
  the paper's R1 and CatBoost's rule; the default), ``"best"``, ``"expected"`` (exact mean over
  all orderings of each tied block; additive metrics only: DCG, NDCG, precision, recall) or
  ``"input_order"`` (a stable sort, as LightGBM and XGBoost do).
* ``no_relevant``: value of a query without any relevant document (its ideal value is 0):
  ``"one"``, ``"zero"`` or ``"skip"`` (left out of the mean, NaN in per-query output).
  ``None`` picks the metric's convention: ``"one"`` for the normalised metrics NDCG, MAP and
  Recall, where 0/0 is undefined and CatBoost >= 1.2, LightGBM and XGBoost all report 1 (so our
  logs agree with theirs); ``"zero"`` for DCG, ERR, MRR, PFound, FilteredDCG and precision, whose
  formula gives 0.
* ``per_query``: return one value per query instead of the mean over queries. Empty queries
  (no documents) are NaN and never part of a mean.
* ``weights``: query weights, one per query or one per document (shared by the documents of
  a query; :func:`~stochrank_objectives.groups.query_weights`): the mean is then the weighted
  mean ``sum_q w_q M_q / sum_q w_q`` over the queries that count (a weight of 0 leaves a
  query out; negative, NaN or all-zero weights are refused).

Each function checks its options into a :class:`~stochrank_objectives.metric_spec.MetricSpec`
and returns :func:`stochrank_objectives.metric_values.evaluate_spec` of it, the evaluation the
objectives' losses use too.

Examples (ties resolved pessimistically by default):

>>> import numpy as np
>>> offsets = np.array([0, 3])
>>> scores, labels = np.array([1.0, 1.0, 2.0]), np.array([1.0, 0.0, 2.0])
>>> round(ndcg_at_k(scores, labels, offsets, gain="linear"), 5)  # CatBoost's NDCG value
0.95023
>>> round(ndcg_at_k(scores, labels, offsets, gain="linear", ties="best"), 5)
1.0
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
from numpy.typing import ArrayLike

from .metric_spec import MetricSpec
from .metric_table import METRIC_TABLE, canonical_metric
# The policies' tables are exported from here; FILTERED_ORDERS stays importable from here too.
from .metric_values import FILTERED_ORDERS, NO_RELEVANT_POLICIES, TIE_POLICIES, evaluate_spec
from .validation import check_int

__all__ = [
    "TIE_POLICIES",
    "NO_RELEVANT_POLICIES",
    "dcg_at_k",
    "ndcg_at_k",
    "err_at_k",
    "mrr",
    "pfound",
    "filtered_dcg",
    "precision_at_k",
    "average_precision",
    "recall_at_k",
    "evaluate",
]


def _named_metric(name, scores, labels, query_offsets, k, ties, no_relevant, per_query,
                  weights, order="score", **spec_kwargs):
    """The front ends' shared body: the options checked into a spec, then its value."""
    spec = MetricSpec.make(name, top=k, **spec_kwargs)
    return evaluate_spec(spec, scores, labels, query_offsets, ties=ties,
                         no_relevant=no_relevant, per_query=per_query, order=order,
                         weights=weights)


def dcg_at_k(scores: ArrayLike, labels: ArrayLike, query_offsets: ArrayLike, k: int | None = None,
             *, gain: str = "exp2", ties: str = "worst", no_relevant: str | None = None,
             per_query: bool = False, weights: ArrayLike | None = None) -> float | np.ndarray:
    """Discounted cumulative gain at ``k``.

    ``DCG@k = sum_{p < min(k, n)} g(r_{s_p}) / log2(p + 2)`` with ``g(r) = 2^r - 1``
    (``gain="exp2"``, LightGBM/XGBoost default and the paper's eq. 1 up to a constant) or
    ``g(r) = r`` (``gain="linear"``, CatBoost's default ``type=Base``); ``p`` is 0-based.

    >>> import numpy as np
    >>> round(dcg_at_k(np.array([3.0, 2.0, 1.0]), np.array([1.0, 0.0, 2.0]), [0, 3]), 4)
    2.5

    Args:
      scores, labels, query_offsets, k, ties, no_relevant, per_query: see the module protocol.
      gain: ``"exp2"`` or ``"linear"``.

    Returns:
      The mean DCG@k over queries, or per-query values.
    """
    return _named_metric("DCG", scores, labels, query_offsets, k, ties, no_relevant,
                         per_query, weights, gain=gain)


def ndcg_at_k(scores: ArrayLike, labels: ArrayLike, query_offsets: ArrayLike, k: int | None = None,
              *, gain: str = "exp2", ties: str = "worst", no_relevant: str | None = None,
              per_query: bool = False, weights: ArrayLike | None = None) -> float | np.ndarray:
    """Normalised DCG: ``NDCG@k = DCG@k / max_z DCG@k`` (paper eq. 2).

    >>> import numpy as np
    >>> round(ndcg_at_k(np.array([4.0, 3, 2, 1]), np.array([3.0, 0, 2, 1]), [0, 4], 2,
    ...                 gain="linear"), 5)
    0.70392

    Args:
      scores, labels, query_offsets, k, ties, no_relevant, per_query: see the module protocol
        (``no_relevant`` defaults to ``"one"``).
      gain: ``"exp2"`` (``2^r - 1``) or ``"linear"`` (``r``).

    Returns:
      The mean NDCG@k over queries, or per-query values.
    """
    return _named_metric("NDCG", scores, labels, query_offsets, k, ties, no_relevant,
                         per_query, weights, gain=gain)


def err_at_k(scores: ArrayLike, labels: ArrayLike, query_offsets: ArrayLike, k: int | None = None,
             *, grade_max: int | None = None, ties: str = "worst", no_relevant: str | None = None,
             per_query: bool = False, weights: ArrayLike | None = None) -> float | np.ndarray:
    """Expected reciprocal rank: ``ERR@k = sum_{p<k} R_{s_p} / (p + 1) prod_{u<p} (1 - R_{s_u})``.

    ``R = label`` when ``grade_max`` is None (labels must be probabilities in [0, 1], as in
    CatBoost), else ``R = (2^r - 1) / 2^grade_max`` (Chapelle et al. 2009).

    >>> import numpy as np
    >>> round(err_at_k(np.array([2.0, 1.0]), np.array([0.5, 1.0]), [0, 2]), 4)
    0.75

    Returns:
      The mean ERR@k over queries, or per-query values.
    """
    return _named_metric("ERR", scores, labels, query_offsets, k, ties, no_relevant,
                         per_query, weights, grade_max=grade_max)


def mrr(scores: ArrayLike, labels: ArrayLike, query_offsets: ArrayLike, k: int | None = None, *,
        threshold: float = 0.0, ties: str = "worst", no_relevant: str | None = None,
        per_query: bool = False, weights: ArrayLike | None = None) -> float | np.ndarray:
    """Mean reciprocal rank of the first relevant document (relevant iff ``label > threshold``).

    Documents tied with the first relevant one are placed before it under ``ties="worst"``.
    Note CatBoost's ``MRR`` eval metric defaults to ``border=0.5``; pass ``threshold=0.5`` to match.

    >>> import numpy as np
    >>> mrr(np.array([1.0, 1.0, 0.0]), np.array([1.0, 0.0, 0.0]), [0, 3])
    0.5

    Returns:
      The mean reciprocal rank over queries (0 beyond the cutoff ``k``), or per-query values.
    """
    return _named_metric("MRR", scores, labels, query_offsets, k, ties, no_relevant,
                         per_query, weights, threshold=threshold)


def pfound(scores: ArrayLike, labels: ArrayLike, query_offsets: ArrayLike, k: int | None = None, *,
           decay: float = 0.85, ties: str = "worst", no_relevant: str | None = None,
           per_query: bool = False, weights: ArrayLike | None = None) -> float | np.ndarray:
    """PFound (CatBoost's / Yandex's): ``sum_{p<k} pLook_p r_{s_p}`` with ``pLook_0 = 1`` and
    ``pLook_{p+1} = pLook_p (1 - r_{s_p}) decay``; labels are probabilities in [0, 1].

    Equal to CatBoost's ``PFound:top=k;decay=...`` eval metric (whose ties are also pessimistic).

    >>> import numpy as np
    >>> round(pfound(np.array([2.0, 1.0]), np.array([0.5, 1.0]), [0, 2]), 4)  # 0.5 + .85 * .5
    0.925

    Args:
      scores, labels, query_offsets, k, ties, no_relevant, per_query: see the module protocol.
      decay: probability of looking on past a document, in [0, 1] (default 0.85).

    Returns:
      The mean PFound@k over queries, or per-query values.
    """
    return _named_metric("PFOUND", scores, labels, query_offsets, k, ties, no_relevant,
                         per_query, weights, decay=decay)


def filtered_dcg(scores: ArrayLike, labels: ArrayLike, query_offsets: ArrayLike,
                 k: int | None = None, *, gain: str = "exp2", order: str = "score",
                 ties: str = "worst", no_relevant: str | None = None,
                 per_query: bool = False, weights: ArrayLike | None = None) -> float | np.ndarray:
    """FilteredDCG: DCG with the Position denominator over the documents scored >= 0.

    ``FilteredDCG@k = sum_{p < k} g(r_{f_p}) / (p + 1)`` over the kept documents ``f``:

    * ``order="score"`` (default; what ``StochasticRank(metric="FilteredDCG")`` optimises): the
      documents ranked by score, cut at a virtual document of score 0 and gain 0; with
      worst-permutation ties a document scored exactly 0 with a positive gain falls below it,
      so the kept documents are those scored above 0 (and zero-gain ones, which add nothing);
    * ``order="input"``: CatBoost's ``FilteredDCG`` eval metric -- the documents with score
      >= 0 in their input order (the scores only filter); ``ties`` does not apply.

    ``gain``: ``"exp2"`` (``2^r - 1``) or ``"linear"`` (``r``, CatBoost's default ``type=Base``).

    >>> import numpy as np
    >>> s, r = np.array([0.5, -1.0, 2.0, 0.0]), np.array([1.0, 2.0, 3.0, 0.5])
    >>> round(filtered_dcg(s, r, [0, 4], gain="linear", order="input"), 4)  # CatBoost's value
    2.6667
    >>> round(filtered_dcg(s, r, [0, 4], gain="linear"), 4)  # 3/1 + 1/2 (0.5 scored 0 drops)
    3.5

    Returns:
      The mean FilteredDCG@k over queries, or per-query values.
    """
    return _named_metric("FILTEREDDCG", scores, labels, query_offsets, k, ties, no_relevant,
                         per_query, weights, order=order, gain=gain)


def _order_free_on_the_whole_list(name, scores, labels, query_offsets, k, threshold, ties,
                                  no_relevant, per_query, weights):
    """Precision and Recall at ``k``, ``k=None`` the whole list: the objective refuses them there
    (they do not depend on the order), so the spec is made with a top and its top set after."""
    k = check_int(k, "k", 1, allow_none=True)
    spec = replace(MetricSpec.make(name, top=k or 1, threshold=threshold), top=k)
    return evaluate_spec(spec, scores, labels, query_offsets, ties=ties,
                         no_relevant=no_relevant, per_query=per_query, weights=weights)


def precision_at_k(scores: ArrayLike, labels: ArrayLike, query_offsets: ArrayLike,
                   k: int | None = None, *, threshold: float = 0.0, ties: str = "worst",
                   no_relevant: str | None = None, per_query: bool = False,
                   weights: ArrayLike | None = None) -> float | np.ndarray:
    """Fraction of relevant documents (``label > threshold``) among the top ``k``; divides by ``k``
    even when a query has fewer documents (trec_eval's ``P_k``). ``k=None``: the whole list,
    i.e. the fraction of the query's documents that are relevant (independent of the scores).

    >>> import numpy as np
    >>> precision_at_k(np.array([3.0, 2.0, 1.0]), np.array([1.0, 0.0, 1.0]), [0, 3], 2)
    0.5

    Returns:
      Mean precision@k over queries, or per-query values.
    """
    # as a metric of the whole list: the fraction of relevant documents
    return _order_free_on_the_whole_list("PRECISION", scores, labels, query_offsets, k,
                                         threshold, ties, no_relevant, per_query, weights)


def average_precision(scores: ArrayLike, labels: ArrayLike, query_offsets: ArrayLike,
                      k: int | None = None, *, threshold: float = 0.0, ties: str = "worst",
                      no_relevant: str | None = None, per_query: bool = False,
                      weights: ArrayLike | None = None) -> float | np.ndarray:
    """Average precision (MAP over queries): mean over the relevant documents of the precision
    at their rank; relevant documents below ``k`` contribute 0 (trec_eval ``map_cut_k``).

    >>> import numpy as np
    >>> round(average_precision(np.array([3.0, 2.0, 1.0]), np.array([1.0, 0.0, 1.0]), [0, 3]), 4)
    0.8333

    Returns:
      MAP, or per-query average precision.
    """
    return _named_metric("MAP", scores, labels, query_offsets, k, ties, no_relevant, per_query,
                         weights, threshold=threshold)


def recall_at_k(scores: ArrayLike, labels: ArrayLike, query_offsets: ArrayLike,
                k: int | None = None, *, threshold: float = 0.0, ties: str = "worst",
                no_relevant: str | None = None, per_query: bool = False,
                weights: ArrayLike | None = None) -> float | np.ndarray:
    """Recall at ``k``: the share of a query's relevant documents (``label > threshold``) that
    are ranked in its top ``k``.

    >>> import numpy as np
    >>> recall_at_k(np.array([3.0, 2.0, 1.0, 0.0]), np.array([1.0, 0.0, 1.0, 1.0]), [0, 4], 2)
    0.3333333333333333

    Formula: ``Recall@k = |{relevant documents at positions p < k}| / R`` with ``R`` the
    number of relevant documents of the query (all of them, ranked or not; a query of fewer
    than ``k`` documents counts its whole list). ``k=None``: the whole list, 1 for every query
    with a relevant document. A query without relevant documents (0/0) is 1 by default
    (``no_relevant="one"``: as NDCG and MAP here, and CatBoost's ``RecallAt``).

    Source: Manning, Raghavan, Schütze, *Introduction to Information Retrieval* (Cambridge
    University Press 2008), ch. 8.1 (recall = relevant items retrieved / relevant items) and
    8.4 (evaluated over the top k retrieved results); the same as CatBoost's
    ``RecallAt:top=k;border=threshold`` eval metric (whose ties are pessimistic too).

    Args:
      scores, labels, query_offsets, k, ties, no_relevant, per_query, weights: see the module
        protocol (``ties="expected"`` is exact: the metric is additive).
      threshold: a document is relevant iff its label is above it (default 0).

    Returns:
      Mean recall@k over queries, or per-query values.
    """
    # as a metric of the whole list: 1 for every query with a relevant document
    return _order_free_on_the_whole_list("RECALL", scores, labels, query_offsets, k, threshold,
                                         ties, no_relevant, per_query, weights)


def metric_options(spec) -> dict:
    """The options of the eval metric matching a StochasticRank metric definition (worst ties)."""
    return {name: getattr(spec, name) for name in spec.row.options}


# the metric functions by canonical name, as the table names them
_BY_NAME: dict = {name: globals()[row.function] for name, row in METRIC_TABLE.items()}


def evaluate(metric: str, scores, labels, query_offsets, k=None, **options):
    """A metric by name: the per-query values of ``metric@k``.

    Example::

        evaluate("NDCG", scores, labels, query_offsets, k=5)  # = ndcg_at_k(..., 5)

    Args:
      metric: ``"NDCG"``, ``"DCG"``, ``"ERR"``, ``"MRR"``, ``"PFound"``, ``"FilteredDCG"``,
        ``"precision"``, ``"MAP"`` or ``"Recall"`` (case-insensitive).
      scores, labels, query_offsets: grouped arrays.
      k: cutoff (``None`` = whole list).
      **options: the named metric's options (``ties=``, ``gain=``, ...).

    Returns:
      float64 array, one value per query (as the named function returns).
    """
    try:
        key = canonical_metric(str(metric))
    except ValueError:
        raise ValueError(f"unknown metric {metric!r}: expected one of {tuple(_BY_NAME)}") from None
    return _BY_NAME[key](scores, labels, query_offsets, k, **options)
