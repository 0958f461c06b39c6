"""Train CatBoost rankers with this package's objectives (StochasticRank and any other object
that follows the ``grad_hess(scores, labels, query_offsets, iteration)`` protocol).

Usage (``StochasticCatBoostRanker`` is a ``catboost.CatBoostRanker``: CatBoost's code, one
name changed)::

    from catboost import Pool
    from stochrank_objectives.adapters.catboost import StochasticCatBoostRanker

    ranker = StochasticCatBoostRanker(iterations=300, depth=6)   # StochasticRank NDCG@5
    ranker.fit(Pool(X, y, group_id=qid), eval_set=Pool(X_val, y_val, group_id=qid_val))
    scores = ranker.predict(X_test)          # ranker.booster_ is a plain catboost.CatBoost

The modules: :mod:`._layout` (the row-index label channel and the per-chunk layout guard),
:mod:`._objective` (:class:`CatBoostObjective`, CatBoost's user-defined objective),
:mod:`._params` (CatBoost parameters and eval metrics derived from the objective),
:mod:`._sglb` (SGLB in CatBoost's parameter names, defaults and float32 units),
:mod:`._fit` (the two training routes) and :mod:`._ranker` (:class:`StochasticCatBoostRanker`).

This module contains no gradient mathematics: it translates between the objective's protocol
(``grad`` is the gradient of the loss, one float64 per document) and CatBoost's user-defined
objective API (``calc_ders_range`` returns ``der1 = -grad`` and ``der2 = -hess``).

The design (the two training routes, the layout guard, the iteration counter, bootstrap,
eval metrics, categorical features and SGLB) is described on the documentation's CatBoost page
(``docs/guide/catboost.md``, "How the adapter works").
"""

from ._fit import catboost_fit
from ._layout import MAX_ROWS, LayoutError, decode_row_index, encode_row_index
from ._objective import CatBoostObjective
from ._params import default_eval_metric
from ._ranker import StochasticCatBoostRanker

__all__ = [
    "StochasticCatBoostRanker",
    "CatBoostObjective",
    "catboost_fit",
    "LayoutError",
    "default_eval_metric",
    "encode_row_index",
    "decode_row_index",
    "MAX_ROWS",
]
