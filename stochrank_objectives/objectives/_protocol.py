"""The objective protocol and the parameter handling every objective shares.

Protocol (:class:`Objective`) of every objective object in this package::

    obj.grad_hess(scores, labels, query_offsets, iteration=0, weights=None) -> (grad, hess)
    obj.loss(scores, labels, query_offsets, iteration=0) -> float

and, for the adapters, the same derivatives over the training's validated
:class:`~stochrank_objectives.groups.GroupedData`, built once per training (no check of the
labels, offsets or weights per round; :func:`grouped_grad_hess` calls it)::

    obj.gradient_hessian(scores, data, iteration=0) -> (grad, hess)

* ``scores``: the booster's raw scores (init score / base margin included), one per document;
* ``labels``, ``query_offsets``: see :mod:`stochrank_objectives.groups`;
* ``iteration``: the boosting iteration, which keys the noise streams and the schedules (same
  seed and iteration -> bit-identical output, on any number of threads);
* ``weights``: optional query weights (one per query, or one per document equal within a
  query; :func:`~stochrank_objectives.groups.query_weights`): ``grad_hess`` then returns the
  derivatives of ``sum_q w_q L_q``. Every normalisation an objective computes over the queries
  of a call (a mean hessian, a curvature floor) counts query ``q`` ``w_q`` times, so a weight
  of 0 removes a query and an integer weight equals that many copies of it. The weights are
  applied in one place, :meth:`ObjectiveParams.gradient_hessian`; a subclass writes
  ``_grad_hess(scores, data, iteration)``, the unweighted per-document derivatives over the
  validated ``data`` whose call-level constants are weighted by ``data.document_weights()``
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
import weakref

import numpy as np

from ..groups import GroupedData
from ..parameters import Parameterised
from ..validation import check_int, choice

__all__ = ["Objective", "ObjectiveParams", "GAIN", "check_iteration", "weighted_mean",
           "weighted_grad_hess", "grouped_grad_hess", "accepts_weights", "validated",
           "OBJECTIVES"]

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
    """``(grad, hess)`` of ``sum_q w_q L_q`` for any protocol objective, from loose arrays
    (validated here, on every call; the adapters call :func:`grouped_grad_hess` instead).

    Example:

    >>> from stochrank_objectives import LambdaMART
    >>> g, h = weighted_grad_hess(LambdaMART(), np.zeros(4), np.array([1.0, 0, 1, 0]),
    ...                           [0, 2, 4], weights=[1.0, 0.0])
    >>> bool(np.all(g[2:] == 0) and np.all(h[2:] == 0))  # weight 0: the second query is out
    True
    """
    return grouped_grad_hess(objective, scores, GroupedData(labels, query_offsets,
                                                            weights=weights), iteration)


def grouped_grad_hess(objective, scores, data: GroupedData,
                      iteration: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """``(grad, hess)`` of ``sum_q w_q L_q`` over validated grouped data, for any protocol
    objective: what the adapters call every round.

    Example:

    >>> from stochrank_objectives import LambdaMART
    >>> data = GroupedData(np.array([1.0, 0, 1, 0]), [0, 2, 4], weights=[1.0, 0.0])
    >>> g, h = grouped_grad_hess(LambdaMART(), np.zeros(4), data)
    >>> bool(np.all(g[2:] == 0) and np.all(h[2:] == 0))  # weight 0: the second query is out
    True

    An object with ``gradient_hessian(scores, data, iteration)`` (every objective of this
    package) gets ``data`` itself, so nothing about the labels, offsets or weights is checked
    or rebuilt per round -- unless it is a subclass of a package objective that overrides
    ``grad_hess``, whose override is then called, as before. An object of your own with only
    ``grad_hess`` gets the arrays; if it
    takes ``weights=`` (:func:`accepts_weights`) it gets the query weights, so its
    normalisations over the call honour them; otherwise each document's derivatives are
    multiplied by its query's weight here (exact for any objective that is a sum of per-query
    terms without call-level constants).

    Args:
      objective: an object with ``gradient_hessian`` or ``grad_hess``.
      scores: the booster's raw scores, one per document of ``data``.
      data: the training's :class:`~stochrank_objectives.groups.GroupedData`.
      iteration: the boosting iteration.
    """
    if _takes_grouped_data(objective):
        return objective.gradient_hessian(scores, data, iteration)
    labels, offsets = data.labels, data.query_offsets
    if data.weights is None:
        return objective.grad_hess(scores, labels, offsets, iteration=iteration)
    if accepts_weights(objective):
        return objective.grad_hess(scores, labels, offsets, iteration=iteration,
                                   weights=data.weights)
    grad, hess = objective.grad_hess(scores, labels, offsets, iteration=iteration)
    doc_w = data.document_weights()
    return np.asarray(grad) * doc_w, np.asarray(hess) * doc_w


def _takes_grouped_data(objective) -> bool:
    """Whether ``objective.gradient_hessian`` is what its ``grad_hess`` computes: an object
    with ``gradient_hessian``, except a package objective whose subclass overrides
    ``grad_hess`` (the adapters must then call the override)."""
    if not callable(getattr(objective, "gradient_hessian", None)):
        return False
    return (not isinstance(objective, ObjectiveParams)
            or type(objective).grad_hess is ObjectiveParams.grad_hess)


def validated(scores, labels, query_offsets, weights=None) -> tuple[np.ndarray, GroupedData]:
    """``(scores, data)``: loose arrays checked once, as the public methods that take them
    (``grad_hess``, ``loss``) do: the scores as float64 and a
    :class:`~stochrank_objectives.groups.GroupedData` of the rest.

    Example:

    >>> s, data = validated([0.5, 0.1], [1, 0], [0, 2])
    >>> s.dtype.name, data.n_queries
    ('float64', 1)
    """
    data = GroupedData(labels, query_offsets, weights=weights)
    return data.checked_scores(scores), data


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

    _derived_attributes = ("_checked_params", "_prepared_entry")  # see _per_data

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

        The loose arrays are checked on every call (a
        :class:`~stochrank_objectives.groups.GroupedData` is built of them), then
        :meth:`gradient_hessian` computes; the adapters call that directly with the data they
        validated once per training.

        Args:
          scores, labels, query_offsets: the grouped arrays (:mod:`stochrank_objectives.groups`).
          iteration: the boosting iteration (keys the noise and the schedules).
          weights: ``None``, or one non-negative weight per query (or per document, equal
            within a query).
        """
        return self.gradient_hessian(scores, GroupedData(labels, query_offsets, weights=weights),
                                     iteration)

    def gradient_hessian(self, scores, data: GroupedData,
                         iteration: int = 0) -> tuple[np.ndarray, np.ndarray]:
        """``(grad, hess)`` of ``sum_q w_q L_q`` over validated grouped data (the weights are
        ``data.weights``); only the scores and the iteration are checked.

        Example:

        >>> from stochrank_objectives import LambdaMART
        >>> data = GroupedData(np.array([1.0, 0.0, 0.0, 1.0]), [0, 2, 4], weights=[2.0, 0.0])
        >>> g, h = LambdaMART().gradient_hessian(np.zeros(4), data)
        >>> g.tolist() == (2 * LambdaMART().grad_hess(np.zeros(2), [1.0, 0.0], [0, 2])[0]
        ...                ).tolist() + [0.0, 0.0]
        True

        The subclass computes the unweighted per-document derivatives, with every constant it
        takes over the queries of the call weighted (:meth:`_grad_hess`, :func:`weighted_mean`);
        this method multiplies each document's by its query's weight. So weight 0 removes a
        query and an integer weight ``w`` equals ``w`` copies of it, for every objective
        (exactly for the deterministic ones; in law for the stochastic ones, whose noise is
        drawn per document).

        Args:
          scores: the raw scores, one per document of ``data``.
          data: a :class:`~stochrank_objectives.groups.GroupedData` (validated when built).
          iteration: the boosting iteration (keys the noise and the schedules).
        """
        iteration = check_iteration(iteration)
        scores = data.checked_scores(scores)
        grad, hess = self._grad_hess(scores, data, iteration)
        doc_w = data.document_weights()
        if doc_w is None:
            return grad, hess
        return np.asarray(grad) * doc_w, np.asarray(hess) * doc_w

    def _per_data(self, data: GroupedData, key, build):
        """``build(labels, query_offsets)``, computed once per training data and kept: what an
        objective derives from the labels and offsets alone (gains, ideal DCGs, cutoffs), which
        a booster passes unchanged every round.

        The entry is keyed by ``key`` (the parameters it depends on) and by the ``data`` object
        (the adapters pass the same one every round); another object with the same contents
        (loose-array calls build one per call) finds it too, by an exact comparison. Thread
        safety: key and value live in one tuple, read once and replaced by one assignment, so a
        thread never returns what was built for another thread's data (with separate key and
        value attributes it did: issue 21); two threads on different data only rebuild each
        other's entry. The entry is left out of pickles and copies (``_derived_attributes``).
        """
        entry = self.__dict__.get("_prepared_entry")
        if entry is not None and entry[0] == key and entry[1]() is data:
            return entry[4]
        labels, offsets = data.labels, data.query_offsets
        if (entry is None or entry[0] != key or not np.array_equal(entry[2], labels)
                or not np.array_equal(entry[3], offsets)):
            entry = (key, weakref.ref(data), labels.copy(), offsets.copy(),
                     build(labels, offsets))
        else:
            entry = (key, weakref.ref(data), *entry[2:])
        self._prepared_entry = entry
        return entry[4]

    def _grad_hess(self, scores: np.ndarray, data: GroupedData,
                   iteration: int) -> tuple[np.ndarray, np.ndarray]:
        """The unweighted ``(grad, hess)`` over the validated ``data``; call-level constants
        weighted by ``data.document_weights()`` (each document's query weight, or ``None``)."""
        raise NotImplementedError
