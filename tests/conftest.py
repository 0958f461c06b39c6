"""Fixtures shared by several test files, and the kernels compiled once before a distributed run."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from stochrank_objectives.data import load_mq2008


@pytest.fixture
def default_sigint_handler():
    """Python's default SIGINT handler for a test that sends real SIGINTs, then the previous one.

    A process started in the background by a shell without job control (``pytest ... &``, some
    CI runners) inherits SIGINT ignored, and Python keeps it so: the signal would then never
    reach the code under test.
    """
    import signal

    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


@pytest.fixture(scope="session")
def mq2008_train_vali():
    """MQ2008 Fold 1 train and validation splits (bundled with the package)."""
    return load_mq2008("train"), load_mq2008("vali")


@pytest.fixture(scope="session")
def mq2008_first_queries(mq2008_train_vali):
    """``(X, y, query_offsets, qid)`` of the first 80 MQ2008 Fold 1 training queries (about
    1,600 documents): small enough for fast adapter tests."""
    train = mq2008_train_vali[0]
    n = int(train.query_offsets[80])
    return train.X[:n], train.y[:n], train.query_offsets[:81], train.qid[:n]


def pytest_sessionstart(session):
    """On the controller of a pytest-xdist run with several workers, compile the objectives'
    Numba kernels into Numba's cache first, in as many processes side by side (the package's own
    ``python -m stochrank_objectives.precompile``, one ``--part`` per process), so that the
    workers load them instead of each compiling them. A kernel missed here is still compiled
    where it is first called: this only moves work, it checks nothing."""
    config = session.config
    n_workers = getattr(config.option, "numprocesses", None) or 0
    if hasattr(config, "workerinput") or n_workers < 2 or config.option.collectonly:
        return
    root = Path(__file__).resolve().parents[1]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")])}
    command = [sys.executable, "-m", "stochrank_objectives.precompile", "--jobs", str(n_workers)]
    parts = [subprocess.Popen([*command, "--part", str(i)], cwd=root, env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
             for i in range(n_workers)]
    for part in parts:
        _, errors = part.communicate()
        if part.returncode:  # the tests will say what is wrong; this only saved time
            print(f"kernel warm-up exited {part.returncode}: {errors[-500:]}", file=sys.stderr)


#: the tests that each run a job of a minute or more in a subprocess (measured on 2 cores): they
#: start first, so that a distributed run does not end with one worker on one of them alone
LONGEST = ("tests/test_bounds_checked_kernels.py::", "tests/test_integration_recipes.py::",
           "tests/test_types.py::", "tests/test_fresh_imports.py::",
           "tests/test_docs.py::test_sphinx")


def pytest_collection_modifyitems(session, config, items):
    items.sort(key=lambda item: not item.nodeid.startswith(LONGEST))  # stable: order kept otherwise
