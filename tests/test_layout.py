"""The package layout: one objective protocol (every registered objective), merged kernels."""

import ast
import inspect
import pathlib

import numpy as np
import pytest

import stochrank_objectives as sro
from stochrank_objectives.kernels.dcgrr import dcgrr_ccs
from stochrank_objectives.objectives import OBJECTIVES as OBJECTIVE_REGISTRY
from stochrank_objectives.objectives import KernelArgs, MetricSpec, Objective, StochasticRank

PACKAGE = pathlib.Path(sro.__file__).parent
# Module length follows each module's one concern, not a line count (the 400-line cap it replaced
# split concerns to fit, e.g. the former _xgboost_json.py): no size test here.

OBJECTIVES = [obj for cls in OBJECTIVE_REGISTRY.values() for obj in cls.examples()]


@pytest.mark.parametrize("obj", OBJECTIVES, ids=lambda o: type(o).__name__)
def test_one_protocol_and_one_loss_signature(obj):
    assert isinstance(obj, Objective)
    params = list(inspect.signature(obj.loss).parameters.values())
    assert [p.name for p in params] == ["scores", "labels", "query_offsets", "iteration"]
    assert params[-1].default == 0
    scores, labels, offs = np.array([0.3, -0.2, 0.1]), np.array([1.0, 0.0, 0.0]), [0, 3]
    assert np.isfinite(obj.loss(scores, labels, offs, 3))


def test_init_only_stores_and_checks_are_cached_until_a_parameter_changes():
    obj = StochasticRank(sigma=-1.0)  # stored as given, refused at first use
    assert obj.get_params()["sigma"] == -1.0
    with pytest.raises(ValueError, match="sigma"):
        obj.grad_hess(np.zeros(2), np.array([1.0, 0.0]), [0, 2])
    obj.sigma = 0.5
    first = obj._checked()
    assert obj._checked() is first  # validated once, then reused by every call
    assert obj.metric_spec is first["spec"]
    obj.set_params(top=3)
    assert obj._checked() is not first and obj.metric_spec.top == 3
    obj.top = 4  # a plain assignment voids the checks too
    assert obj.metric_spec.top == 4


def test_softrank_fixes_what_makes_it_softrank():
    obj = sro.SoftRank(top=3)
    assert (obj.mu, obj.sfa, obj.smoothing, obj.metric_spec.metric) == (0.0, 0.0, "absolute",
                                                                       "NDCG")
    assert "mu" not in obj.get_params()


def test_kernel_args_are_named():
    args = MetricSpec.make("NDCG", 2).kernel_args(np.array([2.0, 0.0, 1.0]), np.array([0, 3]))
    assert isinstance(args, KernelArgs)
    np.testing.assert_array_equal(args.gain, [3.0, 0.0, 1.0])
    assert args.cutoff == 2 and args.scale[0] == pytest.approx(1 / (3 + 1 / np.log2(3)))


# DCG-RR's CCS gradient as the two kernels before the merge (seeded streams, explicit noise)
# returned it on these inputs: the merged kernel must give the same bits on both paths.
_S = np.array([0.0012301533574825742, 0.2987455375084699, -0.2741378553622176,
               -0.8905918387572742, -0.45467078517172255, -0.9916465549964624,
               0.060143602597438485, 1.3402152455545335, -0.49220651855132963])
_Y = np.array([0.0, 1.0, 2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 2.0])
_OFFS = np.array([0, 1, 4, 4, 9], dtype=np.int64)
_SEEDED_BEFORE = [0.0, -0.1957959960341722, -0.9983369269038178, 0.0, -0.22175948009222124,
                  0.08483544146309972, -0.9923575891306884, 0.024386312415088485,
                  -0.3693872826048421]
_NOISE_BEFORE = [0.0, -0.2936939940512583, -0.5990021561422907, 0.0, -0.24947941510374888,
                 0.08483544146309972, -0.9923575891306884, 0.0, -0.3166176708041504]


def test_merged_dcgrr_kernel_matches_both_former_kernels():
    seeded = dcgrr_ccs(_S, _Y, _OFFS, 0.6, np.empty((0, 0)), 3, 5, 2)
    np.testing.assert_array_equal(seeded, _SEEDED_BEFORE)
    noise = np.random.default_rng(1).normal(size=(2, 9))
    np.testing.assert_array_equal(dcgrr_ccs(_S, _Y, _OFFS, 0.6, noise, 0, 0, 0), _NOISE_BEFORE)
    # and the explicit path with the seeded streams' normals is the seeded path
    explicit = dcgrr_ccs(_S, _Y, _OFFS, 0.6, sro.draw_noise(_OFFS, 3, 5, 2), 0, 0, 0)
    np.testing.assert_array_equal(explicit, seeded)


# The packages whose modules must not share private names nor pass long positional runs; the
# whole package once every part follows the rules (one more row here: "").
IMPORT_RULE_PACKAGES = [""]  # the whole package
MAX_POSITIONAL = 10
PENDING_ELSEWHERE: dict = {}  # file -> names a work in flight still has to remove


def _modules(package_dir):
    root = PACKAGE / package_dir if package_dir else PACKAGE
    return sorted(root.rglob("*.py"))


def _is_module(path, node, name):
    """Whether ``from <dots> import name`` names a module or subpackage next to ``path``."""
    base = path.parent
    for _ in range(node.level - 1):
        base = base.parent
    return (base / f"{name}.py").exists() or (base / name / "__init__.py").exists()


def _private_imports(path):
    """``(line, name)`` of each ``from .x import _name`` (relative: between package modules), a
    private name crossing a module boundary; importing a module named ``_x`` is fine."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        absolute = (node.module or "").startswith("stochrank_objectives") if isinstance(
            node, ast.ImportFrom) else False
        if isinstance(node, ast.ImportFrom) and (node.level > 0 or absolute):
            for alias in node.names:
                imports_module = node.module is None and node.level > 0 and _is_module(
                    path, node, alias.name)
                if alias.name.startswith("_") and not imports_module:
                    found.append((node.lineno, alias.name))
    return found


def _long_positional_calls(path):
    """``(line, callee)`` of each call with more than MAX_POSITIONAL positional arguments. A
    ``*args`` counts as one: in this package it splats a short constant tuple (the allowed
    values of a choice) or forwards a caller's own arguments, never a flag run."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Call):
            if len(node.args) > MAX_POSITIONAL:
                found.append((node.lineno, ast.unparse(node.func)))
    return found


def _violations(package_dir, find):
    found = {}
    for path in _modules(package_dir):
        name = str(path.relative_to(PACKAGE))
        pending = PENDING_ELSEWHERE.get(name, set())
        if rows := [row for row in find(path) if row[1] not in pending]:
            found[name] = rows
    return found


@pytest.mark.parametrize("package_dir", IMPORT_RULE_PACKAGES)
def test_no_private_name_crosses_a_module_boundary(package_dir):
    found = _violations(package_dir, _private_imports)
    assert not found, f"private names imported from another module (line, name): {found}"


@pytest.mark.parametrize("package_dir", IMPORT_RULE_PACKAGES)
def test_no_call_passes_a_long_run_of_positional_arguments(package_dir):
    found = _violations(package_dir, _long_positional_calls)
    assert not found, (f"calls with more than {MAX_POSITIONAL} positional arguments "
                       f"(line, callee); pass a named tuple or keywords: {found}")


def test_the_layout_checks_can_fail(tmp_path):
    module = tmp_path / "module.py"
    module.write_text("from .other import _hidden\nf(*args)\ng(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11)\n"
                      "h(1, 2, 3, 4, 5, 6, 7, 8, 9, 10)\n")
    (tmp_path / "_private_module.py").write_text("")
    (tmp_path / "user.py").write_text("from . import _private_module\n")
    assert _private_imports(module) == [(1, "_hidden")]
    assert _private_imports(tmp_path / "user.py") == []
    assert _long_positional_calls(module) == [(3, "g")]  # a *args counts as one
