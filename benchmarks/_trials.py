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

from ._data import Split, eval_target, load_split, target_labels, target_metric, test_metrics
from ._executor import Execution, run_tasks, worker_split
from ._jsonl import append_row, read_rows
from ._methods import METHODS, make_sglb, applicable, make_objective
from ._search import SPACE_VERSION, Space, sample_params


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


# Our objectives: one ranker call, differing only in the class and the booster's tree settings.
RANKERS = {"lightgbm": "StochasticLGBMRanker", "xgboost": "StochasticXGBRanker",
           "catboost": "StochasticCatBoostRanker"}


def tree_params(booster, p) -> dict:
    """The booster's parameters of a trial's tree shape (shared by ours and the native)."""
    # "min_hessian" (optional): the smallest hessian sum of a leaf, for objectives whose exact
    # hessians are small per document (YetiRank's); CatBoost's symmetric trees have none.
    if booster == "lightgbm":
        extra = {"min_sum_hessian_in_leaf": p["min_hessian"]} if "min_hessian" in p else {}
        return {"max_depth": p["depth"], "num_leaves": min(2 ** p["depth"], 255),
                "lambda_l2": p["l2"], "deterministic": True, "force_col_wise": True, **extra}
    if booster == "xgboost":
        extra = {"min_child_weight": p["min_hessian"]} if "min_hessian" in p else {}
        return {"max_depth": p["depth"], "reg_lambda": p["l2"], "tree_method": "hist", **extra}
    return {"depth": p["depth"], "l2_leaf_reg": p["l2"]}


def _catboost_eval_metric(target):
    return "NDCG:top=5;type=Exp" if target == "NDCG@5" else "MRR"


def train_ours(booster, method, target, p, seed, split: Split, cfg: TrainConfig):
    """A package objective (and its SGLB, if the method has one) through the booster's ranker;
    returns ``(predict, validation curve, trees kept)``."""
    import stochrank_objectives

    tr, va = split.train, split.valid
    ytr, yva = target_labels(tr.y, target), target_labels(va.y, target)
    ranker_class = getattr(stochrank_objectives, RANKERS[booster])  # imports only that booster
    ranker = ranker_class(make_objective(method, target, p, seed), sglb=make_sglb(p, seed),
                          n_estimators=cfg.max_trees, learning_rate=p["learning_rate"],
                          random_state=seed, n_jobs=cfg.threads, eval_metric=target,
                          early_stopping_rounds=cfg.patience,
                          **tree_params(booster, p))
    ranker.fit(tr.X, ytr, qid=tr.qid, eval_set=[(va.X, yva, va.qid)])
    curve = list(next(iter(ranker.evals_result_["validation_0"].values())))
    return ranker.predict, curve, ranker.best_iteration_ + 1


# The boosters' native rankers.
def native_lightgbm(method, target, p, seed, split: Split, cfg: TrainConfig):
    import lightgbm as lgb
    from stochrank_objectives.adapters.lightgbm import LGBMMetric

    tr, va = split.train, split.valid
    ytr, yva = target_labels(tr.y, target), target_labels(va.y, target)
    metric, k = target_metric(target)
    params = dict(tree_params("lightgbm", p), objective="lambdarank",
                  lambdarank_truncation_level=5, learning_rate=p["learning_rate"],
                  num_threads=cfg.threads, verbose=-1, metric="None", seed=seed)
    history = {}
    callbacks = [lgb.early_stopping(cfg.patience, verbose=False), lgb.record_evaluation(history)]
    dtr = lgb.Dataset(tr.X, ytr, group=tr.group_sizes, free_raw_data=False)
    dva = lgb.Dataset(va.X, yva, group=va.group_sizes, reference=dtr)
    booster = lgb.train(params, dtr, cfg.max_trees, valid_sets=[dva], valid_names=["valid"],
                        feval=LGBMMetric(metric, k), callbacks=callbacks)
    curve = list(next(iter(history["valid"].values())))
    return (lambda X: booster.predict(X)), curve, booster.current_iteration()


def native_xgboost(method, target, p, seed, split: Split, cfg: TrainConfig):
    import xgboost as xgb
    from stochrank_objectives.adapters.xgboost import XGBMetric

    tr, va = split.train, split.valid
    ytr, yva = target_labels(tr.y, target), target_labels(va.y, target)
    metric, k = target_metric(target)
    params = dict(tree_params("xgboost", p), objective="rank:ndcg",
                  lambdarank_pair_method="topk", lambdarank_num_pair_per_sample=5,
                  learning_rate=p["learning_rate"], nthread=cfg.threads, seed=seed,
                  disable_default_eval_metric=1)
    # XGBoost needs non-decreasing qid: use the query index (MQ2008 folds 4-5 are not sorted)
    dtr = xgb.DMatrix(tr.X, ytr, qid=np.repeat(np.arange(tr.n_queries), tr.group_sizes))
    dva = xgb.DMatrix(va.X, yva, qid=np.repeat(np.arange(va.n_queries), va.group_sizes))
    history = {}
    booster = xgb.train(params, dtr, cfg.max_trees, evals=[(dva, "valid")],
                        custom_metric=XGBMetric(metric, k), maximize=True,
                        early_stopping_rounds=cfg.patience, evals_result=history,
                        verbose_eval=False)
    best = int(booster.attr("best_iteration"))
    booster = booster[: best + 1]
    curve = list(next(iter(history["valid"].values())))

    def predict(X):
        return booster.predict(xgb.DMatrix(X), output_margin=True)
    return predict, curve, best + 1


def native_catboost(method, target, p, seed, split: Split, cfg: TrainConfig):
    from catboost import CatBoost, Pool

    tr, va = split.train, split.valid
    ytr, yva = target_labels(tr.y, target), target_labels(va.y, target)
    metric, k = target_metric(target)
    params = dict(tree_params("catboost", p), iterations=cfg.max_trees,
                  learning_rate=p["learning_rate"], random_seed=seed,
                  thread_count=cfg.threads, eval_metric=_catboost_eval_metric(target),
                  verbose=False, allow_writing_files=False, use_best_model=True,
                  od_type="Iter", od_wait=cfg.patience)
    if "model_shrink_rate" in p:
        params.update(langevin=True, model_shrink_rate=p["model_shrink_rate"],
                      diffusion_temperature=p["diffusion_temperature"])
    if method == "native_yetirank":
        loss = "YetiRank"
    elif method == "native_lambdamart":
        loss = f"LambdaMart:metric={metric}" + (f";top={k}" if k else "")
    else:  # native StochasticRank (R1)
        loss = (f"StochasticRank:metric={metric}" + (f";top={k}" if k else "")
                + f";mu={p['mu']}")
    model = CatBoost(dict(params, loss_function=loss))
    model.fit(Pool(tr.X, ytr, group_id=tr.qid), eval_set=Pool(va.X, yva, group_id=va.qid))
    res = model.get_evals_result()
    curve = list(next(iter(res["validation"].values())))

    def predict(X):
        return model.predict(X, prediction_type="RawFormulaVal")
    return predict, curve, model.tree_count_


NATIVE = {"lightgbm": native_lightgbm, "xgboost": native_xgboost, "catboost": native_catboost}


def train(booster, method, target, p, seed, split: Split, cfg: TrainConfig):
    """One trial's model: ``(predict, validation curve, trees kept)``."""
    if METHODS[method].native:
        return NATIVE[booster](method, target, p, seed, split, cfg)
    return train_ours(booster, method, target, p, seed, split, cfg)


#: ``TRAINERS[booster](method, target, p, seed, split, cfg)``
TRAINERS = {booster: partial(train, booster) for booster in RANKERS}


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
    valid = eval_target(predict(split.valid.X), split.valid, job.target)
    test_scores = np.asarray(predict(split.test.X), dtype=np.float64)
    per, has_rel = test_metrics(test_scores, split.test, split.grade_max)
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
    for fold in folds:
        for seed in seeds:
            for booster in boosters:
                for method in methods:
                    for target in targets:
                        if not applicable(booster, method, target):
                            continue
                        for trial in range(budget):
                            jobs.append(Job(dataset, booster, method, target, fold, seed, trial))
    return jobs
