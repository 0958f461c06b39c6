"""Independent evaluators: score rows through an exported artefact, without the booster and
without the :class:`~._trees.Ensemble` it was written from.

Each reads the artefact itself and applies its engine's documented rule:

- ONNX: onnxruntime.
- Elasticsearch / OpenSearch LTR (``xgboost+json``): float32 sum over the trees; a NaN goes to
  ``missing``; otherwise ``split_condition > x`` (float32) goes to ``yes``.
- Vespa (``xgboost(...)`` over the tree dump): double-precision sum; the split point is
  ``split_condition`` rounded to float32; ``if (x < t, yes, no)``, or ``if (!(x >= t), yes, no)``
  when ``missing`` is ``yes`` (so a NaN goes to ``yes`` there and to ``no`` elsewhere); plus the
  constant of the rank profile's expression.
- Solr LTR (``MultipleAdditiveTreesModel``): a NaN is an absent feature, which takes the
  feature's default value; ``x <= float32(threshold + 1e-6)`` goes ``left``; float32 sum of
  ``weight * value``.
"""

from __future__ import annotations

import json
import re

import numpy as np

__all__ = ["score_onnx", "score_elasticsearch", "score_vespa", "score_solr"]


def score_onnx(model, X) -> np.ndarray:
    """onnxruntime's scores of float32 ``X`` (the ONNX model's single output, flattened)."""
    import onnxruntime as ort

    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    name = session.get_inputs()[0].name
    return np.asarray(session.run(None, {name: np.asarray(X, dtype=np.float32)})[0],
                      dtype=np.float64).ravel()


def _flatten_dump(root: dict, column: dict):
    """A nested tree dump as arrays: column, split point, yes, no, missing-is-yes, leaf."""
    nodes: dict = {}
    stack = [root]
    while stack:
        node = stack.pop()
        nodes[node["nodeid"]] = node
        stack.extend(node.get("children", ()))
    ids = sorted(nodes)
    slot = {nid: k for k, nid in enumerate(ids)}
    col = np.full(len(ids), -1, dtype=np.int64)
    split = np.zeros(len(ids), dtype=np.float32)
    yes = np.zeros(len(ids), dtype=np.int64)
    no = np.zeros(len(ids), dtype=np.int64)
    missing_yes = np.zeros(len(ids), dtype=bool)
    leaf = np.zeros(len(ids), dtype=np.float64)
    for nid, k in slot.items():
        node = nodes[nid]
        if "leaf" in node:
            leaf[k] = node["leaf"]
            continue
        col[k] = column[node["split"]]
        split[k] = np.float32(node["split_condition"])
        yes[k], no[k] = slot[node["yes"]], slot[node["no"]]
        missing_yes[k] = node["missing"] == node["yes"]
    return col, split, yes, no, missing_yes, leaf, slot[root["nodeid"]]


def _walk(flat, X, go_yes) -> np.ndarray:
    """The leaf value each row reaches; ``go_yes(x, split, missing_yes)`` is the engine's rule."""
    col, split, yes, no, missing_yes, leaf, root = flat
    node = np.full(X.shape[0], root, dtype=np.int64)
    rows = np.arange(X.shape[0])
    while True:
        active = col[node] >= 0
        if not active.any():
            return leaf[node]
        n = node[active]
        x = X[rows[active], col[n]]
        node[active] = np.where(go_yes(x, split[n], missing_yes[n]), yes[n], no[n])


def score_elasticsearch(payload: dict, X, names) -> np.ndarray:
    """The LTR plugin's scores: ``X`` columns are the features named ``names``."""
    trees = json.loads(payload["model"]["model"]["definition"])
    X = np.asarray(X, dtype=np.float32)
    column = {n: i for i, n in enumerate(names)}
    total = np.zeros(X.shape[0], dtype=np.float32)

    def rule(x, split, missing_yes):
        return np.where(np.isnan(x), missing_yes, split > x)

    for tree in trees:
        total = (total + _walk(_flatten_dump(tree, column), X, rule).astype(np.float32))
    return total.astype(np.float64)


def score_vespa(model, X, names) -> np.ndarray:
    """Vespa's scores of the tree dump and the rank profile's constant."""
    X = np.asarray(X, dtype=np.float32).astype(np.float64)
    column = {n: i for i, n in enumerate(names)}

    def rule(x, split, missing_yes):
        t = split.astype(np.float64)
        return np.where(missing_yes, ~(x >= t), x < t)

    total = np.zeros(X.shape[0], dtype=np.float64)
    for tree in model.model:
        total += _walk(_flatten_dump(tree, column), X, rule)
    match = re.search(r'xgboost\("[^"]+"\)\s*\+\s*([-+0-9.eE]+)', model.rank_profile)
    return total + (float(match.group(1)) if match else 0.0)


def _flatten_solr(root: dict, column: dict):
    col: list[int] = []
    thr: list = []
    left: list[int] = []
    right: list[int] = []
    value: list = []
    stack = [(root, -1, "")]
    while stack:
        node, parent, side = stack.pop()
        k = len(col)
        if parent >= 0:
            (left if side == "l" else right)[parent] = k
        is_split = "feature" in node
        col.append(column.get(node["feature"], -2) if is_split else -1)
        slack = np.float32(1e-6)
        thr.append(np.float32(np.float32(node["threshold"]) + slack) if is_split else 0)
        left.append(0)
        right.append(0)
        value.append(np.float32(node.get("value", 0.0)))
        if is_split:
            stack.append((node["right"], k, "r"))
            stack.append((node["left"], k, "l"))
    return (np.array(col), np.array(thr, dtype=np.float32), np.array(left), np.array(right),
            np.array(value, dtype=np.float32))


def score_solr(model: dict, X, names, *, missing_value: float | None = None) -> np.ndarray:
    """Solr's scores, an absent (NaN) feature taking ``missing_value`` (0.0 when None)."""
    X = np.asarray(X, dtype=np.float32).copy()
    X[np.isnan(X)] = np.float32(0.0 if missing_value is None else missing_value)
    features = [f["name"] for f in model["features"]]
    # Solr's feature vector is the model's features in order; X holds them under ``names``
    vector = X[:, [list(names).index(f) for f in features]]
    column = {f: i for i, f in enumerate(features)}
    total = np.zeros(X.shape[0], dtype=np.float32)
    rows = np.arange(X.shape[0])
    for tree in model["params"]["trees"]:
        col, thr, left, right, value = _flatten_solr(tree["root"], column)
        node = np.zeros(X.shape[0], dtype=np.int64)
        alive = np.ones(X.shape[0], dtype=bool)  # a feature Solr does not have: the tree is 0
        while True:
            c = col[node]
            alive &= c != -2
            split = alive & (c >= 0)
            if not split.any():
                break
            n = node[split]
            x = vector[rows[split], c[split]]
            node[split] = np.where(x <= thr[n], left[n], right[n])
        out = np.where(alive, value[node], np.float32(0.0)).astype(np.float32)
        total = total + np.float32(tree["weight"]) * out
    return total.astype(np.float64)
