"""The objective protocol and the parameter handling every objective shares.

Protocol (:class:`Objective`) of every objective object in this package::

    obj.grad_hess(scores, labels, query_offsets, iteration=0, weights=None) -> (grad, hess)
    obj.loss(scores, labels, query_offsets, iteration=0) -> float

* ``scores``: the booster's raw scores (init score / base margin included), one per document;
* ``labels``, ``query_offsets``: see :mod:`stochrank_objectives.groups`;
* ``iteration``: the boosting iteration, which keys the noise streams and the schedules (same
  seed and iteration -> bit-identical output, on any number of threads);
* ``weights``: optional query weights (one per query, or one per document equal within a
  query; :func:`~stochrank_objectives.groups.query_weights`): ``grad_hess`` then returns the
  derivatives of ``sum_q w_q L_q``. Every normalisation an objective computes over the queries
  of a call (a mean hessian, a curvature floor) counts query ``q`` ``w_q`` times, so a weight
  of 0 removes a query and an integer weight equals that many copies of it. The weights are
  applied in one place, :meth:`ObjectiveParams.grad_hess`; a subclass writes
  ``_grad_hess(scores, labels, query_offsets, iteration, doc_weights)``, the unweighted
  per-document derivatives whose call-level constants are weighted by ``doc_weights``
  (:func:`weighted_mean`);
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

import inspect

import numpy as np

from ..groups import document_weights, query_weights, validate_grouped
from ..parameters import Parameterised
from ..validation import check_int, choice

__all__ = ["Objective", "ObjectiveParams", "GAIN", "check_iteration", "weighted_mean",
           "weighted_grad_hess", "accepts_weights", "OBJECTIVES"]

#: Every objective class of the package, by name, in definition order: a subclass of
#: :class:`ObjectiveParams` in the package registers itself when it is defined (a leading
#: underscore keeps a helper class out). Tests and tools that iterate objectives read this registry.
OBJECTIVES: dict[str, type["ObjectiveParams"]] = {}


@runtime_checkable
class Objective(Protocol):
    """What the adapters call: gradient, hessian and loss over grouped arrays.

    Example:

    >>> from stochrank_objectives import LambdaMART
    >>> isinstance(LambdaMART(), Objective)
    True
    """

    def grad_hess(self, scores, labels, query_offsets, iteration: int = 0,
                  weights=None) -> tuple[np.ndarray, np.ndarray]:
        """``(grad, hess)`` of the (query-weighted) loss at ``scores``, one value per document
        each."""

    def loss(self, scores, labels, query_offsets, iteration: int = 0) -> float:
        """The loss at ``scores`` (see each objective for what it sums)."""


GAIN = choice("exp2", "linear")
"""The constraint on the NDCG gain the graded objectives share: ``2^r - 1`` or ``r``."""


def check_iteration(iteration) -> int:
    """The boosting iteration, an integer >= 0."""
    return check_int(iteration, "iteration", 0)


def weighted_mean(values: np.ndarray, doc_weights: np.ndarray | None) -> float:
    """The mean of per-document ``values`` over the documents of a call, each counted as often
    as its query's weight: ``sum_i w_i v_i / sum_i w_i`` (the plain mean without weights; 0.0
    for no documents or no weight).

    Example:

    >>> weighted_mean(np.array([1.0, 3.0, 5.0]), None)
    3.0
    >>> weighted_mean(np.array([1.0, 3.0, 5.0]), np.array([2.0, 2.0, 0.0]))  # the last left out
    2.0

    Every normalisation an objective computes over the queries of a call goes through this
    function, so that a query of weight 0 does not move the other queries' derivatives and a
    query of integer weight ``w`` counts as ``w`` copies.
    """
    if doc_weights is None:
        return float(values.mean()) if values.size else 0.0
    total = float(doc_weights.sum())
    return float(np.dot(values, doc_weights)) / total if total > 0.0 else 0.0


def accepts_weights(objective) -> bool:
    """Whether ``objective.grad_hess`` takes ``weights=`` (every objective of this package does;
    an object of your own may not)."""
    if isinstance(objective, ObjectiveParams):
        return True
    try:
        parameters = inspect.signature(objective.grad_hess).parameters
    except (TypeError, ValueError):  # a builtin or C callable without a signature
        return False
    return "weights" in parameters or any(
        p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values())


def weighted_grad_hess(objective, scores, labels, query_offsets, iteration: int = 0,
                       weights=None) -> tuple[np.ndarray, np.ndarray]:
    """``(grad, hess)`` of ``sum_q w_q L_q`` for any protocol objective: what the adapters call.

    Example:

    >>> from stochrank_objectives import LambdaMART
    >>> g, h = weighted_grad_hess(LambdaMART(), np.zeros(4), np.array([1.0, 0, 1, 0]),
    ...                           [0, 2, 4], weights=[1.0, 0.0])
    >>> bool(np.all(g[2:] == 0) and np.all(h[2:] == 0))  # weight 0: the second query is out
    True

    An objective that takes ``weights=`` (:func:`accepts_weights`) gets them, so its
    normalisations over the call honour them; for an object of your own whose ``grad_hess``
    does not, each document's derivatives are multiplied by its query's weight here (exact for
    any objective that is a sum of per-query terms without call-level constants).
    """
    if weights is None:
        return objective.grad_hess(scores, labels, query_offsets, iteration=iteration)
    if accepts_weights(objective):
        return objective.grad_hess(scores, labels, query_offsets, iteration=iteration,
                                   weights=weights)
    grad, hess = objective.grad_hess(scores, labels, query_offsets, iteration=iteration)
    doc_w = document_weights(query_weights(weights, query_offsets), query_offsets)
    return np.asarray(grad) * doc_w, np.asarray(hess) * doc_w


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

    Defining a subclass registers it in :data:`OBJECTIVES`; :meth:`examples` gives the
    instances that tests iterating the registry use, and :attr:`draws_noise` whether an
    instance's derivatives are random (seeded).
    """

    def __init_subclass__(cls, **kwargs) -> None:
        super().__init_subclass__(**kwargs)
        # the package's own classes only: a subclass written in a user's (or a test's) module
        # is an objective like any other, but not one of the package's
        if cls.__module__.startswith(__name__.rpartition(".objectives")[0] + ".") \
                and not cls.__name__.startswith("_"):
            OBJECTIVES[cls.__name__] = cls

    @classmethod
    def examples(cls) -> list["ObjectiveParams"]:
        """Instances that cover the class's behaviours, for tests iterating :data:`OBJECTIVES`:
        the defaults, and a noise-free variant where the defaults draw noise."""
        return [cls()]

    @property
    def draws_noise(self) -> bool:
        """Whether :meth:`grad_hess` draws seeded noise (its derivatives are then exact only in
        law: e.g. ``w`` copies of a query draw other noise than the query weighted by ``w``)."""
        return "seed" in self.get_params()

    def grad_hess(self, scores, labels, query_offsets, iteration: int = 0,
                  weights=None) -> tuple[np.ndarray, np.ndarray]:
        """``(grad, hess)`` of the loss ``sum_q w_q L_q`` at ``scores`` (``w_q = 1`` without
        ``weights``), one value per document each.

        Example:

        >>> from stochrank_objectives import StochasticRank
        >>> s, y, offs = np.zeros(6), np.array([1.0, 0, 0, 1, 0, 0]), [0, 3, 6]
        >>> g1, h1 = StochasticRank().grad_hess(s, y, offs, weights=[1.0, 0.0])
        >>> g2, h2 = StochasticRank().grad_hess(s[:3], y[:3], [0, 3])
        >>> bool(np.allclose(g1[:3], g2) and np.allclose(h1[:3], h2)), h1[3:].tolist()
        (True, [0.0, 0.0, 0.0])

        The subclass computes the unweighted per-document derivatives, with every constant it
        takes over the queries of the call weighted (:meth:`_grad_hess`, :func:`weighted_mean`);
        this method multiplies each document's by its query's weight. So weight 0 removes a
        query and an integer weight ``w`` equals ``w`` copies of it, for every objective
        (exactly for the deterministic ones; in law for the stochastic ones, whose noise is
        drawn per document).

        Args:
          scores, labels, query_offsets: the grouped arrays (:mod:`stochrank_objectives.groups`).
          iteration: the boosting iteration (keys the noise and the schedules).
          weights: ``None``, or one non-negative weight per query (or per document, equal
            within a query).
        """
        if weights is None:
            return self._grad_hess(scores, labels, query_offsets, iteration, None)
        scores, labels, offs = validate_grouped(scores, labels, query_offsets)
        doc_w = document_weights(query_weights(weights, offs), offs)
        grad, hess = self._grad_hess(scores, labels, offs, iteration, doc_w)
        return np.asarray(grad) * doc_w, np.asarray(hess) * doc_w

    def _grad_hess(self, scores, labels, query_offsets, iteration,
                   doc_weights) -> tuple[np.ndarray, np.ndarray]:
        """The unweighted ``(grad, hess)``; call-level constants weighted by ``doc_weights``
        (each document's query weight, or ``None``)."""
        raise NotImplementedError
