"""The package ships type information and the type checker finds no error in it."""

import importlib
import inspect
import os
import subprocess
import sys
from pathlib import Path

import pytest

import stochrank_objectives

ROOT = Path(__file__).resolve().parents[1]


def test_the_package_ships_a_py_typed_marker():
    assert (Path(stochrank_objectives.__file__).parent / "py.typed").is_file()
    # shipped in wheels too (tomllib is Python >= 3.11, so read the one line)
    package_data = (ROOT / "pyproject.toml").read_text().split("[tool.setuptools.package-data]")[1]
    assert '"py.typed"' in package_data.split("\n[", 1)[0]


@pytest.mark.slow
def test_mypy_finds_no_error_in_the_package():
    # the [tool.mypy] section of pyproject.toml names the package and the settings
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]))
    run = subprocess.run([sys.executable, "-m", "mypy"], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout[-6000:] + run.stderr[-2000:]


PUBLIC_MODULES = ["stochrank_objectives", "stochrank_objectives.adapters.lightgbm",
                  "stochrank_objectives.adapters.xgboost", "stochrank_objectives.adapters.catboost",
                  "stochrank_objectives.adapters.dask"]
# modules whose public signatures are still being written out elsewhere (the objectives'
# constructors; the LightGBM and Dask adapters): remove a prefix once its module is annotated,
# the test below says when
PENDING = ("stochrank_objectives.objectives.", "stochrank_objectives.adapters.lightgbm",
           "stochrank_objectives.adapters.dask.")


def _unannotated(function):
    """Names of the parameters (and ``return``) of ``function`` that carry no annotation."""
    signature = inspect.signature(inspect.unwrap(function))
    missing = [p.name for p in signature.parameters.values()
               if p.name not in ("self", "cls") and p.annotation is inspect.Parameter.empty]
    if signature.return_annotation is inspect.Signature.empty and function.__name__ != "__init__":
        missing.append("return")
    return missing


def _public_functions():
    """``(qualified name, function)`` of every public function and public method of a class."""
    seen = set()
    for module_name in PUBLIC_MODULES:
        module = importlib.import_module(module_name)
        for name in module.__all__:
            obj = getattr(module, name)
            if id(obj) in seen or not callable(obj):
                continue
            seen.add(id(obj))
            if not inspect.isclass(obj):
                yield f"{obj.__module__}.{name}", obj
                continue
            for klass in obj.__mro__:
                if not klass.__module__.startswith("stochrank_objectives"):
                    continue
                for attr, value in vars(klass).items():
                    function = getattr(value, "__func__", value)  # class/static methods
                    if inspect.isfunction(function) and (
                            not attr.startswith("_") or attr in ("__init__", "__call__")):
                        yield f"{klass.__module__}.{klass.__name__}.{attr}", function


def test_public_functions_and_methods_are_annotated():
    missing = {name: m for name, function in _public_functions()
               if (m := _unannotated(function))}
    unexpected = {name: m for name, m in missing.items() if not name.startswith(PENDING)}
    assert not unexpected, unexpected
    done = [prefix for prefix in PENDING if not any(n.startswith(prefix) for n in missing)]
    assert not done, f"fully annotated now: remove {done} from PENDING"
