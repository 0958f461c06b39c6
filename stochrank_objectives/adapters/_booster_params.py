"""Booster parameter names the rankers read: the learning rate's aliases and the refusal of a
misspelt name.

A misspelt parameter (``num_leave=2``) is answered silently by LightGBM (a logged warning, then
31-leaf trees), so the LightGBM ranker refuses it with the closest valid names.

Example:

>>> check_known_names({"num_leave": 2}, ["num_leaves", "max_depth"], "LightGBM")
Traceback (most recent call last):
...
ValueError: num_leave=2 is not a LightGBM parameter; closest valid names: ['num_leaves']
"""

from __future__ import annotations

import difflib
from typing import Iterable

__all__ = ["LEARNING_RATE_NAMES", "check_known_names"]

#: Every name a booster reads as the learning rate (the SGLB callbacks compare them all).
LEARNING_RATE_NAMES = ("learning_rate", "eta", "shrinkage_rate")


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
