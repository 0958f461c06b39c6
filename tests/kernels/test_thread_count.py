"""The estimator runs on no more threads than it has queries (``kernels.threads_for``)."""

import numba
import numpy as np
import pytest

from stochrank_objectives.kernels import SERIAL_BELOW_DOCS, threads_for
from stochrank_objectives.objectives import _estimator
from stochrank_objectives.objectives.stochastic_rank import StochasticRank

needs_two_threads = pytest.mark.skipif(numba.config.NUMBA_NUM_THREADS < 2,
                                       reason="numba has a single thread here")


@needs_two_threads
def test_threads_for_caps_the_count_at_the_queries_and_restores_it():
    previous = numba.get_num_threads()
    with threads_for(10 * SERIAL_BELOW_DOCS, n_queries=1):
        assert numba.get_num_threads() == 1
    assert numba.get_num_threads() == previous
    with threads_for(10 * SERIAL_BELOW_DOCS, n_queries=1000):
        assert numba.get_num_threads() == previous
    with threads_for(10 * SERIAL_BELOW_DOCS):
        assert numba.get_num_threads() == previous
    with threads_for(SERIAL_BELOW_DOCS - 1, n_queries=1000):
        assert numba.get_num_threads() == 1


@needs_two_threads
def test_one_large_query_is_estimated_on_one_thread(monkeypatch):
    # a parallel region over one query only wakes an idle worker and waits for it
    seen = []
    kernel = _estimator.ccs_gradient

    def recording_kernel(*args, **kwargs):
        seen.append(numba.get_num_threads())
        return kernel(*args, **kwargs)

    monkeypatch.setattr(_estimator, "ccs_gradient", recording_kernel)
    n = 2 * SERIAL_BELOW_DOCS
    rng = np.random.default_rng(0)
    labels = rng.integers(0, 5, n).astype(np.float64)
    scores = rng.standard_normal(n)
    before = numba.get_num_threads()
    grad, _ = StochasticRank(metric="NDCG", seed=0).grad_hess(scores, labels, np.array([0, n]))
    assert seen == [1]
    assert numba.get_num_threads() == before
    assert np.isfinite(grad).all()
