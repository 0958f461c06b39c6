"""One way to declare parameters: written-out constructors that only store, one constraints
table per class that agrees with them, get_params / set_params from the signature."""

import ast
import inspect
import textwrap

import numpy as np
import pytest

import stochrank_objectives as sro
from stochrank_objectives.objectives import OBJECTIVES, ObjectiveParams
from stochrank_objectives.parameters import Parameterised
from stochrank_objectives.sglb import SGLB

#: every registered objective (YetiRank was missing from the hand-kept list) and SGLB
CLASSES = [*OBJECTIVES.values(), SGLB]


def _stored_names(cls):
    """The names ``__init__`` assigns as ``self.NAME = NAME`` (or forwards unchanged as
    ``NAME=NAME`` to the parent's ``__init__``) -- and that it does nothing else."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(cls.__dict__["__init__"])))
    body = [node for node in tree.body[0].body
            if not (isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant))]
    if len(body) == 1 and isinstance(body[0], ast.Expr):  # super().__init__(name=name, ...)
        call = body[0].value
        assert ast.unparse(call.func) == "super().__init__" and not call.args
        forwarded = [k for k in call.keywords if k.arg is not None]
        assert all(isinstance(k.value, ast.Name) and k.value.id == k.arg for k in forwarded)
        return [k.arg for k in forwarded]
    stored = []
    for node in body:
        assert isinstance(node, ast.Assign) and len(node.targets) == 1, ast.dump(node)
        target, value = node.targets[0], node.value
        assert isinstance(target, ast.Attribute) and target.value.id == "self"
        assert isinstance(value, ast.Name) and value.id == target.attr, ast.dump(node)
        stored.append(target.attr)
    return stored


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
def test_init_is_written_out_in_the_class_body_and_only_stores(cls):
    assert "__init__" in cls.__dict__  # no metaclass or decorator generates it
    assert issubclass(cls, Parameterised)
    signature = inspect.signature(cls)
    names = [p.name for p in signature.parameters.values()]
    assert _stored_names(cls) == names
    assert list(cls.param_names()) == names
    for p in signature.parameters.values():
        assert p.annotation is not inspect.Parameter.empty, p.name


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
def test_the_constraints_table_and_the_signature_agree(cls):
    names = set(inspect.signature(cls).parameters)
    assert set(cls.__dict__["_parameter_constraints"]) == names
    # every default passes its own constraint
    defaults = {n: p.default for n, p in inspect.signature(cls).parameters.items()
                if p.default is not inspect.Parameter.empty}
    for name, value in defaults.items():
        cls.__dict__["_parameter_constraints"][name](value, name)


def test_get_params_and_repr_follow_the_signature_and_set_params_round_trips():
    obj = sro.StochasticRank(metric="ERR", top=3, grade_max=4)
    assert list(obj.get_params()) == list(inspect.signature(sro.StochasticRank).parameters)
    assert repr(sro.StochasticRank(**obj.get_params())) == repr(obj)
    gumbel = sro.Gumbel(sro.LambdaMART(), 0.5)  # today's positional forms keep working
    assert gumbel.get_params()["beta"] == 0.5
    with pytest.raises(ValueError, match="unknown parameter"):
        obj.set_params(sigmaa=1.0)
    sigma = obj.sigma
    with pytest.raises(ValueError, match="sigma must be > 0.0"):
        obj.set_params(sigma=0.0)
    assert obj.sigma == sigma  # unchanged after the refused value


def test_a_fixed_parent_parameter_is_still_checked():
    class BrokenSoftRank(sro.SoftRank):
        # mu fixed (not a parameter) and invalid: StochasticRank's constraint still applies
        _FIXED_PARAMETERS = {**sro.SoftRank._FIXED_PARAMETERS, "mu": -1.0}

    with pytest.raises(ValueError, match="mu must be >= 0.0"):
        BrokenSoftRank().grad_hess(np.zeros(2), np.array([1.0, 0.0]), [0, 2])


def test_base_class_is_shared_with_sglb():
    assert issubclass(ObjectiveParams, Parameterised) and issubclass(SGLB, Parameterised)
    assert "get_params" not in SGLB.__dict__ and "set_params" not in SGLB.__dict__
