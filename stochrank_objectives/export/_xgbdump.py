"""The XGBoost JSON tree dump (``Booster.get_dump(dump_format="json")``'s form), written from
the ensemble: the tree form Vespa's ``xgboost(...)`` and the LTR plugin's ``xgboost+json`` read.

A split is ``{"nodeid", "depth", "split": <feature name>, "split_condition", "yes", "no",
"missing", "children": [<yes child>, <no child>]}``: ``x < split_condition`` goes to ``yes``, a
missing value to ``missing``; a leaf is ``{"nodeid", "leaf"}``. Node ids are the ensemble's.
"""

from __future__ import annotations

from ._trees import Tree

__all__ = ["xgboost_dump", "stump"]


def xgboost_dump(tree: Tree, names) -> dict:
    """One tree as a nested XGBoost JSON dump node (split names from ``names``)."""
    def node(i: int, depth: int) -> dict:
        if tree.feature[i] < 0:
            return {"nodeid": i, "leaf": float(tree.value[i])}
        left, right = int(tree.left[i]), int(tree.right[i])
        return {"nodeid": i, "depth": depth, "split": names[tree.feature[i]],
                "split_condition": float(tree.threshold[i]), "yes": left, "no": right,
                "missing": left if tree.missing_left[i] else right,
                "children": [node(left, depth + 1), node(right, depth + 1)]}

    return node(0, 0)


def stump(value: float) -> dict:
    """A one-leaf tree adding ``value`` (the base score, which a tree dump does not hold)."""
    return {"nodeid": 0, "leaf": float(value)}
