"""Smoke test of benchmarks.compare / benchmarks.ablation: a tiny budget on MQ2008 Fold 1 (bundled)
runs end to end in every booster, writes the CSV, markdown and plots, and resumes from its cache."""

import csv
import json
import os

import numpy as np
import pytest

from benchmarks import _registry, _search, _stats, _targets, _trials
from benchmarks import ablation, compare

TINY = ["--folds", "1", "--budget", "1", "--max-trees", "4", "--patience", "2", "--no-progress"]


def test_compare_runs_end_to_end_and_resumes(tmp_path):
    args = TINY + ["--boosters", "lightgbm", "xgboost", "catboost", "--methods",
                   "native_lambdamart", "sr_r1", "--out", str(tmp_path)]
    assert compare.main(args) == 0
    lines = (tmp_path / "runs.jsonl").read_text().splitlines()
    rows = [json.loads(line) for line in lines]
    # lightgbm/xgboost: native NDCG@5 + SR-R1 x 2 targets; catboost: native x 2 + SR-R1 x 2
    assert len(rows) == 3 + 3 + 4
    assert not [r for r in rows if "error" in r]
    for r in rows:
        for m in _targets.TEST_METRICS:
            assert 0.0 <= r[f"test_{m}"] <= 1.0 and 0.0 <= r[f"test_{m}_skip"] <= 1.0
        assert 1 <= r["n_trees"] <= 4 and len(r["valid_curve"]) >= r["n_trees"]
    md = (tmp_path / "compare.md").read_text()
    assert "| SR-R1 |" in md and "paired one-tailed t-test" in md and "Budget: 1" in md
    with open(tmp_path / "compare_runs.csv") as f:
        table = list(csv.DictReader(f))
    assert len(table) == len(rows) and sum(int(r["selected"]) for r in table) == len(rows)
    for png in ("compare_bars.png", "curves_lightgbm.png", "curves_catboost.png"):
        assert (tmp_path / png).stat().st_size > 1000
    # resume: nothing is retrained, the report is the same
    assert compare.main(args) == 0
    assert len((tmp_path / "runs.jsonl").read_text().splitlines()) == len(lines)


def test_ablation_runs_end_to_end(tmp_path):
    assert ablation.main(TINY + ["--out", str(tmp_path), "--no-plots"]) == 0
    md = (tmp_path / "ablation.md").read_text()
    for label in _registry.ABLATION_LABELS.values():
        assert f"| {label} |" in md


def test_random_search_is_keyed_by_the_trial():
    space, cfg = _search.Space(), _trials.TrainConfig()
    job = _trials.Job("mq2008", "lightgbm", "sr_r1", "NDCG@5", 1, 0, 0)
    other = _trials.Job("mq2008", "lightgbm", "sr_r1", "NDCG@5", 1, 0, 1)
    assert _trials.stable_hash(job.key_dict(space, cfg)) != _trials.stable_hash(other.key_dict(space, cfg))
    rng = np.random.default_rng(0)
    p = _search.sample_params("sr_r1", space, rng)
    assert p["l2"] == 0.0 and 1e-2 <= p["mu"] <= 10 and 1e8 <= p["diffusion_temperature"] <= 1e11
    q = _search.sample_params("e_lambdamart", space, rng)
    assert 0.1 <= q["l2"] <= 10 and 0 < q["beta"] <= 1 and "mu" not in q


def test_confidence_interval_and_paired_test():
    mean, half = _stats.mean_ci([0.5, 0.7])
    assert mean == 0.6 and half > 0.1
    assert np.isnan(_stats.mean_ci([0.5])[1])


def test_global_optimum_instances_are_multimodal_and_enumerated():
    from benchmarks._instances import instance_suite

    rng = np.random.default_rng(0)
    for inst in instance_suite(6):
        assert inst.local_optimum < inst.optimum - 1e-9
        assert inst.value(inst.best_scores) == inst.optimum
        # No item scoring (ties included) beats the enumerated optimum.
        for _ in range(200):
            item_scores = rng.integers(0, 3, inst.X.shape[1]).astype(float)
            assert inst.value(item_scores) <= inst.optimum + 1e-12


def test_global_optimum_benchmark_runs_end_to_end(tmp_path):
    from benchmarks import global_optimum

    rows = global_optimum.main(["--instances", "3", "--seeds", "1", "--iterations", "30",
                                "--out", str(tmp_path), "--tag", "smoke"])
    methods = {(r["booster"], r["method"]) for r in rows}
    # every booster's default methods of the registry: ours in every booster, and its natives
    assert methods == {(b, m.name) for b in ("lightgbm", "xgboost", "catboost")
                       for m in global_optimum.METHODS.values() if b in m.boosters and not m.extra}
    assert ("catboost", "native LambdaMart") in methods and len(methods) == 10
    assert all(r["hit"] in (0, 1) and r["gap"] >= 0 for r in rows)
    assert {r["metric"] for r in rows} == {"NDCG", "MRR", "ERR"}
    assert "| lightgbm | StochasticRank (defaults) |" in (tmp_path / "summary_smoke.md").read_text()
    assert (tmp_path / "results_smoke.csv").exists() and (tmp_path / "hit_rates_smoke.png").exists()


def test_defaults_study_runs_end_to_end_and_resumes(tmp_path):
    from benchmarks import defaults

    args = ["--folds", "1", "--seeds", "0", "--boosters", "lightgbm", "--methods", "SR-R1soft",
            "native LambdaMART", "--max-trees", "4", "--depth", "4", "--out", str(tmp_path)]
    defaults.main(args)
    cache = tmp_path / "defaults_lightgbm_depth4.jsonl"
    rows = [json.loads(line) for line in cache.read_text().splitlines()]
    assert len(rows) == 4 and all(0.0 <= r["mean"] <= 1.0 for r in rows)
    md = (tmp_path / "defaults_lightgbm_depth4.md").read_text()
    assert "| lightgbm | NDCG@5 | SR-R1soft |" in md and "one-tailed p" in md
    defaults.main(args)  # resumes: nothing retrained
    assert len(cache.read_text().splitlines()) == 4


def test_defaults_table_has_every_objective_and_compares_with_the_best_native(tmp_path):
    """YetiLoss, LambdaLoss and the natives in all three boosters; methods that do not apply
    are skipped (LambdaLoss has no MRR form, native YetiRank is CatBoost's); every other row
    is compared with the best native of its booster and target, the raw rows kept."""
    from benchmarks import _fixed, defaults

    methods = ["YetiLoss", "LambdaLoss", "native LambdaMART", "native YetiRank"]
    defaults.main(["--folds", "1", "--seeds", "0", "--max-trees", "4", "--depth", "4",
                   "--no-progress", "--out", str(tmp_path), "--methods", *methods])
    rows = [json.loads(line) for line in
            (tmp_path / "defaults_lightgbm_xgboost_catboost_depth4.jsonl").read_text().splitlines()]
    runs = {(r["booster"], r["method"], r["target"]) for r in rows}
    expected = {(b, m, t) for b in ("lightgbm", "xgboost", "catboost") for m in methods
                for t in _targets.TARGETS if _fixed.applies(b, m, t)}
    assert len(rows) == len(runs) == len(expected) == 5 + 5 + 7 and runs == expected
    assert ("catboost", "native YetiRank", "MRR") in runs
    assert not {("lightgbm", "native YetiRank"), ("xgboost", "LambdaLoss", "MRR")} & runs
    assert all(0.0 <= r["mean"] <= 1.0 and len(r["per_query"]) > 0 for r in rows)
    md = (tmp_path / "defaults_lightgbm_xgboost_catboost_depth4.md").read_text()
    table = [line for line in md.splitlines() if line.startswith("| ") and "---" not in line][1:]
    assert len(table) == len(runs)
    for booster in ("lightgbm", "xgboost", "catboost"):
        for target in ("NDCG@5", "MRR"):
            mine = [line for line in table if line.startswith(f"| {booster} | {target} |")]
            # exactly one reference; every other row either paired with it or without variation
            assert sum(line.endswith("| best native |") for line in mine) == 1
            assert sum(" pts vs native " in line for line in mine) == len(mine) - 1


def test_schedule_sweep_idealised_booster_is_lightgbm_and_runs(tmp_path):
    """The sweep's idealised booster (each item its own leaf, -G/H steps) follows LightGBM on
    global-optimum instances (same item order and metric, scores within 5%: what the sweep's
    conclusions rest on), and the sweep runs end to end."""
    from benchmarks import global_optimum, schedule_sweep
    from benchmarks._instances import instance_suite

    for inst in instance_suite(3):
        x = schedule_sweep.run_items(inst, schedule_sweep.objective(inst, 0), 40)[inst.items]
        scores = global_optimum.train_ours("lightgbm", "unit hessian", inst, 0, 40)
        assert np.array_equal(np.argsort(-x, kind="stable"), np.argsort(-scores, kind="stable"))
        assert inst.value(x) == inst.value(scores)
        assert np.max(np.abs(x - scores)) <= 0.05 * np.max(np.abs(scores))
    rows, union = schedule_sweep.main(["--instances", "3", "--seeds", "1", "--iterations", "5",
                                       "--max-configurations", "2", "--out", str(tmp_path)])
    assert len(rows) == 2 and 0.0 <= union <= 1.0
    assert "Union over all configurations" in (tmp_path / "schedule_sweep.md").read_text()


def test_sr_levers_study_runs_and_pairs_each_variant(tmp_path):
    from benchmarks import sr_levers

    args = ["--datasets", "mq2008", "--folds", "1", "--seeds", "0", "--targets", "NDCG@5",
            "--variants", "SR-R1soft (unit hessian)", "hessian=abs_gradient", "--max-trees", "4",
            "--out", str(tmp_path)]
    rows = sr_levers.main(args)
    assert [r["method"] for r in rows] == ["native LambdaMART", "SR-R1soft (unit hessian)",
                                           "hessian=abs_gradient"]
    assert all(r["booster"] == "lightgbm" and 1 <= r["n_trees"] <= 4 for r in rows)
    md = (tmp_path / "levers.md").read_text()
    line = next(x for x in md.splitlines() if "| hessian=abs_gradient |" in x)
    assert line.count(" p = ") == 2     # paired with the unit hessian and with the native
    assert len(sr_levers.main(args)) == 3   # resumes: nothing retrained
    assert len((tmp_path / "levers.jsonl").read_text().splitlines()) == 3


def test_training_speed_times_mrr_into_its_own_files(tmp_path):
    from benchmarks import training_speed

    training_speed.main(["--metric", "MRR", "--top", "0", "--docs", "400", "--iterations", "7",
                         "--warmup", "1", "--rounds", "1", "--threads", "1",
                         "--out", str(tmp_path)])
    assert not (tmp_path / "training_speed.txt").exists()   # NDCG@10's stay as they are
    txt = (tmp_path / "training_speed_mrr.txt").read_text()
    assert "StochasticRank(metric='MRR', top=None)" in txt and "LightGBM + SR:" in txt
    assert "LightGBM histogram rows per tree" in txt


def test_lightgbm_histogram_rows_counts_the_root_and_each_smaller_child():
    """A step at x = 30 of 100 rows: the root's 100 rows, then the smaller child's 30; a
    second split of the 70 at x = 80 adds its smaller child's 20."""
    import lightgbm as lgb

    from benchmarks._timing import lightgbm_histogram_rows

    x = np.arange(100, dtype=np.float64)[:, None]
    y = (x[:, 0] >= 30) * 1.0 + (x[:, 0] >= 80) * 0.5
    params = dict(min_data_in_leaf=1, min_data_in_bin=1, verbose=-1, learning_rate=1.0)
    data = lgb.Dataset(x, y, params={"min_data_in_bin": 1, "verbose": -1})
    one_split = lgb.train({**params, "num_leaves": 2}, data, 1)
    assert lightgbm_histogram_rows(one_split).tolist() == [130]
    two_splits = lgb.train({**params, "num_leaves": 3}, data, 1)
    assert lightgbm_histogram_rows(two_splits).tolist() == [150]


def test_training_speed_runs_yetirank(tmp_path):
    """``--objective yetirank``: the "+ SR" rows are YetiRank's, named so, in their own files."""
    from benchmarks import training_speed

    training_speed.main(["--objective", "yetirank", "--docs", "400", "--iterations", "7",
                         "--warmup", "1", "--rounds", "1", "--threads", "1",
                         "--out", str(tmp_path)])
    txt = (tmp_path / "training_speed_yetirank.txt").read_text()
    assert not (tmp_path / "training_speed.txt").exists()
    assert "StochasticRank" not in txt and "+ SR" not in txt
    assert "LightGBM + YetiRank:" in txt and "+ YetiRank (ours, pointer route)" in txt
    data = json.loads((tmp_path / "training_speed_yetirank.json").read_text())
    assert data["objective"] == "yetirank"
    assert {r["target"] for r in data["ratios"]} >= {training_speed.TARGET_YETI_VS_LAMBDAMART}
    ours = [r for r in data["table"] if r["key"] == "lgb_sr"]
    assert ours and ours[0]["grad_hess_ms_per_iter"] > 0


def test_training_speed_applies_a_wait_policy_or_refuses(tmp_path, monkeypatch):
    """libgomp reads ``OMP_WAIT_POLICY`` when it is loaded, and the benchmark's imports load
    both runtimes: setting the variable in ``main`` reached none of them while the header
    printed it. A policy the environment lacks is refused from Python (the command line
    restarts the benchmark with it set); the default leaves the environment alone and says so."""
    from benchmarks import training_speed

    monkeypatch.delenv("OMP_WAIT_POLICY", raising=False)
    with pytest.raises(SystemExit, match="OMP_WAIT_POLICY=PASSIVE in the environment"):
        training_speed.main(["--omp-wait-policy", "passive", "--docs", "400", "--out",
                             str(tmp_path)])
    assert "OMP_WAIT_POLICY" not in os.environ
    training_speed.main(["--objective", "yetirank", "--docs", "400", "--iterations", "7",
                         "--warmup", "1", "--rounds", "1", "--threads", "1",
                         "--out", str(tmp_path)])
    txt = (tmp_path / "training_speed_yetirank.txt").read_text()
    assert "OMP_WAIT_POLICY=(unset: the runtimes spin, then sleep)" in txt
