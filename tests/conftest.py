"""Fixtures shared by several test files."""

import pytest

from stochrank_objectives.data import load_mq2008


@pytest.fixture(scope="session")
def mq2008_train_vali():
    """MQ2008 Fold 1 train and validation splits (bundled with the package)."""
    return load_mq2008("train"), load_mq2008("vali")
