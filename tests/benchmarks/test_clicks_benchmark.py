"""``python -m benchmarks.clicks`` on a written LETOR folder: the issue's smoke command."""

import json

from benchmarks import clicks
from benchmarks._registry import study
from _letor_files import write_fold_folder


def test_clicks_benchmark_on_a_written_letor_folder(tmp_path):
    root = write_fold_folder(tmp_path / "MSLR-mini")
    out = tmp_path / "out"
    assert clicks.main(["--data", str(root), "--folds", "1", "--seeds", "0", "--boosters",
                        "lightgbm", "--eta", "1", "--out", str(out), "--trees", "20",
                        "--cache-dir", str(tmp_path / "cache"), "--no-progress"]) == 0
    rows = [json.loads(line) for line in (out / "clicks_runs.jsonl").read_text().splitlines()]
    assert {r["method"] for r in rows} == set(study("clicks")) == set(clicks.METHODS)
    assert all(0.0 <= r["test_NDCG@10"] <= 1.0 for r in rows)
    report = (out / "clicks.md").read_text()
    assert "## pbm, eta 1, lightgbm" in report and (out / "clicks.png").exists()
