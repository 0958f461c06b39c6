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

from . import _boosters
from ._instances import GRADE_MAX, METRICS, instance_suite
from ._registry import BEFORE_ISSUE_22, instance_defaults, study

DEPTH, LEARNING_RATE = 3, 0.1
#: the methods (benchmarks._registry, study "global_optimum"): ours, the extras (run on request)
#: and each booster's natives
METHODS = study("global_optimum")
OBJECTIVES = [m.name for m in METHODS.values() if not m.is_native and not m.extra]
EXTRA_OBJECTIVES = [m.name for m in METHODS.values() if m.extra]


def default_objective(inst, seed):
    """What a user gets from ``StochasticRank(metric=..., top=...)`` on the instance."""
    return instance_defaults(inst.target, seed)


# Booster settings shared by our objectives and the natives (see the module docstring).
TREES = {
    "lightgbm": dict(max_depth=DEPTH, num_leaves=2 ** DEPTH, min_data_in_leaf=1,
                     min_data_in_bin=1, lambda_l2=0.0, deterministic=True),
    "xgboost": dict(max_depth=DEPTH, min_child_weight=0.0, reg_lambda=0.0, tree_method="exact"),
    "catboost": dict(depth=DEPTH, boosting_type="Plain", bootstrap_type="No",
                     random_strength=0.0),
}
#: per booster: the dataset parameters of its native training (LightGBM: bins of one document)
DATASET = {"lightgbm": {"dataset_params": {"min_data_in_bin": 1}}}


def train_ours(booster, method, inst, seed, iterations):
    """One of our objectives through the booster's ranker; returns the training scores."""
    ranker = _boosters.ranker_class(booster)(
        METHODS[method].make(inst.target, {}, seed), n_estimators=iterations,
        learning_rate=LEARNING_RATE, random_state=seed, n_jobs=1, **TREES[booster])
    ranker.fit(inst.X, inst.y, qid=inst.qid)
    return ranker.predict(inst.X)


def train_native(booster, method, inst, seed, iterations):
    """A booster's native ranker (same trees); returns the training scores."""
    target = inst.target
    params = dict(TREES[booster], **METHODS[method].native[booster](target, {}),
                  **_boosters.common_params(booster, LEARNING_RATE, seed, threads=1))
    labels = inst.y
    if booster == "catboost":
        params["iterations"] = iterations
        if target.needs_grade_max:  # CatBoost's ERR takes probabilities
            labels = inst.y / float(GRADE_MAX)
    model = _boosters.train(booster, params, inst, iterations, labels=labels,
                            **DATASET.get(booster, {}))
    return model.predict(inst.X)


def trainer(booster):
    """``trainer(booster)(method, inst, seed, iterations)`` -> training scores."""
    def train(method, inst, seed, iterations):
        if METHODS[method].is_native:
            return train_native(booster, method, inst, seed, iterations)
        return train_ours(booster, method, inst, seed, iterations)
    return train


BOOSTERS = {booster: trainer(booster) for booster in _boosters.BOOSTERS}


def methods_for(booster, selected=None):
    """The booster's default methods, or those of ``selected`` it can run (extras included)."""
    mine = [m for m in METHODS.values() if booster in m.boosters]
    if selected is None:
        return [m.name for m in mine if not m.extra]
    return [m.name for m in mine if m.name in selected]


def run(instances, seeds, iterations, boosters, methods=None, progress=print):
    rows = []
    for booster in boosters:
        trainer = BOOSTERS[booster]
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
        for metric in METRICS:
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
    colours = [METHODS[k[1]].colour for k in keys]
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
