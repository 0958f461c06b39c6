"""Throughput of the CCS gradient kernels against the floor of one noise sample.

    python -m benchmarks.kernel_speed [--docs 1200000] [--repeats 5] [--out benchmarks/results]

Data: generated MSLR-shaped queries (about 1.2 million documents, query sizes drawn from a
log-normal with mean ~120, labels 0-4 in MSLR-WEB30K's proportions). Two score states are
timed: ``trained`` (scores = 0.5 * label + N(0, 1), as after some boosting) and ``initial``
(every score 0, as at iteration 0 -- the worst case for full-list metrics, since every
breakpoint is then within the Gaussian window of every document).

The *floor* is a Numba pass that draws the same noise (same streams) and argsorts the noisy
scores of every query -- what any one-sample estimator must at least do. Each estimator is
timed through ``StochasticRank.grad_hess`` (validation, centring and SFA included), with one
sample, on 1 and 2 threads, as the median of ``--repeats`` runs alternating with runs of the
floor (same thread count), so load drift on a shared machine hits both; the ratio of the two
medians is printed like ``NDCG@10: 2.4x floor``.
"""

from __future__ import annotations

import argparse
import json
import platform
import resource
import time
from pathlib import Path

import numba
import numpy as np
from numba import njit, prange

from stochrank_objectives import StochasticRank, query_offsets_from_sizes
from stochrank_objectives.kernels.rng import fill_standard_normal, stream_key

LABEL_PROBS = np.array([0.52, 0.32, 0.13, 0.02, 0.01])  # MSLR-WEB30K-like grade mix


@njit(cache=True, parallel=True)
def noise_and_sort_floor(scores, query_offsets, sigma, seed, iteration):
    """Draw one noise sample per query and argsort the noisy scores (the floor)."""
    n_queries = query_offsets.shape[0] - 1
    first = np.empty(n_queries, dtype=np.int64)
    for q in prange(n_queries):
        lo = query_offsets[q]
        hi = query_offsets[q + 1]
        buf = np.empty(hi - lo)
        fill_standard_normal(stream_key(seed, iteration, q, 0), buf)
        for i in range(hi - lo):
            buf[i] = scores[lo + i] + sigma * buf[i]
        order = np.argsort(-buf)
        first[q] = order[0] if hi > lo else -1
    return first


def make_data(n_docs: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    sizes = []
    total = 0
    while total < n_docs:
        size = int(np.clip(rng.lognormal(np.log(120) - 0.125, 0.5), 2, 1000))
        sizes.append(size)
        total += size
    offsets = query_offsets_from_sizes(sizes)
    labels = rng.choice(5, size=total, p=LABEL_PROBS).astype(np.float64)
    trained = 0.5 * labels + rng.standard_normal(total)
    return offsets, labels, {"trained": trained, "initial": np.zeros(total)}


def paired_median_times(fn, floor_fn, repeats: int):
    """Median seconds of ``fn`` and of ``floor_fn``, run alternately so load drift hits both."""
    fn()  # warm-up (compilation, caches)
    floor_fn()
    times, floor_times = [], []
    for _ in range(repeats):
        start = time.perf_counter()
        floor_fn()
        floor_times.append(time.perf_counter() - start)
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return float(np.median(times)), float(np.median(floor_times))


def peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


CASES = {
    "NDCG@10": dict(metric="NDCG", top=10),
    "NDCG": dict(metric="NDCG", top=None),
    "ERR@10": dict(metric="ERR", top=10, grade_max=4),
    "MRR": dict(metric="MRR", top=None),
}
TARGETS = {"NDCG@10": 3.0, "NDCG": 20.0, "ERR@10": 3.0, "MRR": 20.0}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=1_200_000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results"))
    args = parser.parse_args(argv)

    offsets, labels, states = make_data(args.docs)
    n_docs = labels.size
    sizes = np.diff(offsets)
    header = (f"kernel_speed: {n_docs:,} documents, {sizes.size:,} queries "
              f"(mean size {sizes.mean():.1f}, max {sizes.max()}), labels 0-4, 1 sample, "
              f"median of {args.repeats}; numba {numba.__version__}, {platform.processor() or platform.machine()}")
    print(header)
    rss_data = peak_rss_mib()
    rows = []
    lines = [header, ""]
    for state, scores in states.items():
        for threads in args.threads:
            if threads > numba.config.NUMBA_NUM_THREADS:
                continue
            numba.set_num_threads(threads)
            def floor_fn():
                noise_and_sort_floor(scores, offsets, 1.0, 0, 0)

            line = f"[{state} scores, {threads} thread{'s' if threads > 1 else ''}]"
            print(line)
            lines.append(line)
            for name, params in CASES.items():
                obj = StochasticRank(n_samples=1, seed=0, **params)
                rss_before = peak_rss_mib()
                elapsed, floor = paired_median_times(
                    lambda: obj.grad_hess(scores, labels, offsets, 0), floor_fn, args.repeats)
                ratio = elapsed / floor
                target = TARGETS[name]
                line = (f"  {name}: {ratio:.2f}x floor   ({elapsed * 1e3:.1f} ms, "
                        f"{n_docs / elapsed / 1e6:.2f} M docs/s; floor {floor * 1e3:.1f} ms, "
                        f"{n_docs / floor / 1e6:.2f} M docs/s; target <= {target:g}x: "
                        f"{'met' if ratio <= target else 'MISSED'})")
                print(line)
                lines.append(line)
                rows.append(dict(state=state, threads=threads, case=name, seconds=elapsed,
                                 floor_seconds=floor, ratio=ratio, docs_per_second=n_docs / elapsed,
                                 peak_rss_mib_before=rss_before, peak_rss_mib_after=peak_rss_mib()))
    footer = (f"peak RSS: {peak_rss_mib():.0f} MiB for the whole run (after data generation: "
              f"{rss_data:.0f} MiB; the inputs are {3 * n_docs * 8 / 2**20:.0f} MiB)")
    print(footer)
    lines += ["", footer]
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "kernel_speed.txt").write_text("\n".join(lines) + "\n")
    (args.out / "kernel_speed.json").write_text(json.dumps(rows, indent=1) + "\n")


if __name__ == "__main__":
    main()
