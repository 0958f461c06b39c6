"""Adapters that train rankers with this package's objectives inside gradient-boosting libraries.

Each adapter translates the framework-neutral protocol
``objective.grad_hess(scores, labels, query_offsets, iteration) -> (grad, hess)`` to one
library's custom-objective API; no gradient mathematics lives here. Import the submodule of
the library you use (for example ``stochrank_objectives.adapters.catboost``), so that only that
library needs to be installed.
"""

from ._ranker import StochasticRankerBase

__all__ = ["StochasticRankerBase"]
