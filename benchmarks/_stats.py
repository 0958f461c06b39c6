"""Statistics of the selected runs: mean with a 95% confidence interval, paired one-tailed
t-tests over test queries.

A *run* is ``(booster, method, target, fold, seed)``: among its trials the one with the best
validation target metric is selected and its test metrics are reported.
"""

from __future__ import annotations

import math

import numpy as np

from ._data import TEST_METRICS


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
