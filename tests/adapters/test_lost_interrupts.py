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



# A stand-in for YetiRank's Numba kernel that receives SIGINT while it runs (``kill`` from nopython
# code, where Python cannot run its handler) and returns new arrays, as the real kernel does when
# Ctrl-C arrives during a long call. Boxing each returned array calls back into Python
# (numba.core.serialize._numba_unpickle): the first bytecode after the kernel, where Python runs
# the pending handler, and where Numba does not check for an exception. Before the fix this gave
# "SystemError: CPUDispatcher(<yetirank_grad_hess>) returned a result with an exception set", or
# a lost Ctrl-C with a NULL in the returned tuple and a segmentation fault: hence a subprocess.
_CTRL_C_IN_KERNEL = """
import ctypes, signal, sys
import numpy as np
from numba import njit
import stochrank_objectives as so
from stochrank_objectives.kernels import yetirank as kernels

signal.signal(signal.SIGINT, signal.default_int_handler)
libc = ctypes.CDLL(None, use_errno=True)
kill, getpid = libc.kill, libc.getpid
kill.argtypes, kill.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
getpid.argtypes, getpid.restype = [], ctypes.c_int
SIGINT = int(signal.SIGINT)

@njit
def kernel(scores, labels, gains, offsets, keep, discounts, settings, iteration, with_loss):
    kill(getpid(), SIGINT)
    n = scores.shape[0]
    return np.zeros(offsets.shape[0] - 1), np.zeros(n), np.ones(n)

real = kernels.yetirank_grad_hess
kernels.yetirank_grad_hess = kernel
rng = np.random.default_rng(0)
X, y = rng.normal(size=(60, 3)), rng.integers(0, 3, 60).astype(float)
qid = np.repeat(np.arange(6), 10)
booster = sys.argv[1]
try:
    if booster == "none":
        so.YetiRank().grad_hess(X[:, 0], y, [0, 30, 60])
    else:
        ranker = getattr(so, booster)(so.YetiRank(), n_estimators=3, n_jobs=1)
        ranker.fit(X, y, qid=qid)
except BaseException as exc:
    print("RAISED", type(exc).__name__, exc)
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler, "handler not restored"
    if booster != "none":
        assert not hasattr(ranker, "booster_")
    kernels.yetirank_grad_hess = real  # the next call, without a signal, is not haunted
    grad, _ = so.YetiRank().grad_hess(X[:, 0], y, [0, 30, 60])
    print("NEXT CALL OK", grad.shape)
else:
    print("RAISED NOTHING")
"""


@pytest.mark.parametrize("booster", ["lightgbm", "xgboost", None])
def test_ctrl_c_while_the_yetirank_kernel_runs_is_a_keyboard_interrupt(booster):
    import subprocess
    import sys

    if booster is not None:
        pytest.importorskip(booster)
    ranker = RANKERS[booster] if booster else "none"
    done = subprocess.run([sys.executable, "-c", _CTRL_C_IN_KERNEL, ranker], capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "RAISED KeyboardInterrupt" in done.stdout, done.stdout + done.stderr[-3000:]
    assert "NEXT CALL OK (60,)" in done.stdout
