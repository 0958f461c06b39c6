"""What the package defaults cost per gradient against the paper's parametrisation.

    python -m benchmarks.defaults_cost [--docs 120000] [--repeats 21] [--out benchmarks/results]

``StochasticRank(metric="NDCG", top=10)`` (relative smoothing: one extra pass per query for the
score spread, the sigma schedule) against ``StochasticRank.paper(metric="NDCG", top=10)``
(absolute smoothing), on the generated MSLR-shaped data of :mod:`benchmarks._mslr`, one
thread, trained-like and all-zero (iteration-0) scores. The two ``grad_hess`` calls alternate,
and the median of the paired ratios is reported, so machine load hits both sides alike.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numba
import numpy as np

from stochrank_objectives import StochasticRank

from ._mslr import make_data


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--docs", type=int, default=120_000)
    ap.add_argument("--repeats", type=int, default=21)
    ap.add_argument("--out", type=Path, default=Path("benchmarks/results"))
    args = ap.parse_args(argv)
    numba.set_num_threads(1)
    data = make_data(args.docs)
    offsets, labels, score_sets = data.query_offsets, data.labels, data.scores
    lines = [f"{labels.size} documents, {offsets.size - 1} queries, 1 thread, "
             f"{args.repeats} paired repeats"]
    for name, scores in score_sets.items():
        defaults = StochasticRank(metric="NDCG", top=10)
        paper = StochasticRank.paper(metric="NDCG", top=10)
        for obj in (defaults, paper):  # compile and touch the data
            obj.grad_hess(scores, labels, offsets, 0)
        ratios, times = [], []
        for r in range(args.repeats):
            t0 = time.perf_counter()
            defaults.grad_hess(scores, labels, offsets, r)
            t1 = time.perf_counter()
            paper.grad_hess(scores, labels, offsets, r)
            t2 = time.perf_counter()
            ratios.append((t1 - t0) / (t2 - t1))
            times.append(t1 - t0)
        lines.append(f"{name} scores: defaults / paper time per grad_hess, median ratio "
                     f"{np.median(ratios):.3f} (min {np.min(ratios):.3f}, max "
                     f"{np.max(ratios):.3f}); defaults {1e3 * np.median(times):.1f} ms")
    text = "\n".join(lines) + "\n"
    print(text, end="")
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "defaults_cost.txt").write_text(text)


if __name__ == "__main__":
    main()
