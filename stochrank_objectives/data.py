"""LETOR / svmlight ranking data, loaded with scikit-learn's svmlight reader.

>>> train = load_mq2008("train", fold=1)   # bundled copy of MQ2008 Fold 1
>>> train.X.shape, train.n_queries
((9630, 46), 471)
>>> int(train.query_offsets[-1]) == train.y.size
True
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from sklearn.datasets import load_svmlight_file

from .groups import query_offsets_from_qid, query_offsets_from_sizes

__all__ = ["RankingData", "load_svmlight_ranking", "load_mq2008", "load_lightgbm_lambdarank",
           "shared_data_dir", "synthetic_two_queries", "BUNDLED_DIR"]

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


def shared_data_dir() -> Path | None:
    """The project's ``shared/data`` (``$STOCHRANK_DATA`` or ``../shared/data`` beside the repo)."""
    env = os.environ.get("STOCHRANK_DATA")
    candidates = [Path(env)] if env else []
    candidates.append(Path(__file__).resolve().parents[2] / "shared" / "data")
    for candidate in candidates:
        if candidate.is_dir():
            return candidate
    return None


def _split_file(folder: Path, split: str) -> Path:
    for name in (f"{split}.txt", f"{split}.txt.gz"):
        if (folder / name).exists():
            return folder / name
    raise FileNotFoundError(f"no {split}.txt[.gz] in {folder}")


def load_mq2008(split: str = "train", fold: int = 1, root=None) -> RankingData:
    """LETOR 4.0 MQ2008 (46 features, labels 0-2), one split of one fold.

    Fold 1 is bundled with the package; other folds are read from ``root``/``mq2008``
    (default: :func:`shared_data_dir`).
    """
    if split not in SPLITS:
        raise ValueError(f"split must be one of {SPLITS}, got {split!r}")
    if fold not in (1, 2, 3, 4, 5):
        raise ValueError(f"MQ2008 has folds 1-5, got fold={fold!r}")
    if root is None and fold == 1:
        folder = BUNDLED_DIR / "mq2008_fold1"
    else:
        base = Path(root) if root is not None else shared_data_dir()
        if base is None:
            raise FileNotFoundError("MQ2008 folds 2-5 are not bundled: pass root=<dir holding "
                                    "mq2008/FoldK> or set STOCHRANK_DATA")
        folder = base / "mq2008" / f"Fold{fold}"
    return load_svmlight_ranking(_split_file(folder, split), n_features=MQ2008_FEATURES)


def load_lightgbm_lambdarank(split: str = "train", root=None) -> RankingData:
    """LightGBM's lambdarank example data (300 sparse features, labels 0-4; train/test only)."""
    if split not in ("train", "test"):
        raise ValueError(f"split must be 'train' or 'test', got {split!r}")
    base = Path(root) if root is not None else shared_data_dir()
    if base is None:
        raise FileNotFoundError("the LightGBM lambdarank sample is not bundled: pass root= or "
                                "set STOCHRANK_DATA to the shared data directory")
    folder = base / "lightgbm_lambdarank"
    return load_svmlight_ranking(folder / f"rank.{split}", n_features=LAMBDARANK_FEATURES,
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
