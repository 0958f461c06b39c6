"""The one place where readers (per booster) and targets (per engine) are registered.

A target is a writer (ensemble + feature names -> artefact) and an independent evaluator
(artefact + rows -> the engine's scores, see :mod:`._evaluate`). Adding a booster is one reader
here; adding a target is one writer and one evaluator here: every target then exports every
booster, and :func:`~stochrank_objectives.export.check_export` checks it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from . import _evaluate
from ._elasticsearch import write_elasticsearch
from ._onnx import write_onnx
from ._readers import booster_kind, read_catboost, read_lightgbm, read_xgboost
from ._solr import write_solr
from ._trees import Ensemble, ExportError
from ._vespa import write_vespa

__all__ = ["READERS", "TARGETS", "Target", "resolve", "export", "write"]

#: booster kind -> reader (a trained booster -> :class:`~._trees.Ensemble`)
READERS: dict[str, Callable[[Any], Ensemble]] = {
    "LightGBM": read_lightgbm, "XGBoost": read_xgboost, "CatBoost": read_catboost}


@dataclass(frozen=True)
class Target:
    """One serving target: its title, writer and independent evaluator."""

    title: str
    write: Callable[..., Any]
    score: Callable[..., Any]


def _score_onnx(artefact, X, names, **_):
    return _evaluate.score_onnx(artefact, X)


def _score_elasticsearch(artefact, X, names, **_):
    return _evaluate.score_elasticsearch(artefact, X, names)


def _score_vespa(artefact, X, names, **_):
    return _evaluate.score_vespa(artefact, X, names)


def _score_solr(artefact, X, names, missing_value=None, **_):
    return _evaluate.score_solr(artefact, X, names, missing_value=missing_value)


#: target name -> :class:`Target` (``"opensearch"`` is the Elasticsearch LTR payload)
TARGETS: dict[str, Target] = {
    "onnx": Target("ONNX", write_onnx, _score_onnx),
    "vespa": Target("Vespa", write_vespa, _score_vespa),
    "elasticsearch": Target("Elasticsearch/OpenSearch LTR", write_elasticsearch,
                            _score_elasticsearch),
    "solr": Target("Solr LTR", write_solr, _score_solr),
}
TARGETS["opensearch"] = TARGETS["elasticsearch"]


def _booster_and_names(model):
    """The booster object and the feature names of a fitted ranker, sklearn model or booster."""
    from ..adapters import StochasticRankerBase

    # the package's rankers, also those that subclass a booster's own (StochasticLGBMRanker)
    if isinstance(model, StochasticRankerBase) or type(model).__module__.startswith(
            "stochrank_objectives."):
        if not hasattr(model, "booster_"):
            raise ValueError(f"this {type(model).__name__} is not fitted yet: call fit first")
        names = getattr(model, "feature_names_in_", None)
        if names is None:
            names = [f"f{i}" for i in range(model.n_features_in_)]
        return model.booster_, [str(n) for n in names]
    if hasattr(model, "get_booster"):  # xgboost's scikit-learn models
        return model.get_booster(), None
    if type(model).__module__.startswith("lightgbm") and hasattr(model, "booster_"):
        return model.booster_, None
    booster_kind(model)  # a TypeError for anything else
    return model, None


def _feature_names(own: Sequence[str], feature_names) -> list[str]:
    if feature_names is None:
        names = [str(n) for n in own]
    elif isinstance(feature_names, Mapping):
        unknown = sorted(set(feature_names) - set(own))
        if unknown:
            raise ValueError(f"feature_names maps features the model does not have: {unknown}; "
                             f"its features are {list(own)}")
        names = [str(feature_names.get(n, n)) for n in own]
    else:
        names = [str(n) for n in feature_names]
        if len(names) != len(own):
            raise ValueError(f"feature_names has {len(names)} names, the model {len(own)} "
                             "features")
    duplicated = sorted({n for n in names if names.count(n) > 1})
    if duplicated:
        raise ValueError(f"feature names must be unique, repeated: {duplicated}")
    return names


def resolve(model, target: str, feature_names=None):
    """``(target, booster, ensemble, names)`` for one export, refusing what the target
    cannot represent with an :class:`~._trees.ExportError` naming the target."""
    if target not in TARGETS:
        raise ValueError(f"unknown target {target!r}; the targets are {sorted(TARGETS)}")
    spec = TARGETS[target]
    booster, ranker_names = _booster_and_names(model)
    try:
        ensemble = READERS[booster_kind(booster)](booster)
    except ExportError as error:
        raise ExportError(f"cannot export to {spec.title}: {error}") from None
    own = ranker_names if ranker_names is not None else ensemble.feature_names
    return spec, booster, ensemble, _feature_names(own, feature_names)


def export(model, target: str, *, feature_names=None, **options):
    """The artefact of ``model`` for ``target`` (``TARGETS``'s writer with ``options``)."""
    spec, _, ensemble, names = resolve(model, target, feature_names)
    return write(spec, ensemble, names, options)


def write(spec: Target, ensemble: Ensemble, names: list[str], options: dict):
    """``spec``'s artefact of ``ensemble``, an :class:`~._trees.ExportError` naming the target."""
    try:
        return spec.write(ensemble, names, **options)
    except ExportError as error:
        raise ExportError(f"cannot export to {spec.title}: {error}") from None
