"""LightGBM front end: a custom objective for ``lightgbm.DaskLGBMRanker``.

Imports LightGBM (through the single-machine adapter) and not XGBoost.

Example::

    from distributed import Client
    import lightgbm as lgb
    from stochrank_objectives import SGLB, StochasticRank
    from stochrank_objectives.adapters.dask import (DaskLGBMObjective, lightgbm_inputs,
                                                    query_layout, repartition_by_query)

    client = Client("tcp://scheduler:8786")
    # df: a dask DataFrame with columns qid, label and features; the rows of a query contiguous
    df = repartition_by_query(df, "qid").persist()
    layout = query_layout(df, "qid", "label")      # checks; per-partition sizes and digests
    X, y, group = lightgbm_inputs(df, "qid", "label", layout=layout)
    obj = DaskLGBMObjective(StochasticRank(metric="NDCG", top=5), sglb=SGLB(0.1, 0.01, 1e4),
                            layout=layout)
    ranker = lgb.DaskLGBMRanker(objective=obj, n_estimators=100, metric="None", time_out=5)
    ranker.fit(X, y, group=group, callbacks=[obj.callback()])   # the callback is required
    booster = obj.finalize(ranker)     # a lightgbm.Booster; SGLB: c^T baked into the leaves

Reproducibility: ``lightgbm.dask`` re-places the parts and re-assigns machine ranks on every
``fit``, which changes the distributed histogram bins (the trees) even for deterministic
objectives; the noise itself depends on the partitioning only (:mod:`.seeding`).
"""

from __future__ import annotations

from ..lightgbm import LGBMObjective
from ._frontend import DaskFrontEnd

__all__ = ["DaskLGBMObjective"]


class DaskLGBMObjective(DaskFrontEnd):
    """Custom objective for ``lightgbm.DaskLGBMRanker(objective=...)``.

    Pass ``callbacks=[obj.callback()]`` to ``fit`` (always, not only with SGLB): it starts a
    fresh :class:`~stochrank_objectives.adapters.lightgbm.LGBMObjective` on every worker for
    every run and sets the iteration (and the SGLB learning rate). After training with SGLB,
    call :meth:`finalize` on the returned model. Seeding: see :mod:`.seeding`.

    Example::

        obj = DaskLGBMObjective(StochasticRank(top=5), sglb=SGLB(0.1, 0.01, 1e4), layout=layout)
        ranker = lgb.DaskLGBMRanker(objective=obj, metric="None").fit(
            X, y, group=group, callbacks=[obj.callback()])
        booster = obj.finalize(ranker)

    Args:
      objective: one of this package's objectives; each worker calls a copy per partition.
      sglb: an :class:`~stochrank_objectives.sglb.SGLB` schedule, or None; the callback sets
        LightGBM's per-tree learning rate and :meth:`finalize` scales the model by ``c^T``.
      layout: :func:`~.layout.query_layout` of the trained frame (keys the noise per
        partition), or None (keys it per worker shard).
    """

    _adapter_type = LGBMObjective
    _name = "DaskLGBMRanker(...).fit(..., callbacks=[obj.callback()])"

    def __call__(self, y_true, y_pred, weight, group):
        return self._state()[0](y_true, y_pred, weight, group)

    def _start(self):
        state = super()._start()
        state[0]._hub.token = self._token  # the workers mark the booster as this front end's
        return state

    def callback(self):
        """The training callback (required): starts the workers' adapters, sets the iteration."""
        return _DaskLGBMCallback(self)

    def finalize(self, model):
        """Bake ``c^T`` into the leaves of a trained ``DaskLGBMRanker`` or Booster.

        Example::

            obj.finalize(ranker).save_model("model.txt")

        Args:
          model: the ``DaskLGBMRanker`` (or its Booster) trained with this front end. Like
            ``LGBMObjective.finalize``, it refuses a model this front end did not train (e.g.
            one reloaded from a file).

        Returns:
          The ``lightgbm.Booster`` (unchanged without SGLB).
        """
        adapter = LGBMObjective(self.objective, sglb=self.sglb)
        adapter._hub.token = self._token
        return adapter.finalize(model)


class _DaskLGBMCallback:
    def __init__(self, front: DaskLGBMObjective):
        self.order = 10
        self.before_iteration = True
        self.front = front

    def __call__(self, env) -> None:
        if env.iteration == env.begin_iteration:
            state = self.front._start()
        else:
            state = self.front._state()
        state[1](env)
