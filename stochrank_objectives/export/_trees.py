"""The one tree-ensemble form every export goes through.

A reader (one per booster) turns a trained model into an :class:`Ensemble`; a writer (one per
target) turns an :class:`Ensemble` into the target's artefact. Every split is normalised to one
rule, the rule of the targets' float32 feature values::

    go left  if x < threshold        (threshold: a float32 value)
    go left  if x is NaN and missing_left, else right when x is NaN

A booster's ``x <= t`` on float32 inputs is the same decision as ``x < c`` with ``c`` the next
float32 above the largest float32 not above ``t`` (:func:`lt_threshold`), so this form loses
nothing for float32 feature values, which is what every target here evaluates (Vespa compares in
double precision: its feature values are the same decisions when they are float32 values).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["Tree", "Ensemble", "ExportError", "ExportWarning", "lt_threshold", "TreeBuilder"]


class ExportError(ValueError):
    """A model (or a part of it) that a target cannot represent.

    Example::

        to_solr(ranker_with_categories)  # ExportError: cannot export to Solr LTR: a categorical ...

    Args:
      message: names the target and the feature.
    """


class ExportWarning(UserWarning):
    """An export whose target routes some inputs (missing values) unlike the booster.

    Example::

        warnings.simplefilter("error", ExportWarning)  # refuse such exports

    Args:
      message: names the target, the features and how to make them agree.
    """


@dataclass(frozen=True)
class Tree:
    """One regression tree in arrays; node 0 is the root.

    ``feature[i] == -1`` marks a leaf with output ``value[i]``; a split sends ``x[feature[i]]``
    left when it is below ``threshold[i]`` (a float32 value held as float64), a NaN left when
    ``missing_left[i]``.
    """

    feature: np.ndarray
    threshold: np.ndarray
    left: np.ndarray
    right: np.ndarray
    missing_left: np.ndarray
    value: np.ndarray

    @property
    def n_nodes(self) -> int:
        return int(self.feature.shape[0])


@dataclass(frozen=True)
class Ensemble:
    """A sum of trees plus a constant: the booster's raw score.

    ``feature_names`` are the booster's own (training DataFrame columns, else ``f0, f1, ...``);
    ``source`` names the booster it was read from.

    Example::

        ensemble = read_trees(ranker)
        len(ensemble.trees), ensemble.base_score

    Args:
      trees: the :class:`Tree` objects; base_score: the constant; feature_names, source: as
        above.
    """

    trees: tuple[Tree, ...]
    base_score: float
    feature_names: tuple[str, ...]
    source: str

    def predict(self, X) -> np.ndarray:
        """The raw score of every row of float32 ``X`` (the form's own rule; for tests)."""
        X = np.asarray(X, dtype=np.float32)
        out = np.full(X.shape[0], self.base_score, dtype=np.float64)
        rows = np.arange(X.shape[0])
        for tree in self.trees:
            node = np.zeros(X.shape[0], dtype=np.int64)
            while True:
                split = tree.feature[node] >= 0
                if not split.any():
                    break
                n, r = node[split], rows[split]
                x = X[r, tree.feature[n]].astype(np.float64)
                go_left = np.where(np.isnan(x), tree.missing_left[n], x < tree.threshold[n])
                node[split] = np.where(go_left, tree.left[n], tree.right[n])
            out += tree.value[node]
        return out


def lt_threshold(t: float) -> float:
    """The float32 ``c`` with ``x <= t`` exactly when ``x < c``, for every finite float32 ``x``.

    A ``t`` at or beyond float32's range (LightGBM writes 1.8e308 for "every value") gives the
    largest float32, so that every artefact holds finite numbers (only ``x`` equal to that
    largest value or to infinity would be sent the other way).
    """
    top = float(np.finfo(np.float32).max)
    if t >= top:
        return top
    with np.errstate(over="ignore"):
        below = np.float32(t)
    if float(below) > t:
        below = np.nextafter(below, np.float32(-np.inf))
    return float(np.nextafter(below, np.float32(np.inf)))


class TreeBuilder:
    """Appends nodes (a reader walks its booster's tree and calls :meth:`split` / :meth:`leaf`)."""

    def __init__(self):
        self.feature: list[int] = []
        self.threshold: list[float] = []
        self.left: list[int] = []
        self.right: list[int] = []
        self.missing_left: list[bool] = []
        self.value: list[float] = []

    def _add(self, feature, threshold, missing_left, value) -> int:
        self.feature.append(feature)
        self.threshold.append(threshold)
        self.left.append(-1)
        self.right.append(-1)
        self.missing_left.append(missing_left)
        self.value.append(value)
        return len(self.feature) - 1

    def leaf(self, value: float) -> int:
        return self._add(-1, np.nan, False, float(value))

    def split(self, feature: int, threshold: float, missing_left: bool) -> int:
        """A split node (``x < threshold`` goes left); set its children with :meth:`children`."""
        if float(np.float32(threshold)) != threshold:
            raise AssertionError(f"threshold {threshold!r} is not a float32 value")
        return self._add(int(feature), float(threshold), bool(missing_left), 0.0)

    def children(self, node: int, left: int, right: int) -> None:
        self.left[node], self.right[node] = left, right

    def tree(self) -> Tree:
        return Tree(np.array(self.feature, dtype=np.int64),
                    np.array(self.threshold, dtype=np.float64),
                    np.array(self.left, dtype=np.int64), np.array(self.right, dtype=np.int64),
                    np.array(self.missing_left, dtype=bool),
                    np.array(self.value, dtype=np.float64))
