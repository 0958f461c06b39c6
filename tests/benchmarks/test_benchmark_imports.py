"""The benchmarks package's import graph: no cycle, and no entry script (a module run as
``python -m benchmarks.NAME``: no leading underscore) imports another entry script -- what two
scripts share lives in an underscore module below both.

Every ``import`` and ``from ... import`` is read from the source, function-level imports
included (a circle hidden inside functions is still a circle).
"""

from __future__ import annotations

import ast
from pathlib import Path

from _import_cycles import cycles

PACKAGE = Path(__file__).resolve().parents[2] / "benchmarks"
NAME = PACKAGE.name


def _modules() -> dict[str, Path]:
    return {p.stem: p for p in sorted(PACKAGE.glob("*.py")) if p.stem != "__init__"}


def _imported(node, modules) -> set[str]:
    """The package modules one import statement reaches."""
    found = set()
    if isinstance(node, ast.Import):
        for alias in node.names:
            head, _, rest = alias.name.partition(".")
            if head == NAME and rest.split(".")[0] in modules:
                found.add(rest.split(".")[0])
    elif isinstance(node, ast.ImportFrom):
        if node.level == 1:   # from .x import ... / from . import x
            base = node.module or ""
        elif node.level == 0 and node.module and (node.module == NAME
                                                  or node.module.startswith(NAME + ".")):
            base = node.module[len(NAME) + 1:]
        else:
            return found
        if base:
            found.add(base.split(".")[0])
        else:
            found.update(alias.name for alias in node.names)
    return found & set(modules)


def import_edges() -> dict[str, set[str]]:
    modules = _modules()
    edges = {}
    for name, path in modules.items():
        reached = set()
        for node in ast.walk(ast.parse(path.read_text())):
            reached |= _imported(node, modules)
        edges[name] = reached - {name}
    return edges


def is_entry_script(module: str) -> bool:
    return not module.startswith("_")


def test_the_benchmarks_import_graph_has_no_cycle():
    assert cycles(import_edges()) == []


def test_no_entry_script_imports_another_entry_script():
    crossing = sorted((src, dst) for src, targets in import_edges().items() for dst in targets
                      if is_entry_script(src) and is_entry_script(dst))
    assert crossing == [], "entry script -> entry script: " + str(crossing)


def test_the_graph_is_read_from_every_kind_of_import():
    edges = import_edges()
    assert {"_boosters", "_registry", "_targets", "_trials"} <= edges["_fixed"]
    assert "_clicks_report" in edges["clicks"] and "clicks" not in edges["_clicks_report"]
    assert "_mslr" in edges["dask_scaling"]          # from benchmarks._mslr import ...
    assert "_boosters" in edges["global_optimum"]    # from . import _boosters
    modules = _modules()
    for source, expected in [("from .clicks import METHODS", {"clicks"}),
                             ("def f():\n    from .scale import main", {"scale"}),
                             ("import benchmarks.kernel_speed", {"kernel_speed"}),
                             ("from benchmarks import compare, _stats", {"compare", "_stats"}),
                             ("from benchmarks.synthetic import TRAINERS", {"synthetic"}),
                             ("import numpy", set())]:
        assert set().union(*(_imported(n, modules) for n in ast.walk(ast.parse(source)))) \
            == expected, source


def test_the_checks_can_fail():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert is_entry_script("scale") and not is_entry_script("_timing")
