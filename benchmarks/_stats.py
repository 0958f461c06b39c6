"""Statistics of the selected runs: mean with a 95% confidence interval, paired one-tailed
t-tests over test queries (each query's difference averaged over its fold's seeds:
:func:`fold_paired_differences`).

A *run* is ``(booster, method, target, fold, seed)``: among its trials the one with the best
validation target metric is selected and its test metrics are reported.
"""

from __future__ import annotations

import math

import numpy as np

from ._targets import TEST_METRICS


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
        # the test metrics, and the target's own when it is none of them
        names = list(dict.fromkeys([*TEST_METRICS, k[2]]))
        out[k] = {name: mean_ci([r[f"test_{name}{suffix}"] for r in rs]) for name in names
                  if all(f"test_{name}{suffix}" in r for r in rs)}
        out[k]["n"] = len(rs)
        out[k]["trees"] = float(np.mean([r["n_trees"] for r in rs]))
    return out


def fold_paired_differences(runs_a, runs_b):
    """The per-query differences ``a - b`` that a paired test over test queries may treat as
    independent samples: each query's difference averaged over the seeds that both methods
    have on its fold, then pooled over the folds.

    The runs of different seeds on one fold are scored on the same test queries, so their
    per-query differences are repeated measurements of the same queries, not new samples:
    pooling every (fold, seed) run would multiply the number of samples by the number of seeds
    and overstate the significance (with three identical seeds, a p-value far below that of
    one seed). With one seed per fold nothing is averaged.

    Args:
      runs_a, runs_b: ``{(fold, seed): per-query values}`` of the two methods; within a fold
        every run has the same queries in the same order. A non-finite value (NaN: a query left
        out of that run) leaves that seed out of the query's average; a query finite in both
        methods on none of the fold's common seeds is dropped.

    Returns:
      A 1-D float array, folds in sorted order (empty without a common (fold, seed) run).
      Raises ``ValueError`` if the runs of one fold have different numbers of queries.

    Example::

        d = fold_paired_differences({(1, 0): [0.5, 0.7], (1, 1): [0.5, 0.9]},
                                    {(1, 0): [0.4, 0.7], (1, 1): [0.4, 0.7]})
        # array([0.1, 0.1]): one fold, two queries, each averaged over seeds 0 and 1
    """
    common = sorted(set(runs_a) & set(runs_b))
    pooled = []
    for fold in sorted({f for f, _ in common}):
        keys = [k for k in common if k[0] == fold]
        sizes = {np.size(runs_a[k]) for k in keys} | {np.size(runs_b[k]) for k in keys}
        if len(sizes) > 1:
            raise ValueError(f"fold {fold}: the runs have {sorted(sizes)} test queries; the "
                             "seeds of a fold must share its test queries")
        d = np.array([np.subtract(np.asarray(runs_a[k], np.float64),
                                  np.asarray(runs_b[k], np.float64)) for k in keys])
        finite = np.isfinite(d)
        n = finite.sum(axis=0)
        total = np.where(finite, d, 0.0).sum(axis=0)
        pooled.append(total[n > 0] / n[n > 0])
    return np.concatenate(pooled) if pooled else np.zeros(0)


def paired_test(selected, booster, target, methods, metric, skip=False):
    """Best and runner-up method (by mean test ``metric``) of one booster and target and the
    one-tailed paired t-test over test queries that the best is better (each query's difference
    averaged over its fold's seeds, pooled over folds: :func:`fold_paired_differences`).
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
    a, b = {}, {}
    for fs in set(per_method[best]) & set(per_method[second]):
        ra, rb = per_method[best][fs], per_method[second][fs]
        va = np.asarray(ra[f"pq_{metric}"], np.float64)
        vb = np.asarray(rb[f"pq_{metric}"], np.float64)
        # the queries of this run that both methods score (and that have a relevant document)
        keep = ~(np.isnan(va) | np.isnan(vb))
        if skip:
            keep &= np.asarray(ra["has_rel"], dtype=bool)
        a[fs], b[fs] = np.where(keep, va, np.nan), np.where(keep, vb, np.nan)
    d = fold_paired_differences(a, b)
    if not d.size:
        return None
    if np.allclose(d, 0.0):
        return best, second, 1.0, int(d.size)
    p = stats.ttest_1samp(d, 0.0, alternative="greater").pvalue
    return best, second, float(p), int(d.size)
