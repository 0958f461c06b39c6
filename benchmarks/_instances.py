"""Random multimodal ranking problems with an enumerated global optimum.

The construction generalises the StochasticRank paper's Table 1 (section 7.1): ``m`` items,
each a one-hot feature vector, are shared by several queries that grade them differently, so
the queries' preferred orders conflict. A depth-3 ensemble can give every item any score, so
the model's ranking power is exactly "an order of the items", and the best mean metric over
all ``m!`` strict orders is the global optimum (ties never help under worst-permutation ties).
An instance is kept only if it is *multimodal*: some order that no adjacent swap of two items
improves is worse than the optimum, which is where LambdaMART-style local search can stop.

>>> inst = make_instance(0, metric="NDCG", top=3)
>>> inst.optimum >= inst.local_optimum
True
>>> round(inst.value(inst.best_scores), 12) == round(inst.optimum, 12)
True
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np

from stochrank_objectives.groups import query_offsets_from_sizes

from ._targets import Target

#: the instances' metrics (their targets: NDCG@3 and ERR@3 on grades 0-3, MRR on binary labels)
METRICS = ("NDCG", "MRR", "ERR")
#: the largest grade of the graded instances (ERR's grade mapping)
GRADE_MAX = 3


@dataclass(frozen=True)
class Instance:
    """One problem: data (``X`` one-hot items, ``y``, ``qid``, ``query_offsets``), the metric,
    its global optimum and the worst adjacent-swap local optimum."""

    key: tuple
    metric: str
    top: int | None
    X: np.ndarray
    y: np.ndarray
    qid: np.ndarray
    query_offsets: np.ndarray
    items: np.ndarray
    optimum: float
    local_optimum: float
    best_scores: np.ndarray  # item scores of one optimal order

    @property
    def group_sizes(self) -> np.ndarray:
        return np.diff(self.query_offsets)

    @property
    def target(self) -> Target:
        """The instance's metric at its cutoff (``NDCG@3``, ``MRR``, ``ERR@3``)."""
        return Target(self.metric, self.top)

    def value(self, item_scores_or_doc_scores) -> float:
        """Mean metric of per-document (or per-item) scores, worst-permutation ties."""
        s = np.asarray(item_scores_or_doc_scores, dtype=np.float64)
        if s.shape[0] != self.y.shape[0]:
            s = s[self.items]
        return metric_value(self.metric, self.top, s, self.y, self.query_offsets)


def metric_value(metric, top, scores, labels, offs, per_query=False):
    """The instance metric (worst ties; ERR's grades mapped through ``GRADE_MAX``)."""
    return Target(metric, top).value(scores, labels, offs, GRADE_MAX, ties="worst",
                                     per_query=per_query)


def _draw(rng, metric, n_items, n_queries):
    binary = Target(metric).binary
    sizes, items, labels = [], [], []
    for _ in range(n_queries):
        size = int(rng.integers(2, n_items + 1))
        members = rng.choice(n_items, size=size, replace=False)
        while True:
            if binary:
                grades = (rng.random(size) < 0.4).astype(np.float64)
            else:
                grades = rng.integers(0, 4, size=size).astype(np.float64)
            if grades.max() > 0 and grades.min() < grades.max():
                break
        sizes.append(size)
        items.append(members)
        labels.append(grades)
    return np.array(sizes), np.concatenate(items), np.concatenate(labels)


def _enumerate(metric, top, n_items, items, labels, offs):
    """Mean metric of every strict order of the items: (orders, values)."""
    orders = np.array(list(itertools.permutations(range(n_items))))
    item_scores = np.empty_like(orders, dtype=np.float64)
    rows = np.arange(orders.shape[0])[:, None]
    item_scores[rows, orders] = np.arange(n_items, 0, -1, dtype=np.float64)  # first = highest
    n_docs = items.shape[0]
    scores = item_scores[:, items].ravel()
    all_offs = (offs[None, :-1] + n_docs * rows).ravel()
    all_offs = np.append(all_offs, n_docs * orders.shape[0]).astype(np.int64)
    per_query = metric_value(metric, top, scores, np.tile(labels, orders.shape[0]), all_offs,
                             per_query=True)
    values = per_query.reshape(orders.shape[0], -1).mean(axis=1)
    return orders, values


def _worst_local_optimum(orders, values):
    """Lowest value among orders that no adjacent swap improves."""
    index = {tuple(o): i for i, o in enumerate(orders)}
    worst = np.inf
    for i, order in enumerate(orders):
        o = list(order)
        improvable = False
        for p in range(len(o) - 1):
            o[p], o[p + 1] = o[p + 1], o[p]
            if values[index[tuple(o)]] > values[i] + 1e-12:
                improvable = True
            o[p], o[p + 1] = o[p + 1], o[p]
            if improvable:
                break
        if not improvable:
            worst = min(worst, values[i])
    return worst


def make_instance(seed, metric="NDCG", top=3, n_items=None, n_queries=None) -> Instance:
    """The first multimodal instance drawn from ``seed`` (see the module docstring)."""
    if metric not in METRICS:
        raise ValueError(f"metric must be one of {METRICS}, got {metric!r}")
    rng = np.random.default_rng([seed, METRICS.index(metric)])
    while True:
        m = n_items if n_items is not None else int(rng.integers(4, 7))
        nq = n_queries if n_queries is not None else int(rng.integers(3, 7))
        sizes, items, labels = _draw(rng, metric, m, nq)
        offs = query_offsets_from_sizes(sizes)
        orders, values = _enumerate(metric, top, m, items, labels, offs)
        optimum = float(values.max())
        local = _worst_local_optimum(orders, values)
        if local < optimum - 1e-9:
            break
    best = np.empty(m)
    best[orders[int(np.argmax(values))]] = np.arange(m, 0, -1, dtype=np.float64)
    X = np.eye(m)[items]
    qid = np.repeat(np.arange(nq), sizes)
    return Instance((seed, metric, top), metric, top, X, labels, qid, offs, items, optimum,
                    float(local), best)


def instance_suite(n_instances, metrics_and_tops=(("NDCG", 3), ("MRR", None), ("ERR", 3))):
    """``n_instances`` instances spread evenly over the metrics, sizes 4-6 items x 3-6 queries."""
    out = []
    for i in range(n_instances):
        metric, top = metrics_and_tops[i % len(metrics_and_tops)]
        out.append(make_instance(i // len(metrics_and_tops), metric=metric, top=top))
    return out
