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
    ours = ["SR-R1soft", "SR-R1", "YetiLoss", "E-lambda-MART", "LambdaLoss"]
    assert [(row[0], row[1]) for row in table] == [
        ("lightgbm", "lambdarank"), *(("lightgbm", m) for m in ours),
        ("xgboost", "rank:ndcg"), *(("xgboost", m) for m in ours),
        ("catboost", "LambdaMart"), ("catboost", "YetiRank"), *(("catboost", m) for m in ours)]
    assert [row["method"] for row in rows] == [row[1] for row in table]
    # the note says which rows are LambdaMART, instead of printing a row twice
    assert any("LambdaMART" in line and "strongest" in line for line in lines)
    # and that YetiLoss alone trains with L2 = 0 and a minimum leaf hessian of 1e-3
    assert any(line.startswith("Ours") and "YetiLoss" in line and "1e-3" in line
               for line in lines)
    # compilation happens (and is announced, at most once) before the table, never inside it
    header = next(i for i, line in enumerate(lines) if line.startswith("booster"))
    notices = [i for i, line in enumerate(lines) if line.startswith("compiling the Numba")]
    assert len(notices) <= 1 and all(i < header for i in notices)
    assert all(row["compiled"] == 0 for row in rows) and "*" not in "".join(lines[header:])
    assert all(row["seconds"] > 0 and 0 < row["NDCG@5"] <= 1 for row in rows)


def test_yetiloss_alone_trains_with_l2_0_and_a_minimum_leaf_hessian_of_1e_3(monkeypatch):
    """What the job's note says about the trees is what the rankers are given."""
    import argparse
    from types import SimpleNamespace

    import stochrank_objectives

    made = []

    class Ranker:
        def __init__(self, objective, **params):
            made.append(params)

        def fit(self, *args, **kwargs):
            return self

        predict = None

    data = SimpleNamespace(X=None, y=None, qid=None)
    args = argparse.Namespace(iterations=2, learning_rate=0.1, seed=0, patience=1)
    for booster in main_job.BOOSTERS:
        monkeypatch.setattr(stochrank_objectives, main_job.RANKERS[booster], Ranker,
                            raising=False)
        for method in main_job.METHODS:
            made.clear()
            main_job.run_ours(booster, method, data, data, args)
            tree = {k: v for k, v in made[0].items() if k in {
                "lambda_l2", "min_sum_hessian_in_leaf", "reg_lambda", "min_child_weight",
                "l2_leaf_reg"}}
            if method == "YetiLoss":
                assert tree == {"lightgbm": {"lambda_l2": 0.0, "min_sum_hessian_in_leaf": 1e-3},
                                "xgboost": {"reg_lambda": 0.0, "min_child_weight": 1e-3},
                                "catboost": {"l2_leaf_reg": 0.0}}[booster]
            else:  # the job's trees, the booster's L2
                assert tree == ({"min_child_weight": 1.0} if booster == "xgboost" else {})
