"""StochasticXGBRanker trains on a QuantileDMatrix with histogram trees (as XGBRanker does): a
DMatrix keeps its own float32 + index copy of the features for the whole fit, which at
MSLR-WEB30K's scale (benchmarks.scale) was the larger part of the peak memory."""

import numpy as np
import pytest
import xgboost as xgb

from stochrank_objectives import StochasticRank
from stochrank_objectives.adapters import xgboost as xgb_adapter


def _data(seed, n_queries=12, size=10, n_features=4):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n_queries * size, n_features)).astype(np.float32)
    y = rng.integers(0, 5, n_queries * size).astype(np.float64)
    return X, y, np.repeat(np.arange(n_queries), size)


@pytest.fixture
def trained_on(monkeypatch):
    """The matrix types ``xgboost.sklearn.train`` (XGBRanker.fit's call) received:
    (training, [evaluation sets])."""
    seen = []
    train = xgb.training.train

    def recording_train(params, dtrain, *args, evals=(), **kwargs):
        seen.append((type(dtrain), [type(d) for d, _ in evals]))
        return train(params, dtrain, *args, evals=evals, **kwargs)

    monkeypatch.setattr(xgb.sklearn, "train", recording_train)
    return seen


def test_histogram_trees_train_on_quantile_matrices(trained_on):
    X, y, qid = _data(0)
    Xv, yv, qv = _data(1)
    ranker = xgb_adapter.StochasticXGBRanker(StochasticRank(top=5), n_estimators=3, max_bin=32,
                                             n_jobs=1, random_state=0, learning_rate=0.1)
    ranker.fit(X, y, qid=qid, eval_set=[(Xv, yv, qv)])
    assert trained_on == [(xgb.QuantileDMatrix, [xgb.QuantileDMatrix])]
    # the same model as a DMatrix gives: histograms are cut from the same sketch
    reference = xgb.train(dict(xgb_adapter.DEFAULT_PARAMS, learning_rate=0.1, max_bin=32,
                               nthread=1, seed=0), xgb.DMatrix(X, y, qid=qid), 3,
                          obj=xgb_adapter.XGBObjective(StochasticRank(top=5)))
    np.testing.assert_allclose(ranker.predict(Xv),
                               reference.predict(xgb.DMatrix(Xv), output_margin=True),
                               rtol=1e-6, atol=1e-6)


def test_exact_trees_keep_a_dmatrix(trained_on):
    X, y, qid = _data(0)
    xgb_adapter.StochasticXGBRanker(StochasticRank(top=5), n_estimators=2, n_jobs=1,
                                    tree_method="exact").fit(X, y, qid=qid)
    assert trained_on == [(xgb.DMatrix, [])]
