"""LightGBM adapter: any objective of this package as a LightGBM custom objective.

Training with ``lgb.train`` (the Dataset needs ``group=``, the query sizes)::

    obj = LGBMObjective(StochasticRank(metric="NDCG", top=5))
    ds = lgb.Dataset(X, y, group=sizes)
    booster = lgb.train({"objective": obj, "learning_rate": 0.3}, ds, 100)

and with the scikit-learn wrapper::

    ranker = lgb.LGBMRanker(objective=LGBMObjective(StochasticRank(top=5)), metric="None")
    ranker.fit(X, y, group=sizes, eval_X=(Xv,), eval_y=(yv,), eval_group=[sizes_v],
               eval_metric=LGBMMetric("NDCG", 5), callbacks=[lgb.early_stopping(20)])

``metric="None"`` stops ``LGBMRanker`` from adding LightGBM's own ``ndcg@1..5`` (input-order ties).
:class:`LGBMMetric` is also a ``feval`` for ``lgb.train``. Its NDCG, ERR and MRR resolve ties
pessimistically by default and are usable for early stopping.

SGLB (see :mod:`stochrank_objectives.sglb`) needs the adapter's callback, which sets tree t's
learning rate to ``lr * c^-(t+1)`` through ``lgb.reset_parameter``, and a final
:meth:`LGBMObjective.finalize`, which multiplies every leaf by ``c^T`` (``set_leaf_output``)
so that the saved model predicts ``F_T`` without this package::

    obj = LGBMObjective(StochasticRank(top=5), sglb=SGLB(0.1, 0.01, 1e4))
    booster = lgb.train({"objective": obj}, ds, 100, callbacks=[obj.callback()])
    obj.finalize(booster)

Iterations. The objective's ``iteration`` argument (which keys its noise) is the index of the
tree in the current training run, counted from 0. LightGBM deep-copies the objective at the
start of every ``lgb.train`` / ``fit`` call and the copy starts counting at 0, so repeated runs
with the same adapter are reproducible. With :meth:`LGBMObjective.callback` the index is read
from LightGBM's own iteration counter instead (needed for ``lgb.cv``, whose folds share one
objective); it counts an ``init_model``'s trees, so continued training draws the noise of the
trees that follow them. Under SGLB the init model (finalised) is the start ``F_0`` and
:meth:`LGBMObjective.finalize` multiplies its trees by ``c^T`` too. Copies share the wrapped objective, so do not train with one adapter in several
threads at once.

``init_score`` is part of the raw scores the objective sees (LightGBM adds it). Under SGLB it is
the starting point ``F_0``, so it is shrunk as well: predictions of the finalised model exclude
the shrunk initial score ``c^T * init_score``. Dataset weights are query weights (one per row,
equal within a query): the loss is the weighted sum over queries, and :class:`LGBMMetric` the
weighted mean.

The modules: :mod:`._inputs` (the two call forms of a LightGBM callable and their query
groups), :mod:`._callback` (the iteration and SGLB learning-rate callback), :mod:`._objective`
(:class:`LGBMObjective`), :mod:`._metric` (:class:`LGBMMetric`), :mod:`._model_file` (the check of a model file
before LightGBM reads it) and :mod:`._ranker`
(:class:`StochasticLGBMRanker`). Each imports only the modules before it, so any of them can be
imported first in a fresh interpreter (for example when a pickled ranker is loaded).
"""

from ._metric import LGBMMetric
from ._objective import LGBMObjective
from ._ranker import StochasticLGBMRanker

__all__ = ["LGBMObjective", "LGBMMetric", "StochasticLGBMRanker"]
