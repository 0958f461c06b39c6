"""Throughput of the CCS gradient kernels against the floor of one noise sample.

    python -m benchmarks.kernel_speed [--docs 1200000] [--repeats 5] [--single 10000 100000 1000000]
        [--exact-max 30000] [--out benchmarks/results]

Data: generated MSLR-shaped queries (about 1.2 million documents, query sizes drawn from a
log-normal with mean ~120, labels 0-4 in MSLR-WEB30K's proportions). Two score states are
timed: ``trained`` (scores = 0.5 * label + N(0, 1), as after some boosting) and ``initial``
(every score 0, as at iteration 0 -- the worst case for full-list metrics, since every
breakpoint is then within the Gaussian window of every document).

The *floor* is a Numba pass that draws the same noise (same streams) and argsorts the noisy
scores of every query -- what any one-sample estimator must at least do; the *noise-only floor*
draws the noise and adds it to the scores without sorting (a top-k estimator that selects
instead of sorting can go below the first floor, not below this one). Each estimator is timed
as a booster calls it every round: ``StochasticRank.gradient_hessian`` on a ``GroupedData``
built once (labels and offsets are validated once per training; the scores' check, the noise
scales, centring, the radial correction and the hessian are in every call; the loose-array
``grad_hess`` adds ~3 ms per 1.2M documents of validation), package defaults, one sample, on
1 and 2 threads, as the median of ``--repeats`` runs
alternating with runs of both floors (same thread count), so load drift on a shared machine hits
all three; the ratios of the medians are printed like ``NDCG@10: 1.2x floor, 3.9x noise-only
floor``. Then single full-NDCG queries of ``--single`` sizes (one-sided Gauss transforms), with
the exact quadratic sums (``summation="exact"``) up to ``--exact-max`` documents for comparison.
"""

from __future__ import annotations

import argparse
import json
import platform
import resource
from pathlib import Path

import numba
import numpy as np
from numba import njit, prange

from stochrank_objectives import StochasticRank, query_offsets_from_sizes
from stochrank_objectives.groups import GroupedData
from stochrank_objectives.kernels.rng import fill_standard_normal, stream_key

from ._mslr import LABEL_PROBS, make_data
from ._timing import paired_median_times


@njit(cache=True, parallel=True)
def noisy_scores_floor(scores, query_offsets, sigma, seed, iteration, sort):
    """Draw one noise sample per query and add it to the scores; with ``sort``, also argsort
    each query's noisy scores (the floor), else only find its best (the noise-only floor)."""
    n_queries = query_offsets.shape[0] - 1
    first = np.empty(n_queries, dtype=np.int64)
    for q in prange(n_queries):
        lo = query_offsets[q]
        hi = query_offsets[q + 1]
        buf = np.empty(hi - lo)
        fill_standard_normal(stream_key(seed, iteration, q, 0), buf)
        for i in range(hi - lo):
            buf[i] = scores[lo + i] + sigma * buf[i]
        if hi == lo:
            first[q] = -1
        elif sort:
            first[q] = np.argsort(-buf)[0]
        else:
            first[q] = np.argmax(buf)
    return first


def noise_and_sort_floor(scores, query_offsets, sigma, seed, iteration):
    """The floor: noise + argsort of every query."""
    return noisy_scores_floor(scores, query_offsets, sigma, seed, iteration, True)


def noise_only_floor(scores, query_offsets, sigma, seed, iteration):
    """The noise-only floor: noise added, no ordering."""
    return noisy_scores_floor(scores, query_offsets, sigma, seed, iteration, False)


def peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def single_queries(sizes, exact_max, rows):
    """Full NDCG of one query of each size (trained-like scores, package defaults): seconds
    per ``gradient_hessian`` with the automatic path (fast sums on such queries) against the floor,
    and with the exact sums (``PATH_SORT``) up to ``exact_max`` documents."""
    lines = ["[single queries, full NDCG, package defaults, median of 3]"]
    print(lines[0])
    rng = np.random.default_rng(1)
    for n in sizes:
        labels = rng.choice(5, size=n, p=LABEL_PROBS).astype(np.float64)
        scores = 0.5 * labels + rng.standard_normal(n)
        offsets = query_offsets_from_sizes([n])
        grouped = GroupedData(labels, offsets)
        obj = StochasticRank(metric="NDCG", n_samples=1, seed=0)
        rss_before = peak_rss_mib()
        fast, floor = paired_median_times(
            [lambda: obj.gradient_hessian(scores, grouped, 0),
             lambda: noise_and_sort_floor(scores, offsets, 1.0, 0, 0)], 3)
        line = (f"  {n:>9,} documents: {fast:.3f} s ({fast / floor:.1f}x floor {floor:.3f} s)")
        if n in SINGLE_TARGETS:
            line += (f", target <= {SINGLE_TARGETS[n]:g} s: "
                     f"{'met' if fast <= SINGLE_TARGETS[n] else 'MISSED'}")
        row = dict(state="single", case=f"NDCG n={n}", seconds=fast, floor_seconds=floor,
                   peak_rss_mib_before=rss_before, peak_rss_mib_after=peak_rss_mib())
        if n <= exact_max:
            exact_obj = StochasticRank(metric="NDCG", n_samples=1, seed=0, summation="exact")
            exact = paired_median_times([lambda: exact_obj.gradient_hessian(scores, grouped, 0)],
                                        1)[0]
            line += f"; exact sums {exact:.3f} s ({exact / fast:.0f}x the fast path)"
            row["exact_seconds"] = exact
        print(line)
        lines.append(line)
        rows.append(row)
    lines.append(f"  peak RSS after the single queries: {peak_rss_mib():.0f} MiB")
    return lines


CASES = {
    # the top-k kernel: cutoff 10 in every query (NDCG's default min_top_share would grow the
    # cutoffs of the queries longer than 100; the next case times that)
    "NDCG@10": dict(metric="NDCG", top=10, min_top_share=0.0),
    "NDCG@10, grown cutoffs (default)": dict(metric="NDCG", top=10),
    "NDCG": dict(metric="NDCG", top=None),
    "ERR@10": dict(metric="ERR", top=10, grade_max=4),
    # MRR exactly: the cascade stops at the first relevant document; MRR's default reach 0.3
    # continues it to the fourth (training_metric.reach_depth), so a sample orders the positions
    # above the fifth
    "MRR": dict(metric="MRR", top=None, reach=0.0),
    "MRR, reach 0.3 (default)": dict(metric="MRR", top=None),
}
# Issue targets, in multiples of the floor (noise + argsort): every top-k row (pinned and at
# NDCG's default grown cutoffs) and MRR <= 1.5x, full lists <= 3x
TARGETS = {"NDCG@10": 1.5, "NDCG@10, grown cutoffs (default)": 1.5, "NDCG": 3.0, "ERR@10": 1.5,
           "MRR": 1.5, "MRR, reach 0.3 (default)": 1.5}
# Seconds per gradient_hessian of one full-NDCG query of this many documents.
SINGLE_TARGETS = {100_000: 0.5, 1_000_000: 6.0}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=1_200_000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results"))
    parser.add_argument("--single", type=int, nargs="*", default=[10_000, 100_000, 1_000_000],
                        help="sizes of the single full-NDCG queries timed after the main table")
    parser.add_argument("--exact-max", type=int, default=30_000,
                        help="largest single query also timed with the exact (quadratic) sums")
    args = parser.parse_args(argv)

    data = make_data(args.docs)
    offsets, labels, states = data.query_offsets, data.labels, data.scores
    grouped = GroupedData(labels, offsets)  # validated once, as the adapters build it
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

            def noise_fn():
                noise_only_floor(scores, offsets, 1.0, 0, 0)

            line = f"[{state} scores, {threads} thread{'s' if threads > 1 else ''}]"
            print(line)
            lines.append(line)
            for name, params in CASES.items():
                obj = StochasticRank(n_samples=1, seed=0, **params)
                rss_before = peak_rss_mib()
                elapsed, floor, noise_floor = paired_median_times(
                    [lambda: obj.gradient_hessian(scores, grouped, 0), floor_fn, noise_fn],
                    args.repeats)
                ratio = elapsed / floor
                target = TARGETS.get(name)
                verdict = ("no target" if target is None else
                           f"target <= {target:g}x floor: {'met' if ratio <= target else 'MISSED'}")
                line = (f"  {name}: {ratio:.2f}x floor, {elapsed / noise_floor:.2f}x noise-only "
                        f"floor   ({elapsed * 1e3:.1f} ms, {n_docs / elapsed / 1e6:.2f} M docs/s; "
                        f"floor {floor * 1e3:.1f} ms, noise-only {noise_floor * 1e3:.1f} ms; "
                        f"{verdict})")
                print(line)
                lines.append(line)
                rows.append(dict(state=state, threads=threads, case=name, seconds=elapsed,
                                 floor_seconds=floor, noise_floor_seconds=noise_floor,
                                 ratio=ratio, noise_ratio=elapsed / noise_floor,
                                 docs_per_second=n_docs / elapsed,
                                 peak_rss_mib_before=rss_before, peak_rss_mib_after=peak_rss_mib()))
    numba.set_num_threads(max(args.threads))
    lines.append("")
    lines += single_queries(args.single, args.exact_max, rows)
    footer = (f"peak RSS: {peak_rss_mib():.0f} MiB for the whole run (after data generation: "
              f"{rss_data:.0f} MiB; the inputs are {3 * n_docs * 8 / 2**20:.0f} MiB)")
    print(footer)
    lines += ["", footer]
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "kernel_speed.txt").write_text("\n".join(lines) + "\n")
    (args.out / "kernel_speed.json").write_text(json.dumps(rows, indent=1) + "\n")


if __name__ == "__main__":
    main()
