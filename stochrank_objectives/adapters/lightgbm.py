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
objective). Copies share the wrapped objective, so do not train with one adapter in several
threads at once.

``init_score`` is part of the raw scores the objective sees (LightGBM adds it). Under SGLB it is
the starting point ``F_0``, so it is shrunk as well: predictions of the finalised model exclude
the shrunk initial score ``c^T * init_score``. Sample weights are rejected (the objectives
have no weights).
"""

from __future__ import annotations

import uuid
import weakref

import lightgbm as lgb
import numpy as np

from ..groups import query_offsets_from_sizes
from ..sglb import SGLB
from ._common import EvalMetric, as_scores, check_objective_and_sglb, objective_grad_hess

__all__ = ["LGBMObjective", "LGBMMetric"]

_MISSING = object()
_FINAL_ATTR = "_stochrank_sglb_final_scale"
# Set by the SGLB callback on the Booster it trains: the token of the adapter (hub) that trained
# it. A Python attribute, so a model loaded from a file or string never has it (kept by pickle).
_TRAINED_ATTR = "_stochrank_sglb_trained_by"


class _Hub:
    """Shared by an adapter and all its copies (weakly held), so the callback reaches the copy
    LightGBM calls: LightGBM and its scikit-learn wrapper deep-copy the parameters (and so the
    adapter) several times per run, and only one of the copies is the training objective."""

    __slots__ = ("_members", "token")

    def __init__(self, token: str | None = None):
        self._members: weakref.WeakSet = weakref.WeakSet()
        self.token = uuid.uuid4().hex if token is None else token  # marks the boosters trained

    def add(self, adapter):
        self._members.add(adapter)

    def sync(self, iteration):
        for adapter in list(self._members):
            adapter._synced_iteration = iteration


def _group_error(where: str) -> ValueError:
    return ValueError(
        f"the {where} has no query groups: ranking objectives need them. Pass the number of "
        "documents per query, e.g. lgb.Dataset(X, y, group=sizes) or "
        "LGBMRanker().fit(X, y, group=sizes) (sizes = numpy.diff(query_offsets); for a qid "
        "column use numpy.diff(stochrank_objectives.query_offsets_from_qid(qid)))")


def _grouped(labels, sizes, n_preds: int, where: str):
    """float64 labels and int64 offsets, checked against the number of predictions."""
    if labels is None:
        raise ValueError(f"the {where} has no labels")
    if sizes is None:
        raise _group_error(where)
    labels = np.asarray(labels, dtype=np.float64).ravel()
    offsets = query_offsets_from_sizes(np.asarray(sizes).ravel())
    if not (labels.shape[0] == offsets[-1] == n_preds):
        raise ValueError(
            f"length mismatch in the {where}: {n_preds} predictions, {labels.shape[0]} labels, "
            f"query sizes summing to {offsets[-1]}; they must all describe the same documents")
    return labels, offsets


def _call_arguments(who, first, second, weight, group):
    """``(preds, labels, sizes, weight)`` from either call form of a LightGBM callable:
    ``lgb.train``'s ``(preds, dataset)`` or the scikit-learn API's ``(y_true, y_pred, weight,
    group)``."""
    if weight is _MISSING and group is _MISSING:
        preds, data = first, second
        if not isinstance(data, lgb.Dataset):
            raise TypeError(f"called with two arguments, {who} expects "
                            f"(preds, lightgbm.Dataset), got a {type(data).__name__}")
        return preds, data.get_label(), data.get_group(), data.get_weight()
    return (second, first, None if group is _MISSING else group,
            None if weight is _MISSING else weight)


class LGBMObjective:
    """A LightGBM custom objective wrapping any ``grad_hess`` objective of this package.

    Callable both as ``fobj(preds, train_data)`` (``lgb.train``, ``params["objective"]``) and as
    ``fobj(y_true, y_pred, weight, group)`` (``LGBMRanker(objective=...)``).

    Example::

        fobj = LGBMObjective(StochasticRank(metric="NDCG", top=10))
        booster = lgb.train({"objective": fobj, "learning_rate": 0.1}, train_set)

    Args:
      objective: an object with ``grad_hess(scores, labels, query_offsets, iteration)``.
      sglb: optional :class:`~stochrank_objectives.sglb.SGLB` schedule; then pass
        ``callbacks=[adapter.callback()]`` and call :meth:`finalize` after training.
    """

    def __init__(self, objective, sglb: SGLB | None = None):
        check_objective_and_sglb(objective, sglb)
        self.objective = objective
        self.sglb = sglb
        self._hub = _Hub()
        self._hub.add(self)
        self._reset()

    def _reset(self):
        self._next_iteration = 0     # used when no callback drives the iteration
        self._synced_iteration = None  # set by the callback before every tree

    def __repr__(self) -> str:
        return f"LGBMObjective({self.objective!r}, sglb={self.sglb!r})"

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
        new._reset()
        new._hub.add(new)
        return new

    def __getstate__(self):
        return {"objective": self.objective, "sglb": self.sglb}

    def __setstate__(self, state):
        self.objective = state["objective"]
        self.sglb = state["sglb"]
        self._hub = _Hub()
        self._hub.add(self)
        self._reset()

    # -- the objective -----------------------------------------------------------------------
    def __call__(self, preds_or_y_true, train_data_or_y_pred, weight=_MISSING, group=_MISSING):
        preds, labels, sizes, weight = _call_arguments(
            "LGBMObjective", preds_or_y_true, train_data_or_y_pred, weight, group)
        return self._grad_hess(preds, labels, sizes, weight)

    def _grad_hess(self, preds, labels, sizes, weight):
        preds = as_scores(preds)
        if weight is not None:
            raise ValueError("sample weights are not supported by this package's ranking "
                             "objectives; train without weight= / sample_weight=")
        labels, offsets = _grouped(labels, sizes, preds.shape[0], "training data")
        return objective_grad_hess(self, preds, labels, offsets)

    def _iteration(self) -> int:
        if self._synced_iteration is not None:
            return self._synced_iteration
        if self.sglb is not None:
            raise RuntimeError(
                "SGLB needs the adapter's callback, which sets each tree's learning rate: "
                "lgb.train(..., callbacks=[obj.callback()]) or "
                "LGBMRanker(...).fit(..., callbacks=[obj.callback()])")
        t = self._next_iteration
        self._next_iteration += 1
        return t

    # -- callback and finalisation -----------------------------------------------------------
    def callback(self):
        """A LightGBM callback: sets the iteration (and, under SGLB, the learning rate).

        Runs before every iteration; under SGLB it delegates to
        ``lgb.reset_parameter(learning_rate=sglb.learning_rate_at)`` and refuses
        ``init_model`` continuation and iteration counts that overflow float64 scores.
        """
        return _LGBMCallback(self._hub, self.sglb)

    def finalize(self, model):
        """Bake the SGLB factor ``c^T`` into every leaf (in place); returns the Booster.

        ``model`` is a ``lightgbm.Booster`` or a fitted ``LGBMRanker``; ``T`` is its number of
        iterations (after early stopping LightGBM has already truncated the returned model to
        the best iteration). Without SGLB the model is returned unchanged. Under SGLB only a
        booster trained by this adapter's callback in this process is accepted: a model loaded
        from a file or string is refused (saved after finalisation, it is already final).
        """
        booster = model.booster_ if isinstance(model, lgb.LGBMModel) else model
        if not isinstance(booster, lgb.Booster):
            raise TypeError(f"expected a lightgbm.Booster or LGBMModel, got {type(model).__name__}")
        if self.sglb is None:
            return booster
        if getattr(booster, _FINAL_ATTR, None) is not None:
            raise RuntimeError("this booster has already been finalised "
                               "(c^T is baked into its leaves)")
        if getattr(booster, _TRAINED_ATTR, None) != self._hub.token:
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
        factor = self.sglb.final_scale(n_iter)
        for tree in booster.dump_model(num_iteration=-1)["tree_info"]:
            index = tree["tree_index"]
            for leaf in range(tree["num_leaves"]):
                booster.set_leaf_output(index, leaf, booster.get_leaf_output(index, leaf) * factor)
        setattr(booster, _FINAL_ATTR, factor)
        return booster


_LEARNING_RATE_ALIASES = ("learning_rate", "shrinkage_rate", "eta")


def _check_learning_rate(params, sglb: SGLB) -> None:
    """Under SGLB the callback sets the per-tree learning rate from ``sglb.learning_rate``; a
    different rate set on the booster would otherwise be replaced without a word."""
    for name in _LEARNING_RATE_ALIASES:
        if name in params and float(params[name]) != sglb.learning_rate:
            raise ValueError(f"the booster's {name}={params[name]} differs from "
                             f"sglb.learning_rate={sglb.learning_rate}: set the same value in "
                             "both, or leave the booster's unset")


class _LGBMCallback:
    """Before-iteration callback: iteration index and SGLB learning rate."""

    def __init__(self, hub: _Hub, sglb: SGLB | None):
        self.order = 10
        self.before_iteration = True
        self._hub = hub
        self._sglb = sglb
        self._rate = None if sglb is None else lgb.reset_parameter(
            learning_rate=sglb.learning_rate_at)

    def __call__(self, env) -> None:
        t = env.iteration - env.begin_iteration
        if self._sglb is not None:
            if env.begin_iteration != 0:
                raise ValueError("SGLB cannot continue training from init_model: the existing "
                                 "trees are not in the shrunk parametrisation")
            params = env.params or {}
            kind = next((params[k] for k in ("boosting", "boosting_type", "boost") if k in params),
                        "gbdt")
            if kind not in ("gbdt", "goss") or params.get("linear_tree"):
                raise ValueError("SGLB needs plain gradient-boosted trees (boosting='gbdt', no "
                                 f"linear_tree); got boosting={kind!r}")
            if t == 0:
                _check_learning_rate(params, self._sglb)
            self._sglb.check_iterations(t + 1, np.float64)
            self._rate(env)  # type: ignore[misc]  # set whenever _sglb is
            if env.model is not None:  # finalize() accepts only the boosters marked here
                setattr(env.model, _TRAINED_ATTR, self._hub.token)
        self._hub.sync(t)


class LGBMMetric(EvalMetric):
    """A ranking metric of :mod:`stochrank_objectives.metrics` as a LightGBM eval function.

    Callable as ``feval(preds, eval_data)`` (``lgb.train``) and as ``(y_true, y_pred, weight,
    group)`` (``LGBMRanker(...).fit(eval_metric=...)``).

    Example::

        lgb.train(params, train_set, valid_sets=[valid], feval=LGBMMetric("NDCG", 5))

    Args:
      see :class:`~stochrank_objectives.adapters._common.EvalMetric` (metric name, cutoff,
      metric options).

    Returns:
      when called, ``(name, value, True)`` (higher is better).
    """

    def __call__(self, preds_or_y_true, eval_data_or_y_pred, weight=_MISSING, group=_MISSING):
        preds, labels, sizes, _ = _call_arguments(
            "LGBMMetric", preds_or_y_true, eval_data_or_y_pred, weight, group)
        preds = as_scores(preds)
        labels, offsets = _grouped(labels, sizes, preds.shape[0], "evaluation data")
        return self.name, self.value(preds, labels, offsets), True


from ._lgbm_ranker import StochasticLGBMRanker  # noqa: E402  (the ranker builds on the above)

__all__ += ["StochasticLGBMRanker"]
