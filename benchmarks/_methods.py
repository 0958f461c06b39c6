"""The tuned studies' methods under their older names: everything is in
:mod:`benchmarks._registry` (one entry per method); this module only re-exports it."""

from __future__ import annotations

from ._registry import (ABLATION_LABELS, ABLATION_METHODS, COMPARE_METHODS, TUNED_METHODS,
                        Method, make_sglb)

METHODS = TUNED_METHODS

__all__ = ["Method", "METHODS", "COMPARE_METHODS", "ABLATION_METHODS", "ABLATION_LABELS",
           "applicable", "make_objective", "make_sglb"]


def applicable(booster: str, method: str, target) -> bool:
    """Whether the tuned ``method`` trains in ``booster`` for ``target``."""
    return METHODS[method].applies(booster, target)


def make_objective(method: str, target, p: dict, seed: int):
    """The package objective of a non-native tuned method for ``target`` (a string or a
    :class:`~benchmarks._targets.Target`) and the trial's settings ``p``."""
    return METHODS[method].make(target, p, seed)
