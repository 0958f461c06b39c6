"""Every module of the package imports on its own in a fresh interpreter (no import cycle).

A module that takes part in an import cycle imports fine once the package is loaded, which is
why tests running in one process do not see it; a process pool's worker that unpickles a
ranker, or a user's first ``import``, does.
"""

import os
import subprocess
import sys
from pathlib import Path

import pytest

import stochrank_objectives

PACKAGE = Path(stochrank_objectives.__file__).parent
ROOT = PACKAGE.parent

# Imported once by the checking interpreter before the forks: none of them imports this package,
# so they cannot take part in a cycle of ours, and each child then starts in milliseconds.
THIRD_PARTY = ("numpy", "scipy", "numba", "sklearn", "pandas", "lightgbm", "xgboost", "catboost",
               "dask.dataframe", "distributed")

# One child per module, forked from an interpreter in which no module of this package was ever
# imported: each child imports one module exactly as `python -c "import M"` would.
CHECK = """
import importlib, os, sys, traceback
for name in {third_party!r}:
    try:
        importlib.import_module(name)
    except ImportError:
        pass
assert not any(m.split(".")[0] == "stochrank_objectives" for m in sys.modules)
failed = []
for name in sys.argv[1:]:
    pid = os.fork()
    if pid == 0:
        code = 0
        try:
            importlib.import_module(name)
        except BaseException:
            traceback.print_exc()
            code = 1
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    if os.waitpid(pid, 0)[1] != 0:
        failed.append(name)
print("FAILED:", " ".join(failed))
sys.exit(1 if failed else 0)
"""


def package_modules() -> list[str]:
    """Every module and subpackage of stochrank_objectives, found on disk (none imported)."""
    names = []
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        names.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return names


def _env():
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT),
                                                          os.environ.get("PYTHONPATH", "")])}


def test_the_module_list_is_complete():
    modules = package_modules()
    assert "stochrank_objectives" in modules and "stochrank_objectives.__main__" in modules
    assert "stochrank_objectives.adapters.lightgbm" in modules
    assert len(modules) == len(set(modules)) > 40


@pytest.mark.slow
@pytest.mark.skipif(not hasattr(os, "fork"), reason="forks one child per module")
def test_every_module_imports_alone_in_a_fresh_interpreter():
    done = subprocess.run([sys.executable, "-c", CHECK.format(third_party=THIRD_PARTY),
                           *package_modules()], cwd=ROOT, env=_env(), capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-6000:]
