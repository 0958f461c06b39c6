"""Edits of an XGBoost model in its saved JSON form (SGLB's finalisation scales it)."""

from __future__ import annotations

import re

__all__ = ["scale_json_model"]


def scale_json_model(model: dict, factor: float) -> None:
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
