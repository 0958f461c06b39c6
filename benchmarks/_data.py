"""Benchmark data: the train/validation/test splits, the targets and the test metrics.

Targets: ``NDCG@5`` (graded labels) and ``MRR``, for which training and validation labels are
binarised, ``1{y > 0}`` (paper, section 7). Test metrics always use the original labels: NDCG@5,
NDCG@10 (``2^r - 1`` gains), MRR (relevant iff ``y > 0``), ERR@10 (``R = (2^r - 1) / 2^g_max``),
all with worst-permutation ties. Queries without a relevant document: the package's convention
(NDCG = 1, MRR = ERR = 0; what CatBoost/LightGBM/XGBoost report) by default, and the same metrics
with such queries skipped.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # before any OpenMP pool is loaded

import numpy as np  # noqa: E402

from stochrank_objectives import metrics as M  # noqa: E402
from stochrank_objectives.data import (  # noqa: E402
    RankingData, load_lightgbm_lambdarank, load_mq2008)

RESULTS = Path(__file__).resolve().parent / "results"
BOOSTERS = ("lightgbm", "xgboost", "catboost")
TARGETS = ("NDCG@5", "MRR")
TEST_METRICS = ("NDCG@5", "NDCG@10", "MRR", "ERR@10")
VALID_FRACTION = 0.2     # LightGBM sample: share of train queries held out for validation
VALID_SPLIT_SEED = 20200713


@dataclass
class Split:
    train: RankingData
    valid: RankingData
    test: RankingData
    grade_max: int


def _take_queries(data: RankingData, queries: np.ndarray) -> RankingData:
    offs = data.query_offsets
    rows = np.concatenate([np.arange(offs[q], offs[q + 1]) for q in queries])
    sizes = np.diff(offs)[queries]
    return RankingData(data.X[rows], data.y[rows], data.qid[rows],
                       np.concatenate(([0], np.cumsum(sizes))).astype(np.int64))


def load_split(dataset: str, fold: int) -> Split:
    """Train/validation/test of one fold. ``lightgbm_lambdarank`` has train/test only: the
    validation split is a random 20% of the train queries (seed ``VALID_SPLIT_SEED``, the same
    for every run); it has one 'fold'."""
    if dataset == "mq2008":
        return Split(load_mq2008("train", fold), load_mq2008("vali", fold),
                     load_mq2008("test", fold), 2)
    if dataset == "lightgbm_lambdarank":
        if fold != 1:
            raise ValueError("lightgbm_lambdarank has a single train/test split: use --folds 1")
        full = load_lightgbm_lambdarank("train")
        perm = np.random.default_rng(VALID_SPLIT_SEED).permutation(full.n_queries)
        n_valid = int(round(VALID_FRACTION * full.n_queries))
        valid_q, train_q = np.sort(perm[:n_valid]), np.sort(perm[n_valid:])
        test = load_lightgbm_lambdarank("test")
        return Split(_take_queries(full, train_q), _take_queries(full, valid_q), test,
                     int(max(full.y.max(), test.y.max())))
    raise ValueError(f"unknown dataset {dataset!r}: mq2008 or lightgbm_lambdarank")


def target_labels(y: np.ndarray, target: str) -> np.ndarray:
    return (y > 0).astype(np.float64) if target == "MRR" else y


def target_metric(target: str):
    return ("NDCG", 5) if target == "NDCG@5" else ("MRR", None)


def eval_target(scores, data: RankingData, target: str) -> float:
    metric, k = target_metric(target)
    return float(M.evaluate(metric, scores, target_labels(data.y, target), data.query_offsets, k))


def test_metrics(scores, data: RankingData, grade_max: int) -> dict:
    """Per-query values of the four test metrics (package convention for queries without a
    relevant document) and the mask of queries that have one."""
    y, offs = data.y, data.query_offsets
    per = {
        "NDCG@5": M.ndcg_at_k(scores, y, offs, 5, per_query=True),
        "NDCG@10": M.ndcg_at_k(scores, y, offs, 10, per_query=True),
        "MRR": M.mrr(scores, y, offs, per_query=True),
        "ERR@10": M.err_at_k(scores, y, offs, 10, grade_max=grade_max, per_query=True),
    }
    has_rel = np.maximum.reduceat(y, offs[:-1]) > 0
    return per, has_rel
