"""``StochasticLGBMRanker``: the package's scikit-learn ranker on ``lightgbm.train``."""

from __future__ import annotations

import functools

import lightgbm as lgb
import numpy as np

from ...groups import GroupedData
from .._ranker import StochasticRankerBase
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
        t = env.iteration - env.begin_iteration
        value = next(r[2] for r in env.evaluation_result_list if (r[0], r[1]) == self.key)
        if value > self.best:
            self.best, self.best_iteration, self.best_list = value, t, env.evaluation_result_list
        if t - self.best_iteration >= self.rounds or env.iteration == env.end_iteration - 1:
            raise lgb.callback.EarlyStopException(self.best_iteration, self.best_list)


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
    counts from 1 (the number of trees kept): ``best_iteration_ == best_iteration - 1``.
    """

    _booster_name = "LightGBM"
    _categories_how = ("give the DataFrame column the pandas category dtype (LightGBM splits on "
                       "its categories)")

    def _valid_booster_params(self):
        return lightgbm_parameter_names()

    _fit_supports = frozenset({"init_score"})

    def _fit_booster(self, X, train_data, evals, s):
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
        callbacks = [adapter.callback(), lgb.record_evaluation(history)]
        if evals and s.verbose:
            callbacks.append(lgb.log_evaluation(s.verbose))
        if s.early_stopping_rounds is not None:
            callbacks.append(_LastSetEarlyStopping(s.early_stopping_rounds, names[-1],
                                                   metric.name))
        booster = lgb.train(params, train, num_boost_round=s.n_estimators, valid_sets=valid,
                            valid_names=names, feval=metric if evals else None,
                            callbacks=callbacks)
        if s.early_stopping_rounds is not None:
            self.best_iteration_ = booster.best_iteration - 1
        adapter.finalize(booster)
        self.evals_result_ = {name: dict(values) for name, values in history.items()}
        # a model without the Python objective: what a user saves and reloads
        self.booster_ = lgb.Booster(model_str=booster.model_to_string())

    def _predict_raw(self, X):
        return self.booster_.predict(X, raw_score=True)

    def _importances(self):
        return self.booster_.feature_importance(importance_type="split")
