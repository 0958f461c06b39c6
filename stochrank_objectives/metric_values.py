"""The value of a metric specification on grouped scores: the one evaluation behind the metric
functions of :mod:`stochrank_objectives.metrics` and the objectives' discrete losses.

It sits beside :mod:`stochrank_objectives.metric_spec` (below both ``metrics`` and
``objectives``) so that an objective computes its loss without importing the layer above it.
Which kernel serves which metric:

* the cascade metrics (NDCG, DCG, ERR, MRR, PFound): ``kernels.metrics.cascade_metric_per_query``
  on the specification's gains, continuations and position weights, times its per-query scale;
* FilteredDCG: ranked by score, the same kernel with one virtual document (score 0, gain 0,
  continuation 0) closing each query (``order="score"``), or the documents scored >= 0 in their
  input order (``order="input"``, CatBoost's eval metric);
* Precision: the cascade kernel with weights ``1/k`` and continuation 1 (the whole list's
  fraction of relevant documents when ``top`` is None); Recall: the same kernel with weights 1
  (the count of relevant documents in the top k), divided by the query's number of relevant
  documents; MAP: the counting kernel ``kernels.metrics.average_precision_per_query``.

Which route a metric takes, and its conventions, are fields of its row of
:data:`stochrank_objectives.metric_table.METRIC_TABLE` (``spec.row``).

A query without a relevant document takes the ``no_relevant`` policy's value, by default each
metric's convention (:data:`NO_RELEVANT_DEFAULTS`); an empty query is NaN, never in a mean.
"""

from __future__ import annotations

import numpy as np

from .groups import query_weights, validate_grouped
from .kernels.metrics import (
    TIE_BEST,
    TIE_EXPECTED,
    TIE_INPUT,
    TIE_WORST,
    average_precision_per_query,
    cascade_metric_per_query,
)
from .metric_spec import MetricSpec, with_virtual_documents
from .metric_table import METRIC_TABLE, MetricRow

__all__ = ["TIE_POLICIES", "NO_RELEVANT_POLICIES", "NO_RELEVANT_DEFAULTS", "FILTERED_ORDERS",
           "evaluate_spec", "evaluate_validated"]

TIE_POLICIES = {"worst": TIE_WORST, "best": TIE_BEST, "input_order": TIE_INPUT,
                "expected": TIE_EXPECTED}
NO_RELEVANT_POLICIES = ("one", "zero", "skip")
# 0/0 is undefined for the normalised metrics, where CatBoost >= 1.2, LightGBM and XGBoost
# report 1; every other formula gives 0.
NO_RELEVANT_DEFAULTS = {name: row.no_relevant for name, row in METRIC_TABLE.items()
                        if row.no_relevant != "zero"}
FILTERED_ORDERS = ("score", "input")
# ties="expected" averages over the orderings of a tied block, exact only for additive metrics
_ADDITIVE = ", ".join(row.display for row in METRIC_TABLE.values() if row.additive)


def evaluate_spec(spec: MetricSpec, scores, labels, query_offsets, *, ties="worst",
                  no_relevant=None, per_query=False, order="score", weights=None):
    """The mean over queries (or the per-query values) of the metric ``spec`` defines.

    Example:

    >>> import numpy as np
    >>> spec = MetricSpec.make("NDCG", gain="linear")
    >>> round(evaluate_spec(spec, np.array([1.0, 1.0, 2.0]), np.array([1.0, 0.0, 2.0]),
    ...                     np.array([0, 3])), 5)  # worst-order ties, as CatBoost
    0.95023

    Formula: ``M_q = scale_q * sum_{p < T} w_p g(r_{s_p}) prod_{u < p} d(r_{s_u})`` over the
    order ``s`` of the scores (ties broken by ``ties``); see :mod:`..metric_spec`.

    Args:
      spec: the metric (a :class:`MetricSpec`; a Precision spec may have ``top=None``: the
        fraction of relevant documents of the whole list; a Recall spec too: 1).
      scores, labels, query_offsets: grouped arrays (validated here).
      ties: ``"worst"``, ``"best"``, ``"input_order"`` or ``"expected"`` (additive metrics).
      no_relevant: ``"one"``, ``"zero"``, ``"skip"`` or None (the metric's convention).
      per_query: return one value per query instead of the mean.
      order: FilteredDCG only: ``"score"`` (ranked by score) or ``"input"`` (CatBoost's).
      weights: query weights (one per query, or one per document shared by the documents of
        a query; :func:`~stochrank_objectives.groups.query_weights`): the mean becomes
        ``sum_q w_q M_q / sum_q w_q`` over the queries that count. Not used per query.

    Returns:
      float (the mean over the queries that count; NaN if none or if their weights are all 0)
      or a float64 array per query.
    """
    if order not in FILTERED_ORDERS:
        raise ValueError(f"order must be one of {FILTERED_ORDERS}, got {order!r}")
    scores, labels, offs = validate_grouped(scores, labels, query_offsets)
    if weights is not None:
        weights = query_weights(weights, offs)
    return evaluate_validated(spec, scores, labels, offs, ties=ties, no_relevant=no_relevant,
                              per_query=per_query, order=order, weights=weights)


def evaluate_validated(spec: MetricSpec, scores, labels, offs, *, ties="worst",
                       no_relevant=None, per_query=False, order="score", weights=None):
    """:func:`evaluate_spec` over arrays validated by the caller: float64 scores and labels,
    int64 offsets and ``None`` or one weight per query (a
    :class:`~stochrank_objectives.groups.GroupedData`'s), checked here no further -- what an
    eval metric calls every boosting round on data it validated once.

    Example:

    >>> import numpy as np
    >>> spec = MetricSpec.make("NDCG", gain="linear")
    >>> round(evaluate_validated(spec, np.array([1.0, 1.0, 2.0]), np.array([1.0, 0.0, 2.0]),
    ...                          np.array([0, 3])), 5)
    0.95023
    """
    row = spec.row
    tie = _tie_code(ties, row)
    if offs.shape[0] == 1:  # no query: every option is checked, and no kernel need compile
        return _summarise(np.zeros(0), np.zeros(0, dtype=bool),
                          row.no_relevant if no_relevant is None else no_relevant, per_query,
                          offs, weights)
    if row.average:  # MAP
        args = spec.kernel_args(labels, offs)
        raw = average_precision_per_query(scores, labels, args.gain, offs, args.cutoff, tie)
        has_relevant = args.ideal > 0.0
    elif row.whole_list_fraction and spec.top is None:  # Precision of the whole list
        relevant = spec.gain_and_continuation(labels)[0]
        n_relevant = _per_query_sum(relevant, offs)
        raw = n_relevant / np.maximum(np.diff(offs), 1)  # empty queries become NaN below
        has_relevant = n_relevant > 0.0
    elif row.virtual_document:  # FilteredDCG
        args = spec.kernel_args(labels, offs)
        raw = _filtered_dcg(scores, labels, offs, args, tie, order)
        has_relevant = args.ideal > 0.0
    else:  # the cascades, and Precision / Recall at k (continuation 1)
        args = spec.kernel_args(labels, offs)
        raw = cascade_metric_per_query(scores, labels, args.gain, args.continuation, offs,
                                       args.position_weights, args.cutoff, tie)
        if row.exact_ratio:  # a count over a count, divided exactly
            raw = np.divide(raw, args.ideal, out=np.zeros_like(raw), where=args.ideal > 0.0)
        else:
            raw = raw * args.scale
        has_relevant = args.ideal > 0.0
    default = row.no_relevant
    return _summarise(raw, has_relevant, default if no_relevant is None else no_relevant,
                      per_query, offs, weights)


def _tie_code(ties, row: MetricRow) -> int:
    if ties not in TIE_POLICIES:
        raise ValueError(f"ties must be one of {tuple(TIE_POLICIES)}, got {ties!r}")
    if ties == "expected" and not row.additive:
        raise ValueError(
            f"ties='expected' is only defined here for additive metrics ({_ADDITIVE}), "
            f"not {row.display}; use 'worst', 'best' or 'input_order'"
        )
    return TIE_POLICIES[ties]


def _filtered_dcg(scores, labels, offs, args, tie, order):
    """FilteredDCG's raw per-query values (see the module docstring for the two orders)."""
    t = args.cutoff
    if order == "input":
        kept = scores >= 0.0
        starts = np.repeat(offs[:-1], np.diff(offs))
        before = np.concatenate(([0], np.cumsum(kept)))
        position = before[np.arange(scores.shape[0])] - before[starts]  # among the kept
        weight = np.where(kept & (position < t), args.position_weights[np.minimum(position, t)],
                          0.0)
        return _per_query_sum(args.gain * weight, offs)
    ext_offs, real = with_virtual_documents(offs)
    n_ext = int(ext_offs[-1])
    # the virtual document: score 0, label 0 (gain 0 for both gains), continuation 0
    ext = [np.zeros(n_ext) for _ in range(4)]
    for arr, values in zip(ext, (scores, labels, args.gain, args.continuation)):
        arr[real] = values
    return cascade_metric_per_query(ext[0], ext[1], ext[2], ext[3], ext_offs,
                                    args.position_weights, t, tie)


def _summarise(values, has_relevant, policy, per_query, offs, weights=None):
    """The per-query values with the no-relevant policy applied, or their (weighted) mean."""
    if policy not in NO_RELEVANT_POLICIES:
        raise ValueError(f"no_relevant must be one of {NO_RELEVANT_POLICIES} or None, got {policy!r}")
    values = np.asarray(values, dtype=np.float64).copy()
    values[~has_relevant] = {"one": 1.0, "zero": 0.0, "skip": np.nan}[policy]
    values[np.diff(offs) == 0] = np.nan  # an empty query is no query: never part of a mean
    if per_query:
        return values
    counts = ~np.isnan(values)
    if weights is None:
        return float(values[counts].mean()) if counts.any() else float("nan")
    total = float(weights[counts].sum())
    if total == 0.0:
        return float("nan")
    return float(np.dot(weights[counts], values[counts]) / total)


def _per_query_sum(values, offs):
    csum = np.concatenate(([0.0], np.cumsum(values)))
    return csum[offs[1:]] - csum[offs[:-1]]
