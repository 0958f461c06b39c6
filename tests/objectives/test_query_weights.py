"""Query weights hold for every registered objective, by construction (issue 32, items 1-2).

``grad_hess(..., weights=w)`` is the derivative of ``sum_q w_q L_q``, and every normalisation an
objective computes over the queries of a call counts query ``q`` ``w_q`` times. So:

* weight 0 removes a query: the other queries' derivatives do not depend on its labels or
  scores, and equal those of the call without it (exactly for the noise-free objectives; the
  noisy ones draw per-query streams keyed by the query's index, so only the first property is
  exact for them);
* an integer weight ``w`` equals ``w`` copies of the query: exactly for the noise-free
  objectives, in law (the mean over many iterations) for the noisy ones.

The objectives come from the registry (:data:`stochrank_objectives.objectives.OBJECTIVES`), so
a new objective is covered without editing this file.
"""

import numpy as np
import pytest

from stochrank_objectives.groups import query_offsets_from_sizes
from stochrank_objectives.objectives import OBJECTIVES, weighted_grad_hess

EXAMPLES = [pytest.param(obj, id=f"{name}-{i}") for name, cls in OBJECTIVES.items()
            for i, obj in enumerate(cls.examples())]
NOISE_FREE = [p for p in EXAMPLES if not p.values[0].draws_noise]
NOISY = [p for p in EXAMPLES if p.values[0].draws_noise]


def _data(n_queries=8, seed=0):
    rng = np.random.default_rng(seed)
    sizes = rng.integers(4, 12, size=n_queries)
    offs = query_offsets_from_sizes(sizes)
    labels = rng.integers(0, 3, size=offs[-1]).astype(np.float64)
    labels[offs[:-1]] = 1.0  # every query has a relevant document
    if hasattr(rng, "permuted"):
        labels = labels.copy()
    scores = rng.normal(size=offs[-1])
    return scores, labels, offs


def _for_objective(obj, labels):
    """Labels the objective accepts (YetiLoss for ERR wants probabilities)."""
    if getattr(obj, "mode", None) == "ERR":
        return labels / 3.0
    return labels


def _reversed_in(labels, offs, queries):
    out = labels.copy()
    for q in queries:
        out[offs[q]:offs[q + 1]] = labels[offs[q]:offs[q + 1]][::-1]
    return out


@pytest.mark.parametrize("obj", EXAMPLES)
def test_zero_weight_query_moves_nothing(obj):
    """Reversing the labels (and shifting the scores) of the zero-weight queries leaves every
    document's derivative as it was, and those queries get exactly 0."""
    scores, labels, offs = _data()
    labels = _for_objective(obj, labels)
    n_q = offs.size - 1
    w = np.where(np.arange(n_q) % 2 == 1, 0.0, 1.0)
    odd = np.flatnonzero(w == 0)
    other_scores = scores.copy()
    for q in odd:
        other_scores[offs[q]:offs[q + 1]] *= 7.0
    g1, h1 = obj.grad_hess(scores, labels, offs, iteration=3, weights=w)
    g2, h2 = obj.grad_hess(other_scores, _reversed_in(labels, offs, odd), offs, iteration=3,
                           weights=w)
    np.testing.assert_array_equal(g1, g2)
    np.testing.assert_array_equal(h1, h2)
    zero = np.repeat(w == 0, np.diff(offs))
    assert not np.any(g1[zero]) and not np.any(h1[zero])
    assert np.any(g1[~zero]) and np.all(np.isfinite(h1))


@pytest.mark.parametrize("obj", NOISE_FREE)
def test_zero_weight_equals_removal(obj):
    scores, labels, offs = _data()
    labels = _for_objective(obj, labels)
    n_q = offs.size - 1
    keep = np.arange(n_q) % 3 != 1
    w = keep.astype(np.float64)
    rows = np.repeat(keep, np.diff(offs))
    g, h = obj.grad_hess(scores, labels, offs, iteration=2, weights=w)
    g_kept, h_kept = obj.grad_hess(scores[rows], labels[rows],
                                   query_offsets_from_sizes(np.diff(offs)[keep]), iteration=2)
    np.testing.assert_allclose(g[rows], g_kept, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(h[rows], h_kept, rtol=1e-12, atol=1e-15)


def _copies(scores, labels, offs, counts):
    rows = np.concatenate([np.tile(np.arange(offs[q], offs[q + 1]), int(c))
                           for q, c in enumerate(counts)])
    sizes = np.repeat(np.diff(offs), counts)
    return rows, scores[rows], labels[rows], query_offsets_from_sizes(sizes)


COUNTS = np.array([1, 2, 3, 1, 0, 2, 1, 4])


@pytest.mark.parametrize("obj", NOISE_FREE)
def test_integer_weight_equals_copies(obj):
    scores, labels, offs = _data()
    labels = _for_objective(obj, labels)
    g, h = obj.grad_hess(scores, labels, offs, iteration=1, weights=COUNTS.astype(float))
    rows, s_c, y_c, offs_c = _copies(scores, labels, offs, COUNTS)
    g_c, h_c = obj.grad_hess(s_c, y_c, offs_c, iteration=1)
    n = offs[-1]
    np.testing.assert_allclose(g, np.bincount(rows, g_c, n), rtol=1e-10, atol=1e-14)
    np.testing.assert_allclose(h, np.bincount(rows, h_c, n), rtol=1e-10, atol=1e-14)


@pytest.mark.slow
@pytest.mark.parametrize("obj", NOISY)
def test_integer_weight_equals_copies_in_law(obj):
    """Averaged over iterations (independent noise), the weighted derivatives and the copies'
    summed derivatives agree within the Monte-Carlo error."""
    scores, labels, offs = _data(n_queries=6, seed=1)
    labels = _for_objective(obj, labels)
    counts = COUNTS[:6]
    rows, s_c, y_c, offs_c = _copies(scores, labels, offs, counts)
    n, iterations = offs[-1], 300
    weighted, copies = np.zeros((iterations, 2, n)), np.zeros((iterations, 2, n))
    for t in range(iterations):
        weighted[t] = obj.grad_hess(scores, labels, offs, iteration=t,
                                    weights=counts.astype(float))
        g_c, h_c = obj.grad_hess(s_c, y_c, offs_c, iteration=t)
        copies[t] = np.bincount(rows, g_c, n), np.bincount(rows, h_c, n)
    diff = weighted - copies
    se = diff.std(axis=0) / np.sqrt(iterations)
    scale = np.abs(copies.mean(axis=0)).max(axis=1, keepdims=True)
    # 5 standard errors, plus 2% of the largest derivative for the ratio estimators'
    # (mean hessian) small bias at 6 queries
    assert np.all(np.abs(diff.mean(axis=0)) <= 5 * se + 0.02 * scale)


def test_objective_of_ones_own_is_weighted_outside():
    """An object whose grad_hess takes no ``weights`` is weighted by multiplication."""

    class Plain:
        def grad_hess(self, scores, labels, query_offsets, iteration=0):
            return scores - labels, np.ones_like(scores)

    scores, labels, offs = _data(3)
    w = np.array([0.0, 2.0, 1.0])
    g, h = weighted_grad_hess(Plain(), scores, labels, offs, 0, w)
    doc_w = np.repeat(w, np.diff(offs))
    np.testing.assert_array_equal(g, (scores - labels) * doc_w)
    np.testing.assert_array_equal(h, doc_w)


def test_registry_holds_every_exported_objective():
    import stochrank_objectives as so
    from stochrank_objectives.objectives import ObjectiveParams

    exported = {name for name in so.__all__ if isinstance(getattr(so, name), type)
                and issubclass(getattr(so, name), ObjectiveParams)
                and getattr(so, name) is not ObjectiveParams}
    assert exported == set(OBJECTIVES)
    assert {"YetiRank", "StochasticRank", "LambdaMART", "Gumbel"} <= set(OBJECTIVES)
