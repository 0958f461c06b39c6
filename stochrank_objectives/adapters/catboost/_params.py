"""CatBoost parameters and eval metrics for one fit, derived from the ranker's settings."""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING

import numpy as np

from ...metric_spec import MetricSpec
from ._sglb import catboost_langevin
from .._common import EvalMetric

if TYPE_CHECKING:  # only the type checker needs them
    from ...objectives import Objective
    from .._ranker_settings import FitSettings

_TARGET_CTRS = ("Borders", "Buckets", "BinarizedTargetMeanValue", "FloatTargetMeanValue")
ROUTES = ("auto", "pointer", "per_tree")
QUANTIZATION_PARAMS = ("ignored_features", "per_float_feature_quantization", "border_count",
                       "max_bin", "feature_border_type", "sparse_features_conflict_fraction",
                       "nan_mode", "input_borders", "used_ram_limit",
                       "dev_max_subset_size_for_build_borders")


def default_eval_metric(objective: Objective) -> str:
    """CatBoost's own metric string matching ``objective.metric_spec`` (same ties and definition).

    Example::

        default_eval_metric(StochasticRank(metric="NDCG", top=10))  # "NDCG:top=10;..."

    ``top`` becomes ``top=k``; NDCG and DCG get ``type=Exp`` (exp2 gain) or ``type=Base``
    (linear), MRR and Recall (``RecallAt``) their ``border``, PFound its ``decay``; ERR needs
    nothing more (the rows of :mod:`stochrank_objectives.metric_table`). CatBoost's ranking
    metrics order tied scores pessimistically, as ``ties="worst"`` in
    :mod:`stochrank_objectives.metrics`. FilteredDCG, Precision and MAP have no CatBoost metric
    with the same definition (CatBoost's ``PrecisionAt`` divides by ``min(k, n)``, its ``MAP``
    by ``min(R, k)``).

    Args:
      objective: an objective with a ``metric_spec``.

    Returns:
      a CatBoost ``eval_metric`` string.
    """
    spec = getattr(objective, "metric_spec", None)
    metric = getattr(spec, "metric", None)
    if spec is None or metric is None:
        raise ValueError(
            f"{type(objective).__name__} has no metric_spec: pass eval_metric='NDCG:top=10' (or "
            "any CatBoost metric); CatBoost requires one with a Python objective")
    row = spec.row
    if row.catboost is None:
        raise ValueError(row.catboost_refusal or f"no CatBoost metric for {metric!r} with the "
                         f"same definition: pass eval_metric explicitly")
    parts = [] if spec.top is None else [f"top={spec.top}"]
    parts += row.catboost_params(spec)
    return row.catboost + (":" + ";".join(parts) if parts else "")


def skip_train(metric):
    """Add ``hints=skip_train~true`` to a metric string (learn labels are row indices)."""
    if not isinstance(metric, str) or "hints=" in metric:
        return metric
    return metric + (";" if ":" in metric else ":") + "hints=skip_train~true"


def eval_labels(spec, labels) -> np.ndarray:
    """Eval-set labels for CatBoost: mapped to ERR probabilities when the eval metric is ERR
    with ``grade_max`` (``spec``: the metric's MetricSpec, or None for a native string)."""
    if spec is not None and spec.row.catboost_grade_labels and spec.grade_max is not None:
        return spec.gain_and_continuation(labels)[0]
    return labels


def group_index(query_offsets: np.ndarray) -> np.ndarray:
    return np.repeat(np.arange(query_offsets.shape[0] - 1, dtype=np.int64),
                     np.diff(query_offsets))


def check_label_domain(objective, labels: np.ndarray, what: str) -> None:
    """The objective's label-domain check (e.g. ERR/PFound probabilities in [0, 1]) before
    CatBoost starts, so that it surfaces as a ValueError naming the field, not as a
    CatBoostError wrapping a traceback from inside training."""
    spec = getattr(objective, "metric_spec", None)
    if spec is None:
        return
    try:
        spec.gain_and_continuation(labels)
    except ValueError as exc:
        raise ValueError(f"{what}: {exc}") from None


def metric_spec(metric: EvalMetric) -> MetricSpec:
    """The definition of an :class:`EvalMetric` as a MetricSpec (what CatBoost can compute)."""
    if metric.ties != "worst":
        raise ValueError(f"eval_metric {metric.name!r}: CatBoost's ranking metrics resolve ties "
                         f"pessimistically; ties={metric.ties!r} is not available")
    options = dict(metric.options)
    extra = sorted(set(options) - {"gain", "grade_max", "threshold", "decay"})
    if extra:
        raise ValueError(f"eval_metric {metric.name!r}: options {extra} have no CatBoost "
                         "equivalent; pass a CatBoost metric string instead")
    return MetricSpec.make(metric.metric, metric.k, options.get("gain", "exp2"),
                            options.get("grade_max"), options.get("threshold", 0.0),
                            options.get("decay", 0.85))


class _Spec:  # default_eval_metric reads objective.metric_spec
    def __init__(self, spec):
        self.metric_spec = spec


def catboost_metric(metric):
    """``(CatBoost metric string, MetricSpec or None, display name)`` of the ranker's
    ``eval_metric``: an :class:`EvalMetric` is translated (``"NDCG@5"`` ->
    ``"NDCG:top=5;type=Exp"``), a CatBoost string such as ``"NDCG:top=5;type=Base"`` is kept."""
    if isinstance(metric, str):
        return metric, None, metric
    spec = metric_spec(metric)
    return default_eval_metric(_Spec(spec)), spec, metric.name


def strip_hints(metric: str) -> str:
    """CatBoost's name of a metric in its evals result: the string without ``hints=...``."""
    name, _, options = metric.partition(":")
    kept = [part for part in options.split(";") if part and not part.startswith("hints=")]
    return name + (":" + ";".join(kept) if kept else "")


def resolve(settings: FitSettings, metric: str, n_rows: int, has_cat: bool, route: str):
    """CatBoost parameters, the route and the SGLB noise source for one fit.

    Args:
      settings: the ranker's checked settings (a ``FitSettings``).
      metric: the CatBoost eval-metric string.
      n_rows: learn rows; has_cat: categorical features given; route: the ``route`` parameter.

    Returns:
      ``(params, route, noise)``: ``noise`` is an SGLB (gradient noise only) or ``None``.
    """
    if route not in ROUTES:
        raise ValueError(f"route must be one of {ROUTES}, got {route!r}")
    p = dict(settings.params)
    if str(p.get("task_type", "CPU")).upper() != "CPU":
        raise ValueError("CatBoost runs Python objectives on CPU only (task_type='CPU')")
    for name in ("text_features", "embedding_features"):
        if p.get(name):
            raise ValueError(f"{name} are not supported: their estimators read the learn "
                             "labels, which are row indices here")
    boosting = p.setdefault("boosting_type", "Plain")
    if boosting != "Plain":
        raise ValueError(
            f"boosting_type={boosting!r} is not supported: ordered boosting needs "
            "per-document derivatives from prefix models, which a query-level objective "
            "cannot provide; use boosting_type='Plain'")
    if "bootstrap_type" not in p:
        if "bagging_temperature" in p:
            p["bootstrap_type"] = "Bayesian"
        else:
            p["bootstrap_type"] = "Bernoulli"
            p.setdefault("subsample", 0.8)
    p["iterations"] = settings.n_estimators
    p["learning_rate"] = settings.learning_rate
    p["random_seed"] = settings.random_state or 0
    if settings.n_jobs is not None:
        p["thread_count"] = settings.n_jobs
    p.setdefault("allow_writing_files", False)
    if "logging_level" not in p:  # CatBoost takes one of the two
        p["verbose"] = settings.verbose or False
    p["eval_metric"] = skip_train(metric)
    if "custom_metric" in p:
        cm = p["custom_metric"]
        p["custom_metric"] = ([skip_train(m) for m in cm] if isinstance(cm, (list, tuple))
                              else skip_train(cm))
    if has_cat:  # only target-free statistics: the learn labels are row indices
        for name in ("simple_ctr", "combinations_ctr", "per_feature_ctr"):
            value = p.get(name)
            if value is not None and any(t in repr(value) for t in _TARGET_CTRS):
                raise ValueError(
                    f"{name}={value!r} uses target statistics, but the learn labels are row "
                    "indices here; use 'Counter' CTRs or one-hot encoding")
        if not any(k in p for k in ("simple_ctr", "combinations_ctr", "per_feature_ctr")):
            p["simple_ctr"] = ["Counter"]
            p["combinations_ctr"] = ["Counter"]
    noise = catboost_langevin(p, n_rows, p["learning_rate"], p["random_seed"], settings.sglb)
    if has_cat and not p.get("has_time", False):
        if route == "pointer":
            raise ValueError("route='pointer' needs has_time=True with categorical features "
                             "(otherwise CatBoost permutes the rows); pass has_time=True or "
                             "route='auto'")
        if route == "auto":
            warnings.warn("categorical features without has_time=True: CatBoost permutes "
                          "the rows, so the adapter trains one tree per fit (about 3x "
                          "slower); pass has_time=True (rows in time/query order) for the "
                          "fast route", RuntimeWarning, stacklevel=4)
            route = "per_tree"
    if route == "auto":
        route = "pointer"
    return p, route, noise
