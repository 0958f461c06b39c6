"""The kernels never read outside their arrays: the kernel tests again, compiled with Numba's
bounds checking (issue 21).

Numba's compiled code does not check indices, so a kernel that reads past an array returns
garbage instead of failing. ``NUMBA_BOUNDSCHECK=1`` compiles every kernel with the check (an
``IndexError`` on any out-of-range index); the subprocess gets its own Numba cache folder, so
it neither loads the unchecked machine code from the package's cache nor leaves checked code
there. A probe first confirms that the check is on.
"""

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

#: the kernel tests (brute force against references on varied inputs, selection, internals),
#: the objectives' bad-input tests and the per-query training cutoffs; the slow Monte Carlo
#: statistics run the same kernels on the same shapes, so they add time (compiled with checks,
#: minutes) but no index coverage
CHECKED_TESTS = ["tests/kernels", "tests/objectives/test_bad_input.py",
                 "tests/objectives/test_min_top_share.py",  # per-query cutoffs
                 # MRR's reach: the depth's bound, the selection path, the gathered rows
                 "tests/objectives/test_mrr_reach.py::"
                 "test_kth_relevant_position_against_a_full_sort",
                 *(f"tests/objectives/test_mrr_reach.py::test_reach_matches_brute_force[{case}]"
                   for case in ("0.3-None-auto", "0.3-30-exact", "0.6-3-fast")),
                 # YetiRank's driver in every mode against the brute force, and its
                 # every-partner path (masses below the top) against the pairs one by one
                 "tests/objectives/test_yetirank.py::"
                 "test_noise_free_derivatives_match_the_brute_force",
                 "tests/objectives/test_yetirank.py::"
                 "test_every_partner_below_the_top_equals_the_pairs_one_by_one"]

PROBE = """
import numpy as np
from numba import njit

@njit
def past_the_end(a):
    return a[a.shape[0]]

try:
    past_the_end(np.zeros(3))
except IndexError:
    print("bounds checked")
"""


@pytest.mark.slow
@pytest.mark.timeout(1800)  # compiles every kernel again, with the checks
def test_kernel_tests_pass_with_numba_bounds_checking(tmp_path):
    env = {**os.environ, "NUMBA_BOUNDSCHECK": "1", "NUMBA_CACHE_DIR": str(tmp_path / "numba")}
    probe = subprocess.run([sys.executable, "-c", PROBE], env=env, cwd=tmp_path,
                           capture_output=True, text=True, timeout=120)
    assert probe.stdout.strip() == "bounds checked", probe.stderr
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", "-o", "addopts=",
         "-m", "not slow", *CHECKED_TESTS],
        env=env, cwd=ROOT, capture_output=True, text=True, timeout=1500)
    tail = run.stdout[-3000:] + run.stderr[-2000:]
    assert run.returncode == 0, tail
    assert " passed" in run.stdout and "IndexError" not in run.stdout, tail
