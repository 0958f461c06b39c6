"""The rankers' default objective, and the checked settings of the CatBoost ranker's route.

:func:`default_objective` is what ``objective=None`` trains in every ranker.
:data:`RANKER_CONSTRAINTS` maps each setting the CatBoost ranker hands to its package route
(``_fit.py``: the pointer or per-tree training) to a ``check(value, name) -> normalised value``
built from :mod:`stochrank_objectives.validation`; ``fit`` runs them and hands the route one
:class:`FitSettings` (frozen). The LightGBM and XGBoost rankers hand their settings to the
booster's own ranker, which checks them.

Example:

>>> RANKER_CONSTRAINTS["n_estimators"](0, "n_estimators")
Traceback (most recent call last):
...
ValueError: n_estimators must be an integer >= 1, got 0
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Callable

from ..validation import check_int, integer, real
from ._common import EvalMetric, check_objective, check_sglb

if TYPE_CHECKING:  # only the type checker needs them
    from ..objectives import Objective
    from ..sglb import SGLB

__all__ = ["FitSettings", "RANKER_CONSTRAINTS", "default_objective"]

Constraint = Callable[[Any, str], Any]


def default_objective() -> Objective:
    """The objective of ``objective=None``: ``StochasticRank(metric="NDCG", top=5)``, the
    package defaults otherwise (the recommended starting point)."""
    from ..objectives import StochasticRank

    return StochasticRank(metric="NDCG", top=5)


@dataclass(frozen=True)
class FitSettings:
    """The checked arguments of one ``fit``, as a booster's ranker reads them.

    Example::

        settings.eval_metric.metric, settings.n_estimators, settings.params["max_depth"]

    Args:
      objective: the objective (``default_objective()`` for ``objective=None``).
      sglb: the SGLB schedule or None.
      n_estimators: boosting rounds; learning_rate: the step.
      random_state: the booster's seed or None; n_jobs: threads or None (``-1`` resolved).
      eval_metric: the metric watched on ``eval_set`` (CatBoost: also its own metric string).
      early_stopping_rounds: patience or None; verbose: logging period (0 = silent).
      params: the booster parameters (aliases and unknown names already refused).
      init_model: the model to continue training from (the booster's own form), or None.
      callbacks: the user's callbacks (the booster's own callback type), run after the
        ranker's own.
    """

    objective: Objective
    sglb: SGLB | None
    n_estimators: int
    learning_rate: float
    random_state: int | None
    eval_metric: EvalMetric | str
    early_stopping_rounds: int | None
    n_jobs: int | None
    verbose: int
    params: dict = field(default_factory=dict)
    init_model: Any = None
    callbacks: list = field(default_factory=list)

    def _replace(self, **changes) -> "FitSettings":
        """A copy with ``changes`` (as a named tuple's ``_replace``)."""
        return replace(self, **changes)


def _reworded(check: Constraint, expected: str, note: str = "") -> Constraint:
    # the validation builders' checks, with the rankers' own one-line message (tests read it)
    def constraint(value, name):
        try:
            return check(value, name)
        except (TypeError, ValueError):
            raise ValueError(f"{name} must be {expected}, got {value!r}{note}") from None
    return constraint


def _seed(value, name):
    value = check_int(value, name, 0, allow_none=True)
    if value is not None and value >= 2 ** 31:
        raise ValueError(f"{name} is {value}, above 2**31 - 1")
    return value


def _verbosity(value, name):
    return int(value) if isinstance(value, bool) else check_int(value, name, 0)


def _threads(value, name):
    if value is None:
        return None
    value = check_int(value, name, -(2 ** 31))
    if value == 0:
        raise ValueError(f"{name} is 0")
    return value if value > 0 else max(1, (os.cpu_count() or 1) + 1 + value)


def _objective(value, name):
    return default_objective() if value is None else check_objective(value, name)


def _as_given(value, name):
    return value  # resolved against the objective by the ranker (``_eval_metric``)


#: argument -> check(value, name): what ``fit`` validates, in this order
RANKER_CONSTRAINTS: dict[str, Constraint] = {
    "objective": _objective,
    "sglb": check_sglb,
    "n_estimators": _reworded(integer(1), "an integer >= 1"),
    "learning_rate": _reworded(real(gt=0.0), "a positive number"),
    "random_state": _reworded(_seed, "None or an integer in [0, 2**31)",
                              " (a RandomState object is not supported: boosters take an "
                              "integer seed)"),
    "eval_metric": _as_given,
    "early_stopping_rounds": _reworded(integer(1, optional=True), "None or an integer >= 1"),
    "n_jobs": _reworded(_threads, "None, a positive number of threads or -1 (all cores)"),
    "verbose": _reworded(_verbosity, "a bool or a period >= 0"),
}
