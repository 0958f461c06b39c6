"""Scalar argument checks shared by the whole package, and the constraint vocabulary built on them.

Every check takes the value and the argument's name and returns the normalised value (a plain
``int``, ``float``, ``bool`` or the value itself), or raises a ``TypeError`` (wrong type) or
``ValueError`` (out of range) that names the argument. The constraint makers (:func:`real`,
:func:`integer`, :func:`choice`, :func:`seed`, :func:`boolean`, :func:`anything`) turn a check
into a ``constraint(value, name)`` callable: the entries of a class's
``_parameter_constraints`` table (:mod:`stochrank_objectives.parameters`).

Example:

>>> check_float(3, "sigma", gt=0.0)
3.0
>>> real(gt=0.0, optional=True)(None, "anneal_half_life") is None
True
"""

from __future__ import annotations

import numbers

import numpy as np

__all__ = ["SEED_MAX", "check_int", "check_seed", "check_float", "check_choice", "check_bool",
           "real", "integer", "choice", "seed", "boolean", "anything"]

SEED_MAX = 2 ** 63 - 1  # the noise kernels key their streams with a signed 64-bit seed


def check_int(value, name: str, minimum: int, allow_none: bool = False):
    """An integer ``>= minimum`` (bools refused), or None if ``allow_none``."""
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer >= {minimum}, got {value!r}")
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")
    return int(value)


def check_seed(value, name: str = "seed") -> int:
    """A noise seed: an integer in ``[0, 2**63 - 1]`` (numba passes it as int64)."""
    value = check_int(value, name, 0)
    if value > SEED_MAX:
        raise ValueError(f"{name} must be in [0, 2**63 - 1] (<= {SEED_MAX}), got {value}")
    return value


def check_float(value, name: str, *, gt=None, ge=None) -> float:
    """A finite real number (bools refused), ``> gt`` and ``>= ge`` when given."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {value!r}")
    value = float(value)
    if not np.isfinite(value):
        raise ValueError(f"{name} must be finite, got {value}")
    if gt is not None and not value > gt:
        raise ValueError(f"{name} must be > {gt}, got {value}")
    if ge is not None and not value >= ge:
        raise ValueError(f"{name} must be >= {ge}, got {value}")
    return value


def check_choice(value, name: str, choices):
    """One of ``choices`` (compared with ``in``)."""
    if value not in choices:
        raise ValueError(f"{name} must be one of {choices}, got {value!r}")
    return value


def check_bool(value, name: str) -> bool:
    """``True`` or ``False`` (numpy bools included)."""
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be True or False, got {value!r}")
    return bool(value)


# -- constraints: check(value, name) callables for a class's _parameter_constraints table -------
def real(*, gt=None, ge=None, le=None, optional=False):
    """Constraint: a finite real (``> gt``, ``>= ge``, ``<= le``), or None if ``optional``."""
    def check(value, name):
        if optional and value is None:
            return None
        value = check_float(value, name, gt=gt, ge=ge)
        if le is not None and value > le:
            raise ValueError(f"{name} must be <= {le}, got {value}")
        return value
    return check


def integer(minimum, *, optional=False):
    """Constraint: an integer ``>= minimum``, or None if ``optional``."""
    return lambda value, name: check_int(value, name, minimum, allow_none=optional)


def choice(*options):
    """Constraint: one of ``options``."""
    return lambda value, name: check_choice(value, name, options)


def seed(value, name):
    """Constraint: a seed in ``[0, 2**63 - 1]`` (the noise kernels' int64 range)."""
    return check_seed(value, name)


def boolean(value, name):
    """Constraint: ``True`` or ``False`` (numpy bools included)."""
    return check_bool(value, name)


def anything(value, name):
    """Constraint: any value, unchanged (checked elsewhere, e.g. together with others)."""
    return value
