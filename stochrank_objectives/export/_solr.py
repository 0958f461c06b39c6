"""Solr LTR writer: a ``org.apache.solr.ltr.model.MultipleAdditiveTreesModel`` JSON.

Solr's rule (``MultipleAdditiveTreesModel``, Solr's reference guide): ``x <= threshold`` goes
``left``, where Solr has added ``1e-6`` (in float32) to every threshold it reads; trees are
summed in float32 with their ``weight``. So each split ``x < c`` is written with the float32
threshold ``t`` for which ``float32(t + 1e-6)`` is the largest float32 below ``c``.

Missing values: Solr has no missing branch. A document without a feature gets the feature's
``defaultValue`` in the feature store (0.0 unless set). With ``missing_value=None`` the payload is
the trees as they are, and a warning names the splits where the booster sends a missing value
elsewhere than 0.0. With ``missing_value=v`` -- a value below every value the feature takes, set
as every feature's ``defaultValue`` -- each split where Solr would send ``v`` the other way than
the booster sends a missing value gets a guard node ``x <= v`` (:func:`guard_threshold`) that
sends ``v`` the booster's missing-value way, so absent features are routed exactly as the
booster routes NaN.

The rule for ``v`` (rounded to float32): a guard sends every value ``x <= v`` the missing way,
not only ``v``. So ``v`` is refused (an :class:`~._trees.ExportError` naming the feature, its
threshold and a value that works) when a feature that needs a guard has a threshold at or below
``v``: the booster's thresholds lie between values it was trained on, so that feature takes
values at or below ``v``, which the guard would route unlike the booster. Thresholds at or below
:data:`BOTTOM` are left out: CatBoost puts one there to separate a missing value it reads as the
minimum, not values of the feature. NaN and infinities are refused too (a ``defaultValue`` is a
finite number). That ``v`` is also below every value of your data is yours to know:
:func:`~stochrank_objectives.export.check_export` on your rows shows it.
"""

from __future__ import annotations

import warnings

import numpy as np

from ._trees import Ensemble, ExportError, ExportWarning, Tree

__all__ = ["write_solr", "MODEL_CLASS", "SLACK", "SAFE_MISSING_VALUE", "BOTTOM",
           "solr_threshold", "guard_threshold"]

MODEL_CLASS = "org.apache.solr.ltr.model.MultipleAdditiveTreesModel"
SLACK = np.float32(1e-6)  #: what Solr adds to every threshold (``NODE_SPLIT_SLACK``)
SAFE_MISSING_VALUE = -1e30  #: the ``missing_value`` suggested (below every usual feature value)
#: thresholds at or below this (the bottom of float32's range) separate only a missing value
#: read as the minimum (CatBoost's ``nan_mode="Min"``), not values the feature takes
BOTTOM = -3.4e38


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


def _split_point(t) -> np.float32:
    """Where Solr splits a node written with threshold ``t``: ``x <= float32(t + 1e-6)``."""
    return np.float32(np.float32(t) + SLACK)


def guard_threshold(v: float) -> np.float32:
    """The threshold of a guard node that catches ``v``: Solr's split point is the smallest
    one at or above ``v`` (``v`` itself but where Solr's slack cannot land on it, as at -1.0).

    Example::

        float(np.float32(guard_threshold(-1e30) + SLACK))  # -1e+30

    Args:
      v: a finite float32 value.

    Returns:
      The float32 threshold to write.
    """
    t = solr_threshold(v)
    if _split_point(t) < np.float32(v):
        t = np.nextafter(t, np.float32(np.inf))
    return t


def _finite(missing_value) -> float:
    with np.errstate(over="ignore", invalid="ignore"):
        v = float(np.float32(missing_value))
    if not np.isfinite(v):
        raise ExportError(
            f"missing_value={missing_value!r} is not a finite float32 number: Solr cannot carry "
            "it (a feature's defaultValue is a number, and JSON has no NaN or infinity). Pass a "
            "finite value below every value the features take, e.g. "
            f"missing_value={SAFE_MISSING_VALUE!r}, and set it as every feature's defaultValue")
    return v


def _refuse(ensemble: Ensemble, names, missing_value, caught: float, lowest: dict,
            guarded: dict) -> None:
    """The :class:`ExportError` of a ``missing_value`` whose guards (catching ``x <= caught``)
    would also catch values a feature takes (below its smallest threshold), if any."""
    bad = sorted(j for j in guarded if caught >= lowest.get(j, np.inf))
    if not bad:
        return
    j = bad[0]
    smallest = min(lowest.values())
    works = (SAFE_MISSING_VALUE if smallest > SAFE_MISSING_VALUE
             else float(np.nextafter(np.float32(smallest), np.float32(-np.inf))))
    others = f" (and {len(bad) - 1} other features)" if len(bad) > 1 else ""
    v = _text(missing_value)
    raise ExportError(
        f"missing_value={missing_value!r} is not below feature {names[j]!r}'s threshold "
        f"{_text(lowest[j])} (the model's x < {_text(lowest[j])}), and at {guarded[j]} splits of "
        f"that feature the {ensemble.source} model sends a missing value the other way than {v}"
        f"{others}. Solr's guard node there (x <= missing_value goes the missing way) would "
        f"also send the feature's own values at or below {v} the missing way, unlike the "
        "booster. A missing_value must be below every threshold of the features it guards and "
        f"below every value the features take (the smallest threshold is {_text(smallest)}): "
        f"pass e.g. missing_value={works!r} and set it as every feature's defaultValue")


def write_solr(ensemble: Ensemble, names: list[str], *, name: str = "stochrank",
               store: str = "_DEFAULT_", missing_value: float | None = None) -> dict:
    """The model JSON to ``PUT`` to ``<collection>/schema/model-store``.

    ``missing_value`` is refused by the module's rule: not finite in float32, or at or above
    a threshold (above :data:`BOTTOM`) of a feature that needs a guard.
    """
    default = 0.0 if missing_value is None else _finite(missing_value)
    guard = None if missing_value is None else guard_threshold(default)
    differ: dict[str, int] = {}
    guarded: dict[int, int] = {}
    lowest: dict[int, float] = {}

    def node(tree: Tree, i: int) -> dict:
        if tree.feature[i] < 0:
            return {"value": repr(float(tree.value[i]))}
        j = int(tree.feature[i])
        feature = names[j]
        threshold = float(tree.threshold[i])
        if threshold > BOTTOM:
            lowest[j] = min(lowest.get(j, np.inf), threshold)
        below = np.nextafter(np.float32(threshold), np.float32(-np.inf))
        split = solr_threshold(below)
        out = {"feature": feature, "threshold": _text(split),
               "left": node(tree, int(tree.left[i])), "right": node(tree, int(tree.right[i]))}
        default_left = bool(np.float32(default) <= _split_point(split))  # Solr's own way
        if default_left != bool(tree.missing_left[i]):
            if guard is None:
                differ[feature] = differ.get(feature, 0) + 1
            else:  # the guard: v (and what is below it) goes the booster's missing-value way
                guarded[j] = guarded.get(j, 0) + 1
                side = out["left"] if tree.missing_left[i] else out["right"]
                out = {"feature": feature, "threshold": _text(guard), "left": side,
                       "right": out}
        return out

    trees = [{"weight": "1", "root": node(tree, 0)} for tree in ensemble.trees]
    if guard is not None:
        _refuse(ensemble, names, missing_value, float(_split_point(guard)), lowest, guarded)
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
