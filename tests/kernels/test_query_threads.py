"""The serial kernels run over ranges of queries on Python threads (``kernels.query_threads``):
the ranges cover every query once, an error in any thread is raised, and the derivatives are
bit-identical however the queries are split."""

import numpy as np
import pytest

from stochrank_objectives import StochasticRank
from stochrank_objectives.kernels import query_threads
from stochrank_objectives.kernels.query_threads import over_queries, query_ranges


@pytest.mark.parametrize("sizes", [[5], [1, 1, 1], [10, 1, 1, 18], [0, 0, 3, 0], [7] * 9,
                                   [300, 2, 2, 2, 2, 2, 2], list(range(1, 40))])
@pytest.mark.parametrize("n_parts", [1, 2, 3, 8, 100])
def test_ranges_cover_every_query_once_with_a_fair_share_of_documents(sizes, n_parts):
    offsets = np.concatenate(([0], np.cumsum(sizes))).astype(np.int64)
    ranges = query_ranges(offsets, n_parts)
    assert ranges[0][0] == 0 and ranges[-1][1] == len(sizes)
    assert all(a[1] == b[0] for a, b in zip(ranges, ranges[1:]))  # contiguous, in order
    assert all(hi > lo for lo, hi in ranges) and len(ranges) <= n_parts
    share = offsets[-1] / min(n_parts, len(sizes))
    for lo, hi in ranges:  # a range ends at the boundary nearest to its share
        assert offsets[hi] - offsets[lo] <= 2 * share + 2 * max(sizes)


def test_an_error_in_any_range_is_raised_after_every_range_ran(monkeypatch):
    monkeypatch.setattr(query_threads, "thread_count", lambda: 4)
    ran = []

    def kernel(queries, fail_at):
        ran.append(queries)
        if queries[0] == fail_at:
            raise ValueError(f"range {queries}")

    offsets = np.arange(9, dtype=np.int64)
    ranges = query_ranges(offsets, 4)
    for fail_at in (ranges[0][0], ranges[-1][0]):  # in this thread, in a worker thread
        ran.clear()
        with pytest.raises(ValueError, match="range"):
            over_queries(kernel, offsets, fail_at)
        assert sorted(ran) == ranges


@pytest.mark.parametrize("objective", [StochasticRank(metric="NDCG", top=5, seed=1),
                                       StochasticRank(metric="MRR", seed=1),
                                       StochasticRank(metric="FilteredDCG", top=5, seed=1)],
                         ids=["cascade kernel", "counting kernel", "fixed last document"])
def test_derivatives_are_bit_identical_for_any_split(objective, monkeypatch):
    rng = np.random.default_rng(0)
    sizes = rng.integers(1, 400, 24)
    offsets = np.concatenate(([0], np.cumsum(sizes))).astype(np.int64)
    labels = rng.integers(0, 5, offsets[-1]).astype(np.float64)
    scores = rng.standard_normal(offsets[-1])
    results = []
    for parts in (1, 2, 7):
        monkeypatch.setattr(query_threads, "thread_count", lambda parts=parts: parts)
        results.append(objective.grad_hess(scores, labels, offsets, 3))
    for grad, hess in results[1:]:
        assert grad.tobytes() == results[0][0].tobytes()
        assert hess.tobytes() == results[0][1].tobytes()
