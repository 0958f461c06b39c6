"""Shared machinery of :mod:`benchmarks.compare` and :mod:`benchmarks.ablation`.

Method registry, random-search spaces (StochasticRank paper, supplement section F, adapted per
booster), one training per booster with early stopping on the validation split, evaluation on
the test split (worst-permutation ties), a resumable cache of finished trials, statistics
(mean, 95% confidence interval, paired one-tailed t-test per query), markdown tables and plots.

Protocol of one *trial*: ``(booster, method, target, fold, seed, trial)``. Its hyper-parameters
are drawn from the search space with a random generator keyed by that tuple (so an interrupted
benchmark draws the same ones again), the model is trained on train with early stopping on the
validation split's target metric, and the validation and test metrics of the early-stopped
model are recorded. A *run* is ``(booster, method, target, fold, seed)``: among its trials the one
with the best validation target metric is selected and its test metrics are reported.

Targets: ``NDCG@5`` (graded labels) and ``MRR``, for which training and validation labels are
binarised, ``1{y > 0}`` (paper, section 7). Test metrics always use the original labels: NDCG@5,
NDCG@10 (``2^r - 1`` gains), MRR (relevant iff ``y > 0``), ERR@10 (``R = (2^r - 1) / 2^g_max``),
all with worst-permutation ties. Queries without a relevant document: the package's convention
(NDCG = 1, MRR = ERR = 0; what CatBoost/LightGBM/XGBoost report) by default, and the same metrics
with such queries skipped.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import time
from dataclasses import dataclass
from pathlib import Path

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # before any OpenMP pool is loaded

import numpy as np  # noqa: E402

from stochrank_objectives import SGLB, StochasticRank  # noqa: E402
from stochrank_objectives import metrics as M  # noqa: E402
from stochrank_objectives.baselines import (  # noqa: E402
    ApproxNDCG, Gumbel, LambdaLoss, LambdaMART, ListNet, SmoothNDCG, SoftRank, e_lambda_mart)
from stochrank_objectives.data import (  # noqa: E402
    RankingData, load_lightgbm_lambdarank, load_mq2008)

RESULTS = Path(__file__).resolve().parent / "results"
BOOSTERS = ("lightgbm", "xgboost", "catboost")
TARGETS = ("NDCG@5", "MRR")
TEST_METRICS = ("NDCG@5", "NDCG@10", "MRR", "ERR@10")
SPACE_VERSION = 2  # 2: package StochasticRank defaults, relative sigma and half-life tuned
VALID_FRACTION = 0.2     # LightGBM sample: share of train queries held out for validation
VALID_SPLIT_SEED = 20200713


# ---------------------------------------------------------------------------------- data
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


# ---------------------------------------------------------------------------------- methods
@dataclass
class Method:
    key: str
    label: str
    boosters: tuple
    targets: tuple
    sglb: bool = False        # tune SGLB shrink rate and temperature
    mu: bool = False          # tune mu (R1)
    noise: bool = False       # tune the Gumbel noise strength beta
    stochastic_rank: bool = False   # l2 = 0 (supplement F)
    smoothing: bool = False   # tune the relative sigma and its annealing half-life
    native: bool = False
    note: str = ""


METHODS = {m.key: m for m in [
    Method("native_lambdamart", "LambdaMART (native)", BOOSTERS, TARGETS, native=True,
           note="LightGBM lambdarank (truncation 5), XGBoost rank:ndcg (topk 5), CatBoost "
                "LambdaMart:metric=NDCG;top=5 / metric=MRR; MRR target only in CatBoost"),
    Method("native_yetirank", "YetiRank (CatBoost)", ("catboost",), ("NDCG@5",), native=True),
    Method("native_sr", "StochasticRank R1 (CatBoost native)", ("catboost",), TARGETS,
           native=True, sglb=True, mu=True, stochastic_rank=True),
    Method("lambdamart", "LambdaMART (ours)", BOOSTERS, TARGETS),
    Method("lambdaloss", "LambdaLoss NDCG-Loss2++", BOOSTERS, ("NDCG@5",)),
    Method("e_lambdamart", "E-lambda-MART", BOOSTERS, TARGETS, noise=True),
    Method("e_lambdaloss", "E-lambda-Loss", BOOSTERS, ("NDCG@5",), noise=True),
    Method("softrank", "SoftRank", BOOSTERS, TARGETS),
    Method("approxndcg", "ApproxNDCG", BOOSTERS, ("NDCG@5",)),
    Method("e_approxndcg", "E[ApproxNDCG]", BOOSTERS, ("NDCG@5",), noise=True),
    Method("smoothndcg", "SmoothNDCG", BOOSTERS, ("NDCG@5",)),
    Method("listnet", "ListNet", BOOSTERS, ("NDCG@5",)),
    Method("sr_r1soft", "SR-R1soft", BOOSTERS, TARGETS, sglb=True, stochastic_rank=True,
           smoothing=True),
    Method("sr_r1", "SR-R1", BOOSTERS, TARGETS, sglb=True, mu=True, stochastic_rank=True,
           smoothing=True),
    # Table 3 ablation (StochasticRank without SGLB)
    Method("abl_reinforce", "REINFORCE", BOOSTERS, TARGETS, stochastic_rank=True),
    Method("abl_ccs", "CCS", BOOSTERS, TARGETS, stochastic_rank=True),
    Method("abl_ccs_sfa", "CCS+SFA", BOOSTERS, TARGETS, stochastic_rank=True),
]}
COMPARE_METHODS = [k for k in METHODS if not k.startswith("abl_")]
ABLATION_METHODS = ["abl_reinforce", "abl_ccs", "abl_ccs_sfa", "sr_r1soft", "sr_r1"]
ABLATION_LABELS = {"abl_reinforce": "REINFORCE", "abl_ccs": "CCS", "abl_ccs_sfa": "CCS+SFA",
                   "sr_r1soft": "+relative smoothing, annealing, SGLB (SR-R1soft)",
                   "sr_r1": "+relative smoothing, annealing, SGLB, mu (SR-R1)"}


def applicable(booster: str, method: str, target: str) -> bool:
    m = METHODS[method]
    if booster not in m.boosters or target not in m.targets:
        return False
    if method == "native_lambdamart" and target == "MRR" and booster != "catboost":
        return False
    return True


@dataclass
class Space:
    """Random-search ranges (supplement F; ``lr_min`` and ``depths`` are adapted, see compare)."""
    lr_min: float = 1e-2
    lr_max: float = 1.0
    l2: tuple = (1e-1, 1e1)
    depths: tuple = (6, 7, 8, 9, 10)
    noise: tuple = (0.0, 1.0)
    shrink: tuple = (1e-5, 1e-2)
    temperature: tuple = (1e8, 1e11)
    mu: tuple = (1e-2, 1.0)  # the supplement's [1e-2, 10] capped: mu * label range <= MAX_SHIFT
    sigma: tuple = (0.1, 1.0)         # relative smoothing (package StochasticRank)
    half_life: tuple = (30.0, 300.0)  # trees over which sigma halves

    def as_dict(self):
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


def _loguniform(rng, lo, hi):
    return float(math.exp(rng.uniform(math.log(lo), math.log(hi))))


def stable_hash(obj) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True, default=str).encode()).hexdigest()[:16]


def sample_params(method: str, space: Space, rng: np.random.Generator) -> dict:
    m = METHODS[method]
    p = {"learning_rate": _loguniform(rng, space.lr_min, space.lr_max),
         "depth": int(rng.choice(space.depths))}
    p["l2"] = 0.0 if m.stochastic_rank else _loguniform(rng, *space.l2)
    if m.noise:
        p["beta"] = max(float(rng.uniform(*space.noise)), 1e-3)  # Gumbel needs beta > 0
    if m.sglb:
        p["model_shrink_rate"] = _loguniform(rng, *space.shrink)
        p["diffusion_temperature"] = _loguniform(rng, *space.temperature)
    if m.mu:
        p["mu"] = _loguniform(rng, *space.mu)
    if m.smoothing:
        p["sigma"] = _loguniform(rng, *space.sigma)
        p["anneal_half_life"] = _loguniform(rng, *space.half_life)
    return p


def make_objective(method: str, target: str, p: dict, seed: int):
    """The package objective of a non-native method."""
    metric, top = target_metric(target)
    if method == "lambdamart":
        return LambdaMART(metric=metric, top=top)
    if method == "lambdaloss":
        return LambdaLoss(mu=5.0)
    if method == "e_lambdamart":
        return e_lambda_mart(beta=p["beta"], n_samples=8, seed=seed, metric=metric, top=top)
    if method == "e_lambdaloss":
        return Gumbel(LambdaLoss(mu=5.0), beta=p["beta"], n_samples=8, seed=seed)
    if method == "softrank":
        if target == "NDCG@5":
            return SoftRank(top=5, seed=seed)
        return StochasticRank.paper(metric="MRR", mu=0.0, sfa=0.0, seed=seed)  # SoftRank, MRR
    if method == "approxndcg":
        return ApproxNDCG(eta=10.0)
    if method == "e_approxndcg":
        return Gumbel(ApproxNDCG(eta=10.0), beta=p["beta"], n_samples=8, seed=seed)
    if method == "smoothndcg":
        return SmoothNDCG(smoothing=64.0, top=5, anneal_every=10, start_iterations=2)
    if method == "listnet":
        return ListNet()
    smoothing = {k: p[k] for k in ("sigma", "anneal_half_life", "sigma_min", "n_samples", "nu")
                 if k in p}
    if method == "sr_r1soft":
        return StochasticRank(metric=metric, top=top, mu=0.0, seed=seed, **smoothing)
    if method == "sr_r1":
        return StochasticRank(metric=metric, top=top, mu=p["mu"], seed=seed, **smoothing)
    # The ablation's first rows are the paper's estimator steps, in its parametrisation.
    if method == "abl_reinforce":
        return StochasticRank.paper(metric=metric, top=top, mu=0.0, sfa=0.0,
                                    estimator="reinforce", seed=seed)
    if method == "abl_ccs":
        return StochasticRank.paper(metric=metric, top=top, mu=0.0, sfa=0.0, seed=seed)
    if method == "abl_ccs_sfa":
        return StochasticRank.paper(metric=metric, top=top, mu=0.0, sfa=1.0, seed=seed)
    raise ValueError(f"no package objective for method {method!r}")


def _sglb(p, seed):
    if "model_shrink_rate" not in p:
        return None
    return SGLB(learning_rate=p["learning_rate"], model_shrink_rate=p["model_shrink_rate"],
                diffusion_temperature=p["diffusion_temperature"], seed=seed)


# ---------------------------------------------------------------------------------- training
@dataclass
class TrainConfig:
    max_trees: int = 300
    patience: int = 50
    threads: int = 1


def _set_numba_threads(threads):
    try:
        import numba
        numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))
    except Exception:  # pragma: no cover - numba always present with the package
        pass


def train_lightgbm(method, target, p, seed, split: Split, cfg: TrainConfig):
    import lightgbm as lgb
    from stochrank_objectives.adapters.lightgbm import LGBMMetric, LGBMObjective

    tr, va = split.train, split.valid
    ytr, yva = target_labels(tr.y, target), target_labels(va.y, target)
    metric, k = target_metric(target)
    params = {"learning_rate": p["learning_rate"], "max_depth": p["depth"],
              "num_leaves": min(2 ** p["depth"], 255), "lambda_l2": p["l2"],
              "num_threads": cfg.threads, "verbose": -1, "metric": "None", "seed": seed,
              "deterministic": True, "force_col_wise": True}
    callbacks = [lgb.early_stopping(cfg.patience, verbose=False)]
    adapter = None
    if method == "native_lambdamart":
        params.update(objective="lambdarank", lambdarank_truncation_level=5)
    else:
        adapter = LGBMObjective(make_objective(method, target, p, seed), sglb=_sglb(p, seed))
        params["objective"] = adapter
        callbacks.append(adapter.callback())
    history = {}
    callbacks.append(lgb.record_evaluation(history))
    dtr = lgb.Dataset(tr.X, ytr, group=tr.group_sizes, free_raw_data=False)
    dva = lgb.Dataset(va.X, yva, group=va.group_sizes, reference=dtr)
    booster = lgb.train(params, dtr, cfg.max_trees, valid_sets=[dva], valid_names=["valid"],
                        feval=LGBMMetric(metric, k), callbacks=callbacks)
    if adapter is not None:
        adapter.finalize(booster)
    curve = list(next(iter(history["valid"].values())))
    return (lambda X: booster.predict(X)), curve, booster.current_iteration()


def train_xgboost(method, target, p, seed, split: Split, cfg: TrainConfig):
    import xgboost as xgb
    from stochrank_objectives.adapters.xgboost import StochasticXGBRanker, XGBMetric

    tr, va = split.train, split.valid
    ytr, yva = target_labels(tr.y, target), target_labels(va.y, target)
    metric, k = target_metric(target)
    tree = {"max_depth": p["depth"], "reg_lambda": p["l2"], "tree_method": "hist"}
    if method == "native_lambdamart":
        params = dict(tree, objective="rank:ndcg", lambdarank_pair_method="topk",
                      lambdarank_num_pair_per_sample=5, learning_rate=p["learning_rate"],
                      nthread=cfg.threads, seed=seed, disable_default_eval_metric=1)
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
    ranker = StochasticXGBRanker(make_objective(method, target, p, seed),
                                 n_estimators=cfg.max_trees, learning_rate=p["learning_rate"],
                                 sglb=_sglb(p, seed), eval_metric=XGBMetric(metric, k),
                                 early_stopping_rounds=cfg.patience, random_state=seed,
                                 n_jobs=cfg.threads, **tree)
    ranker.fit(tr.X, ytr, qid=tr.qid, eval_set=[(va.X, yva, va.qid)])
    curve = list(next(iter(ranker.evals_result_["validation_0"].values())))
    return ranker.predict, curve, ranker.get_booster().num_boosted_rounds()


def _catboost_eval_metric(target):
    return "NDCG:top=5;type=Exp" if target == "NDCG@5" else "MRR"


def train_catboost(method, target, p, seed, split: Split, cfg: TrainConfig):
    from catboost import CatBoost, Pool
    from stochrank_objectives.adapters.catboost import StochasticCatBoostRanker

    tr, va = split.train, split.valid
    ytr, yva = target_labels(tr.y, target), target_labels(va.y, target)
    common = {"iterations": cfg.max_trees, "learning_rate": p["learning_rate"],
              "depth": p["depth"], "l2_leaf_reg": p["l2"], "random_seed": seed,
              "thread_count": cfg.threads, "eval_metric": _catboost_eval_metric(target),
              "verbose": False, "allow_writing_files": False}
    if "model_shrink_rate" in p:
        common.update(langevin=True, model_shrink_rate=p["model_shrink_rate"],
                      diffusion_temperature=p["diffusion_temperature"])
    if METHODS[method].native:
        metric, k = target_metric(target)
        if method == "native_yetirank":
            loss = "YetiRank"
        elif method == "native_lambdamart":
            loss = f"LambdaMart:metric={metric}" + (f";top={k}" if k else "")
        else:  # native StochasticRank (R1)
            loss = (f"StochasticRank:metric={metric}" + (f";top={k}" if k else "")
                    + f";mu={p['mu']}")
        model = CatBoost(dict(common, loss_function=loss, use_best_model=True,
                              od_type="Iter", od_wait=cfg.patience))
        model.fit(Pool(tr.X, ytr, group_id=tr.qid), eval_set=Pool(va.X, yva, group_id=va.qid))
        res = model.get_evals_result()
        curve = list(next(iter(res["validation"].values())))
        n = model.tree_count_

        def predict(X):
            return model.predict(X, prediction_type="RawFormulaVal")
        return predict, curve, n
    sglb = {k: common[k] for k in ("langevin", "model_shrink_rate", "diffusion_temperature")
            if k in common}
    ranker = StochasticCatBoostRanker(
        make_objective(method, target, p, seed), n_estimators=cfg.max_trees,
        learning_rate=p["learning_rate"], random_state=seed, n_jobs=cfg.threads,
        eval_metric=common["eval_metric"], early_stopping_rounds=cfg.patience,
        depth=p["depth"], l2_leaf_reg=p["l2"], **sglb)
    ranker.fit(tr.X, ytr, qid=tr.qid, eval_set=[(va.X, yva, va.qid)])
    curve = list(next(iter(ranker.evals_result_["validation_0"].values())))
    return ranker.predict, curve, ranker.booster_.tree_count_


TRAINERS = {"lightgbm": train_lightgbm, "xgboost": train_xgboost, "catboost": train_catboost}


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
    _set_numba_threads(cfg.threads)
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
    return row


class Cache:
    """Finished trials, one JSON line each, keyed by the hash of their configuration. Reads every
    ``*.jsonl`` in the folder (a later line of a hash replaces an earlier one: a failed trial that
    succeeded on a rerun), appends to ``name``."""

    def __init__(self, folder: Path, name: str):
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        self.path = self.folder / name
        self.rows = {}
        for f in sorted(self.folder.glob("*.jsonl")):
            for line in f.read_text().splitlines():
                try:
                    row = json.loads(line)
                except json.JSONDecodeError:   # a line cut by an interruption
                    continue
                self.rows[row["hash"]] = row

    def get(self, h):
        return self.rows.get(h)

    def add(self, row):
        self.rows[row["hash"]] = row
        with open(self.path, "a") as f:
            f.write(json.dumps(row) + "\n")


def run_all(jobs, dataset, space, cfg, cache: Cache, progress=True, log=None):
    """Run (or read from the cache) every job; returns the rows in job order."""
    from tqdm.auto import tqdm

    splits = {}
    rows = []
    def done(row):  # failed trials are retried
        return row is not None and "error" not in row

    todo = [j for j in jobs if not done(cache.get(stable_hash(j.key_dict(space, cfg))))]
    bar = tqdm(total=len(todo), disable=not progress, desc=f"{dataset} trials", smoothing=0.05)
    for job in jobs:
        h = stable_hash(job.key_dict(space, cfg))
        row = cache.get(h)
        if not done(row):
            if job.fold not in splits:
                splits[job.fold] = load_split(dataset, job.fold)
            bar.set_postfix_str(f"{job.booster} {job.method} {job.target} f{job.fold} "
                                f"s{job.seed} t{job.trial}")
            try:
                row = run_trial(job, splits[job.fold], space, cfg)
            except Exception as exc:  # a failed configuration is recorded, not fatal
                row = {"hash": h, **{k: v for k, v in job.key_dict(space, cfg).items()
                                     if k != "space"}, "error": f"{type(exc).__name__}: {exc}"}
                if log:
                    log(f"FAILED {job}: {row['error']}")
            cache.add(row)
            bar.update(1)
        rows.append(row)
    bar.close()
    return rows


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


# ---------------------------------------------------------------------------------- statistics
def select_runs(rows):
    """The selected trial (best validation target metric) of every run."""
    best = {}
    for row in rows:
        if "error" in row or not np.isfinite(row.get("valid_target", np.nan)):
            continue
        k = (row["booster"], row["method"], row["target"], row["fold"], row["seed"])
        if k not in best or row["valid_target"] > best[k]["valid_target"]:
            best[k] = row
    return best


def mean_ci(values):
    from scipy import stats

    v = np.asarray(values, dtype=np.float64)
    if v.size == 0:
        return np.nan, np.nan
    if v.size == 1:
        return float(v[0]), np.nan
    half = stats.t.ppf(0.975, v.size - 1) * v.std(ddof=1) / math.sqrt(v.size)
    return float(v.mean()), float(half)


def summarise(selected, suffix=""):
    """{(booster, method, target): {metric: (mean, ci), "n": runs}}."""
    groups = {}
    for (b, m, t, f, s), row in selected.items():
        groups.setdefault((b, m, t), []).append(row)
    out = {}
    for k, rs in groups.items():
        out[k] = {name: mean_ci([r[f"test_{name}{suffix}"] for r in rs]) for name in TEST_METRICS}
        out[k]["n"] = len(rs)
        out[k]["trees"] = float(np.mean([r["n_trees"] for r in rs]))
    return out


def paired_test(selected, booster, target, methods, metric, skip=False):
    """Best and runner-up method (by mean test ``metric``) of one booster and target and the
    one-tailed paired t-test over queries (pooled over folds x seeds) that the best is better.
    Returns (best, runner_up, p_value, n_queries) or None."""
    from scipy import stats

    per_method = {}
    for (b, m, t, f, s), row in selected.items():
        if b == booster and t == target and m in methods:
            per_method.setdefault(m, {})[(f, s)] = row
    if len(per_method) < 2:
        return None
    means = {m: np.mean([r[f"test_{metric}" + ("_skip" if skip else "")] for r in runs.values()])
             for m, runs in per_method.items()}
    order = sorted(means, key=means.get, reverse=True)
    best, second = order[0], order[1]
    common = sorted(set(per_method[best]) & set(per_method[second]))
    a, b = [], []
    for fs in common:
        ra, rb = per_method[best][fs], per_method[second][fs]
        va, vb = np.asarray(ra[f"pq_{metric}"]), np.asarray(rb[f"pq_{metric}"])
        keep = ~(np.isnan(va) | np.isnan(vb))
        if skip:
            keep &= np.asarray(ra["has_rel"], dtype=bool)
        a.append(va[keep])
        b.append(vb[keep])
    a, b = np.concatenate(a), np.concatenate(b)
    if np.allclose(a, b):
        return best, second, 1.0, a.size
    p = stats.ttest_rel(a, b, alternative="greater").pvalue
    return best, second, float(p), int(a.size)


# ---------------------------------------------------------------------------------- outputs
CSV_COLUMNS = ["dataset", "booster", "method", "target", "fold", "seed", "trial", "selected",
               "valid_target", "n_trees", "wall_s"] + \
    [f"test_{m}" for m in TEST_METRICS] + [f"test_{m}_skip" for m in TEST_METRICS] + \
    ["params", "error", "hash"]


def write_csv(rows, selected, path):
    import csv

    chosen = {r["hash"] for r in selected.values()}
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, CSV_COLUMNS, extrasaction="ignore")
        w.writeheader()
        for r in rows:
            out = dict(r)
            out["selected"] = int(r["hash"] in chosen)
            out["params"] = json.dumps(r.get("params", {}), sort_keys=True)
            for k, v in list(out.items()):
                if isinstance(v, float):
                    out[k] = f"{v:.6g}"
            w.writerow(out)


def fmt(mc, scale=100.0):
    mean, ci = mc
    if not np.isfinite(mean):
        return "-"
    if not np.isfinite(ci):
        return f"{scale * mean:.2f}"
    return f"{scale * mean:.2f} ± {scale * ci:.2f}"


def plot_curves(selected, booster, methods, labels, path, target="NDCG@5"):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    runs = {m: [r for (b, mm, t, f, s), r in sorted(selected.items())
                if b == booster and mm == m and t == target] for m in methods}
    runs = {m: rs[0] for m, rs in runs.items() if rs}
    if not runs:
        return False
    fig, ax = plt.subplots(figsize=(8, 5))
    for i, (m, r) in enumerate(runs.items()):
        ax.plot(np.arange(1, len(r["valid_curve"]) + 1), r["valid_curve"], label=labels[m], lw=1,
                color=plt.cm.tab20(i % 20), ls="-" if i % 2 == 0 else "--")
    first = next(iter(runs.values()))
    ax.set_xlabel("trees")
    ax.set_ylabel(f"validation {target} (worst ties)")
    ax.set_title(f"{booster}: validation {target}, selected trial, fold {first['fold']} seed "
                 f"{first['seed']}")
    ax.legend(fontsize=7, ncol=2)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def plot_bars(summary, boosters, methods, labels, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = [(t, name) for t, name in (("NDCG@5", "NDCG@5"), ("MRR", "MRR"))
              if any((b, m, t) in summary for b in boosters for m in methods)]
    fig, axes = plt.subplots(len(panels), 1, figsize=(10, 4.5 * len(panels)), squeeze=False)
    width = 0.8 / max(len(boosters), 1)
    for ax, (target, metric) in zip(axes[:, 0], panels):
        shown = [m for m in methods if any((b, m, target) in summary for b in boosters)]
        x = np.arange(len(shown))
        lo = 1.0
        for i, b in enumerate(boosters):
            means, cis = [], []
            for m in shown:
                mean, ci = summary.get((b, m, target), {}).get(metric, (np.nan, np.nan))
                means.append(100 * mean)
                cis.append(100 * ci if np.isfinite(ci) else 0.0)
            if np.all(np.isnan(means)):
                continue
            lo = min(lo, np.nanmin(means) / 100)
            ax.bar(x + (i - (len(boosters) - 1) / 2) * width, means, width, yerr=cis,
                   capsize=2, label=b)
        ax.set_xticks(x)
        ax.set_xticklabels([labels[m] for m in shown], rotation=35, ha="right", fontsize=8)
        ax.set_ylabel(f"test {metric} x 100 (mean, 95% CI)")
        ax.set_ylim(max(0.0, 100 * lo - 5), None)
        ax.set_title(f"target {target}")
        ax.legend(fontsize=8)
        ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def environment_line(cfg: TrainConfig) -> str:
    import platform

    import catboost
    import lightgbm
    import xgboost
    return (f"Python {platform.python_version()}, LightGBM {lightgbm.__version__}, XGBoost "
            f"{xgboost.__version__}, CatBoost {catboost.__version__}, {os.cpu_count()} cores, "
            f"{cfg.threads} thread(s) per training")


def add_common_args(ap, default_budget, default_folds):
    ap.add_argument("--dataset", default="mq2008", choices=["mq2008", "lightgbm_lambdarank"])
    ap.add_argument("--folds", type=int, nargs="+", default=default_folds)
    ap.add_argument("--seeds", type=int, nargs="+", default=[0])
    ap.add_argument("--budget", type=int, default=default_budget,
                    help="random-search trials per (booster, method, target, fold, seed)")
    ap.add_argument("--max-trees", type=int, default=300)
    ap.add_argument("--patience", type=int, default=50, help="early-stopping rounds")
    ap.add_argument("--lr-min", type=float, default=1e-2,
                    help="lower end of the log-uniform learning rate (paper: 1e-3 with 1000 "
                         "trees)")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--out", default=None, help="output folder (default "
                                                "benchmarks/results/<dataset>)")
    ap.add_argument("--no-progress", action="store_true")
    ap.add_argument("--no-plots", action="store_true")


def budget_lines(args, space, n_trials, n_runs, wall):
    return [
        f"- Budget: {args.budget} random-search trial(s) per (booster, method, target, fold, "
        f"seed); folds {args.folds}; seeds {args.seeds}; at most {args.max_trees} trees, early "
        f"stopping after {args.patience} rounds without improvement of the validation target "
        f"metric (worst ties); {n_trials} trials, {n_runs} selected runs; "
        f"{wall / 60:.1f} min of training in total (sum of per-trial wall times).",
        f"- Search space (supplement F, adapted): learning rate log-uniform "
        f"[{space.lr_min:g}, {space.lr_max:g}] (paper [1e-3, 1] with 1000 trees); depth uniform "
        f"{{{', '.join(map(str, space.depths))}}} (LightGBM: max_depth = depth, num_leaves = "
        f"min(2^depth, 255)); L2 leaf regularisation log-uniform [0.1, 10] for baselines, 0 for "
        f"StochasticRank; Gumbel noise strength uniform [0, 1]; SGLB model-shrink-rate "
        f"log-uniform [1e-5, 1e-2] and diffusion temperature log-uniform [1e8, 1e11]; mu "
        f"log-uniform [{space.mu[0]:g}, {space.mu[1]:g}] (R1; the paper's 10 is capped so that "
        f"mu * label range <= 4, see StochasticRank). Fixed: LambdaLoss mu = 5, ApproxNDCG eta "
        f"= 10, Gumbel 8 samples, SmoothNDCG smoothing 64 annealed /2 every 10 trees after 2 "
        f"regression trees; StochasticRank (SR-R1soft, SR-R1): relative smoothing, sigma "
        f"log-uniform [{space.sigma[0]:g}, {space.sigma[1]:g}] annealed to min(sigma, 0.1) with "
        f"half-life log-uniform [{space.half_life[0]:g}, {space.half_life[1]:g}] trees, nu = 1, "
        f"1 sample; ablation rows REINFORCE, CCS, CCS+SFA in the paper's parametrisation "
        f"(absolute sigma = 1, nu = 0.01).",
    ]
