"""Table 2 of the StochasticRank paper: every ranking objective in every booster, tuned and tested.

    python -m benchmarks.compare [--dataset mq2008|lightgbm_lambdarank] [--folds 1 2 3 4 5]
        [--seeds 0] [--boosters lightgbm xgboost catboost] [--methods ...] [--targets NDCG@5 MRR]
        [--budget 5] [--max-trees 300] [--patience 50] [--lr-min 0.01] [--threads 1]
        [--out benchmarks/results/<dataset>]

For every booster x method x target (``NDCG@5``; ``MRR`` with binarised labels where the method
can optimise it) and every fold x seed, ``--budget`` random-search trials (supplement F ranges,
see :mod:`benchmarks._harness`) are trained with early stopping on the validation split; the
trial with the best validation target metric is evaluated on test. Reported: mean and 95%
confidence interval (t) over folds x seeds of NDCG@5, NDCG@10, MRR and ERR@10 (worst-permutation
ties; queries without a relevant document scored by the package convention, NDCG = 1 and
MRR = ERR = 0, and separately skipped), and per booster the paired one-tailed t-test over
queries between the best method and the runner-up.

Methods (``--methods``): native_lambdamart, native_yetirank (CatBoost), native_sr (CatBoost's
StochasticRank, R1), lambdamart, lambdaloss, e_lambdamart, e_lambdaloss, softrank, approxndcg,
e_approxndcg, smoothndcg, listnet, sr_r1soft, sr_r1.

Outputs in the output folder: ``runs.jsonl`` (the cache: one line per finished trial, keyed by a
hash of its configuration; rerunning the command resumes), ``compare_runs.csv`` (every trial:
params, fold, seed, metrics, wall time, selected flag), ``compare.md`` (tables),
``compare_bars.png`` and ``curves_<booster>.png`` (validation NDCG@5 of each method's selected
trial on the first fold and seed); ``--tag T`` names them ``compare_T...``.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from . import _harness as H


def build_markdown(args, rows, selected, space, boosters, methods, wall_total, started, sfx=""):
    labels = {m: H.METHODS[m].label for m in methods}
    summary = H.summarise(selected)
    summary_skip = H.summarise(selected, "_skip")
    n_trials = sum(1 for r in rows if "error" not in r)
    failed = [r for r in rows if "error" in r]
    lines = [f"# Comparison on {args.dataset} (StochasticRank paper, Table 2 protocol)", "",
             f"Command: `python -m benchmarks.compare {' '.join(sys.argv[1:])}`", ""]
    if args.report_only:
        lines += ["Report rebuilt from the cache (`--report-only`): the trials were trained by "
                  "the same command without `--report-only` (which resumes from the cache); "
                  "the budget below is what the cache holds for these folds and seeds.", ""]
    lines += H.budget_lines(args, space, n_trials, len(selected), wall_total)
    lines += [
        "- Selection: per (booster, method, target, fold, seed) the trial with the best "
        "validation target metric; its test metrics are reported. Mean ± 95% confidence "
        "interval (Student t) over folds x seeds; no interval with a single run.",
        "- Test metrics: worst-permutation ties; NDCG with 2^r - 1 gains; MRR relevant iff "
        "label > 0; ERR@10 with R = (2^r - 1) / 2^g_max. Queries with no relevant document "
        "count as NDCG = 1, MRR = ERR = 0 (package convention, what the boosters report) in "
        "the main tables; the 'skip' table leaves them out.",
        "- Target MRR: training and validation labels binarised 1{y > 0} (paper, section 7). "
        "'runs' and 'trees' (mean trees of the selected early-stopped models): NDCG@5 / MRR "
        "target.",
    ]
    if args.dataset == "lightgbm_lambdarank":
        lines.append(f"- Validation split: a random {H.VALID_FRACTION:.0%} of the train queries "
                     f"(seed {H.VALID_SPLIT_SEED}), the same for every run; test = rank.test.")
    lines += [f"- {H.environment_line(H.TrainConfig(threads=args.threads))}; wall clock of this "
              f"invocation {(time.time() - started) / 60:.1f} min (cached trials are not "
              "retrained).", ""]
    if failed:
        lines += [f"- {len(failed)} trial(s) failed (recorded in the CSV with their error).", ""]

    for booster in boosters:
        present = [m for m in methods if any((booster, m, t) in summary for t in H.TARGETS)]
        if not present:
            continue
        lines += [f"## {booster}", "",
                  "Table 2 style (NDCG@5 of the NDCG@5-optimised model, MRR of the "
                  "MRR-optimised model; x100):", "",
                  "| method | NDCG@5 | MRR | runs | trees |", "| --- | --- | --- | --- | --- |"]
        for m in present:
            nd = summary.get((booster, m, "NDCG@5"))
            mr = summary.get((booster, m, "MRR"))
            runs = "/".join(str(s["n"]) for s in (nd, mr) if s)
            trees = "/".join(f"{s['trees']:.0f}" for s in (nd, mr) if s)
            lines.append(f"| {labels[m]} | {H.fmt(nd['NDCG@5']) if nd else '-'} | "
                         f"{H.fmt(mr['MRR']) if mr else '-'} | {runs} | {trees} |")
        lines.append("")
        for target, metric in (("NDCG@5", "NDCG@5"), ("MRR", "MRR")):
            for skip in (False, True):
                res = H.paired_test(selected, booster, target, present, metric, skip=skip)
                if res:
                    best, second, p, n = res
                    lines.append(f"- {metric} ({'skip' if skip else 'default'} convention): best "
                                 f"{labels[best]}, runner-up {labels[second]}; paired one-tailed "
                                 f"t-test over {n} test queries (folds x seeds pooled): "
                                 f"p = {p:.3g}{' (significant at 0.05)' if p < 0.05 else ''}")
        details = (("NDCG@5", "All test metrics of the NDCG@5-optimised models (default "
                               "convention | queries without a relevant document skipped):"),
                   ("MRR", "All test metrics of the MRR-optimised models (default | skip):"))
        for target, heading in details:
            if target == "MRR" and not any((booster, m, "MRR") in summary for m in present):
                continue
            lines += ["", heading, "",
                      "| method | " + " | ".join(H.TEST_METRICS) + " | "
                      + " | ".join(f"{m} skip" for m in H.TEST_METRICS) + " |",
                      "| --- |" + " --- |" * (2 * len(H.TEST_METRICS))]
            for m in present:
                s, k = summary.get((booster, m, target)), summary_skip.get((booster, m, target))
                if s:
                    lines.append(f"| {labels[m]} | "
                                 + " | ".join(H.fmt(s[x]) for x in H.TEST_METRICS) + " | "
                                 + " | ".join(H.fmt(k[x]) for x in H.TEST_METRICS) + " |")
        lines.append("")
    lines += [f"Files: `compare{sfx}_runs.csv` (every trial), `runs.jsonl` (cache with per-query "
              f"test values and validation curves), `compare{sfx}_bars.png`, "
              f"`curves{sfx}_<booster>.png`.", ""]
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    H.add_common_args(ap, default_budget=5, default_folds=[1, 2, 3, 4, 5])
    ap.add_argument("--boosters", nargs="+", default=list(H.BOOSTERS), choices=H.BOOSTERS)
    ap.add_argument("--methods", nargs="+", default=H.COMPARE_METHODS,
                    choices=list(H.METHODS))
    ap.add_argument("--targets", nargs="+", default=list(H.TARGETS), choices=H.TARGETS)
    ap.add_argument("--tag", default="",
                    help="suffix of the output files (compare_<tag>.md, ...), for reports of "
                         "different booster/method subsets in one folder")
    ap.add_argument("--report-only", action="store_true",
                    help="write the tables and plots from the cache without training")
    args = ap.parse_args(argv)
    if args.dataset == "lightgbm_lambdarank" and args.folds != [1]:
        args.folds = [1]
    started = time.time()
    out = Path(args.out) if args.out else H.RESULTS / args.dataset
    space = H.Space(lr_min=args.lr_min)
    cfg = H.TrainConfig(max_trees=args.max_trees, patience=args.patience, threads=args.threads)
    cache = H.Cache(out, "runs.jsonl")
    jobs = H.make_jobs(args.dataset, args.boosters, args.methods, args.targets, args.folds,
                       args.seeds, args.budget)
    if args.report_only:
        rows = [cache.get(H.stable_hash(j.key_dict(space, cfg))) for j in jobs]
        rows = [r for r in rows if r is not None]
    else:
        rows = H.run_all(jobs, args.dataset, space, cfg, cache, progress=not args.no_progress,
                         log=lambda s: print(s, file=sys.stderr, flush=True))
    selected = H.select_runs(rows)
    wall = sum(r.get("wall_s", 0.0) for r in rows)
    sfx = f"_{args.tag}" if args.tag else ""
    H.write_csv(rows, selected, out / f"compare{sfx}_runs.csv")
    md = build_markdown(args, rows, selected, space, args.boosters, args.methods, wall, started,
                        sfx)
    if not args.no_plots:
        labels = {m: H.METHODS[m].label for m in args.methods}
        H.plot_bars(H.summarise(selected), args.boosters, args.methods, labels,
                    out / f"compare{sfx}_bars.png")
        for b in args.boosters:
            H.plot_curves(selected, b, args.methods, labels, out / f"curves{sfx}_{b}.png")
    (out / f"compare{sfx}.md").write_text(md)
    print(md)
    return 0


if __name__ == "__main__":
    sys.exit(main())
