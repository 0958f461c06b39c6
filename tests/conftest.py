"""Fixtures shared by several test files."""

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
