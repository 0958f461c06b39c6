"""One way to declare parameters: a written-out ``__init__`` that only stores, plus constraints.

The scikit-learn convention, shared by the objectives and :class:`~stochrank_objectives.sglb.SGLB`:

* ``__init__`` is written out in the class body (so ``help()``, IDEs and static type checkers
  see every parameter and its default) and only stores its arguments, unchanged;
* ``_parameter_constraints`` maps every ``__init__`` parameter to a check
  ``check(value, name) -> normalised value`` (the makers are in
  :mod:`stochrank_objectives.validation`);
* the checks run at first use, once: :meth:`Parameterised.validate` caches the validated values
  (each constraint, then :meth:`Parameterised._check_together` for rules between parameters)
  until a parameter is assigned again (plain assignment, ``set_params`` or ``clone``);
* ``get_params`` / ``set_params`` / ``repr`` follow from the ``__init__`` signature.

A subclass that fixes a parent's parameter leaves it out of its ``__init__`` and sets it as a
class attribute; the parent's constraint still checks it (the tables merge along the MRO).

Example:

>>> from stochrank_objectives.validation import real
>>> class Scale(Parameterised):
...     _parameter_constraints = {"factor": real(gt=0.0)}
...     def __init__(self, factor: float = 1.0):
...         self.factor = factor
>>> Scale(factor=-1.0)  # stored as given ...
Scale(factor=-1.0)
>>> Scale(factor=-1.0).validate()
Traceback (most recent call last):
...
ValueError: factor must be > 0.0, got -1.0
>>> Scale().set_params(factor=2).validate()["factor"]  # ... checked at first use
2.0
"""

from __future__ import annotations

import functools
from typing import Any
import inspect

__all__ = ["Parameterised"]


@functools.lru_cache(maxsize=None)
def _init_parameter_names(cls) -> tuple:
    # the signature is read once per class: __setattr__ consults it on every assignment
    signature = inspect.signature(cls.__init__)
    return tuple(p.name for p in list(signature.parameters.values())[1:]
                 if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD))


@functools.lru_cache(maxsize=None)
def _merged_constraints(cls) -> tuple:
    # a class's own constraint replaces its parent's for the same name
    merged = {}
    for klass in reversed(cls.__mro__):
        merged.update(klass.__dict__.get("_parameter_constraints", {}))
    return tuple(merged.items())


@functools.lru_cache(maxsize=None)
def _constrained_names(cls) -> frozenset:
    return frozenset(name for name, _ in _merged_constraints(cls))


class Parameterised:
    """Scikit-learn style parameters from a written-out ``__init__`` and a constraints table.

    Example:

    >>> from stochrank_objectives import ApproxNDCG
    >>> obj = ApproxNDCG(eta=3.0)
    >>> obj.set_params(eta=5.0)
    ApproxNDCG(eta=5.0, gain='exp2', hessian='constant')

    See the module docstring for the convention.

    Args:
      (the subclass's ``__init__`` parameters)

    Returns:
      (a base class)
    """

    _parameter_constraints: dict = {}

    #: attributes derived from the parameters (or from the data last seen) and rebuilt on use:
    #: left out of pickles and copies, so a shipped objective carries no training data
    _derived_attributes: tuple[str, ...] = ("_checked_params",)

    def __getstate__(self) -> dict:
        state = self.__dict__.copy()
        for name in self._derived_attributes:
            state.pop(name, None)
        return state

    @classmethod
    def param_names(cls) -> tuple:
        """The ``__init__`` parameter names, in signature order."""
        return _init_parameter_names(cls)  # type: ignore[arg-type]  # a class hashes by id

    def __setattr__(self, name, value):
        # any constrained parameter assigned (set_params, clone, plain assignment) voids the checks
        if name in _constrained_names(type(self)):
            self.__dict__.pop("_checked_params", None)
        object.__setattr__(self, name, value)

    def _checked(self) -> dict:
        """The validated, normalised parameters (validated once, then cached)."""
        cached = self.__dict__.get("_checked_params")
        if cached is None:
            values = {name: check(getattr(self, name), name)
                      for name, check in _merged_constraints(type(self))}  # type: ignore[arg-type]
            cached = self._check_together(values)
            self.__dict__["_checked_params"] = cached
        return cached

    def validate(self) -> dict:
        """Check the parameters now (done anyway at first use); returns the validated values.

        Raises the ``TypeError`` / ``ValueError`` of the first bad parameter.
        """
        return dict(self._checked())

    def _check_together(self, values: dict) -> dict:
        """Rules between parameters; may add derived entries. Returns ``values``."""
        return values

    def get_params(self, deep: bool = True) -> dict:
        """The constructor arguments, as given."""
        return {name: getattr(self, name) for name in self.param_names()}

    def set_params(self, **params: Any) -> "Parameterised":
        """Change parameters (validated at once; on error nothing changes). Returns ``self``."""
        unknown = sorted(set(params) - set(self.param_names()))
        if unknown:
            raise ValueError(f"unknown parameter(s) {unknown} for {type(self).__name__}; "
                             f"valid: {list(self.param_names())}")
        trial = type(self)(**{**self.get_params(), **params})
        checked = trial._checked()
        for name in params:
            setattr(self, name, getattr(trial, name))
        self.__dict__["_checked_params"] = checked
        return self

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.get_params().items())
        return f"{type(self).__name__}({args})"
