"""benchmarks.cold_start: the rows it plans, the report's table and verdicts, and one real run of
the parent on the cheapest subset (LambdaMART, LightGBM) with the machine's warm Numba cache."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks import _boosters, cold_start
from benchmarks.cold_start import COLUMNS, OBJECTIVES
from stochrank_objectives.objectives import OBJECTIVES as REGISTRY

ROOT = Path(__file__).resolve().parents[2]


def _result(fit_s, compiled=3, import_s=1.5):
    return dict(import_s=import_s, import_cpu_s=import_s + 0.1, fit_s=fit_s,
                fit_cpu_s=fit_s * 1.1, compiled=compiled, n_docs=840, n_queries=50,
                numba_threads=2, threading_layer="omp")


def test_the_tables_agree_with_the_boosters_and_the_objective_registry():
    assert cold_start.RANKER_CLASSES == _boosters.RANKERS
    assert cold_start.BOOSTERS == _boosters.BOOSTERS
    assert {key: spec.call for key, spec in OBJECTIVES.items()} == {
        "sr_ndcg5": "StochasticRank(metric='NDCG', top=5)",
        "sr_mrr": "StochasticRank(metric='MRR')",
        "yetiloss": "YetiRank(mode='NDCG', top=5, num_neighbors=-1)",
        "lambdamart": "LambdaMART(top=5)"}
    for spec in OBJECTIVES.values():
        assert spec.precompile_name in REGISTRY
        assert type(spec.make()).__name__ == spec.cls   # constructs (nothing compiled yet)


def test_the_module_imports_neither_the_package_nor_a_booster():
    # a child's timed import must be the first one of its process
    code = ("import sys, benchmarks.cold_start; "
            "assert not {'stochrank_objectives', 'numba', 'lightgbm', 'xgboost', 'catboost'}"
            " & set(sys.modules), sorted(sys.modules)")
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True)


def test_cells_verdicts_and_the_table_parse_back():
    assert cold_start.cell([12.34]) == "12.3"
    assert cold_start.cell([13.0, 11.8, 12.3]) == "12.3 (11.8-13.0)"
    assert cold_start.cell([]) == "-"
    assert cold_start.count_cell([4, 4]) == "4" and cold_start.count_cell([3, 5]) == "3-5"
    runs = cold_start.plan(["lambdamart", "sr_mrr"], ["lightgbm", "catboost"], precompile=False)
    assert [(r.booster, r.cache) for r in runs[:4]] == [
        ("-", "empty"), ("lightgbm", "fresh"), ("lightgbm", "empty"), ("lightgbm", "warm")]
    assert len(runs) == 1 + 2 * (1 + 2 * 2) and sum(r.target for r in runs) == 4
    fits = {"empty": [_result(25.0), _result(19.0), _result(21.0)],   # median 21 > 20
            "warm": [_result(0.5, 0)], "fresh": [_result(0.1, 0)]}
    for run in runs:
        run.results = [dict(r) for r in fits[run.cache]]
    runs[0].results = [_result(1.8, 1)]                                # the yardstick
    runs[2].results = [_result(12.0), _result(20.0)]                   # median 16: met
    runs[-2].results.append({"error": "exit 1: boom"})
    text = cold_start.report("python -m benchmarks.cold_start", ["lightgbm", "catboost"],
                             ["lambdamart", "sr_mrr"], 3, runs, {}, "0.50/0.40/0.30", 0.25,
                             "0.60/0.50/0.40")
    rows = cold_start.parse_table(text)
    assert len(rows) == len(runs) and all(list(row) == COLUMNS for row in rows)
    target = f"<= {cold_start.TARGET_SECONDS:g} s"
    assert [row[target] for row in rows if row["cache"] == "empty" and row["booster"] != "-"] \
        == ["met", "MISSED", "MISSED", "error"]
    assert all(row[target] == "-" for row in rows if row["cache"] in ("warm", "fresh"))
    assert rows[2]["fit s"] == "16.00 (12.00-20.00)" and rows[3]["compiled"] == "0"
    assert rows[0]["objective"] == cold_start.YARDSTICK and rows[0]["fit s"] == "1.80"
    assert float(rows[1]["import s"]) == 1.5
    assert "empty-cache first fits within 20 s: 1 of 4" in text
    assert "error: catboost StochasticRank MRR empty: exit 1: boom" in text
    assert "other processes used 0.25 cores" in text and "inflates" in text
    assert "median (range) over 3 repeats" in text and f"{os.cpu_count()} CPUs" in text


def test_measure_runs_each_row_with_its_cache_and_the_precompiled_copies():
    calls, warm_ups = [], []

    def child(argv, cache_dir, workdir):
        cache_dir = Path(cache_dir)
        fresh = not cache_dir.exists()
        calls.append((argv, cache_dir.name, fresh))
        cache_dir.mkdir(exist_ok=True)
        return _result(10.0 if fresh else 0.5, 5 if fresh else 0)

    def warm_up(name, cache_dir, workdir):
        warm_ups.append(name)
        Path(cache_dir).mkdir()
        (Path(cache_dir) / "kernel.nbi").write_text("")
        return 30.0

    runs, pre = cold_start.measure(["lambdamart"], ["lightgbm", "xgboost"], 2, True,
                                   child=child, log=lambda line: None, warm_up=warm_up)
    assert warm_ups == ["LambdaMART", "LambdaMART"] and pre == {"lambdamart": [30.0, 30.0]}
    assert all(len(run.results) == 2 for run in runs)
    by_cache = {(r.booster, r.cache): r for r in runs}
    assert by_cache["lightgbm", "empty"].results[0]["fit_s"] == 10.0    # a new folder
    assert by_cache["lightgbm", "warm"].results[0]["fit_s"] == 0.5      # the one left behind
    assert by_cache["xgboost", "precompiled"].results[0]["fit_s"] == 0.5   # a filled copy
    ours = [c for c in calls if "ours" in c[0]]
    assert len(ours) == 2 * 2 * 3 and [c[2] for c in ours[:3]] == [True, False, False]
    assert cold_start.verdict(by_cache["xgboost", "empty"]) == "met"
    text = cold_start.report("cmd", ["lightgbm", "xgboost"], ["lambdamart"], 2, runs, pre,
                             "n/a")
    assert "precompile --objectives LambdaMART: 30.0 s" in text


def test_arguments():
    args = cold_start.parse_args(["--objectives", "lambdamart", "--boosters", "lightgbm"])
    assert (args.objectives, args.boosters, args.repeats, args.out) == (
        ["lambdamart"], ["lightgbm"], 1, cold_start.DEFAULT_OUT)
    for bad in (["--repeats", "0"], ["--objectives", "nope"], ["--child", "--kind", "ours"]):
        with pytest.raises(SystemExit):
            cold_start.parse_args(bad)


def test_the_parent_runs_real_children_on_the_cheapest_subset(tmp_path, capsys):
    """LambdaMART through LightGBM, the children on the machine's own (warm) Numba cache, not
    an empty one: the plumbing, not the compilation, is under test (a few seconds a child)."""
    ambient = os.environ.get("NUMBA_CACHE_DIR", "")   # "": Numba's default place

    def child(argv, cache_dir, workdir):
        return cold_start.run_child(argv, ambient, workdir)

    out = tmp_path / "cold_start.txt"
    text = cold_start.main(["--objectives", "lambdamart", "--boosters", "lightgbm", "--out",
                            str(out)], child=child)
    assert out.read_text() == text and text.startswith(
        "cold_start: python -m benchmarks.cold_start --objectives lambdamart")
    rows = cold_start.parse_table(text)
    assert [(r["booster"], r["objective"], r["cache"]) for r in rows] == [
        ("-", cold_start.YARDSTICK, "empty"), ("lightgbm", "lambdarank (native)", "fresh"),
        ("lightgbm", "LambdaMART NDCG@5", "empty"), ("lightgbm", "LambdaMART NDCG@5", "warm")]
    for row in rows:
        assert all(float(row[c]) >= 0 for c in ("import s", "import cpu s", "fit s",
                                                 "fit cpu s")), row
        assert int(row["compiled"]) >= 0
    assert rows[2]["<= 20 s"] in ("met", "MISSED") and rows[3]["compiled"] == "0"
    assert "error:" not in text and "840 documents, 50 queries" in text
