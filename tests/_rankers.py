"""How the tests train the package's objectives through a booster when the booster is only the
means: the booster's scikit-learn ranker, one call that differs only in the class.

The tests whose subject is the low-level adapter API (``LGBMObjective``, ``XGBObjective``,
``CatBoostObjective``) or a native booster objective build their own booster calls.
"""

from __future__ import annotations

import numpy as np
import pytest

RANKERS = {"lightgbm": "StochasticLGBMRanker", "xgboost": "StochasticXGBRanker",
           "catboost": "StochasticCatBoostRanker"}

#: small trees of about the same size in every booster
SHALLOW = {"lightgbm": dict(num_leaves=7, min_data_in_leaf=20, deterministic=True),
           "xgboost": dict(max_depth=3, tree_method="hist"),
           "catboost": dict(depth=3)}


def fit_ranker(booster: str, objective, X, y, group, **params):
    """``objective`` fitted on ``X, y`` (query sizes ``group``) by ``booster``'s ranker.

    ``params`` are the ranker's arguments and booster parameters; ``random_state=0`` and
    ``n_jobs=2`` unless given. The test is skipped when the booster is not installed.
    """
    pytest.importorskip(booster)
    import stochrank_objectives

    ranker_class = getattr(stochrank_objectives, RANKERS[booster])
    ranker = ranker_class(objective, **{"random_state": 0, "n_jobs": 2, **params})
    return ranker.fit(X, y, group=group)


def graded_queries(n_queries: int = 40, seed: int = 0, n_features: int = 5):
    """``(X, y, qid)``: ``n_queries`` queries of 4-15 documents (qid ``7 q + 3``, contiguous),
    Gaussian features and grades 0-3 that follow the first two features with noise."""
    rng = np.random.default_rng(seed)
    sizes = rng.integers(4, 16, n_queries)
    qid = np.repeat(np.arange(n_queries) * 7 + 3, sizes)
    X = rng.normal(size=(qid.size, n_features))
    y = np.clip(np.round(X[:, 0] + 0.5 * X[:, 1] + rng.normal(0, 0.5, qid.size) + 1), 0, 3)
    return X, y, qid
