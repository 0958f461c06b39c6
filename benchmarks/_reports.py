"""Reports: the CSV of every trial, number formatting, plots, the command-line options the
studies share and the budget lines of their markdown."""

from __future__ import annotations

import json
import os

import numpy as np

from ._targets import TARGETS, TEST_METRICS
from ._trials import TrainConfig


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


def plot_curves(selected, booster, methods, labels, path, target=TARGETS[0]):
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

    # one panel per target (the paper's first), each showing its own test metric
    targets = dict.fromkeys([*TARGETS, *(k[2] for k in summary)])
    panels = [(t, t) for t in targets
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
