"""Adapters that train rankers with this package's objectives inside gradient-boosting libraries.

Each adapter translates the framework-neutral protocol
``objective.grad_hess(scores, labels, query_offsets, iteration) -> (grad, hess)`` to one
library's custom-objective API; no gradient mathematics lives here. An adapter validates its
training data once, on the first call of a training (or takes the ranker's
:class:`~stochrank_objectives.groups.GroupedData`), keeps it keyed by the booster's data
container, and every round hands the objective that same object
(``objective.gradient_hessian(scores, data, iteration)``, through
:func:`~stochrank_objectives.objectives.grouped_grad_hess`): nothing about the labels, offsets or
weights is checked or rebuilt per round. Import the submodule of
the library you use (for example ``stochrank_objectives.adapters.catboost``), so that only that
library needs to be installed.
"""

from ._ranker import StochasticRankerBase

__all__ = ["StochasticRankerBase"]
