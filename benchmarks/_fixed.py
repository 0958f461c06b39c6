"""Runs at fixed settings (no tuning), shared by :mod:`benchmarks.defaults` and
:mod:`benchmarks.sr_levers`: one method of :data:`benchmarks._registry.DEFAULTS` trained once
(learning rate 0.1, the given depth, the booster's own L2, the method's fixed settings) and
scored on the test queries that have a relevant document.

Example::

    row = run_one("lightgbm", "SR-R1soft", "NDCG@5", 1, 0, split, TrainConfig(max_trees=500))
"""

from __future__ import annotations

import time

import numpy as np

from ._boosters import L2_DEFAULT
from ._registry import DEFAULTS
from ._targets import TARGETS, parse_target, test_metrics
from ._trials import TRAINERS, set_numba_threads

__all__ = ["DEFAULTS", "TARGETS", "applies", "is_native", "run_one"]


def is_native(name: str) -> bool:
    """Whether the method called ``name`` in :data:`DEFAULTS` is a booster's native."""
    method = DEFAULTS.get(name)
    return method is not None and method.is_native


def applies(booster: str, name: str, target) -> bool:
    """Whether ``name`` runs in ``booster`` for ``target`` (the registry's boosters and
    targets; a native runs every target, MRR on the binarised labels)."""
    m = DEFAULTS[name]
    return booster in m.boosters and (m.is_native or m.applies(booster, target))


def run_one(booster, name, target, fold, seed, split, cfg, depth=6, overrides=None):
    """One run's row (``overrides``: settings over the method's, e.g. the objective's
    ``sigma``, ``n_samples`` or ``hessian`` -- the registry's factories read them)."""
    method = DEFAULTS[name]
    target = parse_target(target)
    p = {"learning_rate": 0.1, "depth": depth, "l2": L2_DEFAULT[booster],
         **method.defaults.settings, **(overrides or {})}
    set_numba_threads(cfg.threads)
    start = time.perf_counter()
    predict, _, n_trees = TRAINERS[booster](method.name, target, p, seed, split, cfg)
    wall = time.perf_counter() - start
    per, has_rel = test_metrics(np.asarray(predict(split.test.X), np.float64), split.test,
                                split.grade_max, extra=(target,))
    values = per[target][has_rel]   # the target's own test metric
    # no mean to record otherwise: NaN would pass for a result and poison the table's means
    run = f"{booster} {name} {target} fold {fold} seed {seed}"
    if not values.size:
        raise ValueError(f"{run}: no test query has a relevant document (label > 0), so the "
                         f"{target} of queries that have one has no value: check the labels "
                         "of the test file")
    if not np.all(np.isfinite(values)):
        raise ValueError(f"{run}: {target} is not finite on "
                         f"{int(np.sum(~np.isfinite(values)))} test queries: the model's scores "
                         "are not finite")
    return dict(booster=booster, method=name, target=target, fold=fold, seed=seed,
                n_trees=int(n_trees), wall_s=round(wall, 2), mean=float(np.mean(values)),
                per_query=[round(float(v), 6) for v in values])
