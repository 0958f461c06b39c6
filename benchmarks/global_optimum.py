"""Global-optimum benchmark: random multimodal problems with an enumerated optimum.

    python -m benchmarks.global_optimum [--instances 102] [--seeds 3] [--iterations 500]
        [--boosters lightgbm xgboost catboost] [--out benchmarks/results/global_optimum]

Instances (:mod:`benchmarks._instances`): one-hot items shared by 3-6 queries that grade them
in conflicting ways, 4-6 items, equally many for NDCG@3 (grades 0-3, exp2 gain), MRR (binary)
and ERR@3 (grades 0-3, ``grade_max = 3``); every instance has an adjacent-swap local optimum
below its global optimum. A model reaches the optimum when its worst-tie metric on the
training data equals the enumerated optimum (to 1e-9).

Everybody gets the same booster settings and budget (the paper's Table 1): depth 3, learning
rate 0.1, ``--iterations`` trees, leaves of any size (LightGBM ``min_data_in_leaf=1``, XGBoost
``min_child_weight=0``), no L2 on leaves in LightGBM and XGBoost, CatBoost's own ``l2_leaf_reg``,
no row sampling and no random split strength; the seed changes the objective's noise and the
booster's seed. Methods per booster: ``StochasticRank(metric=..., top=...)`` with nothing else
set (the package defaults), our ``LambdaMART`` (NDCG@3 lambdas for the NDCG and ERR instances,
MRR lambdas for MRR), and the native rankers (LightGBM ``lambdarank`` with truncation 3 / MRR
default, XGBoost ``rank:ndcg`` with 3 pairs per sample, CatBoost ``YetiRank`` and ``LambdaMart``
for the instance's own metric).

Writes ``results.csv`` (one row per instance x seed x booster x method), ``summary.md`` (hit
rate with a 95% Wilson interval and the mean gap, per booster and method, and per metric) and
``hit_rates.png``.
"""

from __future__ import annotations

import argparse
import csv
import math
import time
import warnings
from pathlib import Path

import numpy as np

from benchmarks._instances import instance_suite
from stochrank_objectives import StochasticRank
from stochrank_objectives.baselines import LambdaMART

DEPTH, LEARNING_RATE = 3, 0.1


def default_objective(inst, seed):
    """What a user gets from ``StochasticRank(metric=..., top=...)`` (plus the instance's ERR
    grade mapping, which is a property of the labels, and the seed)."""
    extra = {"grade_max": 3} if inst.metric == "ERR" else {}
    return StochasticRank(metric=inst.metric, top=inst.top, seed=seed, **extra)


def our_lambdamart(inst, seed):
    return LambdaMART(metric="MRR" if inst.metric == "MRR" else "NDCG", top=inst.top)


def variant(**params):
    """The defaults with ``params`` changed (e.g. SR-R1: ``mu``)."""
    def make(inst, seed):
        return default_objective(inst, seed).set_params(**params)
    return make


def paper_objective(inst, seed):
    extra = {"grade_max": 3} if inst.metric == "ERR" else {}
    return StochasticRank.paper(metric=inst.metric, top=inst.top, seed=seed, **extra)


OBJECTIVES = {"StochasticRank (defaults)": default_objective, "LambdaMART (ours)": our_lambdamart}
#: the defaults before issue 22 (a unit hessian, sigma 0.3 annealed to 0.1, MRR without
#: reach), at which the LightGBM-only studies below were run: pinned, so that their committed
#: rows stay reproducible
BEFORE_ISSUE_22 = {"hessian": "constant", "sigma": 0.3, "reach": 0.0}


def before_issue_22(**params):
    """The defaults before issue 22 with ``params`` changed."""
    return variant(**{**BEFORE_ISSUE_22, **params})


# Run on request (--methods): SR-R1 at several mu, the paper's parametrisation, the smoothing
# schedules, and the defaults of earlier versions.
EXTRA_OBJECTIVES = {
    "SR-R1 (defaults, mu=0.1)": before_issue_22(mu=0.1),
    "SR-R1 (defaults, mu=0.3)": before_issue_22(mu=0.3),
    "SR-R1 (defaults, mu=1)": before_issue_22(mu=1.0), "StochasticRank.paper()": paper_objective,
    "constant sigma=0.3": before_issue_22(anneal_half_life=None),
    "constant sigma=0.1": before_issue_22(sigma=0.1, anneal_half_life=None),
    "n_samples=4": before_issue_22(n_samples=4), "sigma_min=0.05": before_issue_22(sigma_min=0.05),
    "sigma 0.2, sigma_min=0.05": before_issue_22(sigma=0.2, sigma_min=0.05),
    "unit hessian": variant(**BEFORE_ISSUE_22),
    # the default from issue 22's curvature hessian until the constant sigma = 0.1
    "sigma 0.3 annealed": variant(sigma=0.3, reach=0.0),
    # the default from the constant sigma = 0.1 until MRR's reach (MRR instances differ only)
    "MRR without reach": variant(reach=0.0)}
ALL_OBJECTIVES = {**OBJECTIVES, **EXTRA_OBJECTIVES}


# Booster settings shared by our objectives and the natives (see the module docstring).
TREES = {
    "lightgbm": dict(max_depth=DEPTH, num_leaves=2 ** DEPTH, min_data_in_leaf=1,
                     min_data_in_bin=1, lambda_l2=0.0, deterministic=True),
    "xgboost": dict(max_depth=DEPTH, min_child_weight=0.0, reg_lambda=0.0, tree_method="exact"),
    "catboost": dict(depth=DEPTH, boosting_type="Plain", bootstrap_type="No",
                     random_strength=0.0),
}
RANKERS = {"lightgbm": "StochasticLGBMRanker", "xgboost": "StochasticXGBRanker",
           "catboost": "StochasticCatBoostRanker"}


def train_ours(booster, method, inst, seed, iterations):
    """One of our objectives through the booster's ranker; returns the training scores."""
    import stochrank_objectives

    ranker_class = getattr(stochrank_objectives, RANKERS[booster])  # imports only that booster
    ranker = ranker_class(ALL_OBJECTIVES[method](inst, seed), n_estimators=iterations,
                          learning_rate=LEARNING_RATE, random_state=seed, n_jobs=1,
                          **TREES[booster])
    ranker.fit(inst.X, inst.y, qid=inst.qid)
    return ranker.predict(inst.X)


# -- the native rankers --------------------------------------------------------------------
def native_lightgbm(method, inst, seed, iterations):
    import lightgbm as lgb

    params = dict(TREES["lightgbm"], objective="lambdarank", learning_rate=LEARNING_RATE,
                  verbose=-1, seed=seed, num_threads=1)
    if inst.top is not None:
        params["lambdarank_truncation_level"] = inst.top
    if inst.metric == "ERR":
        params["label_gain"] = [2.0 ** g - 1.0 for g in range(32)]
    ds = lgb.Dataset(inst.X, inst.y, group=inst.group_sizes, params={"min_data_in_bin": 1})
    booster = lgb.train(params, ds, iterations)
    return booster.predict(inst.X, raw_score=True)


def native_xgboost(method, inst, seed, iterations):
    import xgboost as xgb

    params = dict(TREES["xgboost"], objective="rank:ndcg", eta=LEARNING_RATE, seed=seed,
                  nthread=1, lambdarank_num_pair_per_sample=inst.top or 1, base_score=0.0)
    booster = xgb.train(params, xgb.DMatrix(inst.X, inst.y, qid=inst.qid), iterations)
    return booster.predict(xgb.DMatrix(inst.X), output_margin=True)


def _catboost_metric(inst):
    top = f"top={inst.top};" if inst.top is not None else ""
    return {"NDCG": f"NDCG:{top}type=Exp", "MRR": "MRR", "ERR": f"ERR:{top}".rstrip(";")}[
        inst.metric]


def native_catboost(method, inst, seed, iterations):
    from catboost import CatBoost, Pool

    labels = inst.y / 3.0 if inst.metric == "ERR" else inst.y  # ERR takes probabilities
    loss = "YetiRank" if method == "native YetiRank" else \
        "LambdaMart:metric=" + _catboost_metric(inst).replace(":", ";")
    model = CatBoost(dict(TREES["catboost"], loss_function=loss, iterations=iterations,
                          learning_rate=LEARNING_RATE, random_seed=seed, verbose=False,
                          thread_count=1, allow_writing_files=False))
    model.fit(Pool(inst.X, labels, group_id=inst.qid))
    return model.predict(inst.X, prediction_type="RawFormulaVal")


NATIVE = {"lightgbm": native_lightgbm, "xgboost": native_xgboost, "catboost": native_catboost}


def trainer(booster):
    """``trainer(booster)(method, inst, seed, iterations)`` -> training scores."""
    def train(method, inst, seed, iterations):
        if method.startswith("native"):
            return NATIVE[booster](method, inst, seed, iterations)
        return train_ours(booster, method, inst, seed, iterations)
    return train


BOOSTERS = {
    "lightgbm": (trainer("lightgbm"), ["native lambdarank"]),
    "xgboost": (trainer("xgboost"), ["native rank:ndcg"]),
    "catboost": (trainer("catboost"), ["native YetiRank", "native LambdaMart"]),
}


def methods_for(booster, selected=None):
    """The booster's default methods, or those of ``selected`` it can run (extras included)."""
    if selected is None:
        return list(OBJECTIVES) + BOOSTERS[booster][1]
    return [m for m in list(ALL_OBJECTIVES) + BOOSTERS[booster][1] if m in selected]


def run(instances, seeds, iterations, boosters, methods=None, progress=print):
    rows = []
    for booster in boosters:
        trainer = BOOSTERS[booster][0]
        for method in methods_for(booster, methods):
            start = time.perf_counter()
            for inst in instances:
                for seed in seeds:
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        scores = np.asarray(trainer(method, inst, seed, iterations), np.float64)
                    value = inst.value(scores)
                    rows.append(dict(booster=booster, method=method, metric=inst.metric,
                                     instance=inst.key[0], seed=seed, value=value,
                                     optimum=inst.optimum, gap=max(inst.optimum - value, 0.0),
                                     hit=int(value >= inst.optimum - 1e-9)))
            if progress:
                mine = [r for r in rows if r["booster"] == booster and r["method"] == method]
                progress(f"{booster:9s} {method:28s} hit {np.mean([r['hit'] for r in mine]):.3f} "
                         f"gap {np.mean([r['gap'] for r in mine]):.4f} "
                         f"({time.perf_counter() - start:.0f} s)")
    return rows


def wilson(hits, n, z=1.96):
    """95% Wilson score interval of a proportion."""
    if n == 0:
        return (float("nan"), float("nan"))
    p = hits / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return centre - half, centre + half


def markdown(rows, n_instances, seeds, iterations):
    lines = [
        "# Global-optimum benchmark",
        "",
        f"{n_instances} random multimodal instances (NDCG@3, MRR, ERR@3 in equal numbers; "
        f"4-6 items, 3-6 queries), seeds {list(seeds)}, {iterations} trees of depth "
        f"{DEPTH}, learning rate {LEARNING_RATE} for every method. Hit = worst-tie training metric "
        "equal to the enumerated optimum; gap = optimum - reached value.",
        "",
        "| booster | method | hit rate | 95% CI | NDCG@3 | MRR | ERR@3 | mean gap |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    keys = []
    for r in rows:
        if (r["booster"], r["method"]) not in keys:
            keys.append((r["booster"], r["method"]))
    for booster, method in keys:
        mine = [r for r in rows if r["booster"] == booster and r["method"] == method]
        hits = sum(r["hit"] for r in mine)
        lo, hi = wilson(hits, len(mine))
        per = []
        for metric in ("NDCG", "MRR", "ERR"):
            sub = [r["hit"] for r in mine if r["metric"] == metric]
            per.append(f"{np.mean(sub):.3f}" if sub else "-")
        lines.append(f"| {booster} | {method} | {hits / len(mine):.3f} ({hits}/{len(mine)}) | "
                     f"[{lo:.3f}, {hi:.3f}] | " + " | ".join(per) +
                     f" | {np.mean([r['gap'] for r in mine]):.4f} |")
    return "\n".join(lines) + "\n"


def plot(rows, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    keys = []
    for r in rows:
        if (r["booster"], r["method"]) not in keys:
            keys.append((r["booster"], r["method"]))
    rates = [np.mean([r["hit"] for r in rows if (r["booster"], r["method"]) == k]) for k in keys]
    fig, ax = plt.subplots(figsize=(8, 0.4 * len(keys) + 1))
    colours = ["C0" if k[1].startswith("StochasticRank") else "C1" if "ours" in k[1] else "C7"
               for k in keys]
    ax.barh([f"{b}: {m}" for b, m in keys], rates, color=colours)
    ax.invert_yaxis()
    ax.set_xlim(0, 1)
    ax.set_xlabel("share of instance x seed runs that reach the global optimum")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--instances", type=int, default=102)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--iterations", type=int, default=500)
    parser.add_argument("--boosters", nargs="+", default=list(BOOSTERS), choices=list(BOOSTERS))
    parser.add_argument("--methods", nargs="+", default=None,
                        help="only these methods (default: all of each booster; extra: "
                             + ", ".join(EXTRA_OBJECTIVES) + ")")
    parser.add_argument("--tag", default=None, help="suffix of the output files")
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/global_optimum"))
    args = parser.parse_args(argv)
    instances = instance_suite(args.instances)
    seeds = list(range(args.seeds))
    rows = run(instances, seeds, args.iterations, args.boosters, args.methods)
    args.out.mkdir(parents=True, exist_ok=True)
    tag = args.tag or "_".join(args.boosters)
    with open(args.out / f"results_{tag}.csv", "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    text = markdown(rows, len(instances), seeds, args.iterations)
    (args.out / f"summary_{tag}.md").write_text(text)
    plot(rows, args.out / f"hit_rates_{tag}.png")
    print()
    print(text)
    return rows


if __name__ == "__main__":
    main()
