"""Smoke test of benchmarks.scale: a tiny set, one booster, both configurations in their own
processes; the report and the JSON carry every measurement and a verdict per target."""

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


def test_scale_refuses_too_few_trees():
    with pytest.raises(SystemExit):
        scale.parse_args(["--trees", "3", "--warmup", "2"])
