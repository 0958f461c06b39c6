"""XGBoost adapter: any objective of this package as an XGBoost custom objective.

With ``xgb.train`` (the DMatrix needs ``qid=``, sorted, or ``group=`` sizes)::

    dtrain = xgb.DMatrix(X, y, qid=qid)
    params = {"base_score": 0.0, "disable_default_eval_metric": 1, "learning_rate": 0.3}
    booster = xgb.train(params, dtrain, 100, obj=XGBObjective(StochasticRank(top=5)))

``base_score=0``: with a custom objective XGBoost otherwise starts every margin at 0.5 (harmless
for a ranking gradient, but it becomes part of the model). ``disable_default_eval_metric``: the
learner thinks it is ``reg:squarederror`` while it trains and would report (and early-stop on)
``rmse``. Evaluate with :class:`XGBMetric` (``custom_metric=XGBMetric("NDCG", 5), maximize=True``).
The callback then names the objective ``rank:pairwise`` (same link and predictions) for servers.

``XGBRanker`` refuses callable objectives; :class:`StochasticXGBRanker` is an ``XGBRanker``
that trains with this package's objective (XGBRanker's arguments, attributes and methods, the
package's objective, metrics, SGLB and checks on top)::

    ranker = StochasticXGBRanker(StochasticRank(top=5), n_estimators=200, max_depth=6,
                                 eval_metric="NDCG@5", early_stopping_rounds=20)
    ranker.fit(X, y, qid=qid, eval_set=[(Xv, yv)], eval_qid=[qid_v]).predict(Xt)

SGLB (see :mod:`stochrank_objectives.sglb`) runs through the adapter's callback: it sets tree
t's learning rate to ``lr * c^-(t+1)`` in ``before_iteration`` (XGBoost's own
``LearningRateScheduler`` is one tree late), and after training multiplies every leaf value and
``base_score`` of the JSON model by ``c^T`` and reloads it, so that the returned (and saved)
model predicts ``F_T`` without this package::

    obj = XGBObjective(StochasticRank(top=5), sglb=SGLB(0.1, 0.01, 1e4))
    booster = xgb.train(params, dtrain, 100, obj=obj, callbacks=[obj.callback()])

With early stopping the SGLB model is first cut to ``best_iteration + 1`` trees (an SGLB model is
not a prefix of a longer one). XGBoost's margins are float32, so ``G = F c^-t`` limits the number
of trees (:meth:`SGLB.max_iterations`); the callback raises a clear error beyond it.

Iterations. The objective's ``iteration`` (which keys its noise) is the index of the tree being
added to the model: read from XGBoost's loop by the callback (which also resets it at the start of
each run) and, when ``xgb_model`` holds ``T0`` trees, continued from ``T0``; without the callback
the adapter counts itself from 0 -- then use a fresh adapter per ``xgb.train`` call to reproduce
a run. ``base_margin`` is part of the margins the objective sees; under SGLB it is the starting
point ``F_0`` and is shrunk as well: the SGLB model is ``F_T = c^T (base_margin + G_T)``, and
the finalised booster holds ``c^T G_T`` only (its ``stochrank_sglb_final_scale`` attribute is
``c^T``).

Continued training (``xgb.train(..., xgb_model=...)``): with the callback the iteration continues
from the model's trees. Under SGLB the booster must hold ``G_T0 = F_T0 / c^T0`` while a finalised
model (or any other) predicts ``F_T0``: pass ``xgb_model=obj.continue_from(model)``, a copy with
its leaves and base score scaled by ``c^-T0``; the new trees follow, and the finalisation scales all
``T0 + n`` trees by ``c^(T0 + n)``. A model of ``T0`` trees continued by ``n`` is then the model of
``T0 + n`` trees of one run with the same settings, to float32 rounding. Without SGLB
``continue_from`` only drops the model's early-stopping and SGLB attributes.

Weights. DMatrix weights are query weights, one per query group (XGBoost's ranking
convention): the loss is the weighted sum over queries, :class:`XGBMetric` the weighted mean.
XGBoost itself refuses one weight per row on a matrix with groups, in ``xgb.train`` before the
objective runs ("Size of weight must equal to the number of query groups"). From per-row
weights ``w`` (equal within each query) build the matrix with one per query::

    from stochrank_objectives.groups import query_offsets_from_qid, query_weights
    dtrain = xgb.DMatrix(X, y, qid=qid, weight=query_weights(w, query_offsets_from_qid(qid)))

(``query_weights`` names the first query whose rows differ), or call ``dtrain.set_group(sizes)``
and ``dtrain.set_weight(per_query)``. :class:`StochasticXGBRanker` takes either form as
``sample_weight`` and does this itself.
"""

from . import _objective
from ._metric import XGBMetric
from ._objective import XGBObjective
from ._ranker import StochasticXGBRanker

__all__ = ["XGBObjective", "XGBMetric", "StochasticXGBRanker", "DEFAULT_PARAMS"]

#: Parameters every custom ranking objective wants (see the module docstring).
DEFAULT_PARAMS = _objective.DEFAULT_PARAMS
