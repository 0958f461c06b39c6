"""Benchmark data: the train/validation/test splits of the data sets.

Targets (``NDCG@5``, ``MRR``, any ``NAME@k`` of the package's metrics) are parsed and evaluated
by :mod:`benchmarks._targets`: training and validation labels binarised ``1{y > 0}`` for a
binary-relevance metric (paper, section 7, for MRR); :func:`target_labels`,
:func:`target_metric` and :func:`eval_target` here are its older spelling. Test metrics always
use the original labels: NDCG@5, NDCG@10 (``2^r - 1`` gains), MRR (relevant iff ``y > 0``),
ERR@10 (``R = (2^r - 1) / 2^g_max``), all with worst-permutation ties. Queries without a
relevant document: the package's convention (NDCG = 1, MRR = ERR = 0; what
CatBoost/LightGBM/XGBoost report) by default, and the same metrics with such queries skipped.

Data sets: the bundled ``mq2008`` (5 folds) and ``lightgbm_lambdarank`` (one train/test split),
the generated long lists (5 folds each; their model: :mod:`stochrank_objectives.longlists`) --
``longlists`` (the ``sparse`` regime: 150-700 documents per query, about 4.5% relevant),
``longlists_dense`` (about 150 documents, 30% relevant, grades 0-2) and ``longlists_web``
(about 440 documents, 18% relevant, grades 0-4, text-match and link features), the statistics
of two real long-list sets -- or any LETOR folder given with ``--data`` (:func:`open_data_folder`; layouts in
:mod:`stochrank_objectives.letor`). A set without validation files gets a fixed 20% of each
fold's train queries as its validation split (seed ``VALID_SPLIT_SEED``). ``g_max`` of ERR is
the largest label of the fold's files.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # before any OpenMP pool is loaded

import numpy as np  # noqa: E402

from stochrank_objectives.data import (  # noqa: E402
    RankingData, load_lightgbm_lambdarank, load_mq2008)
from stochrank_objectives.longlists import REGIMES, load_long_lists  # noqa: E402
from stochrank_objectives.letor import (  # noqa: E402
    LetorLayout, check_letor_files, letor_layout, load_letor_fold)

from ._targets import parse_target  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"
DATA_CACHE = RESULTS / ".data_cache"   # parsed --data files (ignored by git)
# the generated long lists: data set -> regime of stochrank_objectives.longlists
LONG_LISTS = {"longlists" if regime == "sparse" else f"longlists_{regime}": regime
              for regime in REGIMES}
# data set -> its folds (the long lists are generated, not stored: the same draw on every machine)
BUNDLED = {"mq2008": [1, 2, 3, 4, 5], "lightgbm_lambdarank": [1],
           **{name: [1, 2, 3, 4, 5] for name in LONG_LISTS}}
VALID_FRACTION = 0.2     # sets without validation files: share of train queries held out
VALID_SPLIT_SEED = 20200713


@dataclass
class Split:
    train: RankingData
    valid: RankingData
    test: RankingData
    grade_max: int


class DataFolder(str):
    """A LETOR folder given with ``--data``, as its name (a ``str``: trial keys, cache rows and
    reports treat it as the data set's name, so a results folder can move between machines
    that mount the data elsewhere), with its ``layout`` and ``cache_dir``; pickles to worker
    processes as is."""

    def __new__(cls, layout: LetorLayout, cache_dir):
        self = super().__new__(cls, layout.name)
        self.layout, self.cache_dir = layout, cache_dir
        return self

    def __getnewargs__(self):
        return self.layout, self.cache_dir


def open_data_folder(path, cache_dir=None) -> DataFolder:
    """``--data PATH``: the folder's layout (checked now: a missing file fails before any
    training), parsed files cached in ``cache_dir`` (default :data:`DATA_CACHE`)."""
    return DataFolder(letor_layout(path), Path(cache_dir) if cache_dir else DATA_CACHE)


def dataset_folds(dataset) -> list:
    """The folds a data set has (a ``--data`` folder: its ``FoldK`` numbers, or 1)."""
    return sorted(dataset.layout.folds) if isinstance(dataset, DataFolder) else BUNDLED[dataset]


def resolve_dataset(args):
    """``(dataset, folds)`` from ``--data``/``--cache-dir``/``--dataset``/``--folds``: the folds
    default to all of the data set's and must be among them. The split files of a ``--data``
    folder's chosen folds are checked here, before any trial trains: one without any data line
    (or an unreadable ``.gz`` start) stops the command naming the file, instead of trials that
    fail one by one, or succeed with NaN metrics, in the workers."""
    dataset = (open_data_folder(args.data, args.cache_dir) if getattr(args, "data", None)
               else args.dataset)
    available = dataset_folds(dataset)
    folds = args.folds or available
    missing = [k for k in folds if k not in available]
    if missing:
        raise SystemExit(f"--folds {' '.join(map(str, missing))}: {dataset} has folds "
                         f"{' '.join(map(str, available))}")
    if isinstance(dataset, DataFolder):
        try:
            check_letor_files(dataset.layout, folds)
        except ValueError as exc:
            raise SystemExit(f"--data {args.data}: {exc}") from None
    return dataset, folds


def _take_queries(data: RankingData, queries: np.ndarray) -> RankingData:
    offs = data.query_offsets
    rows = np.concatenate([np.arange(offs[q], offs[q + 1]) for q in queries])
    sizes = np.diff(offs)[queries]
    return RankingData(data.X[rows], data.y[rows], data.qid[rows],
                       np.concatenate(([0], np.cumsum(sizes))).astype(np.int64))


def hold_out_validation(train: RankingData):
    """``(train, valid)``: a random ``VALID_FRACTION`` of the queries (seed
    ``VALID_SPLIT_SEED``, the same for every run) becomes the validation split."""
    perm = np.random.default_rng(VALID_SPLIT_SEED).permutation(train.n_queries)
    n_valid = int(round(VALID_FRACTION * train.n_queries))
    valid_q, train_q = np.sort(perm[:n_valid]), np.sort(perm[n_valid:])
    return _take_queries(train, train_q), _take_queries(train, valid_q)


def validation_note(dataset) -> str | None:
    """How the validation split was made, when it is not the data set's own."""
    if dataset == "lightgbm_lambdarank" or (isinstance(dataset, DataFolder)
                                            and not dataset.layout.has_validation):
        return (f"a random {VALID_FRACTION:.0%} of the train queries (seed {VALID_SPLIT_SEED}), "
                "the same for every run")
    return None


def _grade_max(*splits) -> int:
    return int(np.ceil(max(float(s.y.max()) for s in splits if s.y.size)))


def load_split(dataset, fold: int) -> Split:
    """Train/validation/test of one fold of a bundled data set or a :class:`DataFolder`;
    without validation files the validation split comes from :func:`hold_out_validation`."""
    if isinstance(dataset, DataFolder):
        splits = load_letor_fold(dataset.layout, fold, dataset.cache_dir)
        train, valid, test = splits["train"], splits["vali"], splits["test"]
        if valid is None:
            train, valid = hold_out_validation(train)
        return Split(train, valid, test, _grade_max(train, valid, test))
    if dataset == "mq2008":
        return Split(load_mq2008("train", fold), load_mq2008("vali", fold),
                     load_mq2008("test", fold), 2)
    if dataset in LONG_LISTS:
        regime = LONG_LISTS[dataset]
        return Split(*(load_long_lists(split, fold, regime) for split in ("train", "vali", "test")),
                     len(REGIMES[regime].grade_thresholds))
    if dataset == "lightgbm_lambdarank":
        if fold != 1:
            raise ValueError("lightgbm_lambdarank has a single train/test split: use --folds 1")
        train, valid = hold_out_validation(load_lightgbm_lambdarank("train"))
        test = load_lightgbm_lambdarank("test")
        return Split(train, valid, test, _grade_max(train, valid, test))
    raise ValueError(f"unknown dataset {dataset!r}: {', '.join(BUNDLED)}, or "
                     "a LETOR folder with --data PATH")


# The targets' functions under their older names (benchmarks._targets parses them).
def target_labels(y: np.ndarray, target) -> np.ndarray:
    """Training and validation labels of ``target`` (:meth:`benchmarks._targets.Target.labels`)."""
    return parse_target(target).labels(y)


def target_metric(target):
    """``(metric, cutoff)`` of ``target``: ``"NDCG@5"`` -> ``("NDCG", 5)``."""
    target = parse_target(target)
    return target.metric, target.top


def eval_target(scores, data: RankingData, target, grade_max=None) -> float:
    """The validation value of ``target`` (:meth:`benchmarks._targets.Target.evaluate`)."""
    return parse_target(target).evaluate(scores, data, grade_max)
