"""Table 3 of the StochasticRank paper: what each ingredient of StochasticRank contributes.

    python -m benchmarks.ablation [--dataset mq2008 | --data PATH] [--folds 1 2 3 4 5] [--seeds 0]
        [--boosters lightgbm] [--budget 5] [--max-trees 300] [--patience 50] [--out DIR]

Variants, all ``StochasticRank(metric="NDCG", top=5)`` with one noise sample per gradient
(the paper's setting), trained for NDCG@5 with the protocol of :mod:`benchmarks.compare`
(random search on the validation split, early stopping, test on the selected trial):

* REINFORCE: ``estimator="reinforce", sfa=0, mu=0``, no SGLB;
* CCS: ``estimator="ccs", sfa=0, mu=0``, no SGLB;
* CCS+SFA: ``sfa=1, mu=0``, no SGLB;
  (these three in the paper's parametrisation, ``StochasticRank.paper``: absolute sigma = 1,
  nu = 0.01)
* +relative smoothing, annealing, SGLB (SR-R1soft): the package's StochasticRank, ``mu=0``,
  relative sigma and its half-life tuned, with SGLB (shrink rate, temperature tuned);
* +mu (SR-R1): as SR-R1soft with ``mu`` tuned.

The last two are the ``sr_r1soft`` / ``sr_r1`` runs of :mod:`benchmarks.compare`: trials already
in the output folder's cache (``runs.jsonl`` of compare, ``ablation_runs.jsonl`` of this
command) are reused. Outputs: ``ablation.md``, ``ablation_runs.csv``, ``ablation_bars.png``,
``ablation_curves_<booster>.png``.
"""

from __future__ import annotations

import sys

from ._registry import ABLATION_LABELS, ABLATION_METHODS
from ._reports import fmt, plot_bars, plot_curves
from ._stats import paired_test, summarise
from ._study import run_study, study_parser
from ._targets import TARGETS, target_arg


def main(argv=None):
    ap = study_parser(__doc__, default_boosters=["lightgbm"])
    ap.add_argument("--target", default=TARGETS[0], type=target_arg,
                    help="NDCG@5 (default), MRR or any NAME@k of the package's metrics")
    args = ap.parse_args(argv)
    methods = ABLATION_METHODS
    study = run_study(args, methods, [args.target], "ablation_runs.jsonl")
    selected, out = study.selected, study.out
    summary = summarise(selected)
    summary_skip = summarise(selected, "_skip")
    study.write_csv("ablation_runs.csv")
    metric = args.target
    labels = ABLATION_LABELS
    lines = study.header(f"Ablation on {args.dataset} (StochasticRank paper, Table 3 protocol)",
                         "ablation")
    lines += [f"- Target {metric}; test metrics with worst-permutation ties; mean ± 95% CI "
              "(Student t) over folds x seeds. 'default': queries without a relevant document "
              "score NDCG = 1; 'skip': they are left out.",
              "- One noise sample per gradient for REINFORCE and CCS (as in the paper). 'trees': "
              "mean number of trees of the selected (early-stopped) models.",
              f"- {study.environment()}.",
              ""]
    for booster in args.boosters:
        present = [m for m in methods if (booster, m, args.target) in summary]
        if not present:
            continue
        lines += [f"## {booster}", "",
                  f"| features | {metric} | {metric} skip | NDCG@10 | MRR | ERR@10 | runs "
                  "| trees |",
                  "| --- | --- | --- | --- | --- | --- | --- | --- |"]
        for m in present:
            s, k = summary[(booster, m, args.target)], summary_skip[(booster, m, args.target)]
            lines.append(f"| {labels[m]} | {fmt(s[metric])} | {fmt(k[metric])} | "
                         f"{fmt(s['NDCG@10'])} | {fmt(s['MRR'])} | {fmt(s['ERR@10'])} | "
                         f"{s['n']} | {s['trees']:.0f} |")
        lines.append("")
        # consecutive steps, as the paper discusses them
        for a, b in zip(present, present[1:]):
            for hi, lo in ((b, a), (a, b)):
                res = paired_test(selected, booster, args.target, [hi, lo], metric)
                if res and res[0] == hi:
                    best, second, p, n = res
                    lines.append(f"- {labels[best]} > {labels[second]}: paired one-tailed "
                                 f"t-test over {n} test queries, p = {p:.3g}")
        lines.append("")
        if not args.no_plots:
            plot_curves(selected, booster, present, labels,
                        out / f"ablation_curves_{booster}.png", target=args.target)
    if not args.no_plots:
        plot_bars(summary, args.boosters, methods, labels, out / "ablation_bars.png")
    lines += ["Files: `ablation_runs.csv` (every trial), `ablation_bars.png`, "
              "`ablation_curves_<booster>.png`.", ""]
    study.write_report("ablation.md", lines)
    return 0


if __name__ == "__main__":
    sys.exit(main())
