"""Solr LTR writer: a ``org.apache.solr.ltr.model.MultipleAdditiveTreesModel`` JSON.

Solr's rule (``MultipleAdditiveTreesModel``, Solr's reference guide): ``x <= threshold`` goes
``left``, where Solr has added ``1e-6`` (in float32) to every threshold it reads; trees are
summed in float32 with their ``weight``. So each split ``x < c`` is written with the float32
threshold ``t`` for which ``float32(t + 1e-6)`` is the largest float32 below ``c``.

Missing values: Solr has no missing branch. A document without a feature gets the feature's
``defaultValue`` in the feature store (0.0 unless set). With ``missing_value=None`` the payload is
the trees as they are, and a warning names the splits where the booster sends a missing value
elsewhere than 0.0. With ``missing_value=v`` -- a value below every value the feature takes, set
as every feature's ``defaultValue`` -- each such split gets a guard node ``x <= v`` that sends
``v`` the booster's missing-value way, so absent features are routed exactly as the booster
routes NaN.
"""

from __future__ import annotations

import warnings

import numpy as np

from ._trees import Ensemble, ExportWarning, Tree

__all__ = ["write_solr", "MODEL_CLASS", "SLACK", "solr_threshold"]

MODEL_CLASS = "org.apache.solr.ltr.model.MultipleAdditiveTreesModel"
SLACK = np.float32(1e-6)  #: what Solr adds to every threshold (``NODE_SPLIT_SLACK``)


def _text(value) -> str:
    return str(np.float32(value))  # the shortest text that Float.parseFloat reads back exactly


def _key(f) -> int:
    """float32 -> int, in the same order (sign-magnitude bits made two's-complement-like)."""
    i = int(np.float32(f).view(np.int32))
    return i if i >= 0 else -(i & 0x7FFFFFFF)


def _float(k: int) -> np.float32:
    bits = k if k >= 0 else (-k) | -0x80000000
    return np.array([bits], dtype=np.int64).astype(np.int32).view(np.float32)[0]


def solr_threshold(target: float) -> np.float32:
    """The float32 ``t`` with ``float32(t + 1e-6)`` the largest float32 not above ``target``
    (``== target`` except within ~1e-13 of 0, which Solr's slack cannot resolve).

    ``t -> float32(t + 1e-6)`` never decreases, so a bisection over float32 values in order
    finds it.
    """
    p = np.float32(target)
    top = np.finfo(np.float32).max
    lo, hi = _key(-top), _key(top)  # g(lo) <= p < g(hi)
    if np.float32(_float(hi) + SLACK) <= p:
        return _float(hi)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if np.float32(_float(mid) + SLACK) <= p:
            lo = mid
        else:
            hi = mid
    return _float(lo)


def write_solr(ensemble: Ensemble, names: list[str], *, name: str = "stochrank",
               store: str = "_DEFAULT_", missing_value: float | None = None) -> dict:
    """The model JSON to ``PUT`` to ``<collection>/schema/model-store``."""
    default = 0.0 if missing_value is None else float(np.float32(missing_value))
    differ: dict[str, int] = {}

    def node(tree: Tree, i: int) -> dict:
        if tree.feature[i] < 0:
            return {"value": repr(float(tree.value[i]))}
        feature = names[tree.feature[i]]
        below = np.nextafter(np.float32(tree.threshold[i]), np.float32(-np.inf))
        out = {"feature": feature, "threshold": _text(solr_threshold(below)),
               "left": node(tree, int(tree.left[i])), "right": node(tree, int(tree.right[i]))}
        default_left = default < tree.threshold[i]
        if default_left != bool(tree.missing_left[i]):
            if missing_value is None:
                differ[feature] = differ.get(feature, 0) + 1
            else:  # the guard: v (and only v) goes the booster's missing-value way
                side = out["left"] if tree.missing_left[i] else out["right"]
                out = {"feature": feature, "threshold": _text(solr_threshold(default)),
                       "left": side, "right": out}
        return out

    trees = [{"weight": "1", "root": node(tree, 0)} for tree in ensemble.trees]
    if ensemble.base_score != 0.0:
        trees.append({"weight": "1", "root": {"value": repr(float(ensemble.base_score))}})
    if differ:
        listed = ", ".join(f"{k!r} ({v})" for k, v in sorted(differ.items())[:5])
        warnings.warn(ExportWarning(
            f"Solr LTR: a document without a feature takes the feature's defaultValue (0.0), and "
            f"at {sum(differ.values())} splits the {ensemble.source} model sends a missing value "
            f"the other way than 0.0 (features {listed}{', ...' if len(differ) > 5 else ''}). "
            "Pass missing_value=<a value below every feature value, e.g. -1e30> and set it as "
            "every feature's defaultValue to route absent features as the booster does"),
            stacklevel=3)
    return {"store": store, "class": MODEL_CLASS, "name": name,
            "features": [{"name": n} for n in names], "params": {"trees": trees}}
