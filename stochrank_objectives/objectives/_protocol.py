"""The objective protocol and the parameter handling every objective shares.

Protocol (:class:`Objective`) of every objective object in this package::

    obj.grad_hess(scores, labels, query_offsets, iteration=0) -> (grad, hess)
    obj.loss(scores, labels, query_offsets, iteration=0) -> float

* ``scores``: the booster's raw scores (init score / base margin included), one per document;
* ``labels``, ``query_offsets``: see :mod:`stochrank_objectives.groups`;
* ``iteration``: the boosting iteration, which keys the noise streams and the schedules (same
  seed and iteration -> bit-identical output, on any number of threads);
* ``grad``: the gradient of the **loss** (``-metric``), the convention of LightGBM and
  XGBoost (CatBoost's ``der1`` is ``-grad``); ``hess``: a per-document (diagonal) second
  derivative, see each objective;
* ``loss``: what ``grad`` descends (or, for the Monte-Carlo objectives, the loss they smooth),
  summed or averaged over queries as each objective states.

Parameters follow :mod:`stochrank_objectives.parameters`: each class writes its ``__init__`` out
(it only stores) and lists one constraint per parameter in ``_parameter_constraints``; the
checks run lazily, once, the first time the objective is used, and again only after a
parameter changes (scikit-learn's rule).
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import numpy as np

from ..parameters import Parameterised
from ..validation import check_int, choice

__all__ = ["Objective", "ObjectiveParams", "GAIN", "check_iteration"]


@runtime_checkable
class Objective(Protocol):
    """What the adapters call: gradient, hessian and loss over grouped arrays.

    Example:

    >>> from stochrank_objectives import LambdaMART
    >>> isinstance(LambdaMART(), Objective)
    True
    """

    def grad_hess(self, scores, labels, query_offsets,
                  iteration: int = 0) -> tuple[np.ndarray, np.ndarray]:
        """``(grad, hess)`` of the loss at ``scores``, one value per document each."""

    def loss(self, scores, labels, query_offsets, iteration: int = 0) -> float:
        """The loss at ``scores`` (see each objective for what it sums)."""


GAIN = choice("exp2", "linear")
"""The constraint on the NDCG gain the graded objectives share: ``2^r - 1`` or ``r``."""


def check_iteration(iteration) -> int:
    """The boosting iteration, an integer >= 0."""
    return check_int(iteration, "iteration", 0)


class ObjectiveParams(Parameterised):
    """The base of every objective: parameters declared once (see :mod:`..parameters`).

    Example:

    >>> from stochrank_objectives import ApproxNDCG
    >>> obj = ApproxNDCG(eta=3.0)
    >>> obj.set_params(eta=5.0)
    ApproxNDCG(eta=5.0, gain='exp2', hessian='constant')

    A subclass writes out ``__init__`` (storing each argument under its own name) and lists
    ``_parameter_constraints``, one check per ``__init__`` parameter. :meth:`_checked` validates
    them the first time an objective needs them (each constraint, then :meth:`_check_together`
    for the rules between parameters) and caches the result until a parameter is assigned
    again. ``set_params`` validates its new values at once, on a trial copy, so a bad value
    raises and leaves the object untouched. A subclass that drops a parent's parameter sets it
    as a class attribute (the parent's constraint still checks it).
    """
