"""A new objective is one module of ``stochrank_objectives/objectives`` plus its tests: with no
list edited, it is registered (the tests and tools that iterate the registry see it), importable
from the package, and trains through the adapters over the training's GroupedData."""

from __future__ import annotations

import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "stochrank_objectives"

TOY = '''
"""A toy objective: squared error to the labels (for the test of a new module)."""
import numpy as np
from ._protocol import ObjectiveParams

__all__ = ["ToyRegression"]


class ToyRegression(ObjectiveParams):
    """Squared error to the labels."""

    _parameter_constraints: dict = {}

    def _grad_hess(self, scores, data, iteration):
        return scores - data.labels, np.ones_like(scores)

    def loss(self, scores, labels, query_offsets, iteration=0):
        return float(np.sum((np.asarray(scores) - np.asarray(labels)) ** 2) / 2)
'''

CHECK = textwrap.dedent('''
    import numpy as np
    import stochrank_objectives as so
    from stochrank_objectives.objectives import OBJECTIVES
    from stochrank_objectives.adapters.lightgbm import LGBMObjective
    import lightgbm as lgb

    assert "ToyRegression" in OBJECTIVES and "ToyRegression" in so.__all__
    obj = so.ToyRegression()
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(40, 3)), rng.integers(0, 3, 40).astype(float)
    train = lgb.Dataset(X, y, group=[10, 10, 20])
    booster = lgb.train({"objective": LGBMObjective(obj), "verbose": -1,
                         "min_data_in_leaf": 1}, train, 3)
    assert booster.num_trees() == 3
    print("OK")
''')


def test_a_new_objective_module_needs_no_other_file(tmp_path):
    copy = tmp_path / "stochrank_objectives"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__", "*.nbi",
                                                                  "*.nbc"))
    (copy / "objectives" / "toy_regression.py").write_text(TOY)
    run = subprocess.run([sys.executable, "-c", CHECK], cwd=tmp_path, capture_output=True,
                         text=True, timeout=300)
    assert run.returncode == 0 and "OK" in run.stdout, run.stdout + run.stderr
