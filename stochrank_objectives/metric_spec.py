"""The metric specification: labels -> per-document gains, position weights, ideal values.

:class:`MetricSpec` is the validated definition of one ranking metric that the StochasticRank
kernels, the metric functions and the CatBoost adapter share; :meth:`MetricSpec.kernel_args`
gives the kernels' arrays as a :class:`KernelArgs` (named fields).

The cascade metrics share the form of supplement D,
``M = scale_q * sum_{p < T} w_p g(r_{s_p}) prod_{u < p} d(r_{s_u})``:

===============  ==================================  =================  ===================  =========
metric           gain g(r)                           continuation d(r)  weight w_p (p < T)   scale_q
===============  ==================================  =================  ===================  =========
``DCG``          ``2^r - 1`` (``exp2``) or ``r``     1                  1 / log2(p + 2)      1
``NDCG``         as DCG                              1                  1 / log2(p + 2)      1 / IDCG@T
``ERR``          R = (2^r - 1) / 2^grade_max, or r   1 - R              1 / (p + 1)          1
``MRR``          1{r > threshold}                    1 - g              1 / (p + 1)          1
``PFOUND``       r (a probability in [0, 1])         1 - r              decay^p              1
``FILTEREDDCG``  as DCG                              1                  1 / (p + 1)          1
===============  ==================================  =================  ===================  =========

(``p`` is the 0-based position, ``T = min(top, n)``; ``top=None`` means the whole list.)
PFound is CatBoost's (Yandex's) pFound: ``pLook_0 = 1``, ``pLook_{p+1} = pLook_p (1 - r_p) decay``,
``PFound = sum_{p<T} pLook_p r_p``. FilteredDCG is CatBoost's StochasticRank FilteredDCG: the
documents whose score is below 0 are dropped, the others ranked by score with CatBoost's default
``denominator=Position`` (``1/(p+1)``). In cascade form that is a *virtual document* at the fixed
score 0 with gain 0 and continuation 0 (nothing below it counts); the objective appends it to
every query (``needs_virtual_document``), and it makes the loss depend on the scores themselves,
not only on their differences (no translation invariance).

Three counting metrics of binary relevance ``rel = 1{r > threshold}`` are not cascades but
have O(1) adjacent-swap differences from the prefix count of relevant documents
(``kernels.ccs.ccs_counting_query``); they use ``gain = rel``, ``continuation = 1`` and:

=============  ==========================================================  ===================
metric         value                                                       weight w_p (p < T)
=============  ==========================================================  ===================
``PRECISION``  ``sum_{p<T} rel_p / k``  (divides by k even when n < k)      1 / k
``MAP``        ``(1/R) sum_{p<T} rel_p H_p / (p + 1)``, ``H_p`` = relevant   1 / (p + 1)
               documents in positions ``0..p``, ``R`` = all relevant of the
               query (trec_eval ``map_cut``; ``scale_q = 1/R``, 0 if R = 0)
``RECALL``     ``sum_{p<T} rel_p / R``, relevant documents in the top k over   1
               all relevant of the query (``scale_q = 1/R``, 0 if R = 0)
=============  ==========================================================  ===================

Each metric's facts (these formulas' ingredients, its conventions, its CatBoost name) are one
row of :data:`stochrank_objectives.metric_table.METRIC_TABLE`; :class:`MetricSpec` reads its
row (:attr:`MetricSpec.row`) and compares no metric names.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from .kernels.common import dcg_discounts, inverse_ideal_dcg
from .kernels.metrics import ideal_values
from .metric_table import (CASCADE_METRICS, COUNTING_METRICS, METRICS, MetricRow,
                           canonical_metric, metric_row)
from .validation import check_float, check_int

__all__ = ["MetricSpec", "KernelArgs", "METRICS", "CASCADE_METRICS", "COUNTING_METRICS", "GAINS",
           "canonical_metric", "ndcg_gains", "inverse_full_idcg", "ndcg_constants"]

GAINS = ("exp2", "linear")


def with_virtual_documents(query_offsets):
    """FilteredDCG's layout: the offsets of the queries with one virtual document appended to
    each, and the positions of the real documents in that layout."""
    sizes = np.diff(query_offsets)
    ext_offs = query_offsets + np.arange(query_offsets.shape[0], dtype=np.int64)
    real = np.arange(int(query_offsets[-1]), dtype=np.int64) + np.repeat(
        np.arange(sizes.shape[0], dtype=np.int64), sizes)
    return ext_offs, real


class KernelArgs(NamedTuple):
    """The arrays a metric kernel takes, from :meth:`MetricSpec.kernel_args`.

    Fields: ``gain`` and ``continuation`` per document, ``position_weights`` ``w_p`` (zero
    from ``cutoff`` on), ``cutoff`` ``T``, ``ideal`` (each query's best raw value),
    ``scale`` (per query, the factor of the raw value: 1 / IDCG for NDCG, 1 / R for MAP) and
    ``query_cutoff``: empty, or per query its own cutoff ``T_q <= T`` (the kernels then weigh
    the positions from ``T_q`` on 0 in that query; ``kernels.common.query_cutoff_weights``).
    """

    gain: np.ndarray
    continuation: np.ndarray
    position_weights: np.ndarray
    cutoff: int
    ideal: np.ndarray
    scale: np.ndarray
    query_cutoff: np.ndarray


@dataclass(frozen=True)
class MetricSpec:
    """A validated metric definition: which metric, its cutoff and its gain options.

    Example:

    >>> import numpy as np
    >>> spec = MetricSpec.make("ndcg", top=2)
    >>> args = spec.kernel_args(np.array([2.0, 0.0, 1.0]), np.array([0, 3]))
    >>> args.gain.tolist(), args.cutoff
    ([3.0, 0.0, 1.0], 2)

    Formula: ``M = scale_q * sum_{p < T} w_p g(r_{s_p}) prod_{u < p} d(r_{s_u})`` with the
    gain ``g``, continuation ``d`` and weights ``w`` of the module table.

    Source: Ustimenko & Prokhorenkova (ICML 2020), supplement D; CatBoost's definitions of
    PFound and FilteredDCG.

    Args (of :meth:`make`, which validates; the constructor does not):
      metric: one of :data:`METRICS`, case-insensitive.
      top: cutoff k (``None`` = whole list; required for Precision and Recall).
      gain: ``"exp2"`` (``2^r - 1``) or ``"linear"`` (``r``), for the DCG family.
      grade_max: ERR's grade mapping ``(2^r - 1) / 2^grade_max``; ``None``: probabilities.
      threshold: relevance of MRR / Precision / MAP / Recall, ``label > threshold``.
      decay: PFound's continuation probability past a non-relevant document, in [0, 1].

    Returns:
      :meth:`make`: the frozen specification (hashable, compared by value).
    """

    metric: str
    top: int | None = None
    gain: str = "exp2"
    grade_max: float | None = None
    threshold: float = 0.0
    decay: float = 0.85

    @classmethod
    def make(cls, metric, top=None, gain="exp2", grade_max=None, threshold=0.0, decay=0.85):
        metric = canonical_metric(metric)
        top = check_int(top, "top (k)", 1, allow_none=True)
        reason = metric_row(metric).needs_top
        if reason is not None and top is None:
            raise ValueError(f"metric '{metric.capitalize()}' needs top=k ({reason})")
        if gain not in GAINS:
            raise ValueError(f"gain must be one of {GAINS}, got {gain!r}")
        if grade_max is not None:
            grade_max = check_float(grade_max, "grade_max", gt=0.0)
        threshold = check_float(threshold, "threshold", ge=0.0)
        decay = check_float(decay, "decay", ge=0.0)
        if decay > 1.0:
            raise ValueError(f"decay must be in [0, 1], got {decay}")
        return cls(metric, top, gain, grade_max, threshold, decay)

    @property
    def row(self) -> MetricRow:
        """The metric's facts: its row of :data:`~.metric_table.METRIC_TABLE`."""
        return metric_row(self.metric)

    @property
    def is_counting(self) -> bool:
        """Precision / MAP / Recall: served by the counting kernel, not the cascade kernel."""
        return self.row.counting

    @property
    def needs_virtual_document(self) -> bool:
        """FilteredDCG: a fixed document at score 0 closes the list (see the module docstring)."""
        return self.row.virtual_document

    @property
    def translation_invariant(self) -> bool:
        """Whether the loss depends on the scores only through their differences."""
        return not self.row.virtual_document

    # -- per-document arrays ------------------------------------------------------------
    def gain_and_continuation(self, labels: np.ndarray):
        """``(gain, continuation)`` per document, after checking the labels' domain."""
        return self.row.gain_and_continuation(self, labels)

    def relevant(self, labels: np.ndarray) -> np.ndarray:
        """Boolean mask: documents that count as relevant (gain > 0)."""
        return self.gain_and_continuation(labels)[0] > 0.0

    # -- per-position weights -----------------------------------------------------------
    def cutoff(self, max_query_size: int) -> int:
        """``T``: positions ``>= T`` have zero weight in every query."""
        return max_query_size if self.top is None else min(self.top, max_query_size)

    def position_weights(self, max_query_size: int) -> np.ndarray:
        """Weights ``w_p`` for ``p = 0 .. max_query_size + 1``, zero from ``T`` on."""
        t = self.cutoff(max_query_size)
        w = np.zeros(max_query_size + 2)
        w[:t] = self.row.weights(self, np.arange(t, dtype=np.float64))
        return w

    def kernel_args(self, labels: np.ndarray, query_offsets: np.ndarray,
                    query_cutoff: np.ndarray | None = None) -> KernelArgs:
        """Everything the kernels need, as a :class:`KernelArgs`.

        ``ideal`` is each query's best achievable raw value (0 means no relevant document; for
        Precision, MAP and Recall the number of relevant documents); ``scale`` is 1 / IDCG for
        NDCG (0 where IDCG = 0), 1 / R for MAP and Recall (0 where R = 0), else 1. For FilteredDCG the arrays
        describe the real documents only (the objective appends the virtual ones).
        ``query_cutoff`` (optional, int64 per query, each at most ``top``): every query's own
        cutoff, for its ideal value and in the kernels.
        """
        if query_cutoff is None:
            query_cutoff = np.empty(0, np.int64)
        gain, cont = self.gain_and_continuation(labels)
        sizes = np.diff(query_offsets)
        max_n = int(sizes.max()) if sizes.size else 0
        # FilteredDCG's virtual document makes the lists one longer
        max_n += int(self.needs_virtual_document)
        pos_weight = self.position_weights(max_n)
        t = self.cutoff(max_n)
        if self.is_counting:  # the ideal is the number of relevant documents R
            csum = np.concatenate(([0.0], np.cumsum(gain)))
            ideal = csum[query_offsets[1:]] - csum[query_offsets[:-1]]
        else:
            ideal = ideal_values(gain, cont, query_offsets, pos_weight, t, query_cutoff)
        if self.row.scale_by_ideal:
            scale = np.divide(1.0, ideal, out=np.zeros_like(ideal), where=ideal > 0.0)
        else:
            scale = np.ones_like(ideal)
        return KernelArgs(gain, cont, pos_weight, t, ideal, scale, query_cutoff)


def ndcg_gains(labels, gain):
    """The NDCG gains ``2^r - 1`` (``gain="exp2"``) or ``r`` (``"linear"``) of ``labels``.

    Example: ``ndcg_gains(np.array([2.0, 0.0]), "exp2")`` is ``[3.0, 0.0]``.

    Args:
      labels: float64 labels (the exp2 domain, ``r <= 31``, is checked).
      gain: ``"exp2"`` or ``"linear"``.

    Returns:
      float64 array, one gain per document.
    """
    return MetricSpec.make("NDCG", None, gain).gain_and_continuation(labels)[0]


def inverse_full_idcg(gains, query_offsets):
    """Per query ``1 / IDCG`` of the whole list (0 where IDCG is 0).

    Example: gains ``[3, 1]`` in one query give ``1 / (3 + 1 / log2(3))``.

    Formula: ``IDCG = sum_p g_(p) / log2(p + 2)``, gains sorted descending.

    Args:
      gains: float64 gains per document.
      query_offsets: int64 CSR offsets.

    Returns:
      float64 array, one value per query.
    """
    sizes = np.diff(query_offsets)
    max_n = int(sizes.max()) if sizes.size else 0
    disc = dcg_discounts(max_n, max_n)
    return inverse_ideal_dcg(gains, gains, query_offsets, disc, max_n)


def ndcg_constants(labels, query_offsets, gain):
    """``(gains, inverse_idcg)`` of validated labels and offsets: NDCG's per-document gains and
    each query's inverse ideal DCG over its whole list (what an objective derives once per
    training data).

    Example:

    >>> import numpy as np
    >>> gains, inv = ndcg_constants(np.array([1.0, 0.0]), np.array([0, 2]), "exp2")
    >>> gains.tolist(), inv.tolist()
    ([1.0, 0.0], [1.0])
    """
    gains = ndcg_gains(labels, gain)
    return gains, inverse_full_idcg(gains, query_offsets)
