"""Deprecated location: StochasticRank's training metric is
:mod:`stochrank_objectives.objectives.training_metric` (it belongs to the objective)."""

import warnings

from .objectives import training_metric as _moved
from .objectives.training_metric import *  # noqa: F401,F403

__all__ = list(_moved.__all__)

warnings.warn("stochrank_objectives.training_metric moved to "
              "stochrank_objectives.objectives.training_metric; import it from there",
              DeprecationWarning, stacklevel=2)
