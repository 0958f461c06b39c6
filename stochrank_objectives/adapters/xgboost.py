"""XGBoost adapter: any objective of this package as an XGBoost custom objective.

With ``xgb.train`` (the DMatrix needs ``qid=``, sorted, or ``group=`` sizes)::

    dtrain = xgb.DMatrix(X, y, qid=qid)
    params = {"base_score": 0.0, "disable_default_eval_metric": 1, "learning_rate": 0.3}
    booster = xgb.train(params, dtrain, 100, obj=XGBObjective(StochasticRank(top=5)))

``base_score=0``: with a custom objective XGBoost otherwise starts every margin at 0.5 (harmless
for a ranking gradient, but it becomes part of the model). ``disable_default_eval_metric``: the
learner still thinks it is ``reg:squarederror`` and would report (and early-stop on) ``rmse``.
Evaluate with :class:`XGBMetric` (``custom_metric=XGBMetric("NDCG", 5), maximize=True``).

``XGBRanker`` refuses callable objectives, so :class:`StochasticXGBRanker` is the
scikit-learn-style estimator of this package::

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

Iterations. The objective's ``iteration`` (which keys its noise) is the tree index in the current
run: read from XGBoost's loop by the callback (which also resets it at the start of each run), or
counted by the adapter itself without the callback -- then use a fresh adapter per
``xgb.train`` call to reproduce a run. ``base_margin`` is part of the margins the objective sees;
under SGLB it is the starting point ``F_0`` and is shrunk as well. Sample weights are rejected.
"""

from __future__ import annotations

import json
import re

import numpy as np
import xgboost as xgb

from ..groups import query_offsets_from_qid, query_offsets_from_sizes
from ..sglb import SGLB
from ._common import EvalMetric, as_scores, check_objective_and_sglb, objective_grad_hess

__all__ = ["XGBObjective", "XGBMetric", "StochasticXGBRanker", "DEFAULT_PARAMS"]

#: Parameters every custom ranking objective wants (see the module docstring).
DEFAULT_PARAMS = {"base_score": 0.0, "disable_default_eval_metric": 1}

_FINAL_ATTR = "stochrank_sglb_final_scale"


def _group_error(where: str) -> ValueError:
    return ValueError(
        f"the {where} DMatrix has no query groups: ranking objectives need them. Build it with "
        "xgboost.DMatrix(X, y, qid=qid) (rows sorted by qid) or call dmatrix.set_group(sizes)")


def _grouped(dmat, n_preds: int, where: str):
    """float64 labels and int64 offsets of a DMatrix, checked against the predictions."""
    labels = np.asarray(dmat.get_label(), dtype=np.float64)
    ptr = dmat.get_uint_info("group_ptr")
    if ptr.size == 0:
        raise _group_error(where)
    offsets = ptr.astype(np.int64)
    if not (labels.shape[0] == offsets[-1] == n_preds):
        raise ValueError(
            f"length mismatch in the {where} data: {n_preds} predictions, {labels.shape[0]} "
            f"labels, query groups covering {offsets[-1]} rows; they must all describe the same "
            "documents")
    return labels, offsets


class XGBObjective:
    """An XGBoost custom objective ``obj(predt, dtrain)`` wrapping a ``grad_hess`` objective.

    Args:
      objective: an object with ``grad_hess(scores, labels, query_offsets, iteration)``.
      sglb: optional :class:`~stochrank_objectives.sglb.SGLB` schedule; then pass
        ``callbacks=[adapter.callback()]`` to ``xgb.train``.
    """

    def __init__(self, objective, sglb: SGLB | None = None):
        check_objective_and_sglb(objective, sglb)
        self.objective = objective
        self.sglb = sglb
        self._reset()

    def _reset(self):
        self._next_iteration = 0
        self._synced_iteration = None

    def __repr__(self) -> str:
        return f"XGBObjective({self.objective!r}, sglb={self.sglb!r})"

    def __getstate__(self):
        return {"objective": self.objective, "sglb": self.sglb}

    def __setstate__(self, state):
        self.objective = state["objective"]
        self.sglb = state["sglb"]
        self._reset()

    def __call__(self, predt, dtrain):
        predt = as_scores(predt)
        if not isinstance(dtrain, xgb.DMatrix):
            raise TypeError(f"expected (predt, xgboost.DMatrix), got a {type(dtrain).__name__}")
        if dtrain.get_weight().size:
            raise ValueError("sample weights are not supported by this package's ranking "
                             "objectives; build the DMatrix without weight=")
        labels, offsets = _grouped(dtrain, predt.shape[0], "training")
        return objective_grad_hess(self, predt, labels, offsets)

    def _iteration(self) -> int:
        if self._synced_iteration is not None:
            return self._synced_iteration
        if self.sglb is not None:
            raise RuntimeError("SGLB needs the adapter's callback, which sets each tree's "
                               "learning rate: xgb.train(..., obj=obj, callbacks=[obj.callback()])")
        t = self._next_iteration
        self._next_iteration += 1
        return t

    def callback(self) -> xgb.callback.TrainingCallback:
        """A ``TrainingCallback``: iteration index, SGLB learning rate, SGLB finalisation."""
        return _XGBCallback(self)

    def finalize(self, booster: xgb.Booster) -> xgb.Booster:
        """A new Booster predicting the SGLB model ``F_T = c^T G_T`` (the callback calls this).

        Cuts the model to ``best_iteration + 1`` trees if early stopping recorded a best
        iteration, then multiplies every leaf value and ``base_score`` by ``c^T`` in the JSON
        model and reloads it. Without SGLB the booster is returned unchanged.
        """
        if not isinstance(booster, xgb.Booster):
            raise TypeError(f"expected an xgboost.Booster, got {type(booster).__name__}")
        if self.sglb is None:
            return booster
        if booster.attr(_FINAL_ATTR) is not None:
            raise RuntimeError("this booster has already been finalised "
                               "(c^T is baked into its leaves)")
        best = booster.attr("best_iteration")
        best_score = booster.attr("best_score")
        if best is not None and int(best) + 1 < booster.num_boosted_rounds():
            booster = booster[: int(best) + 1]
        n_trees = booster.num_boosted_rounds()
        factor = self.sglb.final_scale(n_trees)
        model = json.loads(bytes(booster.save_raw("json")))
        _scale_json_model(model, factor)
        new = xgb.Booster(model_file=bytearray(json.dumps(model).encode()))
        attrs = {_FINAL_ATTR: repr(factor)}
        if best is not None:
            attrs["best_iteration"] = str(n_trees - 1)
            if best_score is not None:
                attrs["best_score"] = best_score
        new.set_attr(**attrs)
        return new


def _scale_json_model(model: dict, factor: float) -> None:
    """Multiply every leaf value and the base score of an XGBoost JSON model by ``factor``."""
    learner = model["learner"]
    booster = learner["gradient_booster"]
    if booster.get("name") != "gbtree":
        raise ValueError(f"SGLB finalisation supports the gbtree booster only, got "
                         f"{booster.get('name')!r}")
    for tree in booster["model"]["trees"]:
        if int(tree["tree_param"].get("size_leaf_vector", "1")) > 1:
            raise ValueError("SGLB finalisation does not support vector-leaf (multi-target) trees")
        values, weights = tree["split_conditions"], tree["base_weights"]
        for node, left in enumerate(tree["left_children"]):
            if left == -1:
                values[node] = float(values[node]) * factor
                weights[node] = float(weights[node]) * factor
    param = learner["learner_model_param"]
    text = param["base_score"]
    numbers = [float(v) * factor for v in re.findall(r"[-+0-9.eE]+", text)]
    body = ",".join(f"{v:.9E}" for v in numbers)
    param["base_score"] = f"[{body}]" if text.strip().startswith("[") else body


class _XGBCallback(xgb.callback.TrainingCallback):
    def __init__(self, adapter: XGBObjective):
        super().__init__()
        self._adapter = adapter

    def before_training(self, model):
        self._adapter._reset()
        return model

    def before_iteration(self, model, epoch, evals_log) -> bool:
        sglb = self._adapter.sglb
        if sglb is not None:
            if not isinstance(model, xgb.Booster):
                raise TypeError("SGLB is supported in xgb.train only (not xgb.cv)")
            sglb.check_iterations(epoch + 1, np.float32)
            if epoch == 0:
                name = json.loads(model.save_config())["learner"]["gradient_booster"]["name"]
                if name != "gbtree":
                    raise ValueError(f"SGLB needs booster='gbtree', got {name!r}")
            if model.num_boosted_rounds() != epoch:
                raise ValueError("SGLB cannot continue training from xgb_model: the existing "
                                 "trees are not in the shrunk parametrisation")
            model.set_param("learning_rate", sglb.learning_rate_at(epoch))
        self._adapter._synced_iteration = epoch
        return False

    def after_training(self, model):
        self._adapter._synced_iteration = None
        if self._adapter.sglb is not None:
            return self._adapter.finalize(model)
        return model


class XGBMetric(EvalMetric):
    """A ranking metric of :mod:`stochrank_objectives.metrics` as an XGBoost ``custom_metric``.

    ``metric(predt, dmatrix) -> (name, value)``; pass ``maximize=True`` to ``xgb.train``.
    Arguments: see :class:`~stochrank_objectives.adapters._metric.EvalMetric`;
    ``XGBMetric.from_string("NDCG@5")`` parses the short form.
    """

    def __call__(self, predt, dmat):
        predt = as_scores(predt)
        labels, offsets = _grouped(dmat, predt.shape[0], "evaluation")
        return self.name, self.value(predt, labels, offsets)


def _run_qid(qid=None, group=None, n_rows: int | None = None, where: str = "training"):
    """Row-wise query ids 0, 0, ..., 1, 1, ... from ``qid`` (contiguous) or ``group`` sizes."""
    if (qid is None) == (group is None):
        raise ValueError(f"pass exactly one of qid= (one query id per row) or group= (query "
                         f"sizes) for the {where} data")
    if qid is not None:
        offsets = query_offsets_from_qid(np.asarray(qid).ravel())
    else:
        offsets = query_offsets_from_sizes(group)
    if n_rows is not None and offsets[-1] != n_rows:
        raise ValueError(f"the {where} query ids/groups cover {offsets[-1]} rows but X has "
                         f"{n_rows}")
    return np.repeat(np.arange(offsets.size - 1, dtype=np.int64), np.diff(offsets))


def _take_alias(xgb_params: dict, alias: str, name: str, value, default):
    """Pop XGBoost's ``alias`` (e.g. ``eta``) of the ranker argument ``name``: used when the
    argument is left at its default, refused when both are set to different values."""
    if alias not in xgb_params:
        return value
    aliased = xgb_params.pop(alias)
    if value != default and value != aliased:
        raise ValueError(f"{alias}={aliased!r} and {name}={value!r} name the same XGBoost "
                         f"parameter with different values: set {name} only")
    return aliased


class StochasticXGBRanker:
    """A scikit-learn-style XGBoost ranker trained with one of this package's objectives.

    Args:
      objective: an object with ``grad_hess(scores, labels, query_offsets, iteration)``.
      n_estimators: boosting rounds.
      learning_rate: XGBoost's ``eta`` (default 0.3; with ``sglb`` it must be None or equal
        ``sglb.learning_rate``).
      sglb: optional :class:`~stochrank_objectives.sglb.SGLB` schedule.
      eval_metric: ``None``, an :class:`XGBMetric`, or a string such as ``"NDCG@5"``,
        ``"ERR@10"``, ``"MRR"``; evaluated on ``eval_set`` and used for early stopping.
      early_stopping_rounds: stop when the last eval set's metric has not improved for this
        many rounds; the fitted booster is cut to the best iteration.
      random_state, n_jobs: XGBoost's ``seed`` and ``nthread``.
      **xgb_params: any other XGBoost parameter (``max_depth``, ``reg_lambda``, ``tree_method``,
        ...). ``base_score`` defaults to 0 and the default ``rmse`` metric is disabled.

    After ``fit``: ``booster_`` (also :meth:`get_booster`), ``best_iteration_`` and
    ``best_score_`` (with early stopping), ``evals_result_``, ``n_features_in_``,
    ``feature_importances_``. XGBoost passes
    evaluation results through ``%f`` text, so logged scores are rounded to 6 decimals.
    """

    def __init__(self, objective, *, n_estimators: int = 100, learning_rate: float | None = None,
                 sglb: SGLB | None = None, eval_metric=None,
                 early_stopping_rounds: int | None = None, random_state: int = 0,
                 n_jobs: int | None = None, **xgb_params):
        self.objective = objective
        self.n_estimators = n_estimators
        self.learning_rate = learning_rate
        self.sglb = sglb
        self.eval_metric = eval_metric
        self.early_stopping_rounds = early_stopping_rounds
        self.random_state = random_state
        self.n_jobs = n_jobs
        self.xgb_params = dict(xgb_params)

    _explicit = ("objective", "n_estimators", "learning_rate", "sglb", "eval_metric",
                 "early_stopping_rounds", "random_state", "n_jobs")

    def get_params(self, deep: bool = True) -> dict:
        params = {name: getattr(self, name) for name in self._explicit}
        params.update(self.xgb_params)
        return params

    def set_params(self, **params):
        for name, value in params.items():
            if name in self._explicit:
                setattr(self, name, value)
            else:
                self.xgb_params[name] = value
        return self

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.get_params().items())
        return f"{type(self).__name__}({args})"

    def _metric(self):
        metric = self.eval_metric
        if metric is None or callable(metric):
            return metric
        if isinstance(metric, str):
            return XGBMetric.from_string(metric)
        raise TypeError(f"eval_metric must be None, a string like 'NDCG@5' or a callable, got "
                        f"{type(metric).__name__}")

    def _params(self) -> dict:
        for bad in ("objective", "obj", "eval_metric", "custom_metric"):
            if bad in self.xgb_params:
                raise ValueError(f"{bad!r} cannot be an XGBoost parameter of "
                                 f"{type(self).__name__}: use its objective/eval_metric arguments")
        xgb_params = dict(self.xgb_params)
        lr = _take_alias(xgb_params, "eta", "learning_rate", self.learning_rate, None)
        seed = _take_alias(xgb_params, "seed", "random_state", self.random_state, 0)
        n_jobs = _take_alias(xgb_params, "nthread", "n_jobs", self.n_jobs, None)
        for name in ("num_boost_round", "num_round"):
            if name in xgb_params:
                raise ValueError(f"{name}={xgb_params[name]} is not an XGBoost parameter of "
                                 f"{type(self).__name__}: use n_estimators")
        if self.sglb is not None:
            if lr is not None and lr != self.sglb.learning_rate:
                raise ValueError(f"learning_rate={lr} differs from sglb.learning_rate="
                                 f"{self.sglb.learning_rate}; set one of them")
            lr = self.sglb.learning_rate
        params = dict(DEFAULT_PARAMS)
        params["learning_rate"] = 0.3 if lr is None else lr
        params["seed"] = seed
        if n_jobs is not None:
            params["nthread"] = n_jobs
        params.update(xgb_params)
        return params

    def fit(self, X, y, *, qid=None, group=None, eval_set=None, eval_qid=None, eval_group=None,
            verbose=False, callbacks=None):
        """Train on ``X, y`` with query ids ``qid`` (rows of a query contiguous) or sizes ``group``.

        ``eval_set`` is a list of ``(X, y)`` pairs with matching ``eval_qid`` or ``eval_group``
        lists. Query ids need not be sorted, only contiguous; they are renumbered in row order.
        """
        params = self._params()
        n_rounds = int(self.n_estimators)
        if self.sglb is not None:
            self.sglb.check_iterations(n_rounds, np.float32)
        adapter = XGBObjective(self.objective, sglb=self.sglb)
        metric = self._metric()
        dtrain = xgb.DMatrix(X, y, qid=_run_qid(qid, group, np.shape(X)[0]))
        evals = []
        for i, pair in enumerate(eval_set or []):
            if len(pair) != 2:
                raise ValueError("eval_set must be a list of (X, y) pairs")
            qid_i = None if eval_qid is None else eval_qid[i]
            group_i = None if eval_group is None else eval_group[i]
            Xi, yi = pair
            evals.append((xgb.DMatrix(Xi, yi, qid=_run_qid(qid_i, group_i, np.shape(Xi)[0],
                                                            f"eval_set[{i}]")), f"validation_{i}"))
        if self.early_stopping_rounds and (not evals or metric is None):
            raise ValueError("early_stopping_rounds needs eval_set and eval_metric")
        self.evals_result_ = {}
        booster = xgb.train(params, dtrain, n_rounds, evals=evals, obj=adapter,
                            custom_metric=metric, maximize=True,
                            early_stopping_rounds=self.early_stopping_rounds,
                            evals_result=self.evals_result_, verbose_eval=verbose,
                            callbacks=[adapter.callback(), *(callbacks or [])])
        best = booster.attr("best_iteration")
        self.best_iteration_ = None if best is None else int(best)
        score = booster.attr("best_score")
        self.best_score_ = None if score is None else float(score)
        if best is not None and int(best) + 1 < booster.num_boosted_rounds():
            # Keep exactly the selected trees, so that a saved model predicts what we predict.
            attrs = {"best_iteration": best, "best_score": score}
            booster = booster[: int(best) + 1]
            booster.set_attr(**{k: v for k, v in attrs.items() if v is not None})
        self.booster_ = booster
        self.n_features_in_ = int(np.shape(X)[1])
        return self

    def get_booster(self) -> xgb.Booster:
        if not hasattr(self, "booster_"):
            raise AttributeError(f"this {type(self).__name__} is not fitted yet; call fit first")
        return self.booster_

    def predict(self, X) -> np.ndarray:
        """Ranking scores (margins) of the fitted model, one per row of ``X``."""
        booster = self.get_booster()
        if np.shape(X)[1] != self.n_features_in_:
            raise ValueError(f"X has {np.shape(X)[1]} features, the model was trained on "
                             f"{self.n_features_in_}")
        data = xgb.DMatrix(X)
        # As XGBRanker: column names are checked when X has them (a DataFrame); an array
        # without names is checked by its number of columns only (done above).
        validate = data.feature_names is not None
        return np.asarray(booster.predict(data, output_margin=True, validate_features=validate),
                          dtype=np.float64)

    @property
    def feature_importances_(self) -> np.ndarray:
        """Normalised ``"gain"`` importance per feature, length ``n_features_in_`` (float32,
        summing to 1 unless the model has no split): ``XGBRanker``'s default importance."""
        booster = self.get_booster()
        score = booster.get_score(importance_type="gain")
        names = booster.feature_names or [f"f{i}" for i in range(self.n_features_in_)]
        values = np.array([score.get(name, 0.0) for name in names], dtype=np.float32)
        total = values.sum()
        return values / total if total > 0 else values

    def save_model(self, fname) -> None:
        """Save the booster (JSON or UBJSON by extension); load it with
        ``xgboost.Booster(model_file=...)``, without this package."""
        self.get_booster().save_model(fname)
