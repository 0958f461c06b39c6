"""``StochasticLGBMRanker``: the package's scikit-learn ranker on ``lightgbm.train``."""

from __future__ import annotations

import functools
import math
import os

import lightgbm as lgb
import numpy as np

from ...groups import GroupedData
from .._booster_params import LEARNING_RATE_NAMES
from .._ranker import StochasticRankerBase
from .._serving import lightgbm_as_ranker
from ._metric import LGBMMetric
from ._objective import LGBMObjective

__all__ = ["StochasticLGBMRanker", "lightgbm_dataset"]


@functools.lru_cache(maxsize=1)
def lightgbm_parameter_names() -> frozenset:
    """Every parameter name LightGBM knows, canonical and aliases, read from LightGBM itself."""
    aliases = lgb.basic._ConfigAliases._get_all_param_aliases()
    return frozenset(aliases) | frozenset(name for names in aliases.values() for name in names)


def lightgbm_dataset(X, data: GroupedData, **options) -> lgb.Dataset:
    """The one builder of the ranker's ``lgb.Dataset``: features, and what ``data`` carries --
    labels, query sizes, query weights (LightGBM's per-row ``weight``, read back by the
    objective and the metric) and initial scores (``init_score``)."""
    return lgb.Dataset(X, data.labels, group=data.sizes, weight=data.document_weights(),
                       init_score=data.init_scores, **options)


class _LastSetEarlyStopping:
    """Early stopping on the last validation set only (as XGBoost and CatBoost do), higher is
    better; at the last round it also stops, so that the model is cut to the best round."""

    def __init__(self, rounds: int, data_name: str, metric_name: str):
        self.order = 30
        self.before_iteration = False
        self.rounds = rounds
        self.key = (data_name, metric_name)
        self.best, self.best_iteration = -np.inf, 0
        self.best_list: list = []

    def __call__(self, env) -> None:
        # LightGBM's iteration (it counts an init model's trees), as its own early stopping
        t = env.iteration
        value = next(r[2] for r in env.evaluation_result_list if (r[0], r[1]) == self.key)
        if value > self.best:
            self.best, self.best_iteration, self.best_list = value, t, env.evaluation_result_list
        if t - self.best_iteration >= self.rounds or env.iteration == env.end_iteration - 1:
            raise lgb.callback.EarlyStopException(self.best_iteration, self.best_list)


def _in_lightgbm_order(pairs, n: int) -> list:
    """The callbacks of ``(position, callback)`` pairs in LightGBM's order: by their ``order``
    attribute, where ``lgb.train`` gives one without it ``position - n`` (``n`` callbacks)."""
    return [cb for _, cb in sorted(pairs, key=lambda pair: getattr(pair[1], "order",
                                                                    pair[0] - n))]


class _RankerCallbacks:
    """The ranker's callbacks and the user's, as two LightGBM callbacks (before and after each
    iteration) that run the ranker's first and the user's after them, every round.

    At the last round, after the user's callbacks, and when a callback (the ranker's early
    stopping or the user's, e.g. ``lgb.early_stopping``) stops training, the booster is made
    final in place before ``lgb.train`` returns it: under SGLB the kept trees (up to the best
    iteration) are multiplied by ``c^T`` and the objective is named ``lambdarank``. So the
    booster that ``lgb.train`` returns, which MLflow's autolog and other ``lgb.train`` patchers
    log, predicts what the ranker predicts. An exception other than early stopping (Optuna's
    ``TrialPruned``) ends the fit as raised.
    """

    def __init__(self, adapter: LGBMObjective, own_before, own_after, user):
        self.adapter = adapter
        before = [(i, cb) for i, cb in enumerate(user) if getattr(cb, "before_iteration", False)]
        after = [(i, cb) for i, cb in enumerate(user)
                 if not getattr(cb, "before_iteration", False)]
        self.before_iteration = [*own_before, *_in_lightgbm_order(before, len(user))]
        self.after_iteration = [*own_after, *_in_lightgbm_order(after, len(user))]
        self.n_own_before = len(own_before)

    def callbacks(self) -> list:
        """The two callbacks to pass to ``lgb.train``: first and last in its order."""
        before = _Dispatch(self._before, -math.inf, True)
        after = _Dispatch(self._after, math.inf, False)
        return [before, after]

    def _before(self, env) -> None:
        for cb in self.before_iteration:
            cb(env)
        sglb = self.adapter.sglb
        if sglb is not None and len(self.before_iteration) > self.n_own_before:
            rate = sglb.learning_rate_at(env.iteration - env.begin_iteration)
            changed = {name: env.params[name] for name in LEARNING_RATE_NAMES
                       if name in env.params and env.params[name] != rate}
            if changed:
                raise ValueError(
                    f"a callback in callbacks= changed the learning rate ({changed}) that SGLB "
                    f"sets for tree {env.iteration - env.begin_iteration} ({rate!r}, "
                    "sglb.learning_rate_at): SGLB's reparametrisation needs its own rates; "
                    "drop lgb.reset_parameter(learning_rate=...) or the SGLB schedule")

    def _after(self, env) -> None:
        stop = None
        for cb in self.after_iteration:
            try:
                cb(env)
            except lgb.callback.EarlyStopException as exc:
                stop = stop or exc  # the first one stops; later callbacks still see the round
        if stop is not None or env.iteration == env.end_iteration - 1:
            kept = env.iteration + 1 if stop is None else stop.best_iteration + 1
            self.adapter.finalize_trees(env.model, kept, env.begin_iteration)
            lightgbm_as_ranker(env.model)
        if stop is not None:
            raise stop


class _Dispatch:
    """One LightGBM callback (``order``, ``before_iteration``) calling ``run(env)``."""

    def __init__(self, run, order, before_iteration):
        self.run, self.order, self.before_iteration = run, order, before_iteration

    def __call__(self, env) -> None:
        self.run(env)


class StochasticLGBMRanker(StochasticRankerBase):
    """A LightGBM ranker trained with one of this package's objectives (``lgb.train`` inside).

    Example::

        ranker = StochasticLGBMRanker(StochasticRank(metric="NDCG", top=5), num_leaves=15)
        ranker.fit(X, y, qid=qid).predict(X_test)

    Args: see :class:`~stochrank_objectives.adapters._ranker.StochasticRankerBase`;
    ``**booster_params`` are LightGBM parameters (``num_leaves``, ``max_depth``,
    ``min_data_in_leaf``, ``lambda_l2``, ``feature_fraction``, ...). ``objective``,
    ``metric`` and ``verbose`` are the ranker's; ``seed`` is ``random_state``, ``num_threads``
    is ``n_jobs``.

    ``booster_`` is a ``lightgbm.Booster`` re-loaded from the trained model's text (it holds no
    Python objective; under SGLB ``c^T`` is already in its leaves), so
    ``booster_.save_model(path)`` and ``lgb.Booster(model_file=path)`` work without this
    package. ``feature_importances_`` is LightGBM's default ``"split"`` count.

    ``best_iteration_`` is 0-based (the index of the best round, as in the other rankers;
    ``best_iteration_ + 1`` trees are kept), whereas LightGBM's own ``Booster.best_iteration``
    counts from 1 (the number of trees kept): ``best_iteration_ == best_iteration - 1``. It is
    set by ``early_stopping_rounds`` and by an early-stopping callback in ``callbacks=``, and
    after ``init_model`` it counts the init model's trees too (as LightGBM does).

    ``fit`` extras (LightGBM's ``lgb.train`` semantics):

    * ``callbacks=``: LightGBM callbacks (functions of ``env``, with optional ``order`` and
      ``before_iteration``), run every round after the ranker's own (its SGLB learning rate
      and iteration, evaluation record, logging, early stopping), among themselves in
      LightGBM's ``order``. ``lgb.early_stopping`` cuts the model to its best iteration; an
      exception (Optuna's ``TrialPruned``) ends the fit, leaving the ranker unfitted. The
      metric is named as in ``evals_result_``: data ``"validation_0"``, ... and metric e.g.
      ``"NDCG@5"``. Under SGLB a callback that changes the learning rate is refused.
    * ``init_score`` / ``eval_init_score``: LightGBM's ``init_score`` of the training and eval
      Datasets: the objective and the eval metric see ``init_score + model``; ``booster_``
      holds only the new trees. Under SGLB the initial score is ``F_0`` and is shrunk too:
      ``F_T = c^T init_score + predict(X)``.
    * ``init_model``: a fitted StochasticLGBMRanker or ``lightgbm.LGBMModel``, a
      ``lightgbm.Booster`` or a LightGBM model file; the new trees are added to its trees
      (``lgb.train(init_model=...)``) and the objective's iteration, which keys its noise,
      continues from its number of trees. Under SGLB the init model's predictions are ``F_0``
      and every tree, the init model's included, ends up multiplied by ``c^T`` (``T`` new
      trees): ``F_T = c^T F_0 + ...``, so training 10 trees and then 10 more is the 20-tree
      SGLB model. Not together with ``init_score`` / ``eval_init_score``: LightGBM replaces a
      Dataset's ``init_score`` by the init model's predictions (refused with the fix).

    The booster that ``lgb.train`` returns inside ``fit`` is already the final model (SGLB's
    ``c^T`` in the kept trees, cut to the best iteration, objective named ``lambdarank``), so
    ``mlflow.lightgbm.autolog()`` and other ``lgb.train`` patchers log what ``predict`` uses.
    """

    _booster_name = "LightGBM"
    _categories_how = ("give the DataFrame column the pandas category dtype (LightGBM splits on "
                       "its categories)")

    def _valid_booster_params(self):
        return lightgbm_parameter_names()

    _fit_supports = frozenset({"init_score", "callbacks"})

    def _check_init_model(self, init_model, n_features: int):
        """``init_model`` as a ``lightgbm.Booster`` (``None``: a new model): a fitted
        StochasticLGBMRanker or ``lightgbm.LGBMModel`` (their ``booster_``), a Booster, or a
        LightGBM model file."""
        if init_model is None:
            return None
        if isinstance(init_model, (StochasticLGBMRanker, lgb.LGBMModel)):
            try:  # LightGBM's LGBMNotFittedError is an AttributeError too
                booster = init_model.booster_
            except AttributeError:
                raise ValueError(f"init_model: this {type(init_model).__name__} is not fitted "
                                 "yet: fit it first, or pass init_model=None") from None
        elif isinstance(init_model, lgb.Booster):
            booster = init_model
        elif isinstance(init_model, (str, os.PathLike)):
            if not os.path.isfile(init_model):
                raise FileNotFoundError(f"init_model: no model file at {os.fspath(init_model)!r} "
                                        "(save one with ranker.save_model(path) or "
                                        "booster.save_model(path))")
            booster = lgb.Booster(model_file=os.fspath(init_model))
        else:
            raise TypeError("init_model must be a fitted StochasticLGBMRanker, a fitted "
                            "lightgbm.LGBMModel, a lightgbm.Booster or the path of a LightGBM "
                            f"model file, got {type(init_model).__name__}")
        if booster.num_feature() != n_features:
            raise ValueError(f"init_model has {booster.num_feature()} features, X has "
                             f"{n_features}: continue training on the features it was trained "
                             "on")
        if booster.num_model_per_iteration() != 1:
            raise ValueError(f"init_model has {booster.num_model_per_iteration()} trees per "
                             "iteration (a multi-class model): a ranker continues a model of "
                             "one score per document")
        return booster

    def _check_callbacks(self, callbacks) -> list:
        """The user's LightGBM callbacks (functions of ``env``) as a list."""
        callbacks = super()._check_callbacks(callbacks)
        for i, cb in enumerate(callbacks):
            if not callable(cb):
                raise TypeError(f"callbacks[{i}] is a {type(cb).__name__}, not a LightGBM "
                                "callback: pass functions of env (lightgbm.CallbackEnv), such "
                                "as lgb.early_stopping(10) or lgb.log_evaluation(1)")
        return callbacks

    def _fit_booster(self, X, train_data, evals, s):
        init_model = s.init_model
        if init_model is not None and (train_data.init_scores is not None or any(
                data.init_scores is not None for _, data in evals)):
            raise ValueError(
                "init_score / eval_init_score and init_model cannot be used together with "
                "LightGBM: lgb.train(init_model=...) replaces a Dataset's init_score by the init "
                "model's predictions, so the objective would not see init_score + model. Pass "
                "init_score=first_stage + init_model.predict(X) (and the same for the eval sets) "
                "without init_model, or init_model without init_score")
        if init_model is not None and s.sglb is not None and \
                "is_linear=1" in init_model.model_to_string():
            raise ValueError("init_model has linear trees (linear_tree=True): SGLB's final "
                             "c^T cannot be baked into their leaves; continue a model of plain "
                             "trees, or train without sglb")
        adapter = LGBMObjective(s.objective, sglb=s.sglb)
        params = {"objective": adapter, "learning_rate": s.learning_rate, "verbose": -1,
                  "metric": "None"}
        if s.random_state is not None:
            params["seed"] = s.random_state
        if s.n_jobs is not None:
            params["num_threads"] = s.n_jobs
        params.update(s.params)
        feature_name = "auto" if getattr(self, "feature_names_in_", None) is None else [
            str(name) for name in self.feature_names_in_]
        train = lightgbm_dataset(X, train_data, feature_name=feature_name)
        valid = [lightgbm_dataset(Xi, data, reference=train) for Xi, data in evals]
        names = [f"validation_{i}" for i in range(len(evals))]
        m = s.eval_metric
        metric = LGBMMetric(m.metric, m.k, ties=m.ties, name=m.name, **m.options)
        history = {}
        after = [lgb.record_evaluation(history)]
        if evals and s.verbose:
            after.append(lgb.log_evaluation(s.verbose))
        if s.early_stopping_rounds is not None:
            after.append(_LastSetEarlyStopping(s.early_stopping_rounds, names[-1], metric.name))
        callbacks = _RankerCallbacks(adapter, [adapter.callback()], after, s.callbacks)
        # the booster lgb.train returns is final (see _RankerCallbacks): SGLB's c^T, the
        # objective's name, cut to the best iteration
        booster = lgb.train(params, train, num_boost_round=s.n_estimators, valid_sets=valid,
                            valid_names=names, feval=metric if evals else None,
                            init_model=init_model, callbacks=callbacks.callbacks())
        if booster.best_iteration > 0:  # early stopping, the ranker's or a user callback's
            self.best_iteration_ = booster.best_iteration - 1
        self.evals_result_ = {name: dict(values) for name, values in history.items()}
        # a model without the Python objective: what a user saves and reloads
        self.booster_ = lgb.Booster(model_str=booster.model_to_string())

    def _predict_raw(self, X):
        return self.booster_.predict(X, raw_score=True)

    def _importances(self):
        return self.booster_.feature_importance(importance_type="split")
