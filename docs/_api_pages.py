"""Write the API reference pages from the public modules' ``__all__`` (run by conf.py).

The pages are generated at every build, so a name added to, renamed in or removed from an
``__all__`` list changes the reference without editing the docs; a name exported by two modules
(the rankers) is described once, where it is first listed, and the other entry points to it.
"""

from __future__ import annotations

import importlib
import inspect
import shutil
from pathlib import Path

#: the modules whose ``__all__`` is the public API, in the order the reference shows them
PUBLIC_MODULES = (
    "stochrank_objectives",
    "stochrank_objectives.adapters.lightgbm",
    "stochrank_objectives.adapters.xgboost",
    "stochrank_objectives.adapters.catboost",
    "stochrank_objectives.adapters.dask",
    "stochrank_objectives.export",
    "stochrank_objectives.data",
    "stochrank_objectives.letor",
    "stochrank_objectives.longlists",
    "stochrank_objectives.clicks",
    "stochrank_objectives.click_em",
    "stochrank_objectives.precompile",
)


def public_names(modules=PUBLIC_MODULES):
    """``[(module, name, object), ...]`` for every name of every module's ``__all__``."""
    entries = []
    for module_name in modules:
        module = importlib.import_module(module_name)
        entries.extend((module_name, name, getattr(module, name)) for name in module.__all__)
    return entries


def _directive(obj) -> str:
    if inspect.isclass(obj):
        return "autoclass"
    # a Numba dispatcher is not a Python function, but autodoc reads its signature and
    # docstring through the wrapped function it keeps (``py_func`` / ``__wrapped__``)
    if inspect.isroutine(obj) or hasattr(obj, "py_func"):
        return "autofunction"
    return "autodata"


def _summary(obj) -> str:
    doc = inspect.getdoc(obj) if callable(obj) else None
    return doc.split("\n", 1)[0].strip() if doc else f"``{obj!r}``"


def page_name(module_name: str, name: str) -> str:
    """File stem (and document name under ``api/``) of one public name's page."""
    return f"{module_name}.{name}"


def _name_page(module_name, name, obj, first_seen) -> str:
    title = f"{module_name}.{name}"
    lines = [title.replace("_", r"\_"), "=" * (len(title) + title.count("_")), "",
             f".. currentmodule:: {module_name}", ""]
    if id(obj) in first_seen:  # re-exported: one description, so no duplicate targets
        other = first_seen[id(obj)]
        lines += [f"The same object as :py:obj:`{other}`, also importable from "
                  f"``{module_name}``.", ""]
        return "\n".join(lines)
    first_seen[id(obj)] = f"{module_name}.{name}"
    lines.append(f".. {_directive(obj)}:: {name}")
    if inspect.isclass(obj):
        lines += ["   :members:", "   :show-inheritance:"]
    return "\n".join(lines) + "\n"


def write_api_pages(out_dir: Path) -> list[str]:
    """Write ``index.rst`` and one page per public name into ``out_dir``; return the stems."""
    shutil.rmtree(out_dir, ignore_errors=True)  # generated only: a removed name leaves no page
    out_dir.mkdir(parents=True)
    first_seen: dict[int, str] = {}
    index = ["API reference", "=============", "",
             "Every public name, generated from the docstrings; the modules' ``__all__`` lists "
             "are the source of this reference.", ""]
    stems = []
    for module_name in PUBLIC_MODULES:
        entries = public_names((module_name,))
        index += [f"``{module_name}``", "-" * (len(module_name) + 4), "",
                  ".. list-table::", "   :header-rows: 0", ""]
        for _, name, obj in entries:
            stem = page_name(module_name, name)
            (out_dir / f"{stem}.rst").write_text(_name_page(module_name, name, obj, first_seen))
            stems.append(stem)
            index += [f"   * - :doc:`{name} <{stem}>`", f"     - {_summary(obj)}"]
        index += ["", ".. toctree::", "   :hidden:", ""]
        index += [f"   {page_name(module_name, name)}" for _, name, _ in entries]
        index.append("")
    (out_dir / "index.rst").write_text("\n".join(index))
    return stems
