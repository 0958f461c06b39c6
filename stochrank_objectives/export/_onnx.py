"""ONNX writer: the ensemble as one ``ai.onnx.ml.TreeEnsembleRegressor`` node.

Input ``X``: float32 ``(n, n_features)`` in the booster's feature order; output ``score``: float32
``(n, 1)``, the raw score. Every split is ``BRANCH_LT`` on a float32 threshold, a NaN follows
``nodes_missing_value_tracks_true`` (ONNX-ML operator specification), so the decisions are the
booster's for every float32 row. The feature names are in the model's metadata
(``feature_names``, a JSON list), for the serving code that assembles ``X``.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np

from ._trees import Ensemble

__all__ = ["write_onnx", "ML_OPSET"]

ML_OPSET = 3  #: the ``ai.onnx.ml`` opset of the node (onnxruntime runs 1 to 5)


def write_onnx(ensemble: Ensemble, names: list[str], *, opset: int = 17):
    """An ``onnx.ModelProto`` scoring rows as the ensemble does (checked by ``onnx.checker``)."""
    import onnx
    from onnx import TensorProto, helper

    attrs: dict[str, Any] = {k: [] for k in (
        "nodes_treeids", "nodes_nodeids", "nodes_featureids", "nodes_modes", "nodes_values",
        "nodes_truenodeids", "nodes_falsenodeids", "nodes_missing_value_tracks_true",
        "target_treeids", "target_nodeids", "target_ids", "target_weights")}
    trees = ensemble.trees
    for t, tree in enumerate(trees):
        for i in range(tree.n_nodes):
            leaf = tree.feature[i] < 0
            attrs["nodes_treeids"].append(t)
            attrs["nodes_nodeids"].append(i)
            attrs["nodes_featureids"].append(0 if leaf else int(tree.feature[i]))
            attrs["nodes_modes"].append("LEAF" if leaf else "BRANCH_LT")
            attrs["nodes_values"].append(0.0 if leaf else float(tree.threshold[i]))
            attrs["nodes_truenodeids"].append(0 if leaf else int(tree.left[i]))
            attrs["nodes_falsenodeids"].append(0 if leaf else int(tree.right[i]))
            attrs["nodes_missing_value_tracks_true"].append(
                0 if leaf else int(tree.missing_left[i]))
            if leaf:
                attrs["target_treeids"].append(t)
                attrs["target_nodeids"].append(i)
                attrs["target_ids"].append(0)
                attrs["target_weights"].append(float(tree.value[i]))
    if not trees:  # a model without trees scores its base score
        for key, value in (("nodes_treeids", 0), ("nodes_nodeids", 0), ("nodes_featureids", 0),
                           ("nodes_modes", "LEAF"), ("nodes_values", 0.0),
                           ("nodes_truenodeids", 0), ("nodes_falsenodeids", 0),
                           ("nodes_missing_value_tracks_true", 0), ("target_treeids", 0),
                           ("target_nodeids", 0), ("target_ids", 0), ("target_weights", 0.0)):
            attrs[key].append(value)
    node = helper.make_node(
        "TreeEnsembleRegressor", ["X"], ["score"], domain="ai.onnx.ml", n_targets=1,
        aggregate_function="SUM", post_transform="NONE",
        base_values=[float(np.float32(ensemble.base_score))], **attrs)
    graph = helper.make_graph(
        [node], "stochrank_ranker",
        [helper.make_tensor_value_info("X", TensorProto.FLOAT, [None, len(names)])],
        [helper.make_tensor_value_info("score", TensorProto.FLOAT, [None, 1])])
    model = helper.make_model(graph, producer_name="stochrank_objectives.export",
                              opset_imports=[helper.make_opsetid("", opset),
                                             helper.make_opsetid("ai.onnx.ml", ML_OPSET)])
    helper.set_model_props(model, {"feature_names": json.dumps(list(names)),
                                   "source": ensemble.source})
    onnx.checker.check_model(model)
    return model
