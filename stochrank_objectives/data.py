"""LETOR / svmlight ranking data, loaded with scikit-learn's svmlight reader.

>>> train = load_mq2008("train", fold=1)   # every fold comes from the bundled Fold 1
>>> train.X.shape, train.n_queries
((9630, 46), 471)
>>> load_mq2008("vali", fold=2).n_queries     # Fold 2's vali is Fold 1's test
156
>>> int(train.query_offsets[-1]) == train.y.size
True
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np
from sklearn.datasets import load_svmlight_file

from .groups import query_offsets_from_qid, query_offsets_from_sizes

__all__ = ["RankingData", "load_svmlight_ranking", "load_mq2008", "mq2008_parts",
           "load_lightgbm_lambdarank", "synthetic_two_queries", "BUNDLED_DIR"]

BUNDLED_DIR = Path(__file__).resolve().parent / "datasets"
MQ2008_FEATURES = 46
LAMBDARANK_FEATURES = 300
SPLITS = ("train", "vali", "test")


@dataclass
class RankingData:
    """Features, labels and query structure of one split (queries contiguous, in file order)."""

    X: np.ndarray
    y: np.ndarray
    qid: np.ndarray
    query_offsets: np.ndarray

    @property
    def n_queries(self) -> int:
        return self.query_offsets.size - 1

    @property
    def group_sizes(self) -> np.ndarray:
        """Documents per query (LightGBM's ``group``)."""
        return np.diff(self.query_offsets)

    def subset_queries(self, n_queries: int) -> "RankingData":
        """The first ``n_queries`` queries (for quick experiments and tests)."""
        stop = int(self.query_offsets[min(n_queries, self.n_queries)])
        return RankingData(self.X[:stop], self.y[:stop], self.qid[:stop],
                           self.query_offsets[: min(n_queries, self.n_queries) + 1].copy())


def load_svmlight_ranking(path, n_features: int | None = None, query_file=None,
                          dense: bool = True) -> RankingData:
    """Read an svmlight/LETOR file (``label qid:Q i:v ... # comment``; ``.gz`` allowed).

    Args:
      path: the data file.
      n_features: number of features (so that splits agree); inferred if None.
      query_file: optional LightGBM-style ``.query`` file of group sizes, for files without
        ``qid:``; then ``qid`` is the query's index.
      dense: return ``X`` as a dense float64 array (else scipy CSR).

    Returns:
      :class:`RankingData`. Raises ``ValueError`` if a query's rows are not contiguous or the
      group sizes do not add up to the number of rows.
    """
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"ranking data file not found: {path}")
    if query_file is None:
        X, y, qid = load_svmlight_file(str(path), n_features=n_features, query_id=True)
        offsets = query_offsets_from_qid(qid)
    else:
        X, y = load_svmlight_file(str(path), n_features=n_features)
        sizes = np.loadtxt(query_file, dtype=np.int64, ndmin=1)
        offsets = query_offsets_from_sizes(sizes)
        if offsets[-1] != y.size:
            raise ValueError(f"group sizes in {query_file} add up to {offsets[-1]} rows, "
                             f"but {path} has {y.size}")
        qid = np.repeat(np.arange(sizes.size), sizes)
    if dense:
        X = np.asarray(X.todense())
    return RankingData(X, y.astype(np.float64), np.asarray(qid), offsets)


def _split_file(folder: Path, split: str) -> Path:
    for name in (f"{split}.txt", f"{split}.txt.gz"):
        if (folder / name).exists():
            return folder / name
    raise FileNotFoundError(f"no {split}.txt[.gz] in {folder}")


def mq2008_parts(split: str, fold: int) -> list:
    """The parts (1-5 for S1-S5) of MQ2008's ``split`` in ``fold``, in the release's order.

    >>> mq2008_parts("train", 2), mq2008_parts("vali", 2), mq2008_parts("test", 2)
    ([2, 3, 4], [5], [1])

    Fold k trains on S(k), S(k+1), S(k+2), validates on S(k+3) and tests on S(k+4) (mod 5,
    1-based): each fold's vali is the previous fold's test, and its train is the next three
    folds' tests, concatenated (checked line by line against the released folds).
    """
    first = {"train": 0, "vali": 3, "test": 4}[split]
    count = 3 if split == "train" else 1
    return [(fold - 1 + first + i) % 5 + 1 for i in range(count)]


@lru_cache(maxsize=1)
def _mq2008_rows_by_part():
    """The bundled Fold 1 (which holds every query) as one table, and each row's part."""
    folder = BUNDLED_DIR / "mq2008_fold1"
    whole = [load_svmlight_ranking(_split_file(folder, split), n_features=MQ2008_FEATURES)
             for split in SPLITS]
    table = np.loadtxt(folder / "parts.txt", dtype=np.int64, comments="#", ndmin=2)
    part_of = dict(zip(table[:, 0].tolist(), table[:, 1].tolist()))
    X = np.concatenate([d.X for d in whole])
    y = np.concatenate([d.y for d in whole])
    qid = np.concatenate([d.qid for d in whole])
    part = np.array([part_of[q] for q in qid.tolist()])
    return X, y, qid, part


def load_mq2008(split: str = "train", fold: int = 1) -> RankingData:
    """LETOR 4.0 MQ2008 (46 features, labels 0-2), one split of one fold, bundled.

    All five folds come from the bundled Fold 1 files, which hold the five query-disjoint
    parts S1-S5 that the folds rotate (:func:`mq2008_parts`; ``datasets/mq2008_fold1/parts.txt``
    maps each query to its part). Rows come in the released files' order: every fold and
    split equals the release's file (``tests/test_data.py`` checks the arrays' checksums).
    """
    if split not in SPLITS:
        raise ValueError(f"split must be one of {SPLITS}, got {split!r}")
    if fold not in (1, 2, 3, 4, 5):
        raise ValueError(f"MQ2008 has folds 1-5, got fold={fold!r}")
    X, y, qid, part = _mq2008_rows_by_part()
    rows = np.concatenate([np.flatnonzero(part == p) for p in mq2008_parts(split, fold)])
    return RankingData(X[rows], y[rows], qid[rows], query_offsets_from_qid(qid[rows]))


def load_lightgbm_lambdarank(split: str = "train") -> RankingData:
    """LightGBM's lambdarank example data, bundled (300 sparse features, labels 0-4;
    train/test only; ``datasets/lightgbm_lambdarank/README.md`` for provenance and license)."""
    if split not in ("train", "test"):
        raise ValueError(f"split must be 'train' or 'test', got {split!r}")
    folder = BUNDLED_DIR / "lightgbm_lambdarank"
    return load_svmlight_ranking(folder / f"rank.{split}.gz", n_features=LAMBDARANK_FEATURES,
                                 query_file=folder / f"rank.{split}.query")


def synthetic_two_queries() -> RankingData:
    """The two-query data set of the StochasticRank paper, section 7.1 (Table 1).

    Query 1 has labels (3, 2, 1) and one-hot features x1, x2, x3; query 2 has labels (3, 2)
    and features x3, x1. A model scores each feature vector, so the queries disagree on x1 vs
    x3. With exp2 gains and worst-permutation ties, NDCG@3 has a local optimum 0.903 (x1 > x3 >
    x2) and the global optimum 0.917 (x1 > x2 > x3).

    >>> data = synthetic_two_queries()
    >>> data.X.tolist(), data.y.tolist(), data.query_offsets.tolist()
    ([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0], [0.0, 0.0, 1.0], [1.0, 0.0, 0.0]], \
[3.0, 2.0, 1.0, 3.0, 2.0], [0, 3, 5])
    """
    eye = np.eye(3)
    X = np.vstack([eye[0], eye[1], eye[2], eye[2], eye[0]])
    y = np.array([3.0, 2.0, 1.0, 3.0, 2.0])
    return RankingData(X, y, np.array([0, 0, 0, 1, 1]), np.array([0, 3, 5], dtype=np.int64))
