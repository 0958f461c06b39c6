"""``python -m stochrank_objectives.precompile``: the kernels compiled ahead of time into a cache
that a later process (a container's, a Dask or Ray worker's) loads without compiling."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from stochrank_objectives.precompile import objectives_to_compile, split

ROOT = Path(__file__).resolve().parents[1]

#: a worker's first use of an objective, printing how many kernels Numba compiled for it
WORKER = """
import numpy as np
from stochrank_objectives import ListNet
from stochrank_objectives._compile_watch import CompileWatch

offsets = np.array([0, 4, 9]); labels = np.array([0, 1, 2, 0, 1, 0, 0, 2, 1.0])
with CompileWatch() as watch:
    ListNet().grad_hess(np.linspace(0, 1, 9), labels, offsets, 0)
print(watch.count)
"""


#: every objective of the precompile command, first use in this process; prints the kernels
#: Numba compiled (none when each loads from the cache)
EVERY_OBJECTIVE = """
import numpy as np
from stochrank_objectives._compile_watch import CompileWatch
from stochrank_objectives.precompile import objectives_to_compile

sizes = np.array([3, 40, 7])
offsets = np.concatenate(([0], np.cumsum(sizes)))
rng = np.random.default_rng(0)
labels = rng.integers(0, 3, offsets[-1]).astype(float)
scores = rng.normal(size=offsets[-1])
weights = np.repeat([1.0, 2.0, 0.5], sizes)
with CompileWatch() as watch:
    for objective in objectives_to_compile():
        objective.grad_hess(scores, labels, offsets, 0)
        objective.grad_hess(scores, labels, offsets, 1, weights=weights)
print(sorted(set(watch.names)))
"""


def _run(args, cache=None, timeout=300):
    """``python args`` with the package importable, in ``cache`` (``NUMBA_CACHE_DIR``; None:
    this process's); its stdout."""
    env = {**os.environ,
           "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    if cache is not None:
        env["NUMBA_CACHE_DIR"] = str(cache)
    done = subprocess.run([sys.executable, *args], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=timeout)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def test_a_worker_that_finds_the_warm_cache_compiles_nothing(tmp_path):
    cache = tmp_path / "numba-cache"
    printed = _run(["-m", "stochrank_objectives.precompile", "--objectives", "ListNet"], cache)
    assert "compilations" in printed and str(cache) in printed  # the empty cache was filled
    assert int(_run(["-c", WORKER], cache).strip()) == 0


def test_every_objective_loads_every_kernel_from_a_warm_cache():
    # a kernel that Numba compiles again in every new process although its cache is warm (one
    # that takes a dispatcher as an argument: the cache index never matches) is a first fit's
    # cost paid by every worker. The second process must compile nothing; the first only warms
    # the cache where the suite has not (its precompile step normally has).
    _run(["-c", EVERY_OBJECTIVE], timeout=900)
    assert _run(["-c", EVERY_OBJECTIVE]).strip() == "[]"


def test_every_objective_is_compiled_once_and_the_cascade_chain_in_one_part():
    everything = objectives_to_compile()
    parts = split(None, 3)
    assert sorted(map(repr, everything)) == sorted(repr(o) for part in parts for o in part)
    assert {type(o).__name__ for o in parts[0]} == {"StochasticRank", "SoftRank", "Gumbel"}
    assert any(getattr(o, "metric", None) == "MRR" for o in parts[-1])  # the counting kernel


def test_unknown_objective_names_are_refused():
    with pytest.raises(ValueError, match="unknown names .'ListNett'.*registered"):
        objectives_to_compile(["ListNett"])


#: one YetiLoss call on lists long enough for its proxy top order; prints how many times Numba
#: compiled each of its noise-order kernels
YETILOSS_COMPILES = """
import numpy as np
from stochrank_objectives import YetiRank
from stochrank_objectives._compile_watch import CompileWatch

sizes = np.array([40, 3, 64])
offsets = np.concatenate(([0], np.cumsum(sizes)))
rng = np.random.default_rng(0)
labels = rng.integers(0, 3, offsets[-1]).astype(float)
with CompileWatch() as watch:
    YetiRank(mode="NDCG", top=2, num_neighbors=-1).grad_hess(rng.normal(size=offsets[-1]),
                                                              labels, offsets, 0)
print(watch.names.count("noisy_order"), watch.names.count("noisy_top_order"),
      watch.names.count("proxy_order"))
"""


def test_a_first_yetiloss_call_compiles_each_noise_order_once(tmp_path):
    # the query index of a prange loop is typed int64 where Numba types the driver and uint64
    # in the parallel body it compiles from it: a stream key built from it had two types, so
    # each kernel below it took two compilations in a first fit (about 1.5 s of it).
    # noisy_top_order is inlined into the per-order loop (no compilation of its own); the
    # selection it calls compiles once
    printed = _run(["-c", YETILOSS_COMPILES], tmp_path / "numba-cache", timeout=600)
    assert printed.split() == ["1", "0", "1"]
