"""The package's import graph: no cycle, and no import from a lower layer to a higher one.

Every ``import`` and ``from ... import`` is read from the source, function-level imports
included. Edges that leave a package facade (an ``__init__.py`` re-exporting its submodules'
names) are left aside: a facade sits on top of what it re-exports by construction. An import of
a package (``from ..kernels import threads_for``) is an edge to that package's facade, whose layer
is the package's.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from _import_cycles import cycles as _cycles

PACKAGE = Path(__file__).resolve().parents[1] / "stochrank_objectives"
NAME = PACKAGE.name

# Lowest first: a module may import from its own layer or a lower one only.
LAYERS = [
    ("kernels and groups", ["kernels", "groups", "validation", "parameters", "metric_table"]),
    ("objectives, sglb and the metric specification",
     ["objectives", "sglb", "metric_spec", "metric_values", "training_metric"]),
    ("metrics and data", ["metrics", "eval_metric", "scoring", "data", "letor", "longlists",
                          "clicks", "click_em"]),
    ("adapters", ["adapters"]),
    ("export (fitted model -> serving artefacts; no training)", ["export"]),
    ("entry points", ["__main__", "_compile_watch", "precompile", "baselines", "__init__"]),
]


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _layer(module: str) -> int:
    head = module.split(".", 1)[0] if module else "__init__"
    for level, (_, heads) in enumerate(LAYERS):
        if head in heads:
            return level
    raise AssertionError(f"module {module!r} is in no layer: add it to LAYERS")


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _resolve(importer: str, is_package: bool, node: ast.ImportFrom, modules) -> list[str]:
    """The package modules one ``from ... import`` reaches (a named submodule, else the
    module or package the names come from)."""
    if node.level:
        base = importer.split(".") if importer else []
        if not is_package:
            base = base[:-1]
        base = base[: len(base) - (node.level - 1)]
        target = ".".join(base + (node.module.split(".") if node.module else []))
    elif node.module and (node.module == NAME or node.module.startswith(NAME + ".")):
        target = node.module[len(NAME) + 1:]
    else:
        return []
    reached = []
    for alias in node.names:
        sub = f"{target}.{alias.name}" if target else alias.name
        reached.append(sub if sub in modules else target)
    return reached


def import_edges() -> dict[str, set[str]]:
    """``importer -> {imported}`` over the package's modules (facades' own imports aside)."""
    modules = _modules()
    edges: dict[str, set[str]] = {m: set() for m in modules}
    for module, path in modules.items():
        if path.name == "__init__.py":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                edges[module].update(_resolve(module, False, node, modules))
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.startswith(NAME + "."):
                        edges[module].add(alias.name[len(NAME) + 1:])
        edges[module].discard(module)
    return edges


def test_the_import_graph_has_no_cycle():
    assert _cycles(import_edges()) == []


def test_no_module_imports_from_a_higher_layer():
    upward = sorted(
        (src, dst, LAYERS[_layer(src)][0], LAYERS[_layer(dst)][0])
        for src, targets in import_edges().items() for dst in targets
        if _layer(dst) > _layer(src))
    assert upward == [], "imports from a higher layer (importer, imported, layers): " + str(upward)


def test_every_module_is_in_a_layer():
    for module in _modules():
        _layer(module)


def test_the_checks_can_fail():
    edges = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _cycles(edges) == [["a", "b", "c"]]
    assert _layer("kernels.ccs.gradient") < _layer("objectives._estimator") < _layer("metrics")
    assert _layer("metrics") < _layer("adapters.lightgbm") < _layer("export._registry")
    assert _layer("export.check") < _layer("__main__")
    with pytest.raises(AssertionError, match="no layer"):
        _layer("somewhere_new")


def _private_crossings(edges) -> list[tuple[str, str]]:
    """``(importer, imported)`` where a module imports a private module (a ``_name`` part) of
    another subpackage: a shared API must have a public name in its own package."""
    found = []
    for src, targets in edges.items():
        for dst in targets:
            parts = dst.split(".")
            private = any(part.startswith("_") for part in parts[1:])
            if private and parts[0] != src.split(".", 1)[0]:
                found.append((src, dst))
    return sorted(found)


def test_no_private_module_is_imported_across_packages():
    assert _private_crossings(import_edges()) == []


def test_the_private_check_can_fail():
    edges = {"objectives.smooth": {"kernels._common", "objectives._protocol"},
             "adapters.xgboost": {"adapters._common"}, "export.check": {"adapters"}}
    assert _private_crossings(edges) == [("objectives.smooth", "kernels._common")]
