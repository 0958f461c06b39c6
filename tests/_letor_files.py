"""LETOR folders written by the tests: random graded queries with sparse feature lines."""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np


def letor_lines(rng, n_queries, first_qid=1, n_features=30, density=0.6, max_label=4):
    """Text lines of ``n_queries`` random queries (3-11 documents; about ``density`` of the
    features present per line; the largest index always on the first line)."""
    lines = []
    for q in range(n_queries):
        for d in range(int(rng.integers(3, 12))):
            present = [j for j in range(1, n_features + 1) if rng.random() < density]
            if q == 0 and d == 0:
                present = sorted(set(present) | {n_features})
            feats = " ".join(f"{j}:{rng.normal():.4f}" for j in present)
            lines.append(f"{rng.integers(0, max_label + 1)} qid:{first_qid + q} {feats} "
                         f"#docid = d{q}_{d}")
    return lines


def write_lines(path: Path, lines):
    path.parent.mkdir(parents=True, exist_ok=True)
    text = "\n".join(lines) + "\n"
    if path.name.endswith(".gz"):
        with gzip.open(path, "wt") as f:
            f.write(text)
    else:
        path.write_text(text)
    return path


def write_fold_folder(root: Path, n_folds=5, suffix=".txt.gz", splits=("train", "vali", "test"),
                      seed=0, n_features=30, queries=(24, 8, 8)):
    """``root/Fold1..FoldK/{split}{suffix}`` in MSLR's layout; fold k's features go up to
    ``n_features + k`` (each fold's width is its largest index)."""
    rng = np.random.default_rng(seed)
    for k in range(1, n_folds + 1):
        for split, n in zip(splits, queries):
            write_lines(root / f"Fold{k}" / f"{split}{suffix}",
                        letor_lines(rng, n, first_qid=1000 * k + 100 * len(split),
                                    n_features=n_features + k if split == "test" else 12))
    return root
