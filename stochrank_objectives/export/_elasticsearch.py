"""Elasticsearch / OpenSearch LTR writer: the ``_createmodel`` body of a ``model/xgboost+json``
model, whatever booster trained the trees.

The definition is the list of XGBoost JSON tree dumps (no objective: the plugin's default adds
nothing to the sum); split names are the feature set's feature names, and a one-leaf tree
carries the base score. The plugin sums the trees in float32, sends ``x < split_condition`` to
``yes`` and a missing (NaN) feature value to the ``missing`` child (o19s
elasticsearch-learning-to-rank, ``docs/training-models.rst`` and its XGBoost parser).
"""

from __future__ import annotations

import json

from ._trees import Ensemble
from ._xgbdump import stump, xgboost_dump

__all__ = ["write_elasticsearch", "MODEL_TYPE"]

MODEL_TYPE = "model/xgboost+json"


def write_elasticsearch(ensemble: Ensemble, names: list[str], *,
                        name: str = "stochrank") -> dict:
    """``{"model": {"name": name, "model": {"type": "model/xgboost+json", "definition": ...}}}``,
    the body of ``POST _ltr/_featureset/<feature set>/_createmodel``."""
    trees = [xgboost_dump(tree, names) for tree in ensemble.trees]
    if ensemble.base_score != 0.0:
        trees.append(stump(ensemble.base_score))
    return {"model": {"name": name, "model": {"type": MODEL_TYPE,
                                              "definition": json.dumps(trees)}}}
