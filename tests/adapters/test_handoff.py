"""The OpenMP hand-off between XGBoost's runtime and the kernels' (adapters/_handoff.py): idle
threads of either side are released at the objective's call, so none spins against the other.
"""

from __future__ import annotations

import ctypes
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from stochrank_objectives.adapters._handoff import RuntimeHandOff, handed_off, libgomp_pause

ROOT = Path(__file__).resolve().parents[2]

# A fresh process (no pool of an earlier test alive): trains three XGBoost rounds on 2 threads
# through XGBObjective and counts the process's threads when the objective is entered and after
# each tree, with the hand-off on or off.
CHILD = r"""
import json, os, sys
import numba, numpy as np, xgboost as xgb
from stochrank_objectives.adapters._handoff import RuntimeHandOff
from stochrank_objectives.adapters.xgboost import XGBObjective
from stochrank_objectives.adapters.xgboost._objective import XGBOOST_HANDOFF
from stochrank_objectives.objectives import YetiRank

def threads():
    return len(os.listdir("/proc/self/task"))

RuntimeHandOff.enabled = sys.argv[1] == "on"
numba.set_num_threads(2)
baseline = threads()
rng = np.random.default_rng(0)
sizes = np.full(40, 100)
X = rng.standard_normal((sizes.sum(), 5)).astype(np.float32)
y = rng.integers(0, 3, sizes.sum()).astype(np.float64)
dtrain = xgb.DMatrix(X, y, group=sizes, nthread=2)
at_entry, after_tree = [], []

class Counted:
    def __init__(self, inner):
        self.inner = inner
    def grad_hess(self, scores, labels, query_offsets, iteration=0):
        at_entry.append(threads())
        return self.inner.grad_hess(scores, labels, query_offsets, iteration)
    def gradient_hessian(self, scores, data, iteration=0):
        at_entry.append(threads())
        return self.inner.gradient_hessian(scores, data, iteration)
    def __getattr__(self, name):
        return getattr(self.inner, name)

class AfterTree(xgb.callback.TrainingCallback):
    def after_iteration(self, model, epoch, evals_log):
        after_tree.append(threads())
        return False

obj = XGBObjective(Counted(YetiRank(mode="NDCG", top=10, num_neighbors=-1)))
xgb.train(dict(tree_method="hist", max_depth=3, nthread=2, base_score=0.0), dtrain, 3, obj=obj,
          callbacks=[obj.callback(), AfterTree()])
print(json.dumps(dict(baseline=baseline, at_entry=at_entry, after_tree=after_tree,
                      paused=XGBOOST_HANDOFF.booster is not None)))
"""


def _child(switch):
    env = {**os.environ, "NUMBA_NUM_THREADS": "2",
           "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH"))
                                         if p)}
    env.pop("OMP_WAIT_POLICY", None)  # the runtimes' default: idle threads spin, then sleep
    done = subprocess.run([sys.executable, "-c", CHILD, switch], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.skipif(not sys.platform.startswith("linux") or (os.cpu_count() or 1) < 2,
                    reason="the hand-off is for GNU libgomp (Linux) pools of 2+ threads")
def test_xgboost_and_kernel_pools_are_released_at_the_objective_call():
    on = _child("on")
    if not on["paused"]:
        pytest.skip("XGBoost shares the kernels' OpenMP runtime here (or it is not libgomp)")
    off = _child("off")
    # without the hand-off both runtimes keep a worker alive (spinning right after their
    # loops) when the objective starts; with it, both were released (from the second call:
    # the routines are found after the first kernel ran)
    assert off["at_entry"][1:] == [off["baseline"] + 2] * 2
    assert on["at_entry"][1:] == [on["baseline"]] * 2
    # and after each tree only XGBoost's worker runs: numba's was released after the kernel
    assert on["after_tree"] == [on["baseline"] + 1] * 3
    assert off["after_tree"] == [off["baseline"] + 2] * 3


def test_no_pause_where_there_is_no_libgomp():
    assert libgomp_pause(None) is None
    libc = ctypes.CDLL(None)
    assert libgomp_pause(libc) is None or sys.platform.startswith("linux")


def test_a_handoff_without_pause_routines_only_runs_the_block():
    handoff = RuntimeHandOff(lambda: None)   # no booster library: nothing to pause
    ran = []
    with handed_off(handoff):
        ran.append(1)
    assert ran == [1] and handoff.booster is None and handoff.kernels is None
