"""Generated MSLR-shaped ranking data, the one generator of the speed benchmarks.

Queries of log-normal sizes (mean ~120, as MSLR-WEB30K: 3.77M documents make ~31.5k queries),
labels 0-4 in MSLR-WEB30K's grade mix (:data:`LABEL_PROBS`). Without features
(``n_features=0``, :mod:`benchmarks.kernel_speed`, :mod:`benchmarks.defaults_cost`,
:mod:`benchmarks.letor_cache`, :mod:`benchmarks.dask_scaling`) the labels are drawn in that mix
and two score states come with them, ``trained`` (``0.5 * label + N(0, 1)``, as after some
boosting) and ``initial`` (all 0, as at iteration 0). With ``n_features`` float32 Gaussian
features (:mod:`benchmarks.training_speed`, :mod:`benchmarks.scale`) the labels are cut from a
noisy linear score ``X w / |w| + N(0, 1)`` at the mix's quantiles, so that the trees have
something to learn.

Example::

    data = make_data(120_000, n_features=30)   # data.X, data.labels, data.qid, data.sizes ...
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from stochrank_objectives import query_offsets_from_sizes

LABEL_PROBS = np.array([0.52, 0.32, 0.13, 0.02, 0.01])  # MSLR-WEB30K-like grade mix


@dataclass
class MSLRData:
    """Generated rows: ``labels`` (float64), ``sizes``, ``query_offsets``, ``qid`` (the query
    index of each row), ``X`` (float32; ``None`` without features) and ``scores`` (score
    states by name; empty with features)."""

    labels: np.ndarray
    sizes: np.ndarray
    query_offsets: np.ndarray
    qid: np.ndarray
    X: np.ndarray | None = None
    scores: dict = field(default_factory=dict)

    @property
    def y(self) -> np.ndarray:   # rows as the boosters' trainers read them
        return self.labels

    @property
    def group_sizes(self) -> np.ndarray:
        return self.sizes


def _query_sizes(rng, n_docs: int) -> np.ndarray:
    """Log-normal query sizes (mean ~120, 2-1000) until they hold ``n_docs`` documents."""
    sizes = []
    total = 0
    while total < n_docs:
        size = int(np.clip(rng.lognormal(np.log(120) - 0.125, 0.5), 2, 1000))
        sizes.append(size)
        total += size
    return np.asarray(sizes, dtype=np.int64)


def make_data(n_docs: int, n_features: int = 0, seed: int = 0) -> MSLRData:
    """At least ``n_docs`` documents of whole MSLR-shaped queries (see the module docstring):
    labels drawn in the grade mix with score states (``n_features=0``), or cut from a noisy
    linear score of ``n_features`` float32 Gaussian features."""
    rng = np.random.default_rng(seed)
    sizes = _query_sizes(rng, n_docs)
    total = int(sizes.sum())
    offsets = query_offsets_from_sizes(sizes)
    qid = np.repeat(np.arange(sizes.size, dtype=np.int64), sizes)
    if not n_features:
        labels = rng.choice(5, size=total, p=LABEL_PROBS).astype(np.float64)
        trained = 0.5 * labels + rng.standard_normal(total)
        return MSLRData(labels, sizes, offsets, qid,
                        scores={"trained": trained, "initial": np.zeros(total)})
    X = rng.standard_normal((total, n_features), dtype=np.float32)
    w = rng.standard_normal(n_features)
    score = X.astype(np.float64) @ (w / np.linalg.norm(w)) + rng.standard_normal(total)
    cuts = np.quantile(score, np.cumsum(LABEL_PROBS)[:-1])
    labels = np.searchsorted(cuts, score).astype(np.float64)
    return MSLRData(labels, sizes, offsets, qid, X)
