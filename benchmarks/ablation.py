"""Table 3 of the StochasticRank paper: what each ingredient of StochasticRank contributes.

    python -m benchmarks.ablation [--dataset mq2008] [--folds 1 2 3 4 5] [--seeds 0]
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

import argparse
import sys
import time
from pathlib import Path

from . import _harness as H


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    H.add_common_args(ap, default_budget=5, default_folds=[1, 2, 3, 4, 5])
    ap.add_argument("--boosters", nargs="+", default=["lightgbm"], choices=H.BOOSTERS)
    ap.add_argument("--target", default="NDCG@5", choices=H.TARGETS)
    ap.add_argument("--report-only", action="store_true")
    args = ap.parse_args(argv)
    if args.dataset == "lightgbm_lambdarank":
        args.folds = [1]
    started = time.time()
    out = Path(args.out) if args.out else H.RESULTS / args.dataset
    space = H.Space(lr_min=args.lr_min)
    cfg = H.TrainConfig(max_trees=args.max_trees, patience=args.patience, threads=args.threads)
    cache = H.Cache(out, "ablation_runs.jsonl")
    methods = H.ABLATION_METHODS
    jobs = H.make_jobs(args.dataset, args.boosters, methods, [args.target], args.folds,
                       args.seeds, args.budget)
    if args.report_only:
        rows = [r for r in (cache.get(H.stable_hash(j.key_dict(space, cfg))) for j in jobs) if r]
    else:
        rows = H.run_all(jobs, args.dataset, space, cfg, cache, progress=not args.no_progress,
                         log=lambda s: print(s, file=sys.stderr, flush=True))
    selected = H.select_runs(rows)
    summary = H.summarise(selected)
    summary_skip = H.summarise(selected, "_skip")
    H.write_csv(rows, selected, out / "ablation_runs.csv")
    metric = args.target
    labels = H.ABLATION_LABELS
    wall = sum(r.get("wall_s", 0.0) for r in rows)
    n_trials = sum(1 for r in rows if "error" not in r)
    lines = [f"# Ablation on {args.dataset} (StochasticRank paper, Table 3 protocol)", "",
             f"Command: `python -m benchmarks.ablation {' '.join(sys.argv[1:])}`", ""]
    lines += H.budget_lines(args, space, n_trials, len(selected), wall)
    lines += [f"- Target {metric}; test metrics with worst-permutation ties; mean ± 95% CI "
              "(Student t) over folds x seeds. 'default': queries without a relevant document "
              "score NDCG = 1; 'skip': they are left out.",
              "- One noise sample per gradient for REINFORCE and CCS (as in the paper). 'trees': "
              "mean number of trees of the selected (early-stopped) models.",
              f"- {H.environment_line(cfg)}; wall clock of this invocation "
              f"{(time.time() - started) / 60:.1f} min (cached trials are not retrained).",
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
            lines.append(f"| {labels[m]} | {H.fmt(s[metric])} | {H.fmt(k[metric])} | "
                         f"{H.fmt(s['NDCG@10'])} | {H.fmt(s['MRR'])} | {H.fmt(s['ERR@10'])} | "
                         f"{s['n']} | {s['trees']:.0f} |")
        lines.append("")
        # consecutive steps, as the paper discusses them
        for a, b in zip(present, present[1:]):
            for hi, lo in ((b, a), (a, b)):
                res = H.paired_test(selected, booster, args.target, [hi, lo], metric)
                if res and res[0] == hi:
                    best, second, p, n = res
                    lines.append(f"- {labels[best]} > {labels[second]}: paired one-tailed "
                                 f"t-test over {n} test queries, p = {p:.3g}")
        lines.append("")
        if not args.no_plots:
            H.plot_curves(selected, booster, present, labels,
                          out / f"ablation_curves_{booster}.png", target=args.target)
    if not args.no_plots:
        H.plot_bars(summary, args.boosters, methods, labels, out / "ablation_bars.png")
    lines += ["Files: `ablation_runs.csv` (every trial), `ablation_bars.png`, "
              "`ablation_curves_<booster>.png`.", ""]
    md = "\n".join(lines)
    (out / "ablation.md").write_text(md)
    print(md)
    return 0


if __name__ == "__main__":
    sys.exit(main())
