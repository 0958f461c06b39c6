"""Table 2 of the StochasticRank paper: every ranking objective in every booster, tuned and tested.

    python -m benchmarks.compare [--dataset mq2008|lightgbm_lambdarank|longlists|longlists_dense
        |longlists_web | --data PATH
        [--cache-dir DIR]] [--folds 1 2 3 4 5]
        [--seeds 0] [--boosters lightgbm xgboost catboost] [--methods ...] [--targets NDCG@5 MRR]
        [--budget 5] [--max-trees 300] [--patience 50] [--lr-min 0.01] [--threads 1]
        [--out benchmarks/results/<dataset>]

``--data PATH``: any LETOR folder (``Fold1..FoldK`` or the split files directly; see
:mod:`stochrank_objectives.letor`), parsed once into ``--cache-dir``; results go to
``benchmarks/results/<folder name>``.

For every booster x method x target (``NDCG@5``; ``MRR`` with binarised labels where the method
can optimise it) and every fold x seed, ``--budget`` random-search trials (supplement F ranges,
see :mod:`benchmarks._search`) are trained with early stopping on the validation split; the
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

import sys

from ._boosters import BOOSTERS
from ._data import validation_note
from ._registry import COMPARE_METHODS, TUNED_METHODS as METHODS
from ._reports import fmt, plot_bars, plot_curves
from ._stats import paired_test, summarise
from ._study import Study, run_study, study_parser
from ._targets import TARGETS, TEST_METRICS, target_arg

REPORT_ONLY_NOTE = ("Report rebuilt from the cache (`--report-only`): the trials were trained by "
                    "the same command without `--report-only` (which resumes from the cache); "
                    "the budget below is what the cache holds for these folds and seeds.", "")


def build_markdown(study: Study, methods, sfx=""):
    args, selected = study.args, study.selected
    boosters = args.boosters
    labels = {m: METHODS[m].label for m in methods}
    summary = summarise(selected)
    summary_skip = summarise(selected, "_skip")
    failed = [r for r in study.rows if "error" in r]
    lines = study.header(f"Comparison on {args.dataset} (StochasticRank paper, Table 2 protocol)",
                         "compare", REPORT_ONLY_NOTE if args.report_only else ())
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
    if validation_note(args.dataset):
        lines.append(f"- Validation split: {validation_note(args.dataset)}.")
    lines += [f"- {study.environment()}.", ""]
    if failed:
        lines += [f"- {len(failed)} trial(s) failed (recorded in the CSV with their error).", ""]

    # the paper's targets (always their columns), then any other target of the command
    shown = list(dict.fromkeys([*TARGETS, *args.targets]))
    for booster in boosters:
        present = [m for m in methods if any((booster, m, t) in summary for t in shown)]
        if not present:
            continue
        lines += [f"## {booster}", "",
                  "Table 2 style (" + ", ".join(f"{t} of the {t}-optimised model" for t in shown)
                  + "; x100):", "",
                  "| method | " + " | ".join(shown) + " | runs | trees |",
                  "| " + " | ".join(["---"] * (len(shown) + 3)) + " |"]
        for m in present:
            stats = [summary.get((booster, m, t)) for t in shown]
            runs = "/".join(str(s["n"]) for s in stats if s)
            trees = "/".join(f"{s['trees']:.0f}" for s in stats if s)
            lines.append(f"| {labels[m]} | "
                         + " | ".join(fmt(s[t]) if s else "-" for t, s in zip(shown, stats))
                         + f" | {runs} | {trees} |")
        lines.append("")
        for metric in shown:   # each target's test metric is itself
            for skip in (False, True):
                res = paired_test(selected, booster, metric, present, metric, skip=skip)
                if res:
                    best, second, p, n = res
                    lines.append(f"- {metric} ({'skip' if skip else 'default'} convention): best "
                                 f"{labels[best]}, runner-up {labels[second]}; paired one-tailed "
                                 f"t-test over {n} test queries (each averaged over its "
                                 f"fold's seeds): "
                                 f"p = {p:.3g}{' (significant at 0.05)' if p < 0.05 else ''}")
        for i, target in enumerate(shown):   # the first target's table always, then any other's
            if i and not any((booster, m, target) in summary for m in present):
                continue
            heading = (f"All test metrics of the {target}-optimised models ("
                       + ("default convention | queries without a relevant document skipped"
                          if i == 0 else "default | skip") + "):")
            lines += ["", heading, "",
                      "| method | " + " | ".join(TEST_METRICS) + " | "
                      + " | ".join(f"{m} skip" for m in TEST_METRICS) + " |",
                      "| --- |" + " --- |" * (2 * len(TEST_METRICS))]
            for m in present:
                s, k = summary.get((booster, m, target)), summary_skip.get((booster, m, target))
                if s:
                    lines.append(f"| {labels[m]} | "
                                 + " | ".join(fmt(s[x]) for x in TEST_METRICS) + " | "
                                 + " | ".join(fmt(k[x]) for x in TEST_METRICS) + " |")
        lines.append("")
    lines += [f"Files: `compare{sfx}_runs.csv` (every trial), `runs.jsonl` (cache with per-query "
              f"test values and validation curves), `compare{sfx}_bars.png`, "
              f"`curves{sfx}_<booster>.png`.", ""]
    return lines


def main(argv=None):
    ap = study_parser(__doc__, default_boosters=BOOSTERS)
    ap.add_argument("--methods", nargs="+", default=COMPARE_METHODS, choices=list(METHODS))
    ap.add_argument("--targets", nargs="+", default=list(TARGETS), type=target_arg,
                    help="NDCG@5 and MRR (default), or any NAME@k of the package's metrics "
                         "(ERR@10, ...)")
    ap.add_argument("--tag", default="",
                    help="suffix of the output files (compare_<tag>.md, ...), for reports of "
                         "different booster/method subsets in one folder")
    args = ap.parse_args(argv)
    study = run_study(args, args.methods, args.targets, "runs.jsonl")
    sfx = f"_{args.tag}" if args.tag else ""
    study.write_csv(f"compare{sfx}_runs.csv")
    lines = build_markdown(study, args.methods, sfx)
    if not args.no_plots:
        labels = {m: METHODS[m].label for m in args.methods}
        plot_bars(summarise(study.selected), args.boosters, args.methods, labels,
                  study.out / f"compare{sfx}_bars.png")
        for b in args.boosters:
            plot_curves(study.selected, b, args.methods, labels,
                        study.out / f"curves{sfx}_{b}.png")
    study.write_report(f"compare{sfx}.md", lines)
    return 0


if __name__ == "__main__":
    sys.exit(main())
