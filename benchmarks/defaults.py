"""Real data at the package defaults: StochasticRank as a user gets it against native LambdaMART.

    python -m benchmarks.defaults [--dataset mq2008|lightgbm_lambdarank|longlists|longlists_dense
        |longlists_web | --data PATH
        [--cache-dir DIR]] [--folds 1 2 3 4 5] [--seeds 0 1 2]
        [--boosters lightgbm xgboost catboost] [--depth 6]
        [--out benchmarks/results/<dataset>_defaults] [--threads 1] [--workers 1 | --scheduler
        ADDRESS] [--no-progress]

MQ2008 has 5 folds; the LightGBM lambdarank sample one train/test split, whose validation set
is a fixed 20% of the training queries (:func:`benchmarks._data.load_split`). The generated
long lists (:mod:`stochrank_objectives.longlists`, 5 folds each) come in three regimes, each
drawn to match a kind of data: ``longlists`` (``sparse``) the published statistics of web search
at scale (MSLR-WEB30K, Yahoo! LTR: 150-700 documents per query, about 4.5% relevant, grades
0-4); ``longlists_dense`` a small dense real set (about 150 documents per query, 30% relevant in
grades 0-2 as 70 / 16 / 14%, 45 features, 106 queries: OHSUMED's statistics, and its difficulty,
LightGBM's lambdarank at test NDCG@10 0.45 as learners on OHSUMED); ``longlists_web`` a small web real set
(about 440 documents, 18% relevant in grades 0-4 as 81.8 / 12.3 / 4.7 / 0.6 / 0.6%, 42 text-match
and link features, 61 queries). ``REGIMES`` there holds each regime's settings and statistics. ``--data PATH``
takes any LETOR folder (as in :mod:`benchmarks.compare`); the folds default to all of its.

No tuning at all: every method gets the same booster settings (learning rate 0.1, ``--depth``
6 or 4 -- LightGBM ``max_depth = depth``, ``num_leaves = 2^depth`` --, the booster's own L2
default, at most 500 trees, early stopping after 50 rounds on the validation target with worst
ties) and every objective its defaults:

* ``SR-R1soft``: ``StochasticRank(metric=..., top=...)`` (the package defaults, mu = 0);
* ``SR-R1``: the same with ``mu = 0.1`` (the relevance-shifted noise of Theorem 1);
* ``YetiLoss``: the package's ``YetiRank`` in the target's mode, ``mode="NDCG", top=5,
  dcg_type="Exp"`` (the test gain) or ``mode="MRR"``, with every later partner
  (``num_neighbors=-1``: each first position up to the cutoff is paired with every document
  below it, LambdaMART's top-k pairs; CatBoost's default of one neighbour trailed the native
  LambdaMART in LightGBM and XGBoost) and CatBoost's other defaults (10 permutations,
  logistic noise). Its exact pairwise-logistic hessian is about
  0.01-0.1 per document, so it trains with L2 = 0 (as CatBoost's YetiRank) and a minimum leaf
  hessian of 1e-3 (LightGBM ``min_sum_hessian_in_leaf``, its default; XGBoost
  ``min_child_weight``, default 1, which would forbid leaves of fewer than 10-100 documents);
* ``E-lambda-MART``: Bruch et al.'s Gumbel-perturbed LambdaMART (beta = 0.25, 8 samples);
* ``LambdaLoss``: the package's NDCG-Loss2++ (mu = 5), NDCG@5 only (it has no MRR form);
* the natives, whose names start with ``native``: ``native LambdaMART`` -- LightGBM
  ``lambdarank`` (truncation 5), XGBoost ``rank:ndcg`` (top-5 pairs), CatBoost
  ``LambdaMart:metric=NDCG;top=5`` (``metric=MRR`` for the MRR target) -- and ``native
  YetiRank`` (CatBoost ``YetiRank``, CatBoost only).

Targets (the paper's protocol): NDCG@5 on graded labels and MRR on binarised labels
(``label > 0``); for MRR the LightGBM and XGBoost natives train their LambdaMART on the
binarised labels. Test metrics use worst-permutation ties and leave out queries without a
relevant document. Reported per booster and target: mean and 95% t-interval over folds x
seeds, and the one-tailed paired t-test over test queries of each method against the
booster's **best native** for that target (the native with the highest test mean: the
strongest reference there is, chosen after the fact); each query's difference is averaged
over its fold's seeds (they share its test queries), then pooled over folds. The raw rows
(per-query values) stay in the JSONL next to the table.
"""

from __future__ import annotations

import argparse
from functools import partial
from pathlib import Path

import numpy as np
from scipy import stats
from tqdm.auto import tqdm

from ._data import load_split, resolve_dataset
from ._executor import Execution, add_execution_args, run_tasks, worker_split
from ._fixed import DEFAULTS as METHODS, TARGETS, applies, is_native, run_one
from ._jsonl import append_row, read_rows
from ._stats import fold_paired_differences
from ._study import add_data_args, writable_folder
from ._trials import TrainConfig


def best_natives(rows, booster, target):
    """The natives' rows of ``booster`` and ``target`` by method, and the best one's name (the
    highest mean over its runs; ``None`` without natives)."""
    natives = {}
    for r in rows:
        if (r["booster"], r["target"]) == (booster, target) and is_native(r["method"]):
            natives.setdefault(r["method"], []).append(r)
    if not natives:
        return natives, None
    return natives, max(natives, key=lambda m: np.mean([r["mean"] for r in natives[m]]))


def paired(mine, reference):
    """``(difference in points, t, one-tailed p)`` of the per-query values of ``mine`` against
    ``reference`` over the (fold, seed) runs both have, each query's difference averaged over
    its fold's seeds (:func:`benchmarks._stats.fold_paired_differences`); ``None`` if none or
    no variation."""
    d = fold_paired_differences({(r["fold"], r["seed"]): r["per_query"] for r in mine},
                                {(r["fold"], r["seed"]): r["per_query"] for r in reference})
    if not d.size or not d.std() > 0:
        return None
    t, p = stats.ttest_1samp(d, 0.0, alternative="greater")
    return float(np.mean(d)) * 100, float(t), float(p)


def summarise(rows, boosters):
    lines = ["| booster | target | method | test mean ± 95% CI | trees | paired t vs the best "
             "native (method - native, one-tailed p) |", "| --- | --- | --- | --- | --- | --- |"]
    for booster in boosters:
        for target in TARGETS:
            natives, best = best_natives(rows, booster, target)
            for method in METHODS:
                mine = [r for r in rows if (r["booster"], r["target"], r["method"]) ==
                        (booster, target, method)]
                if not mine:
                    continue
                means = np.array([r["mean"] for r in mine])
                half = (stats.t.ppf(0.975, len(means) - 1) * means.std(ddof=1) /
                        np.sqrt(len(means))) if len(means) > 1 else float("nan")
                test = "best native" if method == best else ""
                result = paired(mine, natives[best]) if best and method != best else None
                if result:
                    test = f"{result[0]:+.2f} pts vs {best}, t = {result[1]:.2f}, " \
                           f"p = {result[2]:.3f}"
                trees = np.mean([r["n_trees"] for r in mine])
                lines.append(f"| {booster} | {target} | {method} | {means.mean() * 100:.2f} ± "
                             f"{half * 100:.2f} | {trees:.0f} | {test} |")
    return "\n".join(lines)


def methods_option(methods) -> str:
    """`` --methods ...`` as the command line wrote it, or nothing when every method ran."""
    if list(methods) == list(METHODS):
        return ""
    return " --methods " + " ".join(f'"{m}"' if " " in m else m for m in methods)


def run_task(task, dataset, cfg, depth, loader=load_split):
    """One run ``(booster, method, target, fold, seed)`` where it executes (this process or a
    worker), its fold read once per process."""
    booster, method, target, fold, seed = task
    split = worker_split(loader, dataset, fold)
    return run_one(booster, method, target, fold, seed, split, cfg, depth)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_data_args(ap)
    ap.add_argument("--folds", type=int, nargs="+", default=None,
                    help="default: every fold of the data set")
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--boosters", nargs="+", default=["lightgbm", "xgboost", "catboost"])
    ap.add_argument("--methods", nargs="+", default=list(METHODS), choices=list(METHODS))
    ap.add_argument("--max-trees", type=int, default=500)
    ap.add_argument("--depth", type=int, default=6)
    # Not the compare/ablation folder: their cache reads every *.jsonl there.
    ap.add_argument("--out", type=Path, default=None,
                    help="default benchmarks/results/<dataset>_defaults")
    add_execution_args(ap)
    args = ap.parse_args(argv)
    dataset, args.folds = resolve_dataset(args)
    args.dataset = str(dataset)
    if args.out is None:
        args.out = Path(f"benchmarks/results/{args.dataset}_defaults")
    cfg = TrainConfig(max_trees=args.max_trees, patience=50, threads=args.threads)
    writable_folder(args.out)   # before any training, not when the first run is appended
    tag = "_".join(args.boosters) + ("" if args.depth == 6 else f"_depth{args.depth}")
    cache = args.out / f"defaults_{tag}.jsonl"
    rows = read_rows(cache)
    done = {(r["booster"], r["method"], r["target"], r["fold"], r["seed"]) for r in rows}
    tasks = [(booster, method, target, fold, seed) for fold in args.folds
             for booster in args.boosters for target in TARGETS for method in args.methods
             for seed in args.seeds if applies(booster, method, target)
             and (booster, method, target, fold, seed) not in done]
    finished = {}
    work = partial(run_task, dataset=dataset, cfg=cfg, depth=args.depth)
    for task, row in run_tasks(work, tasks, Execution.from_args(args),
                               desc=f"{args.dataset} defaults runs"):
        append_row(cache, row)  # at once: a killed run resumes after the last finished one
        finished[task] = row
        tqdm.write(f"fold {row['fold']} {row['booster']:8s} {row['target']:6s} "
                   f"{row['method']:18s} seed {row['seed']} {row['mean']:.4f} "
                   f"({row['n_trees']} trees, {row['wall_s']} s)")
    rows += [finished[task] for task in tasks]  # task order, wherever the runs finished
    # the table is this command's folds and seeds only: rows of other seeds left in the JSONL by
    # an earlier command would make the means and the paired tests cover different runs
    rows = [r for r in rows if r["fold"] in args.folds and r["seed"] in args.seeds]
    table = summarise(rows, args.boosters)
    data_option = f"--data {args.data}" if args.data else f"--dataset {args.dataset}"
    header = (f"# {args.dataset} at the package defaults\n\nCommand: `python -m "
              f"benchmarks.defaults {data_option} --seeds "
              f"{' '.join(map(str, args.seeds))} --boosters {' '.join(args.boosters)} "
              f"--depth {args.depth}{methods_option(args.methods)}`; folds {args.folds}, "
              f"seeds {args.seeds}; "
              "see the script's docstring for the protocol. Test metrics x100, worst ties, "
              "queries without a relevant document skipped.\n\n")
    (args.out / f"defaults_{tag}.md").write_text(header + table + "\n")
    print(table)


if __name__ == "__main__":
    main()
