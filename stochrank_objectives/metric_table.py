"""The metric-definition table: every fact about a ranking metric, stated once.

One frozen :class:`MetricRow` per metric, read by the metric specification (gains,
continuations, position weights, per-query scale), the metric functions (which function, its
options, the no-relevant convention, the tie policies it allows), the StochasticRank objective
(counting kernel, AP averaging, virtual document, training cutoff and reach), the CatBoost
adapter (metric name and parameters, or why there is none), LambdaMART and YetiLoss (the
metrics their kernels know) and the benchmarks' targets. Nothing else in the package compares
metric names: it asks :func:`metric_row` for the row and reads a field.

Example:

>>> row = metric_row("recall")
>>> row.name, row.function, row.counting, row.no_relevant, row.catboost
('RECALL', 'recall_at_k', True, 'one', 'RecallAt')
>>> split_at_k("NDCG@5"), split_at_k("MRR")
(('NDCG', 5), ('MRR', None))

The formulas of the rows (gain ``g``, continuation ``d``, weight ``w_p`` below the cutoff,
per-query scale) are tabulated in :mod:`stochrank_objectives.metric_spec`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from .kernels import yetirank as _yeti

__all__ = ["MetricRow", "METRIC_TABLE", "METRICS", "CASCADE_METRICS", "COUNTING_METRICS",
           "GROWING_CUTOFF_METRICS", "LAMBDAMART_METRICS", "YETILOSS_MODES", "YETILOSS_CODES",
           "MRR_REACH",
           "NDCG_MIN_TOP_SHARE", "DCG_GAIN", "ERR_GAIN", "PROBABILITY_GAIN", "RELEVANCE_GAIN",
           "metric_row", "canonical_metric", "split_at_k", "catboost_number"]

#: MRR's default reach (``StochasticRank(reach=None)``), chosen by measurement:
#: docs/guide/stochasticrank.md
MRR_REACH = 0.3
#: NDCG@k's default min_top_share (``StochasticRank(min_top_share=None)``): a query's training
#: cutoff covers at least a tenth of it; chosen by measurement: docs/guide/stochasticrank.md
NDCG_MIN_TOP_SHARE = 0.1
_EXP2_MAX_LABEL = 31.0

# The gain kinds (``MetricRow.gain_kind``): which labels -> (gain, continuation) rule.
DCG_GAIN = "dcg"                 # 2^r - 1 or r; continuation 1
ERR_GAIN = "err"                 # probability r, or (2^r - 1) / 2^grade_max; continuation 1 - g
PROBABILITY_GAIN = "probability"  # r in [0, 1] (PFound); continuation 1 - r
RELEVANCE_GAIN = "relevance"     # 1{r > threshold}; continuation 1 - g (cascade) or 1 (counting)


def catboost_number(value) -> str:
    """A parameter value as CatBoost's metric strings write it (``0.5``, ``0``, ``3``)."""
    return repr(float(value)).rstrip("0").rstrip(".") if isinstance(value, float) else str(value)


def _dcg_gain(row, spec, labels):
    if spec.gain == "exp2":
        if labels.size and labels.max() > _EXP2_MAX_LABEL:
            raise ValueError(
                f"labels up to {labels.max():g} overflow the exp2 gain 2^r - 1 "
                f"(labels must be <= {_EXP2_MAX_LABEL:g}); use gain='linear'"
            )
        gain = np.exp2(labels) - 1.0
    else:
        gain = labels.copy()
    return gain, np.ones_like(labels)


def _err_gain(row, spec, labels):
    if spec.grade_max is None:
        if labels.size and labels.max() > 1.0:
            raise ValueError(
                f"ERR uses labels as probabilities, which must lie in [0, 1] (got up to "
                f"{labels.max():g}); pass grade_max=G to map grades r to (2^r - 1) / 2^G"
            )
        prob = labels.copy()
    else:
        if labels.size and labels.max() > spec.grade_max:
            raise ValueError(
                f"labels up to {labels.max():g} exceed grade_max={spec.grade_max:g} for ERR"
            )
        prob = (np.exp2(labels) - 1.0) / np.exp2(spec.grade_max)
    return prob, 1.0 - prob


def _probability_gain(row, spec, labels):
    if labels.size and (labels.min() < 0.0 or labels.max() > 1.0):
        raise ValueError(
            f"PFound uses labels as probabilities, which must lie in [0, 1] (got "
            f"{labels.min():g} .. {labels.max():g})")
    return labels.copy(), 1.0 - labels


def _relevance_gain(row, spec, labels):
    relevant = (labels > spec.threshold).astype(np.float64)
    if row.counting:
        return relevant, np.ones_like(relevant)
    return relevant, 1.0 - relevant


_GAINS: dict[str, Callable] = {DCG_GAIN: _dcg_gain, ERR_GAIN: _err_gain,
                               PROBABILITY_GAIN: _probability_gain,
                               RELEVANCE_GAIN: _relevance_gain}


# Position weights ``w_p`` below the cutoff, ``p`` the float64 positions 0 .. T - 1.
def _log_weights(spec, p):
    return 1.0 / np.log2(p + 2.0)


def _reciprocal_weights(spec, p):
    return 1.0 / (p + 1.0)


def _decay_weights(spec, p):
    return spec.decay ** p


def _per_k_weights(spec, p):
    return 1.0 / spec.top


def _unit_weights(spec, p):
    return 1.0


# CatBoost's parameters after ``top=k``.
def _catboost_dcg_type(spec):
    return ["type=" + ("Exp" if spec.gain == "exp2" else "Base")]


def _catboost_border(spec):
    return [f"border={catboost_number(float(spec.threshold))}"]


def _catboost_decay(spec):
    return [f"decay={catboost_number(float(spec.decay))}"]


def _catboost_nothing(spec):
    return []


@dataclass(frozen=True)
class MetricRow:
    """One metric's facts.

    Example: ``metric_row("MAP").average`` is True (the counting kernel's AP branch).

    Args:
      name: the canonical key (upper case, what :class:`~.metric_spec.MetricSpec` stores).
      display: the name in messages and documentation (``"PFound"``, ``"precision"``).
      function: the name of its function in :mod:`stochrank_objectives.metrics`.
      gain_kind: ``DCG_GAIN``, ``ERR_GAIN``, ``PROBABILITY_GAIN`` or ``RELEVANCE_GAIN``.
      weights: ``(spec, positions) -> w_p`` below the cutoff.
      options: the :class:`MetricSpec` fields its metric function takes as options.
      aliases: other accepted names (case-insensitive).
      counting: served by the counting kernel (prefix counts of relevant documents), not the
        cascade kernel.
      average: the counting kernel's average precision (``c(h) = h + 1``).
      scale_by_ideal: ``scale_q = 1 / ideal`` (0 where the ideal is 0), else 1.
      exact_ratio: its value is computed as ``raw / ideal`` (a count over a count), not
        ``raw * scale``.
      no_relevant: the value of a query without relevant documents, ``"one"`` or ``"zero"``.
      additive: continuation 1, so ``ties="expected"`` is exact.
      needs_top: the reason it needs a cutoff as an objective (``None``: it does not): its
        value on a whole list does not depend on the order. So a training cutoff that covers
        every list is refused too (``min_top_share=1``, a ``top`` at or above the longest list:
        ``objectives.training_metric.check_min_top_share`` / ``check_order_can_change``).
      whole_list_fraction: at ``top=None`` its value is the fraction of relevant documents.
      may_grow_cutoff: a larger training cutoff is still a ranking metric (``min_top_share``).
      default_min_top_share: ``min_top_share=None`` with a cutoff.
      default_reach: ``reach=None`` (``None``: a positive reach is refused).
      virtual_document: FilteredDCG's fixed document at score 0 (not translation invariant).
      catboost: CatBoost's eval-metric name with the same definition, or None.
      catboost_params: ``spec -> ["key=value", ...]`` after ``top=k``.
      catboost_refusal: why there is no CatBoost metric (None: a generic message).
      catboost_grade_labels: CatBoost's eval labels are the gains when ``grade_max`` is set.
      lambdamart: ``LambdaMART(metric=...)`` has it.
      native_lambdarank: the boosters' own lambdarank objectives optimise it.
      yetiloss_mode: its code among YetiLoss's modes (``kernels.yetirank.MODE_*``), or None.
    """

    name: str
    display: str
    function: str
    gain_kind: str
    weights: Callable[[Any, np.ndarray], Any]
    options: tuple[str, ...]
    aliases: tuple[str, ...] = ()
    counting: bool = False
    average: bool = False
    scale_by_ideal: bool = False
    exact_ratio: bool = False
    no_relevant: str = "zero"
    additive: bool = False
    needs_top: str | None = None
    whole_list_fraction: bool = False
    may_grow_cutoff: bool = False
    default_min_top_share: float = 0.0
    default_reach: float | None = None
    virtual_document: bool = False
    catboost: str | None = None
    catboost_params: Callable[[Any], list] = _catboost_nothing
    catboost_refusal: str | None = None
    catboost_grade_labels: bool = False
    lambdamart: bool = False
    native_lambdarank: bool = False
    yetiloss_mode: int | None = None

    def gain_and_continuation(self, spec, labels: np.ndarray):
        """``(gain, continuation)`` per document of ``spec`` (labels' domain checked)."""
        return _GAINS[self.gain_kind](self, spec, labels)


_ROWS = (
    MetricRow("NDCG", "NDCG", "ndcg_at_k", DCG_GAIN, _log_weights, ("gain",),
              scale_by_ideal=True, no_relevant="one", additive=True, may_grow_cutoff=True,
              default_min_top_share=NDCG_MIN_TOP_SHARE, catboost="NDCG",
              catboost_params=_catboost_dcg_type, lambdamart=True, native_lambdarank=True,
              yetiloss_mode=_yeti.MODE_NDCG),
    MetricRow("DCG", "DCG", "dcg_at_k", DCG_GAIN, _log_weights, ("gain",), additive=True,
              may_grow_cutoff=True, catboost="DCG", catboost_params=_catboost_dcg_type,
              yetiloss_mode=_yeti.MODE_DCG),
    MetricRow("ERR", "ERR", "err_at_k", ERR_GAIN, _reciprocal_weights, ("grade_max",),
              may_grow_cutoff=True, catboost="ERR", catboost_grade_labels=True,
              yetiloss_mode=_yeti.MODE_ERR),
    MetricRow("MRR", "MRR", "mrr", RELEVANCE_GAIN, _reciprocal_weights, ("threshold",),
              may_grow_cutoff=True, default_reach=MRR_REACH, catboost="MRR",
              catboost_params=_catboost_border, lambdamart=True, yetiloss_mode=_yeti.MODE_MRR),
    MetricRow("PFOUND", "PFound", "pfound", PROBABILITY_GAIN, _decay_weights, ("decay",),
              may_grow_cutoff=True, catboost="PFound", catboost_params=_catboost_decay),
    MetricRow("FILTEREDDCG", "FilteredDCG", "filtered_dcg", DCG_GAIN, _reciprocal_weights,
              ("gain",), virtual_document=True, catboost_refusal=(
                  # CatBoost's FilteredDCG eval metric keeps the documents scored >= 0 in their
                  # *input* order (the scores only filter), not what the objective optimises
                  "CatBoost's FilteredDCG eval metric ranks the kept documents in input order, "
                  "unlike StochasticRank(metric='FilteredDCG'): pass eval_metric explicitly "
                  "(e.g. 'FilteredDCG:type=Base;denominator=Position' to log CatBoost's own)")),
    MetricRow("PRECISION", "precision", "precision_at_k", RELEVANCE_GAIN, _per_k_weights,
              ("threshold",), counting=True, additive=True,
              needs_top="precision of the whole list does not depend on the order",
              whole_list_fraction=True),
    MetricRow("MAP", "MAP", "average_precision", RELEVANCE_GAIN, _reciprocal_weights,
              ("threshold",), counting=True, average=True, scale_by_ideal=True,
              no_relevant="one", may_grow_cutoff=True, yetiloss_mode=_yeti.MODE_MAP),
    MetricRow("RECALL", "Recall", "recall_at_k", RELEVANCE_GAIN, _unit_weights, ("threshold",),
              counting=True, scale_by_ideal=True, exact_ratio=True, no_relevant="one",
              additive=True, needs_top="recall of the whole list is 1 whatever the order",
              may_grow_cutoff=True, catboost="RecallAt", catboost_params=_catboost_border),
)

#: canonical name -> row, in the package's order of the metrics
METRIC_TABLE: dict[str, MetricRow] = {row.name: row for row in _ROWS}
_BY_ALIAS = {**{a.upper(): r for r in _ROWS for a in r.aliases}, **METRIC_TABLE}

CASCADE_METRICS = tuple(r.name for r in _ROWS if not r.counting)
COUNTING_METRICS = tuple(r.name for r in _ROWS if r.counting)
METRICS = CASCADE_METRICS + COUNTING_METRICS
# The metrics whose value at a larger cutoff is still a ranking metric (not Precision: its
# weight 1 / k is tied to k; not FilteredDCG: its virtual document is added later).
GROWING_CUTOFF_METRICS = tuple(r.name for r in _ROWS if r.may_grow_cutoff)
LAMBDAMART_METRICS = tuple(r.name for r in _ROWS if r.lambdamart)
#: YetiLoss's metric modes (CatBoost's spelling, the canonical names) -> their kernel codes,
#: in CatBoost's order
YETILOSS_CODES: dict[str, int] = dict(sorted(
    ((r.name, r.yetiloss_mode) for r in _ROWS if r.yetiloss_mode is not None),
    key=lambda item: item[1]))
YETILOSS_MODES = tuple(YETILOSS_CODES)


def canonical_metric(metric) -> str:
    """The canonical name of ``metric`` (case-insensitive; aliases resolved).

    Example: ``canonical_metric("PFound")`` is ``"PFOUND"``.

    Args:
      metric: a metric name.

    Returns:
      the key of its row in :data:`METRIC_TABLE`; raises TypeError / ValueError.
    """
    if not isinstance(metric, str):
        raise TypeError(f"metric must be a string, one of {METRICS}; got {metric!r}")
    row = _BY_ALIAS.get(metric.upper())
    if row is None:
        raise ValueError(f"unknown metric {metric!r}: expected one of {METRICS} "
                         f"(case-insensitive)")
    return row.name


def metric_row(metric) -> MetricRow:
    """The row of ``metric`` (any accepted spelling; see :func:`canonical_metric`).

    Example: ``metric_row("ndcg").no_relevant`` is ``"one"``.

    Args:
      metric: a metric name.

    Returns:
      its :class:`MetricRow`.
    """
    return METRIC_TABLE[canonical_metric(metric)]


def split_at_k(text: str):
    """``"NDCG@5"`` -> ``("NDCG", 5)``, ``"MRR"`` -> ``("MRR", None)``: a metric and its cutoff.

    Example: ``split_at_k("Recall@10")`` is ``("RECALL", 10)``.

    Args:
      text: ``NAME`` or ``NAME@k`` (k a positive integer).

    Returns:
      ``(canonical name, k or None)``; raises ValueError.
    """
    name, _, k = str(text).partition("@")
    if k and not (k.isdigit() and int(k) > 0):
        raise ValueError(f"{text!r}: the cutoff after '@' must be a positive integer, e.g. "
                         f"'NDCG@5' or 'MRR'")
    return canonical_metric(name), int(k) if k else None
