"""Compile the objectives' Numba kernels into Numba's cache before a distributed test run.

Numba compiles a kernel on its first call in each process and keeps the machine code in its
on-disk cache. On a fresh clone the cache is empty, so every pytest-xdist worker would compile
the same kernels on its own (StochasticRank's CCS chain alone takes over a minute). The
controller therefore runs this script once per group, the groups side by side, before any worker
starts; the workers then load the kernels from the cache. A kernel missed here is still
compiled where it is first called: this only moves work, it checks nothing.

Usage: ``python tests/_warm_kernels.py PART N`` compiles part ``PART`` of ``N`` of every
registered objective's examples: part 0 those that smooth with the CCS estimator (StochasticRank
and SoftRank, which has a CCS conditional law too: the slowest to compile, and one chain of
kernels, so a part that compiles one of them gets the others free), the other parts the other
examples, dealt in turn, and the last part also the kernels the examples do not reach (the
evaluation metrics, the losses, REINFORCE, the booster-compatible LambdaMARTs): the CCS part
takes twice as long as the others (124 s against 65 s on 2 cores, measured), so the last part
compiles them in time the run waits anyway, where two workers could each have compiled them.
"""

import sys

import numpy as np


def part(index: int, n_parts: int) -> list:
    """The examples of part ``index`` of ``n_parts`` (see the module's docstring)."""
    from stochrank_objectives.objectives import OBJECTIVES

    examples = [example for cls in OBJECTIVES.values() for example in cls.examples()]
    # SoftRank alone compiles for 80 s on 2 cores, 0 s after StochasticRank (measured): the
    # chain is shared, so the CCS examples stay together
    ccs = [e for e in examples if "StochasticRank(" in repr(e) or hasattr(e, "conditioning")]
    others = [e for e in examples if e not in ccs]
    if n_parts == 1:
        return ccs + others
    return ccs if index == 0 else others[index - 1::n_parts - 1]


def warm(index: int, n_parts: int) -> None:
    rng = np.random.default_rng(0)
    offsets = np.array([0, 10, 25, 60], dtype=np.int64)
    labels = rng.integers(0, 3, 60).astype(float)
    scores = rng.normal(size=60)
    weights = np.array([1.0, 2.0, 0.0])
    last = index == n_parts - 1
    for objective in part(index, n_parts) + (beyond_the_examples() if last else []):
        objective.grad_hess(scores, labels, offsets, 0)
        objective.grad_hess(scores, labels, offsets, 1, weights=weights)
        objective.loss(scores, labels, offsets, 0)
    if last:
        from stochrank_objectives.metrics import average_precision, ndcg_at_k

        ndcg_at_k(scores, labels, offsets, 5)
        average_precision(scores, labels, offsets)


def beyond_the_examples() -> list:
    """Objectives whose kernels no registered example compiles."""
    from stochrank_objectives import LambdaMART, StochasticRank

    return [StochasticRank(metric="NDCG", estimator="reinforce"),
            LambdaMART(compat="xgboost"), LambdaMART(compat="lightgbm")]


if __name__ == "__main__":
    warm(int(sys.argv[1]), int(sys.argv[2]))
