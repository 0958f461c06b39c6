"""The CCS gradients, and YetiLoss's with every partner, are the same bits in a process that
compiles the kernels and in one that loads them from Numba's cache.

A fast-math kernel called from another compiled function exists twice in a process that
compiled it: its own library, and the copy linked into the caller (optimised once more with the
caller, so its sums may be associated differently). The JIT engine binds the caller to the
first definition it holds -- the kernel's own library after a compilation, the caller's copy
after a cache load -- so without care the first training after an install and every later one
differ in the last bits (283,380 of 2.4 million derivatives on 1.2 million documents did).
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# Every path of the CCS kernels with fast-math sums: selection with many breakpoints (queries
# over 160 documents at NDCG's grown cutoffs) and with few, the Taylor series of clustered means
# (equal scores), the one-sided Gauss transforms (full NDCG on a long query), the counting
# kernel (MRR with and without its reach) and FilteredDCG's virtual document.
SCRIPT = textwrap.dedent("""
    import hashlib
    import numpy as np
    from stochrank_objectives import StochasticRank, YetiRank

    rng = np.random.default_rng(3)
    sizes = np.concatenate([rng.integers(20, 600, 40), [4000]])
    offs = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    labels = rng.choice(5, size=offs[-1], p=[0.5, 0.25, 0.15, 0.07, 0.03]).astype(float)
    trained = 0.5 * labels + rng.standard_normal(offs[-1])
    cases = [dict(metric="NDCG", top=10), dict(metric="NDCG", top=10, min_top_share=0.0),
             dict(metric="NDCG"), dict(metric="MRR"), dict(metric="MRR", reach=0.0),
             dict(metric="FilteredDCG", top=10)]
    objectives = [StochasticRank(n_samples=1, seed=0, **params) for params in cases]
    # YetiLoss with every partner: its pass below the top sums each row under reassociation
    objectives.append(YetiRank(mode="NDCG", top=10, num_neighbors=-1))
    digest = hashlib.sha256()
    for obj in objectives:
        for scores in (trained, np.zeros(offs[-1])):
            for part in obj.grad_hess(scores, labels, offs, 0):
                digest.update(np.ascontiguousarray(part).tobytes())
    print(digest.hexdigest())
""")


def _run(cache_dir: Path) -> str:
    env = dict(os.environ, NUMBA_CACHE_DIR=str(cache_dir))
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    done = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True,
                          text=True, check=False, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout.strip().splitlines()[-1]


@pytest.mark.slow
def test_compiled_and_cached_kernels_give_the_same_gradients(tmp_path):
    compiled = _run(tmp_path)  # an empty cache: every kernel compiles
    assert any(tmp_path.rglob("*.nbi")), "the first run wrote no Numba cache"
    cached = _run(tmp_path)  # the same kernels, loaded from the cache just written
    assert compiled == cached
