"""The paired per-query t-tests of the benchmark reports treat a fold's seeds as repeated
measurements of its test queries, not as new queries: each query's difference is averaged over
the seeds of its fold, then the folds are pooled (``_stats.fold_paired_differences``). Every
report's test goes through it: ``defaults.paired``, ``_stats.paired_test`` (compare,
ablation), ``_clicks_report.paired_p`` and ``sr_levers.paired``."""

import numpy as np
import pytest
from scipy import stats

from benchmarks import _clicks_report, _stats, defaults, sr_levers

FOLDS = {1: 40, 2: 30}   # fold -> test queries


def _values(rng_seed=0):
    """Per-query values of two methods by fold: ``a`` a little better than ``b``."""
    rng = np.random.default_rng(rng_seed)
    out = {}
    for fold, n in FOLDS.items():
        b = rng.uniform(0.2, 0.8, n)
        a = b + 0.03 + rng.normal(0.0, 0.1, n)
        out[fold] = (a, b)
    return out


def _runs(seeds, copies=True):
    """``{(fold, seed): (a, b)}``: every seed the same values (``copies``) or its own draw."""
    return {(fold, seed): _values(rng_seed=0 if copies else seed)[fold]
            for fold in FOLDS for seed in seeds}


# -- each report's test as a function of {(fold, seed): (a, b)}: its p-value -----------------
def _defaults_p(runs):
    mine = [dict(fold=f, seed=s, per_query=list(a)) for (f, s), (a, b) in runs.items()]
    ref = [dict(fold=f, seed=s, per_query=list(b)) for (f, s), (a, b) in runs.items()]
    return defaults.paired(mine, ref)[2]


def _paired_test_p(runs, skip=False):
    selected = {}
    for (f, s), pair in runs.items():
        for method, v in zip(("a", "b"), pair):
            has_rel = np.ones(v.size, dtype=int)
            has_rel[:3] = 0   # three queries without a relevant document, in every seed
            selected[("lightgbm", method, "NDCG@5", f, s)] = {
                "test_NDCG@5": float(np.mean(v)), "test_NDCG@5_skip": float(np.mean(v[3:])),
                "pq_NDCG@5": list(v), "has_rel": list(has_rel)}
    best, second, p, n = _stats.paired_test(selected, "lightgbm", "NDCG@5", ["a", "b"],
                                            "NDCG@5", skip=skip)
    assert (best, second) == ("a", "b")
    assert n == sum(FOLDS.values()) - (3 * len(FOLDS) if skip else 0)  # queries, not runs
    return p


def _clicks_p(runs):
    rows = {m: [{"fold": f, "seed": s, "pq_NDCG@10": list(pair[i])}
                for (f, s), pair in runs.items()] for i, m in enumerate("ab")}
    return _clicks_report.paired_p(rows["a"], rows["b"], "NDCG@10")


def _levers_p(runs):
    rows = [dict(method=m, fold=f, seed=s, per_query=list(pair[i]))
            for (f, s), pair in runs.items() for i, m in enumerate("ab")]
    return sr_levers.paired(rows, "a", "b")[2]


TESTS = {"defaults.paired": (_defaults_p, "greater"),
         "_stats.paired_test": (_paired_test_p, "greater"),
         "_clicks_report.paired_p": (_clicks_p, "greater"),
         "sr_levers.paired": (_levers_p, "two-sided")}


@pytest.mark.parametrize("name", TESTS)
def test_identical_seeds_count_once(name):
    """Three seeds whose per-query values are copies of one seed's carry that seed's evidence,
    no more: the same p-value (pooling the runs as independent samples gave a far smaller
    one)."""
    test, _ = TESTS[name]
    one, three = test(_runs([0])), test(_runs([0, 1, 2]))
    assert one < 0.05
    assert three == pytest.approx(one, rel=1e-9)


@pytest.mark.parametrize("name", TESTS)
def test_one_seed_per_fold_is_the_pooled_paired_test(name):
    """With one seed per fold nothing is averaged: the paired t-test over the folds' queries
    pooled, as before."""
    test, alternative = TESTS[name]
    runs = _runs([0])
    a = np.concatenate([pair[0] for pair in runs.values()])
    b = np.concatenate([pair[1] for pair in runs.values()])
    expected = stats.ttest_rel(a, b, alternative=alternative).pvalue
    assert test(runs) == pytest.approx(expected, rel=1e-9)


@pytest.mark.parametrize("name", TESTS)
def test_different_seeds_test_the_seed_averaged_differences(name):
    """Seeds with their own values: the test of each query's mean difference over the seeds of
    its fold, as many samples as test queries."""
    test, alternative = TESTS[name]
    runs = _runs([0, 1, 2], copies=False)
    d = np.concatenate([np.mean([runs[(f, s)][0] - runs[(f, s)][1] for s in (0, 1, 2)], axis=0)
                        for f in FOLDS])
    assert d.size == sum(FOLDS.values())
    expected = stats.ttest_1samp(d, 0.0, alternative=alternative).pvalue
    assert test(runs) == pytest.approx(expected, rel=1e-9)


def test_paired_test_skip_convention_leaves_the_same_queries_out_of_every_seed():
    runs = _runs([0, 1, 2], copies=False)
    d = np.concatenate([np.mean([runs[(f, s)][0][3:] - runs[(f, s)][1][3:] for s in (0, 1, 2)],
                                axis=0) for f in FOLDS])
    expected = stats.ttest_1samp(d, 0.0, alternative="greater").pvalue
    assert _paired_test_p(runs, skip=True) == pytest.approx(expected, rel=1e-9)


def test_fold_paired_differences_averages_each_query_over_the_seeds_where_it_is_finite():
    a = {(1, 0): [0.5, 0.7, np.nan], (1, 1): [0.7, np.nan, np.nan], (2, 0): [0.3],
         (3, 0): [0.9]}   # fold 3 has no run of b
    b = {(1, 0): [0.4, 0.6, 0.1], (1, 1): [0.4, 0.2, 0.1], (2, 0): [0.5], (2, 1): [0.1]}
    d = _stats.fold_paired_differences(a, b)
    # fold 1: query 1 over seeds 0 and 1, query 2 over seed 0 only, query 3 nowhere (dropped);
    # fold 2: seed 0 only (the one both have)
    np.testing.assert_allclose(d, [0.2, 0.1, -0.2])
    assert _stats.fold_paired_differences({(1, 0): [1.0]}, {(2, 0): [1.0]}).size == 0


def test_fold_paired_differences_refuses_seeds_with_different_queries():
    with pytest.raises(ValueError, match="fold 1"):
        _stats.fold_paired_differences({(1, 0): [0.5, 0.7], (1, 1): [0.5]},
                                       {(1, 0): [0.4, 0.6], (1, 1): [0.4]})
