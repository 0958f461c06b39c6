"""Trials: one training per booster with early stopping on the validation split, evaluation on
the test split, a resumable cache of finished trials and the loop that runs them.

Protocol of one *trial*: ``(booster, method, target, fold, seed, trial)``. Its hyper-parameters
are drawn from the search space with a random generator keyed by that tuple (so an interrupted
benchmark draws the same ones again), the model is trained on train with early stopping on the
validation split's target metric, and the validation and test metrics of the early-stopped
model are recorded.
"""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import numpy as np

from . import _boosters
from ._data import Split, load_split
from ._executor import Execution, run_tasks, worker_split
from ._jsonl import append_row, read_rows
from ._registry import TUNED_METHODS, make_sglb
from ._search import SPACE_VERSION, Space, sample_params
from ._targets import parse_target, test_metrics


def stable_hash(obj) -> str:
    """16 hex digits of the SHA-256 of ``obj`` as sorted JSON (a trial's cache key)."""
    return hashlib.sha256(json.dumps(obj, sort_keys=True, default=str).encode()).hexdigest()[:16]


@dataclass
class TrainConfig:
    max_trees: int = 300
    patience: int = 50
    threads: int = 1


def set_numba_threads(threads):
    """Numba's threads for this trial (thread-local in Numba: set by every trial, wherever it
    runs, so that no trial inherits another's setting)."""
    try:
        import numba
        numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))
    except Exception:  # pragma: no cover - numba always present with the package
        pass


def train_ours(booster, method, target, p, seed, split: Split, cfg: TrainConfig):
    """A package objective (and its SGLB, if the method has one) through the booster's ranker;
    returns ``(predict, validation curve, trees kept)``."""
    target = parse_target(target)
    tr, va = split.train, split.valid
    ytr, yva = target.labels(tr.y), target.labels(va.y)
    # the objective's settings: the trial's, and the labels' largest grade if the target's
    # metric needs it (ERR)
    objective = TUNED_METHODS[method].make(
        target, {**p, **target.graded_options(split.grade_max)}, seed)
    ranker = _boosters.ranker_class(booster)(
        objective, sglb=make_sglb(p, seed),
        n_estimators=cfg.max_trees, learning_rate=p["learning_rate"], random_state=seed,
        n_jobs=cfg.threads, eval_metric=target.eval_metric(split.grade_max),
        early_stopping_rounds=cfg.patience, **_boosters.tree_params(booster, p))
    ranker.fit(tr.X, ytr, qid=tr.qid, eval_set=[(va.X, yva, va.qid)])
    if booster == "lightgbm":  # an LGBMRanker: best_iteration_ is the number of trees kept
        curve = list(next(iter(ranker.evals_result_["validation_0"].values())))
        return ranker.predict, curve, ranker.best_iteration_
    if booster == "catboost":  # a CatBoostRanker: "validation" for its one eval set
        curve = list(next(iter(ranker.evals_result_["validation"].values())))
        return ranker.predict, curve, ranker.best_iteration_ + 1
    curve = list(next(iter(ranker.evals_result_["validation_0"].values())))
    return ranker.predict, curve, ranker.best_iteration_ + 1


def _early_stopping(booster, target, p, cfg: TrainConfig, grade_max) -> tuple:
    """``(parameters, metric object, train options)`` of a native's early stopping on the
    validation target (the booster's own metric evaluation off: the package's metric, worst
    ties)."""
    if booster == "lightgbm":
        from stochrank_objectives.adapters.lightgbm import LGBMMetric

        return ({"metric": "None"}, LGBMMetric(target.metric, target.top,
                                               **target.graded_options(grade_max)),
                {"keep_raw_data": True})
    if booster == "xgboost":
        from stochrank_objectives.adapters.xgboost import XGBMetric

        return ({"disable_default_eval_metric": 1},
                XGBMetric(target.metric, target.top, **target.graded_options(grade_max)), {})
    params = {"iterations": cfg.max_trees, "eval_metric": target.catboost_metric,
              "use_best_model": True, "od_type": "Iter", "od_wait": cfg.patience}
    if "model_shrink_rate" in p:   # CatBoost's own SGLB
        params.update(langevin=True, model_shrink_rate=p["model_shrink_rate"],
                      diffusion_temperature=p["diffusion_temperature"])
    return params, None, {}


def train_native(booster, method, target, p, seed, split: Split, cfg: TrainConfig):
    """The booster's native ranker of ``method`` with the trial's trees, early-stopped on the
    validation target; returns ``(predict, validation curve, trees kept)``."""
    target = parse_target(target)
    tr, va = split.train, split.valid
    stopping, metric, options = _early_stopping(booster, target, p, cfg, split.grade_max)
    params = dict(_boosters.tree_params(booster, p),
                  **_boosters.common_params(booster, p["learning_rate"], seed, cfg.threads),
                  **stopping, **TUNED_METHODS[method].native[booster](target, p))
    trained = _boosters.train(booster, params, tr, cfg.max_trees, labels=target.labels(tr.y),
                              valid=va, valid_labels=target.labels(va.y), metric=metric,
                              patience=cfg.patience, **options)
    return trained.predict, trained.curve, trained.n_trees


def train(booster, method, target, p, seed, split: Split, cfg: TrainConfig):
    """One trial's model: ``(predict, validation curve, trees kept)``."""
    if TUNED_METHODS[method].is_native:
        return train_native(booster, method, target, p, seed, split, cfg)
    return train_ours(booster, method, target, p, seed, split, cfg)


#: ``TRAINERS[booster](method, target, p, seed, split, cfg)``
TRAINERS = {booster: partial(train, booster) for booster in _boosters.BOOSTERS}


# ---------------------------------------------------------------------------------- trials
@dataclass
class Job:
    dataset: str
    booster: str
    method: str
    target: str
    fold: int
    seed: int
    trial: int

    def key_dict(self, space: Space, cfg: TrainConfig) -> dict:
        return {"dataset": self.dataset, "booster": self.booster, "method": self.method,
                "target": self.target, "fold": self.fold, "seed": self.seed,
                "trial": self.trial, "max_trees": cfg.max_trees, "patience": cfg.patience,
                "space": space.as_dict(), "space_version": SPACE_VERSION}


def run_trial(job: Job, split: Split, space: Space, cfg: TrainConfig) -> dict:
    key = job.key_dict(space, cfg)
    h = stable_hash(key)
    rng = np.random.default_rng(int(h, 16) % (2 ** 63))
    p = sample_params(job.method, space, rng)
    obj_seed = job.seed * 1000 + job.trial
    set_numba_threads(cfg.threads)
    t0 = time.perf_counter()
    predict, curve, n_trees = TRAINERS[job.booster](job.method, job.target, p, obj_seed, split,
                                                    cfg)
    wall = time.perf_counter() - t0
    target = parse_target(job.target)
    valid = target.evaluate(predict(split.valid.X), split.valid, split.grade_max)
    test_scores = np.asarray(predict(split.test.X), dtype=np.float64)
    per, has_rel = test_metrics(test_scores, split.test, split.grade_max, extra=(target,))
    row = {"hash": h, **{k: key[k] for k in ("dataset", "booster", "method", "target", "fold",
                                             "seed", "trial", "max_trees", "patience")},
           "params": p, "n_trees": int(n_trees), "wall_s": round(wall, 3),
           "valid_target": valid, "valid_curve": [round(float(v), 5) for v in curve]}
    for name, values in per.items():
        row[f"test_{name}"] = float(np.nanmean(values))
        row[f"test_{name}_skip"] = float(np.nanmean(values[has_rel]))
        row[f"pq_{name}"] = [round(float(v), 5) for v in values]
    row["has_rel"] = [int(b) for b in has_rel]
    problem = metric_problem(row)
    if problem:
        raise ValueError(problem)   # trial_row records it as a failed trial
    return row


def metric_problem(row) -> str | None:
    """Why a trial's row cannot count as a result (``None`` if it can): a validation or test
    metric that is not finite. Selection compares validation metrics and the reports average
    test metrics, so a NaN (an empty split, a test split without any relevant document, scores
    that are not finite) would be silently skipped or poison a mean."""
    bad = [f"{k}={v}" for k, v in row.items()
           if (k == "valid_target" or (k.startswith("test_") and not isinstance(v, list)))
           and not np.isfinite(v)]
    if not bad:
        return None
    return (f"non-finite metrics ({', '.join(bad)}): the validation or test split has no query "
            "to score (or, for the _skip metrics, no query with a relevant document), or the "
            "model's scores are not finite")


class Cache:
    """Finished trials, one JSON line each, keyed by the hash of their configuration. Reads every
    ``*.jsonl`` in the folder (a later line of a hash replaces an earlier one: a failed trial that
    succeeded on a rerun; a line torn by a kill is skipped), appends to ``name``, one line per
    trial as it finishes (only the study's own process writes)."""

    def __init__(self, folder: Path, name: str):
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        self.path = self.folder / name
        self.rows = {}
        for f in sorted(self.folder.glob("*.jsonl")):
            for row in read_rows(f):
                # a row recorded with NaN metrics by an older version: a failure, retried
                problem = None if "error" in row else metric_problem(row)
                self.rows[row["hash"]] = {**row, "error": problem} if problem else row

    def get(self, h):
        return self.rows.get(h)

    def add(self, row):
        self.rows[row["hash"]] = row
        append_row(self.path, row)


def trial_row(job: Job, space: Space, cfg: TrainConfig, loader=load_split) -> dict:
    """One trial where it runs (this process or a worker): its row, or its error row when the
    training fails (a failed configuration is recorded, not fatal; a split that cannot be read
    stops the study)."""
    split = worker_split(loader, job.dataset, job.fold)
    try:
        return run_trial(job, split, space, cfg)
    except Exception as exc:
        key = job.key_dict(space, cfg)
        return {"hash": stable_hash(key), **{k: v for k, v in key.items() if k != "space"},
                "error": f"{type(exc).__name__}: {exc}"}


def _finished(row) -> bool:  # failed trials are retried
    return row is not None and "error" not in row


def run_all(jobs, dataset, space, cfg, cache: Cache, execution: Execution = Execution(),
            log=None, loader=load_split):
    """Run every job not finished in the cache (serially, in a local pool or on a Dask cluster,
    see ``execution``), appending each row to the cache as it arrives; returns the rows in job
    order."""
    hashes = [stable_hash(j.key_dict(space, cfg)) for j in jobs]
    todo = [j for j, h in zip(jobs, hashes) if not _finished(cache.get(h))]
    work = partial(trial_row, space=space, cfg=cfg, loader=loader)
    for job, row in run_tasks(work, todo, execution, desc=f"{dataset} trials",
                              failed=lambda r: "error" in r):
        cache.add(row)
        if "error" in row and log:
            log(f"FAILED {job}: {row['error']}")
    return [cache.get(h) for h in hashes]


def make_jobs(dataset, boosters, methods, targets, folds, seeds, budget):
    """Fold-major order, so that an interrupted benchmark has whole folds done."""
    jobs = []
    targets = [parse_target(t) for t in targets]
    for fold in folds:
        for seed in seeds:
            for booster in boosters:
                for method in methods:
                    for target in targets:
                        if not TUNED_METHODS[method].applies(booster, target):
                            continue
                        for trial in range(budget):
                            jobs.append(Job(dataset, booster, method, target, fold, seed, trial))
    return jobs
