"""Smoke test of benchmarks.scale: a tiny set, one booster, both configurations in their own
processes; the report and the JSON carry every measurement and a verdict per target, for
StochasticRank and for YetiRank (``--objective yetirank``, its own output files)."""

import json

import pytest

from benchmarks import scale


@pytest.mark.slow
def test_scale_runs_end_to_end_at_a_tiny_size(tmp_path):
    scale.main(["--docs", "2000", "--features", "6", "--trees", "6", "--warmup", "1",
                "--boosters", "xgboost", "--data-cache", str(tmp_path / "data"),
                "--out", str(tmp_path)])
    result = json.loads((tmp_path / "scale.json").read_text())
    assert result["data"]["rows"] >= 2000 and result["data"]["features"] == 6
    assert [(r["booster"], r["kind"]) for r in result["runs"]] == [("xgboost", "native"),
                                                                   ("xgboost", "sr")]
    for run in result["runs"]:
        assert run["seconds_per_tree"] > 0 and run["fit_seconds"] > 0
        assert run["cpu_seconds_per_tree"] >= 0
        assert run["peak_rss_bytes"] >= run["rss_after_data_bytes"] > 0
    sr = result["runs"][1]
    assert sr["grad_hess_calls"] == 6 and 0 < sr["grad_hess_seconds_per_tree"]
    assert sr["adapter_calls_per_tree"] == 1 and sr["adapter_seconds_per_tree"] > 0
    (summary,) = result["summaries"]
    assert summary["tree_target"] == 1.2 and summary["rss_target"] == 2.5
    report = (tmp_path / "scale.md").read_text()
    assert "| xgboost | SR |" in report and "| xgboost | rank:ndcg |" in report
    assert "SHARED" in report and "target <= 1.2x" in report
    # the report alone is rebuilt from the JSON, measuring nothing
    (tmp_path / "scale.md").unlink()
    scale.main(["--report", str(tmp_path / "scale.json"), "--out", str(tmp_path)])
    assert (tmp_path / "scale.md").read_text().splitlines()[-1] == report.splitlines()[-1]


@pytest.mark.slow
def test_scale_runs_yetirank_into_its_own_files(tmp_path):
    scale.main(["--objective", "yetirank", "--docs", "2000", "--features", "6", "--trees", "6",
                "--warmup", "1", "--boosters", "lightgbm", "--data-cache",
                str(tmp_path / "data"), "--out", str(tmp_path)])
    assert not (tmp_path / "scale.json").exists()  # StochasticRank's results stay as they are
    result = json.loads((tmp_path / "scale_yetirank.json").read_text())
    assert result["objective"] == "yetirank"
    assert [(r["booster"], r["kind"], r["objective"]) for r in result["runs"]] == [
        ("lightgbm", "native", "yetirank"), ("lightgbm", "sr", "yetirank")]
    ours = result["runs"][1]
    assert ours["grad_hess_calls"] == 6 and 0 < ours["grad_hess_seconds_per_tree"]
    assert ours["adapter_calls_per_tree"] == 1 and ours["adapter_seconds_per_tree"] > 0
    assert ours["peak_rss_bytes"] >= ours["rss_after_data_bytes"] > 0
    (summary,) = result["summaries"]
    assert summary["tree_target"] == 1.2 and summary["rss_target"] == 2.5
    assert set(result["load_average"]) == {"start", "end"}
    report = (tmp_path / "scale_yetirank.md").read_text()
    assert report.startswith("# scale (YetiRank): ") and "YetiRank = YetiRank()" in report
    assert "| lightgbm | YetiRank |" in report and "| lightgbm | lambdarank |" in report
    assert "| SR |" not in report and "- lightgbm: YetiRank " in report
    assert "**Reduced size**" in report and "target <= 1.2x" in report
    # rebuilt from the JSON alone: still YetiRank's, into the same file
    (tmp_path / "scale_yetirank.md").unlink()
    scale.main(["--report", str(tmp_path / "scale_yetirank.json"), "--out", str(tmp_path)])
    assert (tmp_path / "scale_yetirank.md").read_text() == report


@pytest.mark.slow
def test_scale_times_mrr_into_its_own_files(tmp_path):
    scale.main(["--metric", "MRR", "--docs", "2000", "--features", "6", "--trees", "6",
                "--warmup", "1", "--boosters", "lightgbm", "--data-cache",
                str(tmp_path / "data"), "--out", str(tmp_path)])
    assert not (tmp_path / "scale.json").exists()   # NDCG@5's results stay as they are
    result = json.loads((tmp_path / "scale_mrr.json").read_text())
    assert result["metric"] == "MRR" and result["runs"][1]["grad_hess_calls"] == 6
    report = (tmp_path / "scale_mrr.md").read_text()
    assert "StochasticRank(metric='MRR', top=None)" in report and "| lightgbm | SR |" in report
    # rebuilt from the JSON alone: still MRR's
    (tmp_path / "scale_mrr.md").unlink()
    scale.main(["--report", str(tmp_path / "scale_mrr.json"), "--out", str(tmp_path)])
    assert (tmp_path / "scale_mrr.md").read_text() == report


def test_scale_names_outputs_after_the_objective():
    assert scale.parse_args([]).name == "scale"
    assert scale.parse_args(["--metric", "MRR"]).name == "scale_mrr"
    assert scale.parse_args(["--objective", "yetirank"]).name == "scale_yetirank"
    assert scale.parse_args(["--objective", "yetirank", "--name", "x"]).name == "x"
    assert scale.parse_args(["--objective", "yetiloss"]).name == "scale_yetiloss"
    assert scale.parse_args(["--objective", "yetiloss", "--metric", "MRR"]).name == \
        "scale_yetiloss_mrr"
    with pytest.raises(SystemExit):
        scale.parse_args(["--objective", "softrank"])


def test_scale_refuses_too_few_trees():
    with pytest.raises(SystemExit):
        scale.parse_args(["--trees", "3", "--warmup", "2"])
