"""``LGBMObjective``: any objective of this package as a LightGBM custom objective."""

from __future__ import annotations

import threading

import lightgbm as lgb

from .._common import BoosterObjective, as_scores, objective_grad_hess
from .._serving import lightgbm_as_ranker
from ._callback import BEGIN_ATTR, TRAINED_ATTR, Hub, LGBMCallback
from ._inputs import MISSING, call_arguments, grouped

__all__ = ["LGBMObjective"]

_FINAL_ATTR = "_stochrank_sglb_final_scale"


class _Begin(threading.local):
    """The init model's number of trees in the training this thread runs (set by the
    callback; 0 = a new model)."""

    def __init__(self) -> None:
        self.trees = 0


class LGBMObjective(BoosterObjective):
    """A LightGBM custom objective wrapping any ``grad_hess`` objective of this package.

    Callable both as ``fobj(preds, train_data)`` (``lgb.train``, ``params["objective"]``) and as
    ``fobj(y_true, y_pred, weight, group)`` (``LGBMRanker(objective=...)``).

    Weights (``lgb.Dataset(X, y, group=sizes, weight=w)`` or ``sample_weight=``) are query
    weights: one per row, the same for all the rows of a query; each query's gradient and
    hessian are multiplied by its weight (:func:`~stochrank_objectives.adapters._common.
    objective_grad_hess`).

    Example::

        fobj = LGBMObjective(StochasticRank(metric="NDCG", top=10))
        booster = lgb.train({"objective": fobj, "learning_rate": 0.1}, train_set)

    Args:
      objective: an object with ``grad_hess(scores, labels, query_offsets, iteration)``.
      sglb: optional :class:`~stochrank_objectives.sglb.SGLB` schedule; then pass
        ``callbacks=[adapter.callback()]`` and call :meth:`finalize` after training.

    Continued training (``lgb.train(..., init_model=booster, callbacks=[obj.callback()])``):
    the iteration passed to the objective continues from the init model's number of trees
    ``n`` (its noise is that of trees ``n, n + 1, ...``). Under SGLB the init model's
    predictions are the starting point ``F_0``: the new trees are fitted at ``c^(t+1) (F_0 +
    new trees)`` and :meth:`finalize` multiplies every tree, the init model's included, by
    ``c^T`` (``T`` trees trained in this run), which is the SGLB model ``F_T`` started from
    ``F_0``. Without the callback the iteration counts from 0.
    """

    callback_hint = ("lgb.train(..., callbacks=[obj.callback()]) or "
                     "LGBMRanker(...).fit(..., callbacks=[obj.callback()])")

    def _restored(self) -> None:
        # a new or unpickled adapter starts its own hub (deep copies share the original's)
        self._hub = Hub()
        self._hub.add(self)
        super()._restored()
        self._begin = _Begin()

    # LightGBM deep-copies params (and so this object) at the start of every training run. A
    # copy starts counting iterations at 0 and joins the hub, so that the callback (made from
    # any copy) drives the one LightGBM calls. The wrapped objective and schedule are shared,
    # not copied: the user's objective object is the one that is called.
    def __deepcopy__(self, memo):
        new = object.__new__(type(self))
        memo[id(self)] = new
        new.objective = self.objective
        new.sglb = self.sglb
        new._hub = self._hub
        BoosterObjective._restored(new)  # its own per-thread counter, from 0
        new.bind(self.bound)  # the ranker's data of this fit (validated, immutable: shared)
        new._begin = _Begin()
        new._hub.add(new)
        return new

    def sync_begin(self, trees: int) -> None:
        """Set (by the callback) the init model's number of trees in this thread's training."""
        self._begin.trees = trees

    # -- the objective -----------------------------------------------------------------------
    def __call__(self, preds_or_y_true, train_data_or_y_pred, weight=MISSING, group=MISSING):
        preds, labels, sizes, weight, container = call_arguments(
            "LGBMObjective", preds_or_y_true, train_data_or_y_pred, weight, group)
        return self._grad_hess(preds, container, labels, sizes, weight)

    def _grad_hess(self, preds, container, labels, sizes, weight):
        preds = as_scores(preds)

        def build():
            labels_, offsets = grouped(labels, sizes, preds.shape[0], "training data")
            return self.grouped(labels_, offsets, weight,
                                {"weights": "the training data's weight"})

        # validated once per training: LightGBM keeps the Dataset's label, group and weight
        # arrays as objects (get_label() returns the same array every round)
        data = self.training.get(container, (labels, sizes, weight), build)
        if data.n_docs != preds.shape[0]:
            raise ValueError(f"length mismatch in the training data: {preds.shape[0]} "
                             f"predictions, {data.n_docs} labels")
        begin = self._begin.trees
        if self.sglb is not None and begin:
            # continued training: the booster holds F_0 + the new trees, G_t = F_t / c^t with
            # t counted in this run, while the schedule scales by c^(begin + t + 1) (the
            # iteration continues from the init model's trees): c^-begin cancels the excess
            preds = preds * self.sglb.shrink ** -begin
        return objective_grad_hess(self, preds, data)

    # -- callback and finalisation -----------------------------------------------------------
    def callback(self):
        """A LightGBM callback: sets the iteration (and, under SGLB, the learning rate).

        Runs before every iteration; under SGLB it delegates to
        ``lgb.reset_parameter(learning_rate=sglb.learning_rate_at)`` (``t`` counted from the
        first tree of this run, also after ``init_model``) and refuses iteration counts that
        overflow float64 scores and boosting types other than plain trees.
        """
        return LGBMCallback(self._hub, self.sglb)

    def finalize(self, model):
        """Bake the SGLB factor ``c^T`` into every leaf and name the model a ranker (in place);
        returns the Booster.

        ``model`` is a ``lightgbm.Booster`` or a fitted ``LGBMModel``; ``T`` is the number of
        iterations trained by this adapter's callback (after early stopping LightGBM has
        already truncated the returned model to the best iteration); after continued training
        (``init_model``) the init model's trees are multiplied by ``c^T`` as well (``F_T = c^T
        F_0 + ...``). With or without SGLB the model's objective is then named
        ``lambdarank`` (its model text had none), so that ONNX converters, treelite and the
        search engines' importers accept it; its predictions are unchanged by that (see
        :mod:`~stochrank_objectives.adapters._serving`). Under SGLB only a booster trained by
        this adapter's callback in this process is accepted: a model loaded from a file or
        string is refused (saved after finalisation, it is already final).
        """
        booster = model.booster_ if isinstance(model, lgb.LGBMModel) else model
        if not isinstance(booster, lgb.Booster):
            raise TypeError(f"expected a lightgbm.Booster or LGBMModel, got {type(model).__name__}")
        if self.sglb is None:
            return lightgbm_as_ranker(booster)
        if getattr(booster, _FINAL_ATTR, None) is not None:
            raise RuntimeError("this booster has already been finalised "
                               "(c^T is baked into its leaves)")
        if getattr(booster, TRAINED_ATTR, None) != self._hub.token:
            raise RuntimeError(
                "this booster was not trained by this adapter's callback in this process (e.g. "
                "it was loaded with lgb.Booster(model_file=...) or model_str=...), so finalize() "
                "refuses it: an SGLB model saved after finalize() is already final (c^T is baked "
                "into its leaves) and scaling it again would be wrong. Finalise the booster that "
                "lgb.train / LGBMRanker.fit returned, with the adapter that trained it, before "
                "saving it")
        n_iter = booster.current_iteration()
        if 0 < booster.best_iteration < n_iter:
            raise ValueError(
                f"the booster has {n_iter} iterations but best_iteration={booster.best_iteration}: "
                "an SGLB model is not a prefix of a longer one, so truncate it in place first: "
                "booster.model_from_string(booster.model_to_string(num_iteration="
                "booster.best_iteration)) (lgb.train does this unless keep_training_booster=True)")
        self.finalize_trees(booster, n_iter, getattr(booster, BEGIN_ATTR, 0))
        return lightgbm_as_ranker(booster)

    def finalize_trees(self, booster, kept: int, begin: int = 0) -> None:
        """Under SGLB, multiply the leaves of the first ``kept`` iterations of ``booster`` by
        ``c^(kept - begin)`` in place (``set_leaf_output``) and mark it final; nothing without
        SGLB. ``begin``: the init model's iterations (trained before this run). Used by
        :meth:`finalize` and by the ranker at the last round of ``lgb.train`` (later trees, cut
        by early stopping, are left as they are)."""
        if self.sglb is None:
            return
        factor = self.sglb.final_scale(kept - begin)
        for tree in booster.dump_model(num_iteration=kept)["tree_info"]:
            index = tree["tree_index"]
            for leaf in range(tree["num_leaves"]):
                booster.set_leaf_output(index, leaf, booster.get_leaf_output(index, leaf) * factor)
        setattr(booster, _FINAL_ATTR, factor)
