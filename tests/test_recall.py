"""Recall@k: the metric against its definition, the StochasticRank estimator against the
explicit brute force and the smoothed loss's exact gradient, CatBoost's ``RecallAt``, an eval
metric in a LightGBM ranker, a benchmark target -- and the metric table it is one row of.

Recall@k = (relevant documents in the top k) / (relevant documents of the query), relevance
``label > threshold``; a query without relevant documents is 1 by default.
"""

from __future__ import annotations

import ast
import math
import pathlib
import zlib

import numpy as np
import pytest
from _reference import all_tie_orderings, center_sfa_query, random_query_set

import stochrank_objectives as sro
from stochrank_objectives import StochasticRank, draw_noise, metrics, stochastic_rank_gradient
from stochrank_objectives.metric_spec import MetricSpec
from stochrank_objectives.metric_table import (
    METRIC_TABLE, METRICS, YETILOSS_MODES, metric_row, split_at_k)

TOL = 1e-10


# ----------------------------------------------------------------------------------------
# The metric, from its definition
# ----------------------------------------------------------------------------------------


def recall_list(ordered, k=None, threshold=0.0, empty=1.0):
    """Recall@k of one ordered label list, straight from the definition."""
    relevant = [r > threshold for r in ordered]
    n_rel = sum(relevant)
    if n_rel == 0:
        return empty
    cut = len(ordered) if k is None else min(k, len(ordered))
    return sum(relevant[:cut]) / n_rel


@pytest.mark.parametrize("k", [1, 2, 3, 5, None])
@pytest.mark.parametrize("threshold", [0.0, 1.0])
def test_recall_matches_the_definition_under_every_tie_policy(k, threshold):
    rng = np.random.default_rng(zlib.crc32(repr((k, threshold)).encode()))
    for _ in range(40):
        n = int(rng.integers(1, 7))
        scores = rng.integers(0, 3, n).astype(float)  # heavy ties
        labels = rng.integers(0, 3, n).astype(float)
        offs = np.array([0, n])
        orders = [list(o) for o in all_tie_orderings(scores)]
        values = [recall_list(labels[o], k, threshold) for o in orders]
        stable = recall_list(labels[np.argsort(-scores, kind="stable")], k, threshold)
        expected = {"worst": min(values), "best": max(values), "expected": np.mean(values),
                    "input_order": stable}
        for ties, value in expected.items():
            ours = metrics.recall_at_k(scores, labels, offs, k, threshold=threshold, ties=ties)
            assert ours == pytest.approx(value, abs=1e-12), (ties, scores, labels)


def test_recall_by_hand_and_its_conventions():
    scores = np.array([3.0, 2.0, 1.0, 0.0, 5.0, 4.0, 1.0, 0.0, 0.0])
    labels = np.array([1.0, 0.0, 1.0, 1.0, 0.0, 0.0, 0.0, 2.0, 1.0])
    offs = np.array([0, 4, 6, 6, 9])  # the second query has no relevant document, the third none
    per = metrics.recall_at_k(scores, labels, offs, 2, per_query=True)
    # q0: 1 of 3 in the top 2; q1: 0/0 -> 1; q2: empty -> NaN; q3: tied 0.0 scores, worst
    # ties put the irrelevant one (label 0) above, so 1 of 2 relevant in the top 2
    np.testing.assert_array_equal(per, [1 / 3, 1.0, np.nan, 0.5])
    assert metrics.recall_at_k(scores, labels, offs, 2) == pytest.approx((1 / 3 + 1 + 0.5) / 3)
    skip = metrics.recall_at_k(scores, labels, offs, 2, no_relevant="skip", per_query=True)
    assert np.isnan(skip[1]) and skip[0] == 1 / 3
    assert metrics.recall_at_k(scores, labels, offs, 2, no_relevant="zero",
                               per_query=True)[1] == 0.0
    # k beyond the list, and the whole list: every relevant document is retrieved, exactly 1
    many = np.arange(49.0)
    rel = np.ones(49)
    assert metrics.recall_at_k(many, rel, [0, 49], None) == 1.0
    assert metrics.recall_at_k(scores, labels, offs, 10, per_query=True)[0] == 1.0
    # query weights, and the name-based front ends
    w = np.array([1.0, 0.0, 5.0, 3.0])
    assert metrics.recall_at_k(scores, labels, offs, 2, weights=w) == pytest.approx(
        (1 / 3 + 3 * 0.5) / 4)
    np.testing.assert_array_equal(
        metrics.evaluate("Recall", scores, labels, offs, 2, per_query=True), per)
    assert sro.recall_at_k is metrics.recall_at_k


@pytest.mark.parametrize("bad,match", [(dict(k=0), "k"), (dict(k=2.5), "k"),
                                       (dict(threshold=-1.0), "threshold"),
                                       (dict(ties="random"), "ties"),
                                       (dict(no_relevant="half"), "no_relevant")])
def test_recall_refuses_bad_options(bad, match):
    with pytest.raises((TypeError, ValueError), match=match):
        metrics.recall_at_k(np.zeros(2), np.ones(2), [0, 2], **{"k": 2, **bad})


def test_loss_is_minus_recall_with_worst_ties():
    scores = np.array([1.0, 1.0, 0.0, -1.0, 0.0, 2.0, 2.0])
    labels = np.array([2.0, 0.0, 1.0, 3.0, 1.0, 0.0, 2.0])
    offs = np.array([0, 4, 7])
    for top, threshold in ((1, 0.0), (2, 1.0), (3, 0.0)):
        obj = StochasticRank(metric="Recall", top=top, threshold=threshold)
        value = metrics.recall_at_k(scores, labels, offs, top, threshold=threshold)
        assert obj.loss(scores, labels, offs) == pytest.approx(-value, abs=1e-15)


# ----------------------------------------------------------------------------------------
# The StochasticRank estimator against the explicit brute force (same noise)
# ----------------------------------------------------------------------------------------


def ccs_recall_raw_query(z, labels, noise, *, top, sigma, mu, conditioning, threshold):
    """Brute-force CCS for one query: every document re-inserted at every slot of the others'
    noisy order, each list's Recall@top recomputed from scratch, the jumps weighted by the
    conditional density of its score at the breakpoints; averaged over the noise rows."""
    n = z.shape[0]
    grad = np.zeros(n)
    if n < 2 or not np.any(labels > threshold):
        return grad
    a = z - sigma * mu * labels
    y = a[None, :] + sigma * noise
    for i in range(n):
        others = [j for j in range(n) if j != i]
        for row in range(y.shape[0]):
            order = np.argsort(-y[row, others], kind="stable")
            ys = y[row, others][order]
            rs = labels[others][order]
            losses = [-recall_list(np.concatenate([rs[:slot], [labels[i]], rs[slot:]]), top,
                                   threshold) for slot in range(n)]
            jumps = np.array(losses[:-1]) - np.array(losses[1:])  # above minus below y_(j)
            if conditioning == "coordinate":
                mean, sd = a[i], sigma
            else:
                mean = a[i] + sigma * noise[row, others].mean()
                sd = sigma * math.sqrt(n / (n - 1.0))
            density = np.exp(-0.5 * ((ys - mean) / sd) ** 2) / (sd * math.sqrt(2 * math.pi))
            grad[i] += np.sum(jumps * density) / y.shape[0]
    return grad


def brute_recall_gradient(scores, labels, offs, noise, *, center, sfa, nu=0.01, **kw):
    out = np.zeros(scores.size)
    for lo, hi in zip(offs[:-1], offs[1:]):
        if hi - lo < 2:
            continue
        raw = ccs_recall_raw_query(scores[lo:hi], labels[lo:hi], noise[:, lo:hi], **kw)
        out[lo:hi] = center_sfa_query(raw, scores[lo:hi], center=center, sfa=sfa, nu=nu)
    return out


@pytest.mark.parametrize("conditioning", ["translation", "coordinate"])
@pytest.mark.parametrize("top", [1, 2, 3, 10])
@pytest.mark.parametrize("threshold", [0.0, 1.0])
def test_ccs_matches_bruteforce(top, conditioning, threshold):
    rng = np.random.default_rng(zlib.crc32(repr((top, conditioning, threshold)).encode()))
    nonzero = 0
    for sigma in (0.3, 1.0, 3.0):
        for mu in (0.0, 1.0):
            scores, labels, offs = random_query_set(rng, [2, 3, 5, 12, 0, 1, 4], "RECALL")
            noise = rng.standard_normal((2, scores.size))
            for center, sfa in ((False, 0.0), (True, 0.0), (True, 1.0)):
                kw = dict(top=top, sigma=sigma, mu=mu, conditioning=conditioning)
                fast = stochastic_rank_gradient(
                    scores, labels, offs, metric="Recall", noise=noise, center=center,
                    sfa=sfa, nu=0.01, threshold=threshold, **kw)
                brute = brute_recall_gradient(scores, labels, offs, noise, center=center,
                                              sfa=sfa, threshold=threshold, **kw)
                assert np.max(np.abs(fast - brute), initial=0.0) <= TOL, (sigma, mu, center)
                nonzero += int(np.any(fast != 0))
                assert np.all(fast[offs[5]:offs[6]] == 0.0)  # one document: nothing to swap
    assert nonzero > 0


def test_ccs_matches_bruteforce_200_docs():
    rng = np.random.default_rng(200)
    scores, labels, offs = random_query_set(rng, [200], "RECALL", tie_levels=5)
    noise = rng.standard_normal((1, 200))
    kw = dict(top=10, sigma=1.0, mu=1.0, conditioning="translation", threshold=1.0)
    fast = stochastic_rank_gradient(scores, labels, offs, metric="Recall", noise=noise,
                                    center=True, sfa=1.0, nu=0.01, **kw)
    brute = brute_recall_gradient(scores, labels, offs, noise, center=True, sfa=1.0, **kw)
    assert np.max(np.abs(fast - brute)) <= TOL and np.count_nonzero(fast) > 10


def _exact_smoothed_recall(a, labels, sigma, top):
    """``E Recall@top(a + sigma eps)`` of three documents, exactly: the probability of each
    order ``(u, v, w)`` is ``int phi_v(t) P(y_u > t) P(y_w < t) dt`` (one-dimensional, by a
    fine trapezoid rule)."""
    from math import erf

    t = np.linspace(a.min() - 12 * sigma, a.max() + 12 * sigma, 20001)
    cdf = [np.array([0.5 * (1 + erf((x - m) / (sigma * math.sqrt(2)))) for x in t]) for m in a]
    pdf = [np.exp(-0.5 * ((t - m) / sigma) ** 2) / (sigma * math.sqrt(2 * math.pi)) for m in a]
    total = 0.0
    for u, v, w in ((0, 1, 2), (0, 2, 1), (1, 0, 2), (1, 2, 0), (2, 0, 1), (2, 1, 0)):
        f = pdf[v] * (1 - cdf[u]) * cdf[w]
        p = np.sum(0.5 * (f[1:] + f[:-1]) * np.diff(t))
        total += p * recall_list(labels[[u, v, w]], top)
    return total


@pytest.mark.parametrize("top", [1, 2])
def test_ccs_is_the_gradient_of_the_smoothed_recall(top):
    """Coordinate conditioning without centring or SFA is an unbiased estimate of
    ``d/dz E[-Recall@k(z + sigma eps)]``: averaged over many noise rows it matches central
    differences of the exact expectation (three documents, one relevant above the others)."""
    z = np.array([0.2, -0.1, 0.4])
    labels = np.array([1.0, 1.0, 0.0])
    sigma, h = 0.8, 1e-4
    exact = np.array([-(_exact_smoothed_recall(z + h * e, labels, sigma, top)
                        - _exact_smoothed_recall(z - h * e, labels, sigma, top)) / (2 * h)
                      for e in np.eye(3)])
    noise = np.random.default_rng(3).standard_normal((40000, 3))
    ccs = stochastic_rank_gradient(z, labels, np.array([0, 3]), metric="Recall", top=top,
                                   sigma=sigma, noise=noise, conditioning="coordinate",
                                   center=False, sfa=0.0)
    assert np.all(np.abs(exact) > 0.01)
    np.testing.assert_allclose(ccs, exact, atol=4e-3)


@pytest.mark.parametrize("iteration", [0, 3])
def test_seeded_streams_equal_explicit_noise_and_the_objective(iteration):
    rng = np.random.default_rng(0)
    scores, labels, offs = random_query_set(rng, [5, 1, 0, 12, 3, 40], "RECALL", tie_levels=4)
    kw = dict(metric="Recall", top=3, sigma=0.7, mu=0.5)
    seeded = stochastic_rank_gradient(scores, labels, offs, n_samples=3, seed=11,
                                      iteration=iteration, **kw)
    explicit = stochastic_rank_gradient(scores, labels, offs,
                                        noise=draw_noise(offs, 3, 11, iteration), **kw)
    assert np.array_equal(seeded, explicit) and np.any(seeded != 0)
    obj = StochasticRank.paper(metric="Recall", top=3, n_samples=3, seed=11, mu=0.5, sigma=0.7)
    assert np.array_equal(obj.grad_hess(scores, labels, offs, iteration=iteration)[0], seeded)


def test_objective_settings():
    with pytest.raises(ValueError, match="needs top=k"):
        StochasticRank(metric="Recall").sigma_at(0)
    with pytest.raises(ValueError, match="reach"):
        StochasticRank(metric="Recall", top=2, reach=0.3).sigma_at(0)
    with pytest.raises(ValueError, match="reinforce"):
        StochasticRank(metric="Recall", top=2, estimator="reinforce").sigma_at(0)
    obj = StochasticRank(metric="recall", top=2)
    assert obj.metric_spec.metric == "RECALL" and obj._checked()["min_top_share"] == 0.0
    # a grown training cutoff is recall at that cutoff (weights 1, scale 1/R unchanged)
    from stochrank_objectives.objectives.training_metric import training_args

    spec = MetricSpec.make("Recall", top=1)
    args = training_args(spec, np.array([1.0, 0, 1, 0, 0]), np.array([0, 2, 5]),
                         min_top_share=0.5)
    assert args.query_cutoff.tolist() == [1, 2] and args.scale.tolist() == [1.0, 1.0]
    assert args.position_weights[:3].tolist() == [1.0, 1.0, 0.0]


# ----------------------------------------------------------------------------------------
# Boosters: CatBoost's RecallAt, an eval metric of a LightGBM ranker, a benchmark target
# ----------------------------------------------------------------------------------------


def test_catboost_recall_at_is_the_same_metric():
    catboost_utils = pytest.importorskip("catboost.utils")
    from stochrank_objectives.adapters.catboost import default_eval_metric

    obj = StochasticRank(metric="Recall", top=3, threshold=0.5)
    assert default_eval_metric(obj) == "RecallAt:top=3;border=0.5"
    assert default_eval_metric(StochasticRank(metric="Recall", top=2)) == "RecallAt:top=2;border=0"
    rng = np.random.default_rng(7)
    sizes = rng.integers(1, 8, 30)
    scores, labels, offs = random_query_set(rng, sizes, "RECALL", tie_levels=3, max_grade=2)
    group = np.repeat(np.arange(sizes.size), sizes)
    for k, border in ((1, 0.5), (3, 0.0), (3, 1.5), (10, 0.5)):
        theirs = catboost_utils.eval_metric(labels, scores, f"RecallAt:top={k};border={border}",
                                            group_id=group)[0]
        ours = metrics.recall_at_k(scores, labels, offs, k, threshold=border)
        assert ours == pytest.approx(theirs, abs=1e-12), (k, border)


def test_catboost_refusals_name_the_reason():
    from stochrank_objectives.adapters.catboost import default_eval_metric

    for metric in ("Precision", "MAP"):
        with pytest.raises(ValueError, match="no CatBoost metric .* same definition"):
            default_eval_metric(StochasticRank(metric=metric, top=3))
    with pytest.raises(ValueError, match="input order"):
        default_eval_metric(StochasticRank(metric="FilteredDCG"))


def test_recall_eval_metric_in_a_lightgbm_ranker_fit():
    pytest.importorskip("lightgbm")
    from stochrank_objectives import StochasticLGBMRanker
    from stochrank_objectives.adapters.lightgbm import LGBMMetric

    rng = np.random.default_rng(1)
    sizes = np.full(40, 12)
    X = rng.normal(size=(sizes.sum(), 4))
    y = (X[:, 0] + 0.5 * rng.normal(size=X.shape[0]) > 1.0).astype(float)
    group_end = np.cumsum(sizes)
    ranker = StochasticLGBMRanker(StochasticRank(metric="Recall", top=5, seed=0),
                                  n_estimators=8, learning_rate=0.3, eval_metric="Recall@5",
                                  random_state=0, n_jobs=1, num_leaves=7, min_data_in_leaf=5)
    ranker.fit(X, y, group=sizes, eval_set=[(X, y, np.repeat(np.arange(40), sizes))])
    curve = ranker.evals_result_["validation_0"]["RECALL@5"]
    offs = np.concatenate(([0], group_end))
    final = metrics.recall_at_k(ranker.predict(X), y, offs, 5)
    assert len(curve) == 8 and curve[-1] == pytest.approx(final, abs=1e-12)
    assert final > metrics.recall_at_k(np.zeros(X.shape[0]), y, offs, 5) + 0.2
    assert LGBMMetric("Recall", 5).name == "RECALL@5"


def test_recall_is_a_benchmark_target():
    from benchmarks._methods import make_objective
    from benchmarks._targets import parse_target

    from stochrank_objectives.data import RankingData

    target = parse_target("Recall@2")
    assert (target.metric, target.top, target.binary) == ("RECALL", 2, True)
    y = np.array([2.0, 0.0, 1.0, 0.0])
    np.testing.assert_array_equal(target.labels(y), [1.0, 0.0, 1.0, 0.0])
    obj = make_objective("sr_r1soft", target, {}, seed=0)
    assert (obj.metric_spec.metric, obj.metric_spec.top) == ("RECALL", 2)
    data = RankingData(np.zeros((4, 1)), y, np.zeros(4, np.int64), np.array([0, 4]))
    assert target.evaluate(np.array([4.0, 3.0, 2.0, 1.0]), data) == 0.5


# ----------------------------------------------------------------------------------------
# The metric table: one row per metric, and nothing else compares metric names
# ----------------------------------------------------------------------------------------


def test_every_row_is_wired():
    assert set(METRICS) == set(METRIC_TABLE) and METRICS[-1] == "RECALL"
    for name, row in METRIC_TABLE.items():
        assert getattr(metrics, row.function) is metrics._BY_NAME[name]
        assert row.name == name == metric_row(row.display).name
        spec = MetricSpec.make(name, top=3)
        assert set(metrics.metric_options(spec)) == set(row.options)
        assert (row.catboost is None) or row.catboost_refusal is None
    assert split_at_k("recall@7") == ("RECALL", 7)
    with pytest.raises(ValueError, match="positive integer"):
        split_at_k("NDCG@0")
    assert YETILOSS_MODES == ("DCG", "NDCG", "MRR", "ERR", "MAP")


_NAMES = {name.upper() for name in METRICS} | {row.display.upper()
                                               for row in METRIC_TABLE.values()}


def _is_name(node) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, str) and \
        node.value.upper() in _NAMES


def _compares_names(tree) -> bool:
    exports = {id(node.value) for node in ast.walk(tree)  # __all__ lists functions (mrr, ...)
               if isinstance(node, ast.Assign) and any(
                   isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets)}
    for node in ast.walk(tree):
        if id(node) in exports:
            continue
        if isinstance(node, ast.Compare):
            for side in [node.left, *node.comparators]:
                if _is_name(side) or (isinstance(side, (ast.Tuple, ast.List, ast.Set))
                                      and any(_is_name(e) for e in side.elts)):
                    return True
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)) and \
                sum(_is_name(e) for e in node.elts) >= 2:
            return True  # a tuple of names, kept for membership tests
        if isinstance(node, ast.Dict) and sum(_is_name(k) for k in node.keys) >= 2:
            return True  # a table keyed by names
    return False


def test_only_the_metric_table_compares_metric_names():
    package = pathlib.Path(sro.__file__).parent
    offenders = sorted(str(p.relative_to(package)) for p in package.rglob("*.py")
                       if _compares_names(ast.parse(p.read_text())))
    assert offenders == [], offenders
    assert _compares_names(ast.parse('x = metric == "NDCG"'))
    assert _compares_names(ast.parse('KEYS = ("MAP", "Precision")'))


# ----------------------------------------------------------------------------------------
# No silent answers (issue 44, cases 5 and 6): a training cutoff that covers every list
# ----------------------------------------------------------------------------------------


def _long_lists(sizes=(118, 40, 7, 1), seed=44):
    rng = np.random.default_rng(seed)
    offs = np.concatenate(([0], np.cumsum(sizes))).astype(np.int64)
    labels = (rng.random(offs[-1]) < 0.3).astype(float)
    labels[offs[:-1]] = 1.0  # every query has a relevant document
    return rng.normal(size=offs[-1]), labels, offs


def test_min_top_share_one_is_refused_for_recall():
    """``min_top_share=1`` grows every query's cutoff to its whole list, where Recall is 1
    whatever the order (all-zero gradients before the refusal); every share below 1 leaves the
    lists longer than ``1 / (1 - share)`` something to train."""
    for kw in (dict(top=5), dict(top=1, threshold=1.0)):
        with pytest.raises(ValueError, match=r"min_top_share=1 .*metric='Recall'.*below 1"):
            StochasticRank(metric="Recall", min_top_share=1.0, **kw).sigma_at(0)
    obj = StochasticRank(metric="Recall", top=5)
    with pytest.raises(ValueError, match="min_top_share=1"):
        obj.set_params(min_top_share=1)
    scores, labels, offs = _long_lists()
    with pytest.raises(ValueError, match="min_top_share=1"):
        stochastic_rank_gradient(scores, labels, offs, metric="Recall", top=5,
                                 min_top_share=1.0)
    grad = StochasticRank(metric="Recall", top=5, min_top_share=0.99).grad_hess(
        scores, labels, offs)[0]
    assert np.any(grad[:118] != 0.0)  # ceil(0.99 x 118) = 117 < 118: the long list trains


@pytest.mark.parametrize("metric", ["Recall", "Precision"])
def test_a_top_covering_every_list_is_refused(metric):
    """``top`` at or above every list's length: Recall (and Precision) of a whole list does not
    depend on the order, every gradient is 0 and a booster fits a constant model."""
    scores, labels, offs = _long_lists()
    for top in (1000, 118):
        with pytest.raises(ValueError, match=rf"top={top}\b.*longest has 118 documents.*"
                                             r"top below 118"):
            StochasticRank(metric=metric, top=top).check_training_queries(offs)
        # grad_hess may be handed a part of the training data (a Dask partition), where
        # covered lists are legitimate: it warns of the zero gradient instead
        with pytest.warns(UserWarning, match=rf"top={top}\b.*longest has 118 documents"):
            grad = StochasticRank(metric=metric, top=top).grad_hess(scores, labels, offs)[0]
        assert np.all(grad == 0.0)
    # one query longer than the cutoff is enough: the covered ones give 0 legitimately
    grad = StochasticRank(metric=metric, top=117).grad_hess(scores, labels, offs)[0]
    assert np.any(grad[:118] != 0.0) and np.all(grad[118:] == 0.0)
    # the other metrics still depend on the order of a whole list
    assert np.any(StochasticRank(metric="MAP", top=1000).grad_hess(scores, labels, offs)[0])


def test_a_grown_cutoff_covering_every_list_is_refused():
    scores, labels, offs = _long_lists()
    # ceil(0.995 n) = n for n = 118, 40, 7, 1: every list covered
    with pytest.raises(ValueError, match=r"top=5 and min_top_share=0\.995.*longest has 118 "
                                         r"documents.*min_top_share <= 117/118"):
        StochasticRank(metric="Recall", top=5, min_top_share=0.995).check_training_queries(offs)
    with pytest.warns(UserWarning, match=r"top=5 and min_top_share=0\.995"):
        StochasticRank(metric="Recall", top=5, min_top_share=0.995).grad_hess(
            scores, labels, offs)


def test_the_cutoff_check_runs_once_per_training(monkeypatch):
    """The check belongs to the per-training preparation (cached by the labels and offsets a
    booster passes unchanged every round), not to every round."""
    from stochrank_objectives.objectives import stochastic_rank as module

    calls = []
    check = module.check_order_can_change

    def counted(*args, **kwargs):
        calls.append(1)
        return check(*args, **kwargs)

    monkeypatch.setattr(module, "check_order_can_change", counted)
    scores, labels, offs = _long_lists()
    obj = StochasticRank(metric="Recall", top=5)
    for t in range(3):
        obj.grad_hess(scores + t, labels, offs, iteration=t)
    assert len(calls) == 1


@pytest.mark.parametrize("booster", ["lightgbm", "xgboost", "catboost"])
def test_boosters_refuse_a_recall_cutoff_covering_every_list(booster):
    from _rankers import fit_ranker

    rng = np.random.default_rng(6)
    sizes = rng.integers(20, 119, 12)
    sizes[0] = 118
    X = rng.normal(size=(sizes.sum(), 3))
    y = (X[:, 0] > 0.5).astype(float)
    with pytest.raises(ValueError, match=r"top=1000\b.*longest has 118 documents"):
        fit_ranker(booster, StochasticRank(metric="Recall", top=1000, seed=0), X, y, sizes,
                   n_estimators=2, n_jobs=1)
