"""StochasticRank's levers (issue 22, item 2): SR-R1soft variants against the unit hessian (the
defaults before issue 22) and the booster's native LambdaMART, on MQ2008, the LightGBM sample and
the long-list generator.

    python -m benchmarks.sr_levers [--datasets mq2008 lightgbm_lambdarank longlists]
        [--boosters lightgbm] [--variants NAME ...] [--targets NDCG@5 MRR] [--folds F ...]
        [--seeds S ...] [--depth 6] [--max-trees 500] [--out benchmarks/results/sr_levers]
        [--threads 1]

The protocol of :mod:`benchmarks.defaults` (no tuning: learning rate 0.1, depth 6, 64 leaves,
the booster's L2 default, early stopping after 50 rounds on the validation target, test metrics
x100 with worst ties on queries with a relevant document), LightGBM by default (the cheapest
booster), on the folds and seeds of ``PLAN``. Each variant changes one setting of
``StochasticRank(metric, top, hessian="constant")`` (``VARIANTS``; the hessian variants change
the hessian: ``hessian=abs_gradient_normalised`` is the curvature-hessian default (``CURVATURE``);
``learning_rate=0.5`` is
a diagnostic: is a unit-hessian leaf too small a step?; ``nu=0.1`` lowers the floor of the
relative noise scale, ``s_q = sigma sqrt(var_q + nu^2)``, which holds while the scores' spread is
below ``nu``). The variants named ``default, ...`` change one setting (or the two their name
gives) of the curvature-hessian default (``CURVATURE``, the unit-mean abs-gradient hessian at
sigma 0.3 annealed to 0.1) and are compared with it as well: the noise
scale (``sigma``, ``sigma_min``) and the cutoff's reach (``train top``: SR trained for NDCG@10
or the whole list's NDCG, tested on NDCG@5; NDCG@5 target only), and the score spread of the
relative noise scale (``spread_top``: that of the 10 or 20 highest-scored documents of a
query, not the whole list's). The natives: LightGBM ``lambdarank``,
XGBoost ``rank:ndcg``, CatBoost ``LambdaMart`` (as in :mod:`benchmarks.defaults`).

Every variant runs over ``STUDY_BASE`` (``sigma = 0.3``, annealed to ``sigma_min = 0.1`` with
half-life 100: the package default when the study was run), so a cached row keeps its meaning
after a default moves. ``default, sigma=0.1`` is the package default since the study chose it
(a constant ``sigma = 0.1`` with the curvature hessian); for MRR, ``default, sigma=0.1, MRR
reach 0.3`` is (``StochasticRank(reach=None)``: a relevant document continues MRR's cascade with
probability 0.3; ``STUDY_BASE`` pins ``reach = 0``, MRR exactly, for the other variants); for
NDCG@5, ``default, sigma=0.1, min_top_share=0.1`` is (``StochasticRank(min_top_share=None)``: a
query of ``n`` documents is trained on NDCG at ``max(5, ceil(0.1 n))``; ``STUDY_BASE`` pins 0,
NDCG@5 in every query, for the other variants).

Reported per data set and target: each variant's mean and 95% t-interval over the runs, its
paired difference per test query against the unit hessian and against the native -- each
query's difference averaged over the seeds of its fold (the seeds of a fold share its test
queries, so they are not independent samples), then pooled over folds -- with the 95%
t-interval of the mean difference and the **two-sided** paired t-test's p (a lever may help or
hurt). The rows (per-query values) are in
``levers.jsonl``; a finished run is not retrained.
"""

from __future__ import annotations

import argparse
from itertools import product
from pathlib import Path

import numpy as np
from scipy import stats

from ._boosters import SMALL_HESSIAN
from ._data import load_split
from ._fixed import TARGETS, run_one
from ._jsonl import append_row, read_rows
from ._registry import TUNED_METHODS
from ._study import writable_folder
from ._targets import parse_target, target_arg
from ._trials import TrainConfig

#: the reference native (benchmarks.defaults' native LambdaMART) and the method every variant
#: changes (benchmarks.defaults' SR-R1soft)
NATIVE = TUNED_METHODS["native_lambdamart"].defaults.name
SR = TUNED_METHODS["sr_r1soft"].defaults.name
DEFAULT = "SR-R1soft (unit hessian)"  # the defaults before issue 22
#: the settings every variant starts from: StochasticRank's defaults when the study was run
#: (sigma 0.3 annealed to sigma_min 0.1, half-life 100, MRR without reach, NDCG@5 in every
#: query), pinned so that cached rows stay true
STUDY_BASE = {"sigma": 0.3, "reach": 0.0, "min_top_share": 0.0}
#: variant -> settings over STUDY_BASE and StochasticRank's other defaults; every variant but
#: the hessian ones runs with the unit hessian, the baseline of the study
VARIANTS = {DEFAULT: {"hessian": "constant"},
            # min_hessian 1e-3: LightGBM's default minimum leaf hessian, for XGBoost too (its
            # min_child_weight 1 would need 300+ documents a leaf on long lists, h ~ 0.003)
            "hessian=abs_gradient": {"hessian": "abs_gradient", "min_hessian": 1e-3},
            # the same leaves with (g, h) rescaled to a hessian of mean 1, so the booster's own
            # min_child_weight / L2 defaults keep their unit-hessian meaning: what a user gets
            "hessian=abs_gradient_normalised": {"hessian": "abs_gradient_normalised"},
            # ... with a floor of the mean curvature: h_i = |g_i| / s_q + mean(|g| / s)
            "hessian=abs_gradient_normalised, floor 1": {"hessian": "abs_gradient_normalised",
                                                          "hessian_floor": 1.0},
            "sigma=0.1": {"sigma": 0.1, "hessian": "constant"},  # constant: sigma_min is 0.1
            "sigma=1": {"sigma": 1.0, "hessian": "constant"},    # annealed 1 -> 0.1
            "n_samples=4": {"n_samples": 4, "hessian": "constant"},
            "nu=0.1": {"nu": 0.1, "hessian": "constant"},        # the spread floor
            "learning_rate=0.5": {"learning_rate": 0.5, "hessian": "constant"},
            # levers over the curvature-hessian default (CURVATURE): the noise scale and the
            # cutoff's reach; "default, sigma=0.1" (constant: sigma_min is 0.1) became the
            # package default
            "default, sigma=0.1": {"sigma": 0.1},
            "default, sigma 0.3 -> 0.03": {"sigma_min": 0.03},
            # trained on NDCG@10 / the whole list's NDCG, for a test target NDCG@5: LightGBM's
            # lambdarank and XGBoost's rank:ndcg also pair documents far below the cutoff
            "default, train top=10": {"train_top": 10},
            "default, train on the whole list": {"train_top": None},
            # the relative noise scale from the spread of the top of the list, not all of it
            "default, spread of the top 10": {"spread_top": 10},
            "default, spread of the top 20": {"spread_top": 20},
            # the two NDCG@5 levers together, and the estimator's variance at CURVATURE
            "default, sigma=0.1, train on the whole list": {"sigma": 0.1, "train_top": None},
            "default, n_samples=4": {"n_samples": 4},
            # today's default with LightGBM's leaf regularisers in every booster (no L2, a
            # minimum leaf hessian of 1e-3): XGBoost's reg_lambda = 1 / min_child_weight = 1 and
            # CatBoost's l2_leaf_reg = 3 shrink the leaves of small curvature (documents far down
            # a long list)
            "default, sigma=0.1, L2 0, min hessian 1e-3": {"sigma": 0.1,
                                                           "leaves": SMALL_HESSIAN},
            # MRR's reach (MRR target only): a relevant document continues the cascade with
            # probability reach, so the relevant documents below the first get a gradient;
            # "MRR reach 0.3" is the package default since the study chose it
            "default, sigma=0.1, MRR reach 0.1": {"sigma": 0.1, "reach": 0.1},
            "default, sigma=0.1, MRR reach 0.3": {"sigma": 0.1, "reach": 0.3},
            "default, sigma=0.1, MRR reach 0.5": {"sigma": 0.1, "reach": 0.5},
            # a smaller constant noise than today's (sigma_min follows: the floor is
            # min(sigma, sigma_min))
            "default, sigma=0.05": {"sigma": 0.05},
            # the training cutoff grows with the query (NDCG@5 target only): a query of n
            # documents is trained on NDCG at max(5, ceil(share x n)); "min_top_share=0.1" is
            # the package default since the study chose it
            "default, sigma=0.1, min_top_share=0.1": {"sigma": 0.1, "min_top_share": 0.1},
            "default, sigma=0.1, min_top_share=0.2": {"sigma": 0.1, "min_top_share": 0.2}}
#: the curvature-hessian default (issue 22, sigma 0.3 annealed): the reference of the levers
#: named "default, ..."
CURVATURE = "hessian=abs_gradient_normalised"
#: the package default since the study chose it: the reference of the last column
TODAY = "default, sigma=0.1"
#: the variants that change the training cutoff: targets with a cutoff only (NDCG@5, not MRR)
CUTOFF_VARIANTS = {v for v, s in VARIANTS.items() if "train_top" in s or "min_top_share" in s}
#: the variants that give MRR a reach: targets with a reach only (MRR)
REACH_VARIANTS = {v for v, s in VARIANTS.items() if s.get("reach")}


def runs_for(variant, target) -> bool:
    """Whether ``variant`` is measured for ``target`` (the cutoff and reach levers need one)."""
    target = parse_target(target)
    return not (variant in CUTOFF_VARIANTS and target.top is None
                or variant in REACH_VARIANTS and not target.has_reach)
#: data set -> folds and seeds of the study (kept small: a 2-core machine shared by three)
PLAN = {"mq2008": ([1, 2, 3, 4, 5], [0, 1, 2]), "lightgbm_lambdarank": ([1], [0, 1, 2]),
        "longlists": ([1, 2, 3, 4, 5], [0])}


def run_variant(dataset, booster, variant, target, fold, seed, split, cfg, depth=6):
    """One run's row: the native (``variant == NATIVE``) or an SR-R1soft variant."""
    if variant == NATIVE:
        row = run_one(booster, NATIVE, target, fold, seed, split, cfg, depth)
    else:
        row = run_one(booster, SR, target, fold, seed, split, cfg, depth,
                      overrides={**STUDY_BASE, **VARIANTS[variant]})
    return dict(row, dataset=dataset, method=variant, max_trees=cfg.max_trees, depth=depth)


def _label(row):
    """The data set column: its name, and the tree depth when it is not 6."""
    depth = row.get("depth", 6)
    return row["dataset"] + ("" if depth == 6 else f" (depth {depth})")


def paired(rows, a, b):
    """``(mean difference x100, 95% half-width x100, two-sided p, queries)`` of the per-query
    values of method ``a`` minus ``b`` over the (fold, seed) runs both have (each query's
    difference averaged over its fold's seeds), or ``None``."""
    from ._stats import fold_paired_differences

    ra = {(r["fold"], r["seed"]): r["per_query"] for r in rows if r["method"] == a}
    rb = {(r["fold"], r["seed"]): r["per_query"] for r in rows if r["method"] == b}
    if not set(ra) & set(rb) or a == b:
        return None
    d = fold_paired_differences(ra, rb)
    if not d.std() > 0:
        return 0.0, 0.0, 1.0, d.size
    half = stats.t.ppf(0.975, d.size - 1) * d.std(ddof=1) / np.sqrt(d.size)
    p = stats.ttest_1samp(d, 0.0).pvalue
    return float(d.mean()) * 100, float(half) * 100, float(p), int(d.size)


def _cell(result):
    if result is None:
        return ""
    diff, half, p, n = result
    mark = "" if p < 0.05 else " (n.s.)"
    return f"{diff:+.2f} ± {half:.2f}, p = {p:.3f}{mark}"


def summarise(rows):
    """The markdown table of every (data set, target) in ``rows``."""
    lines = ["| data set | booster | target | method | runs | test mean ± 95% CI | trees | vs "
             "the unit hessian (pts ± 95% CI, two-sided p) | vs the curvature hessian | "
             "vs the native | vs today's default |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    groups = dict.fromkeys((_label(r), r["booster"], r["target"]) for r in rows)

    def order(group):   # the paper's targets first, in their order, then the others by name
        target = group[2]
        return group[:2] + ((TARGETS.index(target), "") if target in TARGETS
                            else (len(TARGETS), target))

    for dataset, booster, target in sorted(groups, key=order):
        mine = [r for r in rows if (_label(r), r["booster"], r["target"]) ==
                (dataset, booster, target)]
        for method in [NATIVE, *VARIANTS]:
            runs = [r for r in mine if r["method"] == method]
            if not runs:
                continue
            means = np.array([r["mean"] for r in runs]) * 100
            half = (stats.t.ppf(0.975, len(means) - 1) * means.std(ddof=1) /
                    np.sqrt(len(means))) if len(means) > 1 else float("nan")
            trees = np.mean([r["n_trees"] for r in runs])
            lines.append(f"| {dataset} | {booster} | {target} | {method} | {len(runs)} | "
                         f"{means.mean():.2f} ± {half:.2f} | {trees:.0f} | "
                         f"{_cell(paired(mine, method, DEFAULT))} | "
                         f"{_cell(paired(mine, method, CURVATURE))} | "
                         f"{_cell(paired(mine, method, NATIVE))} | "
                         f"{_cell(paired(mine, method, TODAY))} |")
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--datasets", nargs="+", default=list(PLAN), choices=list(PLAN))
    ap.add_argument("--variants", nargs="+", default=list(VARIANTS),
                    choices=list(VARIANTS) + [NATIVE])
    ap.add_argument("--boosters", nargs="+", default=["lightgbm"],
                    choices=["lightgbm", "xgboost", "catboost"])
    ap.add_argument("--targets", nargs="+", default=list(TARGETS), type=target_arg)
    ap.add_argument("--folds", type=int, nargs="+", default=None, help="default: PLAN's")
    ap.add_argument("--seeds", type=int, nargs="+", default=None, help="default: PLAN's")
    ap.add_argument("--depth", type=int, default=6)
    ap.add_argument("--max-trees", type=int, default=500)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--out", type=Path, default=Path("benchmarks/results/sr_levers"))
    args = ap.parse_args(argv)
    writable_folder(args.out)
    cache = args.out / "levers.jsonl"
    rows = read_rows(cache)
    cfg = TrainConfig(max_trees=args.max_trees, patience=50, threads=args.threads)
    done = {(r["dataset"], r["booster"], r["method"], r["target"], r["fold"], r["seed"],
             r["max_trees"], r.get("depth", 6)) for r in rows}
    methods = [NATIVE] + [v for v in args.variants if v != NATIVE]
    for dataset in args.datasets:
        folds, seeds = PLAN[dataset]
        for fold in args.folds or folds:
            split = load_split(dataset, fold)
            for seed in args.seeds or seeds:
                for booster, target, method in product(args.boosters, args.targets, methods):
                    if not runs_for(method, target):
                        continue
                    if (dataset, booster, method, target, fold, seed, cfg.max_trees,
                            args.depth) in done:
                        continue
                    row = run_variant(dataset, booster, method, target, fold, seed, split, cfg,
                                      args.depth)
                    append_row(cache, row)
                    rows.append(row)
                    print(f"{dataset} {booster} fold {fold} seed {seed} {target:6s} {method:22s} "
                          f"{row['mean']:.4f} ({row['n_trees']} trees, {row['wall_s']} s)",
                          flush=True)
    table = summarise(rows)
    header = ("# StochasticRank's levers\n\nCommand: `python -m "
              "benchmarks.sr_levers` (see its docstring for the protocol); folds and seeds "
              f"per data set {PLAN}; depth 6 unless the data set column says otherwise; each "
              "query's difference averaged over its fold's seeds; at most "
              f"{args.max_trees} trees. Test metrics x100, worst "
              "ties, queries without a relevant document skipped. Differences: mean paired "
              "per-query difference ± the 95% t half-width, two-sided paired t-test; n.s. = "
              "p >= 0.05. Every variant starts from sigma 0.3 annealed to 0.1 (`STUDY_BASE`); "
              "'vs the curvature hessian': against `hessian=abs_gradient_normalised` (the "
              "default from issue 22's hessian change until `default, sigma=0.1` replaced it); "
              "'vs today's default': against `default, sigma=0.1`, the default the later "
              "variants were measured against; since then MRR's default is `default, "
              "sigma=0.1, MRR reach 0.3` and NDCG@5's `default, sigma=0.1, min_top_share=0.1`."
              "\n\n")
    (args.out / "levers.md").write_text(header + table + "\n")
    print(table)
    return rows


if __name__ == "__main__":
    main()
