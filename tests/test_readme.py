"""The README's Python snippets run as written (in order, in one namespace)."""

import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"


def python_blocks():
    return re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)


def test_readme_has_snippets_for_every_booster():
    text = "\n".join(python_blocks())
    for needle in ("LGBMObjective", "StochasticLGBMRanker", "StochasticXGBRanker",
                   "StochasticCatBoostRanker", "ranking_scorer", "GroupKFold", "SGLB("):
        assert needle in text


@pytest.mark.slow
def test_readme_snippets_run():
    import sklearn

    namespace = {}
    with sklearn.config_context():  # the model-selection snippet turns metadata routing on
        for block in python_blocks():
            exec(compile(block, str(README), "exec"), namespace)
    # the snippets trained real models: check they rank better than chance on the train split
    from stochrank_objectives.metrics import ndcg_at_k

    train = namespace["train"]
    score = ndcg_at_k(namespace["ranker"].predict(train.X), train.y, train.query_offsets, 5)
    constant = ndcg_at_k(0 * train.y, train.y, train.query_offsets, 5)
    assert score > constant + 0.1


def test_objective_table_usage_lines_construct_valid_objectives():
    import numpy as np

    import stochrank_objectives.baselines as baselines
    from stochrank_objectives import StochasticRank

    namespace = {name: getattr(baselines, name) for name in baselines.__all__}
    namespace["StochasticRank"] = StochasticRank
    table = README.read_text().split("## Objectives", 1)[1].split("\n\n## ", 1)[0]
    rows = [line for line in table.splitlines() if line.startswith("| `")]
    assert len(rows) >= 9
    scores, labels, offsets = np.array([0.3, 0.1, 0.2]), np.array([2.0, 0.0, 1.0]), np.array([0, 3])
    for row in rows:
        usage = row.rstrip(" |").rsplit("|", 1)[1]
        calls = re.findall(r"`([A-Za-z_]+\(.*?\))`", usage)
        assert calls, row
        for call in calls:
            objective = eval(call, namespace)
            grad, hess = objective.grad_hess(scores, labels, offsets)
            assert np.all(np.isfinite(grad)) and np.all(np.isfinite(hess)), call


def test_public_names_table_lists_exactly_the_exported_names():
    import importlib

    modules = ["stochrank_objectives", "stochrank_objectives.adapters.lightgbm",
               "stochrank_objectives.adapters.xgboost", "stochrank_objectives.adapters.catboost",
               "stochrank_objectives.adapters.dask"]
    exported = {(name, module) for module in modules
                for name in importlib.import_module(module).__all__}
    section = README.read_text().split("## Public names", 1)[1].split("\n## ", 1)[0]
    rows = re.findall(r"^\| `([^`]+)` \| `([^`]+)` \| (.+?) \|$", section, flags=re.M)
    listed = [(name, module) for name, module, _ in rows]
    assert len(listed) == len(set(listed)), "a name is listed twice"
    assert set(listed) == exported
    assert all(purpose.strip() for _, _, purpose in rows)
