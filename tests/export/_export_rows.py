"""Rows the export tests score: MQ2008 queries as float32 (the precision the exported models
read), and the same rows with a tenth of the values missing (NaN), where the engines' rules for
missing values are tested."""

import numpy as np

from stochrank_objectives.data import load_mq2008


def mq2008_rows_with_nan(n_queries: int, seed: int):
    """``(X, X_with_nan, y, qid, query_offsets)`` of the first ``n_queries`` training queries."""
    d = load_mq2008("train").subset_queries(n_queries)
    X = np.asarray(d.X, dtype=np.float32)
    Xn = X.copy()
    Xn[np.random.default_rng(seed).random(X.shape) < 0.1] = np.nan
    return X, Xn, d.y, d.qid, d.query_offsets
