"""Weighted metrics (issue 23): every metric's mean over queries takes query weights."""

import numpy as np
import pytest

from stochrank_objectives import metrics
from stochrank_objectives.groups import document_weights, query_offsets_from_sizes, query_weights

FUNCTIONS = [metrics.dcg_at_k, metrics.ndcg_at_k, metrics.err_at_k, metrics.mrr, metrics.pfound,
             metrics.filtered_dcg, metrics.precision_at_k, metrics.average_precision]


@pytest.fixture(scope="module")
def grouped():
    rng = np.random.default_rng(5)
    sizes = rng.integers(1, 9, size=25)
    sizes[3] = 0  # an empty query: never part of a mean
    offs = query_offsets_from_sizes(sizes)
    scores = np.round(rng.normal(size=offs[-1]), 1)  # with ties
    labels = rng.integers(0, 2, size=offs[-1]).astype(float)  # probabilities for ERR/PFound
    weights = rng.choice([0.0, 0.5, 1.0, 3.0], size=sizes.size)
    return scores, labels, offs, weights


@pytest.mark.parametrize("metric", FUNCTIONS, ids=lambda f: f.__name__)
@pytest.mark.parametrize("no_relevant", [None, "skip"])
def test_weighted_mean_equals_brute_force(metric, no_relevant, grouped):
    scores, labels, offs, w = grouped
    k = None if metric is metrics.mrr else 3
    per_query = []
    for a, b in zip(offs[:-1], offs[1:]):  # each query alone
        per_query.append(np.nan if a == b else
                         metric(scores[a:b], labels[a:b], [0, b - a], k, no_relevant=no_relevant))
    per_query = np.array(per_query)
    counts = ~np.isnan(per_query)
    expected = np.dot(w[counts], per_query[counts]) / w[counts].sum()
    for weights in (w, document_weights(w, offs)):  # per query or per document
        value = metric(scores, labels, offs, k, no_relevant=no_relevant, weights=weights)
        assert value == pytest.approx(expected, rel=1e-12)
    unit = metric(scores, labels, offs, k, no_relevant=no_relevant, weights=np.ones(w.size))
    assert unit == pytest.approx(metric(scores, labels, offs, k, no_relevant=no_relevant),
                                 rel=1e-12)  # unit weights: the plain mean


def test_zero_weight_is_dropping_the_query(grouped):
    scores, labels, offs, w = grouped
    keep = w > 0
    rows = np.repeat(keep, np.diff(offs))
    kept_offs = query_offsets_from_sizes(np.diff(offs)[keep])
    value = metrics.ndcg_at_k(scores, labels, offs, 5, weights=keep.astype(float))
    assert value == pytest.approx(metrics.ndcg_at_k(scores[rows], labels[rows], kept_offs, 5))
    assert metrics.evaluate("NDCG", scores, labels, offs, 5, weights=w) == \
        metrics.ndcg_at_k(scores, labels, offs, 5, weights=w)


def test_per_query_output_ignores_the_weights(grouped):
    scores, labels, offs, w = grouped
    np.testing.assert_array_equal(
        metrics.mrr(scores, labels, offs, per_query=True, weights=w),
        metrics.mrr(scores, labels, offs, per_query=True))


@pytest.mark.parametrize("weights, message", [
    ([1.0, -2.0, 1.0], "finite and non-negative, got -2.0 at index 1"),
    ([1.0, np.nan, 1.0], "finite and non-negative, got nan at index 1"),
    ([0.0, 0.0, 0.0], "every query's weight is 0"),
    ([1.0, 1.0, 2.0, 1.0, 1.0], "documents of query 0 .* different weights .* row 2"),
    ([1.0, 1.0], "one weight per document .5. or one per query .3."),
])
def test_bad_weights_are_refused(weights, message):
    offs = np.array([0, 3, 4, 5])
    with pytest.raises(ValueError, match=message):
        metrics.ndcg_at_k(np.arange(5.0), np.array([1.0, 0, 2, 1, 0]), offs, weights=weights)
    with pytest.raises(ValueError, match=message):
        query_weights(weights, offs)
