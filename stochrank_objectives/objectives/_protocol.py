"""The objective protocol and the parameter handling every objective shares.

Protocol (:class:`Objective`) of every objective object in this package::

    obj.grad_hess(scores, labels, query_offsets, iteration=0) -> (grad, hess)
    obj.loss(scores, labels, query_offsets, iteration=0) -> float

* ``scores``: the booster's raw scores (init score / base margin included), one per document;
* ``labels``, ``query_offsets``: see :mod:`stochrank_objectives.groups`;
* ``iteration``: the boosting iteration, which keys the noise streams and the schedules (same
  seed and iteration -> bit-identical output, on any number of threads);
* ``grad``: the gradient of the **loss** (``-metric``), the convention of LightGBM and
  XGBoost (CatBoost's ``der1`` is ``-grad``); ``hess``: a per-document (diagonal) second
  derivative, see each objective;
* ``loss``: what ``grad`` descends (or, for the Monte-Carlo objectives, the loss they smooth),
  summed or averaged over queries as each objective states.

Parameters are declared once per class, in a table of :class:`Param` rows (name, default, check).
The table gives the constructor, ``get_params``, ``set_params`` and ``repr``; the checks run
lazily, once, the first time the objective is used, and again only after a parameter changes
(scikit-learn's rule: ``__init__`` only stores).
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Any, Callable, Protocol, runtime_checkable

import numpy as np

from ..groups import _check_choice, _check_float, _check_int, _check_seed

__all__ = ["Objective", "ObjectiveParams", "Param", "REQUIRED", "real", "integer", "choice",
           "seed", "boolean", "check_iteration", "GAIN_PARAM"]


@runtime_checkable
class Objective(Protocol):
    """What the adapters call: gradient, hessian and loss over grouped arrays.

    Example:

    >>> from stochrank_objectives import LambdaMART
    >>> isinstance(LambdaMART(), Objective)
    True
    """

    def grad_hess(self, scores, labels, query_offsets,
                  iteration: int = 0) -> tuple[np.ndarray, np.ndarray]:
        """``(grad, hess)`` of the loss at ``scores``, one value per document each."""

    def loss(self, scores, labels, query_offsets, iteration: int = 0) -> float:
        """The loss at ``scores`` (see each objective for what it sums)."""


class _Required:
    def __repr__(self):
        return "REQUIRED"


REQUIRED: Any = _Required()
"""Default of a parameter the caller must give."""


def _any(value, name):
    return value


@dataclass(frozen=True)
class Param:
    """One declared parameter: ``check(value, name)`` returns the normalised value or raises."""

    name: str
    default: Any = REQUIRED
    check: Callable[[Any, str], Any] = _any


def real(*, gt=None, ge=None, le=None, optional=False):
    """Check: a finite real number (``> gt``, ``>= ge``, ``<= le``), or None if ``optional``."""
    def check(value, name):
        if optional and value is None:
            return None
        value = _check_float(value, name, gt=gt, ge=ge)
        if le is not None and value > le:
            raise ValueError(f"{name} must be <= {le}, got {value}")
        return value
    return check


def integer(minimum, *, optional=False):
    """Check: an integer ``>= minimum``, or None if ``optional``."""
    return lambda value, name: _check_int(value, name, minimum, allow_none=optional)


def choice(*options):
    """Check: one of ``options``."""
    return lambda value, name: _check_choice(value, name, options)


def seed(value, name):
    """Check: a seed in ``[0, 2**63 - 1]`` (the noise kernels' int64 range)."""
    return _check_seed(value, name)


def boolean(value, name):
    """Check: ``True`` or ``False`` (numpy bools included)."""
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be True or False, got {value!r}")
    return bool(value)


GAIN_PARAM = Param("gain", "exp2", choice("exp2", "linear"))
"""The NDCG gain row the graded objectives share: ``2^r - 1`` or ``r``."""


def check_iteration(iteration) -> int:
    """The boosting iteration, an integer >= 0."""
    return _check_int(iteration, "iteration", 0)


def _make_init(params):
    """A constructor that stores the declared parameters (and nothing else)."""
    signature = inspect.Signature(
        [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
        + [inspect.Parameter(p.name, inspect.Parameter.POSITIONAL_OR_KEYWORD,
                             **({} if p.default is REQUIRED else {"default": p.default}))
           for p in params])

    def __init__(self, *args, **kwargs):
        bound = signature.bind(self, *args, **kwargs)
        bound.apply_defaults()
        for name, value in list(bound.arguments.items())[1:]:
            setattr(self, name, value)

    __init__.__signature__ = signature
    return __init__


class ObjectiveParams:
    """Scikit-learn style parameters from the class's declaration table ``_params``.

    Example:

    >>> from stochrank_objectives import ApproxNDCG
    >>> obj = ApproxNDCG(eta=3.0)
    >>> obj.set_params(eta=5.0)
    ApproxNDCG(eta=5.0, gain='exp2', hessian='constant')

    A subclass lists ``_params`` (:class:`Param` rows, in constructor order) and gets the
    constructor, which only stores the values. :meth:`_checked` validates them the first time
    an objective needs them (each row's check, then :meth:`_check_together` for the rules
    between parameters) and caches the result until a parameter is assigned again.
    ``set_params`` validates its new values at once, on a trial copy, so a bad value raises
    and leaves the object untouched. A subclass that drops a parent's parameter sets it as a
    class attribute (the declared defaults are class attributes too).
    """

    _params: tuple = ()

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if "_params" in cls.__dict__:
            if "__init__" not in cls.__dict__:
                cls.__init__ = _make_init(cls._params)
            for p in cls._params:
                if p.default is not REQUIRED and p.name not in cls.__dict__:
                    setattr(cls, p.name, p.default)

    @classmethod
    def param_names(cls) -> tuple:
        """The declared parameter names, in constructor order."""
        return tuple(p.name for p in cls._params)

    @classmethod
    def _rows(cls):
        """Every row to check: the class's own and those of the parameters it inherits as
        fixed class attributes (a row of the class replaces its parent's)."""
        rows = {}
        for klass in reversed(cls.__mro__):
            rows.update((p.name, p) for p in klass.__dict__.get("_params", ()))
        return tuple(rows.values())

    def __setattr__(self, name, value):
        # any declared parameter assigned (set_params, clone, plain assignment) voids the checks
        if name in self.param_names():
            self.__dict__.pop("_checked_params", None)
        object.__setattr__(self, name, value)

    def _checked(self) -> dict:
        """The validated, normalised parameters (validated once, then cached)."""
        cached = self.__dict__.get("_checked_params")
        if cached is None:
            values = {p.name: p.check(getattr(self, p.name), p.name) for p in self._rows()}
            cached = self._check_together(values)
            self.__dict__["_checked_params"] = cached
        return cached

    def _check_together(self, values: dict) -> dict:
        """Rules between parameters; may add derived entries. Returns ``values``."""
        return values

    def get_params(self, deep: bool = True) -> dict:
        """The constructor arguments, as given."""
        return {name: getattr(self, name) for name in self.param_names()}

    def set_params(self, **params):
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
