"""The README's Python snippets run as written (in order, in one namespace)."""

import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"


def python_blocks():
    return re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)


def test_readme_has_snippets_for_every_booster():
    text = "\n".join(python_blocks())
    for needle in ("LGBMObjective", "StochasticXGBRanker", "StochasticCatBoostRanker", "SGLB("):
        assert needle in text


@pytest.mark.slow
def test_readme_snippets_run():
    namespace = {}
    for block in python_blocks():
        exec(compile(block, str(README), "exec"), namespace)
    # the snippets trained real models: check they rank better than chance on the train split
    from stochrank_objectives.metrics import ndcg_at_k

    train = namespace["train"]
    score = ndcg_at_k(namespace["ranker"].predict(train.X), train.y, train.query_offsets, 5)
    constant = ndcg_at_k(0 * train.y, train.y, train.query_offsets, 5)
    assert score > constant + 0.1
