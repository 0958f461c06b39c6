"""Readers: one per booster, each turning a trained model into the :class:`~._trees.Ensemble`.

Each reads the booster's own documented saved form -- LightGBM's ``dump_model()`` JSON, XGBoost's
JSON model (``save_raw("json")``), CatBoost's JSON model (``save_model(format="json")``) -- and
normalises every split to the form's rule (``x < threshold`` left, NaN by ``missing_left``):

- LightGBM: ``x <= threshold`` left; NaN: ``missing_type`` ``"NaN"`` -> ``default_left``,
  ``"None"`` -> treated as 0.0, ``"Zero"`` -> 0.0 and NaN to ``default_left``.
- XGBoost: ``x < split_condition`` left; NaN -> ``default_left``; plus ``base_score``.
- CatBoost (oblivious trees): ``x > border`` sets a bit of the leaf index (the bit of
  ``splits[i]`` is ``1 << i``); NaN per feature: ``"AsTrue"`` sets the bit, ``"AsFalse"`` and
  ``"AsIs"`` do not; leaves times ``scale`` plus ``bias``.

A booster is recognised by the module of its class, so no booster is imported until used.
"""

from __future__ import annotations

import json
import os
import tempfile

import numpy as np

from ._trees import Ensemble, ExportError, Tree, TreeBuilder, lt_threshold

__all__ = ["booster_kind", "read_lightgbm", "read_xgboost", "read_catboost", "raw_scores"]

_IDENTITY_LINK = {"reg:squarederror", "reg:linear", "reg:absoluteerror", "reg:pseudohubererror",
                  "reg:quantileerror", "rank:pairwise", "rank:ndcg", "rank:map"}


def booster_kind(booster) -> str:
    """``"LightGBM"``, ``"XGBoost"`` or ``"CatBoost"`` for a booster object, else TypeError."""
    module = type(booster).__module__.split(".", 1)[0]
    kinds = {"lightgbm": "LightGBM", "xgboost": "XGBoost", "catboost": "CatBoost"}
    if module not in kinds:
        raise TypeError(f"cannot export a {type(booster).__name__}: expected a fitted ranker of "
                        "this package, a lightgbm.Booster, an xgboost.Booster or a CatBoost model")
    return kinds[module]


def raw_scores(booster, X) -> np.ndarray:
    """The booster's own raw scores of float32 rows ``X`` (what an export must reproduce)."""
    kind = booster_kind(booster)
    if kind == "LightGBM":
        return np.asarray(booster.predict(X, raw_score=True), dtype=np.float64)
    if kind == "XGBoost":
        import xgboost as xgb
        data = xgb.DMatrix(X, feature_names=booster.feature_names)
        return np.asarray(booster.predict(data, output_margin=True), dtype=np.float64)
    return np.asarray(booster.predict(X, prediction_type="RawFormulaVal"), dtype=np.float64)


# -- LightGBM --------------------------------------------------------------------------------
def read_lightgbm(booster) -> Ensemble:
    dump = booster.dump_model()
    if dump.get("num_tree_per_iteration", 1) != 1:
        raise ExportError("a multi-class LightGBM model (one score per row is exported)")
    if dump.get("average_output"):
        raise ExportError("a LightGBM random forest (average_output): trees are summed here")
    names = tuple(dump["feature_names"])
    trees = tuple(_lightgbm_tree(info["tree_structure"], names) for info in dump["tree_info"])
    return Ensemble(trees, 0.0, names, "LightGBM")


def _lightgbm_tree(root: dict, names) -> Tree:
    b = TreeBuilder()
    stack: list[tuple[dict, int | None, str]] = [(root, None, "")]
    while stack:
        node, parent, side = stack.pop()
        if "split_feature" not in node:
            if "leaf_coeff" in node:
                raise ExportError("a LightGBM linear tree (linear_tree=True): leaves are constants")
            index = b.leaf(node["leaf_value"])
        else:
            name = names[node["split_feature"]]
            if node["decision_type"] != "<=":
                raise ExportError(f"a categorical split on feature {name!r}")
            threshold = float(node["threshold"])
            zero_left = 0.0 <= threshold
            kind, default_left = node["missing_type"], bool(node["default_left"])
            if kind == "None":  # LightGBM reads a NaN as 0.0
                missing_left = zero_left
            elif kind == "Zero" and default_left != zero_left:
                raise ExportError(
                    f"a zero_as_missing split on feature {name!r}: LightGBM sends 0.0 the "
                    "missing-value way, the targets compare it with the threshold")
            else:
                missing_left = default_left
            index = b.split(node["split_feature"], lt_threshold(threshold), missing_left)
            stack.append((node["right_child"], index, "right"))
            stack.append((node["left_child"], index, "left"))
        if parent is not None:
            if side == "left":
                b.left[parent] = index
            else:
                b.right[parent] = index
    return b.tree()


# -- XGBoost ---------------------------------------------------------------------------------
def read_xgboost(booster) -> Ensemble:
    model = json.loads(bytes(booster.save_raw("json")))
    learner = model["learner"]
    gbm = learner["gradient_booster"]
    if gbm.get("name") != "gbtree":
        raise ExportError(f"an XGBoost {gbm.get('name')!r} booster (gbtree only)")
    objective = learner["objective"]["name"]
    if objective not in _IDENTITY_LINK:
        raise ExportError(f"XGBoost objective {objective!r}: only raw scores of identity-link "
                          "objectives (reg:squarederror, rank:*) are exported")
    param = learner["learner_model_param"]
    if int(param.get("num_class", "0")) > 1 or int(param.get("num_target", "1")) > 1:
        raise ExportError("a multi-output XGBoost model (one score per row is exported)")
    base = [float(v) for v in str(param["base_score"]).strip("[]").split(",")]
    n_features = int(param["num_feature"])
    names = tuple(learner.get("feature_names") or [f"f{i}" for i in range(n_features)])
    trees = []
    for tree in gbm["model"]["trees"]:
        left = np.asarray(tree["left_children"], dtype=np.int64)
        feature = np.asarray(tree["split_indices"], dtype=np.int64)
        types = np.asarray(tree.get("split_type", np.zeros_like(left)), dtype=np.int64)
        is_leaf = left == -1
        categorical = ~is_leaf & (types != 0)
        if categorical.any():
            raise ExportError(f"a categorical split on feature "
                              f"{names[feature[np.argmax(categorical)]]!r}")
        values = np.asarray(tree["split_conditions"], dtype=np.float32).astype(np.float64)
        trees.append(Tree(
            feature=np.where(is_leaf, -1, feature),
            threshold=np.where(is_leaf, np.nan, values),
            left=left, right=np.asarray(tree["right_children"], dtype=np.int64),
            missing_left=np.asarray(tree["default_left"], dtype=bool),
            value=np.where(is_leaf, values, 0.0)))
    return Ensemble(tuple(trees), float(np.float32(base[0])), names, "XGBoost")


# -- CatBoost --------------------------------------------------------------------------------
def read_catboost(model) -> Ensemble:
    with tempfile.TemporaryDirectory() as directory:
        path = os.path.join(directory, "model.json")
        model.save_model(path, format="json")
        with open(path) as f:
            dump = json.load(f)
    names = tuple(str(n) for n in model.feature_names_)
    info = dump["features_info"]
    for kind in ("categorical_features", "text_features", "embedding_features"):
        if info.get(kind):
            first = info[kind][0]
            raise ExportError(f"CatBoost {kind.replace('_', ' ')} (feature "
                              f"{names[first.get('flat_feature_index', 0)]!r})")
    if "oblivious_trees" not in dump:
        raise ExportError("a CatBoost model with non-symmetric trees (grow_policy other than "
                          "SymmetricTree)")
    floats = {f["feature_index"]: (f["flat_feature_index"], f.get("nan_value_treatment", "AsIs"))
              for f in info.get("float_features", [])}
    scale, bias = dump.get("scale_and_bias", [1.0, [0.0]])
    bias = bias[0] if isinstance(bias, list) else bias
    trees = []
    for tree in dump["oblivious_trees"]:
        splits = tree.get("splits") or []
        leaves = np.asarray(tree["leaf_values"], dtype=np.float64) * scale
        if leaves.shape[0] != 1 << len(splits):
            raise ExportError("a multi-dimensional CatBoost model (one score per row is exported)")
        levels = []
        for split in splits:
            if split.get("split_type") != "FloatFeature":
                raise ExportError(f"a CatBoost {split.get('split_type')} split (float features "
                                  "only)")
            flat, nan_rule = floats[split["float_feature_index"]]
            # x > border sets the bit (right); so left is x <= border, i.e. x < lt_threshold
            levels.append((flat, lt_threshold(float(np.float32(split["border"]))),
                           nan_rule != "AsTrue"))
        trees.append(_oblivious(levels, leaves))
    return Ensemble(tuple(trees), float(bias), names, "CatBoost")


def _oblivious(levels, leaves) -> Tree:
    """The full binary tree of an oblivious tree: level ``i`` tests ``levels[i]``, whose bit in
    the leaf index is ``1 << i``."""
    b = TreeBuilder()

    def grow(level: int, index: int) -> int:
        if level == len(levels):
            return b.leaf(leaves[index])
        feature, threshold, missing_left = levels[level]
        node = b.split(feature, threshold, missing_left)
        left = grow(level + 1, index)
        right = grow(level + 1, index | (1 << level))
        b.children(node, left, right)
        return node

    grow(0, 0)
    return b.tree()
