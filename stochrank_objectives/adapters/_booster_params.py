"""The rankers' booster parameters: the one alias table and the refusal of unknown names.

A ranker passes its ``**booster_params`` to the booster. Two mistakes would otherwise be
answered silently or differently by each booster: a booster alias of a ranker argument
(``eta`` beside ``learning_rate``: refused, so that ``get_params``, ``set_params`` and model
selection see one name per setting) and a misspelt name (``num_leave=2``: LightGBM would train
31-leaf trees without a word, XGBoost only warns). Both are refused here with the same
``ValueError`` for every booster; each booster's ranker supplies the names it accepts.

Example:

>>> check_known_names({"num_leave": 2}, ["num_leaves", "max_depth"], "LightGBM")
Traceback (most recent call last):
...
ValueError: num_leave=2 is not a LightGBM parameter; closest valid names: ['num_leaves']
"""

from __future__ import annotations

import difflib
from typing import Iterable

__all__ = ["ALIASES", "LEARNING_RATE_NAMES", "refuse_aliases", "check_known_names"]

#: Booster parameter names that duplicate a ranker argument: refused in every ranker, so that
#: ``get_params``/``set_params`` and model selection see one name per setting.
ALIASES: dict[str, tuple[str, ...]] = {
    "learning_rate": ("eta", "shrinkage_rate"),
    "n_estimators": ("num_boost_round", "num_round", "num_rounds", "nrounds", "num_iterations",
                     "num_iteration", "n_iter", "num_tree", "num_trees", "iterations",
                     "max_iter"),
    "random_state": ("seed", "random_seed"),
    "n_jobs": ("nthread", "nthreads", "num_threads", "num_thread", "thread_count"),
    "early_stopping_rounds": ("early_stopping_round", "early_stopping", "n_iter_no_change",
                              "od_wait"),
    "eval_metric": ("metric", "metrics", "metric_types", "feval", "custom_metric"),
    "objective": ("obj", "fobj", "loss", "loss_function", "objective_type", "app",
                  "application"),
    "verbose": ("verbosity", "verbose_eval", "logging_level", "silent"),
}

#: Every name a booster reads as the learning rate (the SGLB callbacks compare them all).
LEARNING_RATE_NAMES = ("learning_rate",) + ALIASES["learning_rate"]


def refuse_aliases(params: dict, ranker: str, allowed: Iterable[str] = ()) -> None:
    """Raise a ``ValueError`` naming the ranker argument to use for any alias in ``params``.

    Args:
      params: the ranker's booster parameters.
      ranker: the ranker's class name (for the message).
      allowed: aliases this booster reads as ordinary parameters after all.
    """
    allowed = set(allowed)
    for canonical, aliases in ALIASES.items():
        for alias in aliases:
            if alias in params and alias not in allowed:
                raise ValueError(
                    f"{alias}={params[alias]!r} is an alias of the ranker's {canonical} "
                    f"argument: pass {canonical}=... to {ranker} instead (the aliases are "
                    "refused so that get_params, set_params and model selection see one "
                    "name per setting)")


def check_known_names(params: dict, valid: Iterable[str], booster: str) -> None:
    """Raise a ``ValueError`` for the first name of ``params`` not in ``valid``, with the
    closest valid names (``difflib``) as the likely fix.

    Args:
      params: the booster parameters to check.
      valid: every name the booster (and the ranker) accepts.
      booster: the booster's name, e.g. ``"LightGBM"`` (for the message).
    """
    valid = sorted(set(valid))
    for name, value in params.items():
        if name not in valid:
            close = difflib.get_close_matches(name, valid, n=3, cutoff=0.6)
            hint = (f"closest valid names: {close}" if close else
                    f"see the {booster} parameter documentation for the valid names")
            raise ValueError(f"{name}={value!r} is not a {booster} parameter; {hint}")
