"""A Ctrl-C that something swallows during a fit still stops it: the rankers record every SIGINT
of their fit and raise ``KeyboardInterrupt`` at its end (a ``KeyboardInterrupt`` landing in
llvmlite's ctypes callback while Numba compiles a kernel, on a first run, is printed as
"Exception ignored" and lost: the fit returned a complete-looking model)."""

import os
import signal
import threading

import numpy as np
import pytest

from _rankers import RANKERS

import stochrank_objectives as so


class SwallowsCtrlC(so.StochasticRank):
    """StochasticRank whose second gradient call receives a SIGINT and swallows the
    KeyboardInterrupt, as llvmlite's ctypes callback does."""

    def grad_hess(self, scores, labels, query_offsets, iteration=0):
        if iteration == 1:
            try:
                os.kill(os.getpid(), signal.SIGINT)
                for _ in range(100_000):  # the handler runs between two bytecodes, in here
                    pass
            except KeyboardInterrupt:
                pass
        return super().grad_hess(scores, labels, query_offsets, iteration)


@pytest.mark.parametrize("booster", sorted(RANKERS))
def test_a_swallowed_ctrl_c_still_stops_the_fit(booster, default_sigint_handler):
    pytest.importorskip(booster)
    assert threading.current_thread() is threading.main_thread()
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(60, 3)), rng.integers(0, 3, 60).astype(float)
    qid = np.repeat(np.arange(6), 10)
    ranker = getattr(so, RANKERS[booster])(SwallowsCtrlC(metric="NDCG", top=5),
                                           n_estimators=5, n_jobs=1)
    with pytest.raises(KeyboardInterrupt):
        ranker.fit(X, y, qid=qid)
    assert not hasattr(ranker, "booster_")
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # restored
    ranker.set_params(objective=so.StochasticRank(metric="NDCG", top=5)).fit(X, y, qid=qid)
    assert hasattr(ranker, "booster_")  # the next fit is not haunted by the old signal
