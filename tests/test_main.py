"""The main job (``python -m stochrank_objectives``) prints the truth about time and baselines."""

import io

import numpy as np
import pytest
from numba import njit

from stochrank_objectives import __main__ as main_job


def test_the_compile_watch_announces_a_real_compilation_once_and_a_cached_call_never():
    from stochrank_objectives._compile_watch import CompileWatch

    @njit(cache=False)
    def twice(x):
        return 2 * x

    stream = io.StringIO()
    with CompileWatch("compiling ...", stream=stream) as watch:
        twice(1.0)
        twice(np.arange(3.0))  # a second signature: a second compilation, no second notice
    assert watch.count >= 2 and stream.getvalue() == "compiling ...\n"
    with CompileWatch("compiling ...", stream=stream) as watch:
        twice(3.0)  # already compiled in this process
    assert watch.count == 0 and stream.getvalue() == "compiling ...\n"


@pytest.mark.slow
def test_main_job_compiles_first_and_compares_with_each_boosters_built_in_rankers(capsys):
    for booster in main_job.BOOSTERS:
        pytest.importorskip(booster)
    rows = main_job.main(["--iterations", "3", "--patience", "2"])
    out = capsys.readouterr().out
    lines = out.splitlines()
    table = [line.split() for line in lines if line.startswith(main_job.BOOSTERS)]
    assert [(row[0], row[1]) for row in table] == [
        ("lightgbm", "lambdarank"), ("lightgbm", "SR-R1soft"), ("lightgbm", "SR-R1"),
        ("xgboost", "rank:ndcg"), ("xgboost", "SR-R1soft"), ("xgboost", "SR-R1"),
        ("catboost", "LambdaMart"), ("catboost", "YetiRank"), ("catboost", "SR-R1soft"),
        ("catboost", "SR-R1")]
    assert [row["method"] for row in rows] == [row[1] for row in table]
    # the note says which rows are LambdaMART, instead of printing a row twice
    assert any("LambdaMART" in line and "strongest" in line for line in lines)
    # compilation happens (and is announced, at most once) before the table, never inside it
    header = next(i for i, line in enumerate(lines) if line.startswith("booster"))
    notices = [i for i, line in enumerate(lines) if line.startswith("compiling the Numba")]
    assert len(notices) <= 1 and all(i < header for i in notices)
    assert all(row["compiled"] == 0 for row in rows) and "*" not in "".join(lines[header:])
    assert all(row["seconds"] > 0 and 0 < row["NDCG@5"] <= 1 for row in rows)
