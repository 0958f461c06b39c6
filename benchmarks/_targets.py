"""Targets: the metric a study trains for, selects trials by and validates on, parsed once.

A target is written ``NAME@k`` or ``NAME`` -- ``NDCG@5``, ``MRR``, ``ERR@10`` -- with ``NAME``
any metric :func:`stochrank_objectives.metrics.evaluate` knows (case-insensitive) and ``k`` a
positive cutoff. :func:`parse_target` turns the string into a :class:`Target` once (an unknown
metric or a bad cutoff raises a ``ValueError`` naming the known metrics); a target is then
evaluated as itself, never as another metric.

A :class:`Target` is a ``str``, its canonical name (``ndcg@5`` -> ``NDCG@5``): trial keys, cache
rows and reports keep the plain string, so a cached trial keyed ``"NDCG@5"`` is the same trial.

Labels (paper, section 7): a metric of binary relevance (``MRR``, precision, MAP, recall)
trains and validates on ``1{y > 0}``; the others on the graded labels. Test metrics always use
the original labels.

This is the one module of :mod:`benchmarks` that compares metric names: everything else asks a
:class:`Target` (``binary``, ``graded_options``, ``catboost_metric`` ...).
"""

from __future__ import annotations

import argparse

import numpy as np

from stochrank_objectives import metrics as M
from stochrank_objectives.metric_table import LAMBDAMART_METRICS as TABLE_LAMBDAMART_METRICS
from stochrank_objectives.metric_table import METRIC_TABLE, RELEVANCE_GAIN, canonical_metric

# The metrics' facts come from the package's metric table (one row per metric), never
# restated here:
#: metrics of binary relevance (``label > threshold``: their gain is relevance), trained and
#: validated on binarised labels ``1{y > 0}`` (the paper's MRR protocol; the same metric
#: values, a label scale the objectives and the boosters' natives see as binary)
BINARY_RELEVANCE = tuple(name for name, row in METRIC_TABLE.items()
                         if row.gain_kind == RELEVANCE_GAIN)
#: metrics whose gain maps a grade ``g`` through the largest grade (``(2^g - 1) / 2^g_max``)
NEEDS_GRADE_MAX = tuple(name for name, row in METRIC_TABLE.items()
                        if "grade_max" in row.options)
#: the metrics LambdaMART has lambdas of; for the others it trains on NDCG's at the cutoff
LAMBDAMART_METRICS = TABLE_LAMBDAMART_METRICS
#: the metrics StochasticRank's ``reach`` applies to (a cascade that may continue past a
#: relevant document)
REACH_METRICS = tuple(name for name, row in METRIC_TABLE.items()
                      if row.default_reach is not None)


class Target(str):
    """A parsed target: the canonical name (a ``str``), its ``metric`` and cutoff ``top``
    (``None``: the whole list). Made by :func:`parse_target`."""

    metric: str
    top: int | None

    def __new__(cls, metric: str, top: int | None = None):
        self = super().__new__(cls, metric + ("" if top is None else f"@{top}"))
        self.metric, self.top = metric, top
        return self

    def __reduce__(self):  # to worker processes: parsed again from the name
        return parse_target, (str(self),)

    # -- what the metric is --------------------------------------------------------------
    @property
    def binary(self) -> bool:
        """Trained and validated on ``1{y > 0}`` (a metric of binary relevance)."""
        return self.metric in BINARY_RELEVANCE

    @property
    def needs_grade_max(self) -> bool:
        """Its gain needs the largest grade (``grade_max``) of graded labels."""
        return self.metric in NEEDS_GRADE_MAX

    @property
    def has_reach(self) -> bool:
        """StochasticRank's ``reach`` applies to it."""
        return self.metric in REACH_METRICS

    def graded_options(self, grade_max=None) -> dict:
        """The metric's options for labels of largest grade ``grade_max``: ``{"grade_max":
        g}`` for a metric that needs it (and a ``grade_max`` given), else none."""
        return {"grade_max": grade_max} if self.needs_grade_max and grade_max is not None \
            else {}

    @property
    def lambdamart_metric(self) -> str:
        """The metric of LambdaMART's lambdas for this target (its own, or NDCG's)."""
        return self.metric if self.metric in LAMBDAMART_METRICS else "NDCG"

    @property
    def catboost_metric(self) -> str:
        """CatBoost's eval metric of this target (worst ties are CatBoost's own):
        ``NDCG:top=5;type=Exp``, ``MRR``, ``ERR:top=10``."""
        top = "" if self.top is None else f"top={self.top}"
        if self.metric == "NDCG":
            return "NDCG:" + (f"{top};" if top else "") + "type=Exp"
        if self.metric in ("MRR", "ERR"):
            return self.metric + (f":{top}" if top else "")
        raise ValueError(f"target {self}: CatBoost has no eval metric for it here (NDCG, MRR "
                         "and ERR targets only)")

    # -- evaluation ----------------------------------------------------------------------
    def labels(self, y: np.ndarray) -> np.ndarray:
        """Training and validation labels: ``1{y > 0}`` for a binary target, else ``y``."""
        return (y > 0).astype(np.float64) if self.binary else y

    def eval_metric(self, grade_max=None):
        """The package rankers' ``eval_metric`` of this target: its name, or (a metric with
        options) the metric object."""
        options = self.graded_options(grade_max)
        if not options:
            return str(self)
        from stochrank_objectives.eval_metric import EvalMetric

        return EvalMetric(self.metric, self.top, name=str(self), **options)

    def value(self, scores, labels, query_offsets, grade_max=None, **options):
        """The metric of ``scores`` on ``labels`` as they are (the mean, or with
        ``per_query=True`` the values per query); ``options``: the metric's (``ties=`` ...)."""
        return M.evaluate(self.metric, scores, labels, query_offsets, self.top,
                          **options, **self.graded_options(grade_max))

    def evaluate(self, scores, data, grade_max=None) -> float:
        """The mean validation value of ``scores`` on ``data`` (the target's labels)."""
        return float(self.value(scores, self.labels(data.y), data.query_offsets, grade_max))

    def per_query(self, scores, labels, query_offsets, grade_max=None):
        """Per-query values on ``labels`` as they are (test metrics: original labels)."""
        return self.value(scores, labels, query_offsets, grade_max, per_query=True)


def parse_target(text) -> Target:
    """``"NDCG@5"`` -> ``Target("NDCG", 5)``, ``"mrr"`` -> ``Target("MRR")``; a
    :class:`Target` is returned as it is. Raises ``ValueError`` for a metric that
    :func:`stochrank_objectives.metrics.evaluate` does not know or a cutoff that is not a
    positive integer."""
    if isinstance(text, Target):
        return text
    name, at, k = str(text).strip().partition("@")
    if at and not (k.isdigit() and int(k) > 0):
        raise ValueError(f"target {text!r}: the cutoff after '@' must be a positive integer, "
                         "e.g. 'NDCG@5', 'ERR@10' (or no cutoff: 'MRR')")
    top = int(k) if at else None
    try:  # the package's own check of the name (and of the cutoff)
        M.evaluate(name, np.zeros(2), np.array([1.0, 0.0]), np.array([0, 2]), top)
    except ValueError as exc:
        raise ValueError(f"unknown target {text!r}: {exc}") from None
    return Target(canonical_metric(name), top)  # aliases resolved by the table


def target_arg(text) -> Target:
    """:func:`parse_target` for ``argparse`` (``type=target_arg``): its message on error."""
    try:
        return parse_target(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


#: the paper's targets: NDCG@5 on graded labels, MRR on binarised labels
TARGETS = (parse_target("NDCG@5"), parse_target("MRR"))
#: the test metrics of every trial (original labels, worst ties)
TEST_METRICS = tuple(parse_target(t) for t in ("NDCG@5", "NDCG@10", "MRR", "ERR@10"))


def test_metrics(scores, data, grade_max: int, extra=()) -> tuple:
    """Per-query values of the test metrics (package convention for queries without a
    relevant document) -- :data:`TEST_METRICS` and the targets of ``extra`` not among them --
    and the mask of queries that have one."""
    y, offs = data.y, data.query_offsets
    wanted = [*TEST_METRICS, *(t for t in map(parse_target, extra) if t not in TEST_METRICS)]
    per = {str(t): t.per_query(scores, y, offs, grade_max) for t in wanted}
    has_rel = np.maximum.reduceat(y, offs[:-1]) > 0
    return per, has_rel


test_metrics.__test__ = False  # not a pytest test (its name starts with "test")
