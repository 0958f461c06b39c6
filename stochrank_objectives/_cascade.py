"""Cascade form of the ranking metrics: labels -> (gain, continuation), position weights.

All four trainable metrics share the form of supplement D,
``M = scale_q * sum_{p < T} w_p g(r_{s_p}) prod_{u < p} d(r_{s_u})``:

========  =====================================  ======================  ===================  =========
metric    gain g(r)                              continuation d(r)       weight w_p (p < T)   scale_q
========  =====================================  ======================  ===================  =========
``DCG``   ``2^r - 1`` (``exp2``) or ``r``        1                       1 / log2(p + 2)      1
``NDCG``  as DCG                                 1                       1 / log2(p + 2)      1 / IDCG@T
``ERR``   R = (2^r - 1) / 2^grade_max, or r      1 - R                   1 / (p + 1)          1
``MRR``   1{r > threshold}                       1 - g                   1 / (p + 1)          1
========  =====================================  ======================  ===================  =========

(``p`` is the 0-based position, ``T = min(top, n)``; ``top=None`` means the whole list.)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .groups import _check_float, _check_int
from .kernels.metrics import ideal_values

CASCADE_METRICS = ("NDCG", "DCG", "ERR", "MRR")
GAINS = ("exp2", "linear")
_EXP2_MAX_LABEL = 31.0


def canonical_metric(metric) -> str:
    if not isinstance(metric, str):
        raise TypeError(f"metric must be a string, one of {CASCADE_METRICS}; got {metric!r}")
    name = metric.upper()
    if name not in CASCADE_METRICS:
        raise ValueError(f"unknown metric {metric!r}: expected one of {CASCADE_METRICS}")
    return name


@dataclass(frozen=True)
class CascadeSpec:
    """A validated metric definition (see the module table)."""

    metric: str
    top: int | None = None
    gain: str = "exp2"
    grade_max: float | None = None
    threshold: float = 0.0

    @classmethod
    def make(cls, metric, top=None, gain="exp2", grade_max=None, threshold=0.0):
        metric = canonical_metric(metric)
        top = _check_int(top, "top (k)", 1, allow_none=True)
        if gain not in GAINS:
            raise ValueError(f"gain must be one of {GAINS}, got {gain!r}")
        if grade_max is not None:
            grade_max = _check_float(grade_max, "grade_max", gt=0.0)
        threshold = _check_float(threshold, "threshold", ge=0.0)
        return cls(metric, top, gain, grade_max, threshold)

    # -- per-document arrays ------------------------------------------------------------
    def gain_and_continuation(self, labels: np.ndarray):
        """``(gain, continuation)`` per document, after checking the labels' domain."""
        if self.metric in ("NDCG", "DCG"):
            if self.gain == "exp2":
                if labels.size and labels.max() > _EXP2_MAX_LABEL:
                    raise ValueError(
                        f"labels up to {labels.max():g} overflow the exp2 gain 2^r - 1 "
                        f"(labels must be <= {_EXP2_MAX_LABEL:g}); use gain='linear'"
                    )
                gain = np.exp2(labels) - 1.0
            else:
                gain = labels.copy()
            return gain, np.ones_like(labels)
        if self.metric == "ERR":
            if self.grade_max is None:
                if labels.size and labels.max() > 1.0:
                    raise ValueError(
                        f"ERR uses labels as probabilities, which must lie in [0, 1] (got up to "
                        f"{labels.max():g}); pass grade_max=G to map grades r to (2^r - 1) / 2^G"
                    )
                prob = labels.copy()
            else:
                if labels.size and labels.max() > self.grade_max:
                    raise ValueError(
                        f"labels up to {labels.max():g} exceed grade_max={self.grade_max:g} for ERR"
                    )
                prob = (np.exp2(labels) - 1.0) / np.exp2(self.grade_max)
            return prob, 1.0 - prob
        relevant = (labels > self.threshold).astype(np.float64)
        return relevant, 1.0 - relevant

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
        p = np.arange(t, dtype=np.float64)
        if self.metric in ("NDCG", "DCG"):
            w[:t] = 1.0 / np.log2(p + 2.0)
        else:
            w[:t] = 1.0 / (p + 1.0)
        return w

    def kernel_args(self, labels: np.ndarray, query_offsets: np.ndarray):
        """Everything the kernels need: ``(gain, cont, pos_weight, T, ideal, scale)``.

        ``ideal`` is each query's best achievable raw value (0 means no relevant document);
        ``scale`` is 1 / IDCG for NDCG (0 where IDCG = 0), else 1.
        """
        gain, cont = self.gain_and_continuation(labels)
        sizes = np.diff(query_offsets)
        max_n = int(sizes.max()) if sizes.size else 0
        pos_weight = self.position_weights(max_n)
        t = self.cutoff(max_n)
        ideal = ideal_values(gain, cont, query_offsets, pos_weight, t)
        if self.metric == "NDCG":
            scale = np.divide(1.0, ideal, out=np.zeros_like(ideal), where=ideal > 0.0)
        else:
            scale = np.ones_like(ideal)
        return gain, cont, pos_weight, t, ideal, scale
