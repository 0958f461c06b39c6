"""Parse once: a LETOR file's first load (text parse) against later loads (binary cache).

    python -m benchmarks.letor_cache [--docs 200000] [--repeats 3]
        [--out benchmarks/results/letor_cache.txt]

Data: an MSLR-shaped file written to a temporary folder (query sizes and grade mix of
:func:`benchmarks._mslr.make_data`, 136 dense features with 6 significant digits, plain
text as MSLR-WEB10K/30K ship it). Timed side by side, medians over ``--repeats`` runs after one
warm-up each: the text parse (:func:`stochrank_objectives.letor.load_letor_file` without a
cache), and a load from a fresh cache (what ``--data`` does from the second run on). The first
load with a cache (parse + write) is timed once.
"""

from __future__ import annotations

import argparse
import os
import platform
import tempfile
import time
from pathlib import Path

import numpy as np

from stochrank_objectives.letor import load_letor_file

from ._data import RESULTS
from ._mslr import make_data
from ._timing import paired_median_times

N_FEATURES = 136   # MSLR-WEB10K/30K


def write_mslr_shaped(path: Path, n_docs: int, seed: int = 0) -> int:
    """An MSLR-shaped LETOR text file of at least ``n_docs`` lines; returns its line count."""
    data = make_data(n_docs, seed=seed)
    offsets, labels = data.query_offsets, data.labels
    rng = np.random.default_rng(seed + 1)
    qid = np.repeat(np.arange(1, offsets.size), np.diff(offsets))
    X = rng.lognormal(0.0, 2.0, size=(labels.size, N_FEATURES))
    table = np.column_stack([labels, qid, X])
    fmt = "%d qid:%d " + " ".join(f"{j}:%.6g" for j in range(1, N_FEATURES + 1))
    np.savetxt(path, table, fmt=fmt)
    return labels.size


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--docs", type=int, default=200_000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--out", type=Path, default=RESULTS / "letor_cache.txt")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        source, cache = Path(tmp) / "Fold1" / "train.txt", Path(tmp) / "cache"
        source.parent.mkdir()
        n_lines = write_mslr_shaped(source, args.docs)
        start = time.perf_counter()
        X = load_letor_file(source, cache)[0]
        first = time.perf_counter() - start
        parse, cached = paired_median_times(
            [lambda: load_letor_file(source), lambda: load_letor_file(source, cache)],
            args.repeats)
        size_mb = source.stat().st_size / 2**20
        cache_mb = sum(p.stat().st_size for p in cache.glob("*.npz")) / 2**20
    lines = [
        f"letor_cache: MSLR-shaped text file, {n_lines:,} lines x {N_FEATURES} features "
        f"({size_mb:.0f} MiB text, {cache_mb:.0f} MiB cache, X {X.dtype} {X.shape}); "
        f"medians of {args.repeats} runs after a warm-up; {os.cpu_count()} CPUs, "
        f"Python {platform.python_version()}, numpy {np.__version__}",
        f"text parse (no cache)          {parse:8.3f} s",
        f"first load with a cache        {first:8.3f} s  (parse + write, once)",
        f"later loads (cache hit)        {cached:8.3f} s",
        f"speed-up of a cache hit        {parse / cached:8.1f}x the text parse",
    ]
    text = "\n".join(lines) + "\n"
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text)
    print(text, end="")
    return parse / cached


if __name__ == "__main__":
    main()
