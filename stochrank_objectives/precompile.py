"""Compile the objectives' Numba kernels into Numba's on-disk cache ahead of time.

Numba compiles a kernel on its first call in a process and keeps the machine code in its cache
(``cache=True``), so only the first process on a machine pays for it. This command pays it on
purpose, once: in a Docker image's build, a CI cache step, or on a cluster's shared file system
before the workers start. Every later process that finds the cache loads the kernels instead of
compiling them (see the installation guide for the Docker, Dask and Ray recipes).

Example::

    python -m stochrank_objectives.precompile            # every objective, one process
    python -m stochrank_objectives.precompile --jobs 2   # in 2 processes side by side
    python -m stochrank_objectives.precompile --objectives StochasticRank LambdaMART

The cache is where Numba puts it: beside the package's sources (their ``__pycache__`` folders)
when they are writable, else under the user's cache folder; ``NUMBA_CACHE_DIR`` names another
folder (set it to the same value where the kernels are compiled and where they are used). A
cache holds machine code for this CPU and this version of Numba: compile on the kind of machine
that will use it. Importing the package compiles nothing; a fit compiles only the kernels of its
objective.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time

import numpy as np

from ._compile_watch import CompileWatch

__all__ = ["objectives_to_compile", "split", "compile_objectives"]


def _registered(names) -> list:
    from .objectives import OBJECTIVES

    unknown = sorted(set(names or ()) - set(OBJECTIVES))
    if unknown:
        raise ValueError(f"objectives: unknown names {unknown}; registered: {sorted(OBJECTIVES)}")
    return [example for name, cls in OBJECTIVES.items() if names is None or name in names
            for example in cls.examples()]


def _beyond(names) -> list:
    from .objectives import LambdaMART, StochasticRank

    beyond = [StochasticRank(metric="NDCG", estimator="reinforce"), StochasticRank(metric="MRR"),
              LambdaMART(compat="xgboost"), LambdaMART(compat="lightgbm")]
    return [o for o in beyond if names is None or type(o).__name__ in names]


def objectives_to_compile(names=None) -> list:
    """One objective for each kernel chain of the package: the registered objectives' examples
    and the kernels no example reaches (REINFORCE, the counting CCS kernel of MRR's reach,
    Precision and AP, the booster-compatible LambdaMARTs). ``names``: only the objectives of
    these registry names (e.g. ``["StochasticRank"]``); ``None`` = all."""
    return split(names, 1)[0]


def split(names, n_parts: int) -> list[list]:
    """:func:`objectives_to_compile` in ``n_parts`` lists to compile side by side: the examples
    that smooth with the CCS estimator's cascade kernel (StochasticRank, SoftRank, Gumbel over
    StochasticRank: one chain of kernels, the slowest to compile, so one part compiles them and
    the others load what they share) in the first part, the other examples dealt in turn over
    the other parts, and the kernels no example reaches in the last part (the first part takes
    about twice as long as another: 124 s against 65 s on 2 cores, measured)."""
    examples = _registered(names)
    ccs = [e for e in examples if "StochasticRank(" in repr(e) or hasattr(e, "conditioning")]
    others = [e for e in examples if not any(e is c for c in ccs)]
    if n_parts == 1:
        return [ccs + others + _beyond(names)]
    parts = [ccs] + [others[i::n_parts - 1] for i in range(n_parts - 1)]
    parts[-1] += _beyond(names)
    return parts


def compile_objectives(objectives: list, metrics: bool = True) -> int:
    """Call every derivative and the loss of each objective once on a small grouped set (and,
    with ``metrics``, the evaluation metrics), so that Numba compiles their kernels into its
    cache. Returns the number of compilations (0 when everything came from the cache)."""
    from .metrics import average_precision, ndcg_at_k

    rng = np.random.default_rng(0)
    offsets = np.array([0, 10, 25, 60], dtype=np.int64)
    labels = rng.integers(0, 3, 60).astype(float)
    scores = rng.normal(size=60)
    weights = np.array([1.0, 2.0, 0.0])
    with CompileWatch() as watch:
        for objective in objectives:
            objective.grad_hess(scores, labels, offsets, 0)
            objective.grad_hess(scores, labels, offsets, 1, weights=weights)
            objective.loss(scores, labels, offsets, 0)
        if metrics:
            ndcg_at_k(scores, labels, offsets, 5)
            average_precision(scores, labels, offsets)
    return watch.count


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m stochrank_objectives.precompile",
        description="Compile the objectives' Numba kernels into Numba's cache ahead of time.")
    parser.add_argument("--objectives", nargs="+", metavar="NAME",
                        help="registry names to compile (default: every objective)")
    parser.add_argument("--jobs", type=int, default=1,
                        help="processes compiling side by side (default 1)")
    parser.add_argument("--part", type=int, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.jobs < 1:
        parser.error(f"--jobs must be >= 1, got {args.jobs}")
    parts = split(args.objectives, args.jobs)
    metrics = args.objectives is None
    if args.part is not None:  # one of the processes below
        compile_objectives(parts[args.part], metrics and args.part == len(parts) - 1)
        return 0
    start = time.perf_counter()
    if args.jobs == 1:
        count = compile_objectives(parts[0], metrics)
    else:
        names = ["--objectives", *args.objectives] if args.objectives else []
        workers = [subprocess.Popen([sys.executable, "-m", __name__, "--jobs", str(args.jobs),
                                     "--part", str(i), *names]) for i in range(args.jobs)]
        codes = [worker.wait() for worker in workers]
        if any(codes):
            print(f"precompile: a process exited with {max(codes)}", file=sys.stderr)
            return max(codes)
        # a kernel a process missed (two processes updating one cache index) is compiled here
        count = compile_objectives([o for part in parts for o in part], metrics)
    from numba import config

    where = getattr(config, "CACHE_DIR", "") or "beside the package's sources (__pycache__)"
    print(f"kernels of {sum(map(len, parts))} objectives ready in Numba's cache ({where}) in "
          f"{time.perf_counter() - start:.1f} s" + (f"; {count} compilations" if count else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
