"""Targets (benchmarks/_targets.py): parsed once, evaluated as themselves -- an ERR@10 target
is ERR@10, never MRR -- and an unknown one refused with its name; one module compares metric
names."""

import json
import pickle
import re
from pathlib import Path

import numpy as np
import pytest

from benchmarks import _targets, _trials, compare
from benchmarks._targets import TARGETS, Target, parse_target
from stochrank_objectives import metrics as M
from stochrank_objectives.data import RankingData

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


def _data():
    y = np.array([2.0, 0.0, 1.0, 0.0, 1.0, 0.0, 0.0])
    return RankingData(np.zeros((7, 1)), y, np.repeat([0, 1], [4, 3]), np.array([0, 4, 7]))


def test_a_target_is_parsed_once_into_its_metric_and_cutoff():
    assert (parse_target("NDCG@5").metric, parse_target("NDCG@5").top) == ("NDCG", 5)
    assert (parse_target("mrr").metric, parse_target("mrr").top) == ("MRR", None)
    assert parse_target("err@10") == "ERR@10" and parse_target(" ERR@10 ").top == 10
    t = parse_target("NDCG@5")
    assert parse_target(t) is t and TARGETS == ("NDCG@5", "MRR")


@pytest.mark.parametrize("text, message", [
    ("FOO@3", "unknown target 'FOO@3': unknown metric 'FOO'"),
    ("NDCG@x", "the cutoff after '@' must be a positive integer"),
    ("NDCG@0", "the cutoff after '@' must be a positive integer"),
])
def test_an_unknown_target_is_refused_by_name(text, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        parse_target(text)


def test_a_study_refuses_an_unknown_target_before_training(monkeypatch, capsys):
    def trainer(*args, **kwargs):
        raise AssertionError("a trial trained")

    for booster in list(_trials.TRAINERS):
        monkeypatch.setitem(_trials.TRAINERS, booster, trainer)
    with pytest.raises(SystemExit):
        compare.main(["--targets", "NDCG@5", "XRR@5", "--folds", "1"])
    assert "unknown target 'XRR@5'" in capsys.readouterr().err


def test_a_target_is_its_name_in_keys_rows_and_worker_processes():
    t = parse_target("ndcg@5")
    assert json.dumps({"target": t}) == '{"target": "NDCG@5"}'
    assert t == "NDCG@5" and hash(t) == hash("NDCG@5") and f"test_{t}" == "test_NDCG@5"
    again = pickle.loads(pickle.dumps(t))
    assert isinstance(again, Target) and (again.metric, again.top) == ("NDCG", 5)
    job = _trials.Job("mq2008", "lightgbm", "sr_r1", "NDCG@5", 1, 0, 0)
    parsed = _trials.Job("mq2008", "lightgbm", "sr_r1", t, 1, 0, 0)
    space, cfg = _trials.Space(), _trials.TrainConfig()
    assert _trials.stable_hash(job.key_dict(space, cfg)) == \
        _trials.stable_hash(parsed.key_dict(space, cfg))


def test_each_target_is_evaluated_as_itself():
    data, scores = _data(), np.array([4.0, 3.0, 2.0, 1.0, 0.5, 2.0, 1.0])
    offs = data.query_offsets
    err = parse_target("ERR@10")
    assert err.evaluate(scores, data, grade_max=2) == pytest.approx(
        M.err_at_k(scores, data.y, offs, 10, grade_max=2))
    assert err.evaluate(scores, data, grade_max=2) != pytest.approx(
        parse_target("MRR").evaluate(scores, data))
    assert parse_target("NDCG@5").evaluate(scores, data) == M.ndcg_at_k(scores, data.y, offs, 5)
    assert parse_target("MRR").evaluate(scores, data) == M.mrr(scores, data.y, offs)
    # binary-relevance targets train and validate on 1{y > 0}; the others on the grades
    np.testing.assert_array_equal(parse_target("MRR").labels(data.y), data.y > 0)
    assert parse_target("NDCG@5").labels(data.y) is data.y
    assert parse_target("ERR@10").labels(data.y) is data.y


def test_a_target_outside_the_test_metrics_gets_its_own_test_values():
    data, scores = _data(), np.linspace(1.0, 0.0, 7)
    per, has_rel = _targets.test_metrics(scores, data, 2, extra=("ERR@3", "NDCG@5"))
    assert list(per) == ["NDCG@5", "NDCG@10", "MRR", "ERR@10", "ERR@3"]
    np.testing.assert_array_equal(per["ERR@3"], M.err_at_k(scores, data.y, data.query_offsets,
                                                          3, grade_max=2, per_query=True))
    assert has_rel.tolist() == [True, True]


def test_an_err_target_trains_and_is_reported_as_err(tmp_path):
    """A study with an ERR@10 target: the objective gets the labels' largest grade, the trial
    is selected by validation ERR@10 and the report has its column."""
    out = tmp_path / "out"
    assert compare.main(["--folds", "1", "--budget", "1", "--max-trees", "3", "--patience", "2",
                         "--boosters", "lightgbm", "--methods", "sr_r1soft", "--targets",
                         "ERR@10", "--no-plots", "--no-progress", "--out", str(out)]) == 0
    (row,) = [json.loads(line) for line in (out / "runs.jsonl").read_text().splitlines()]
    assert row["target"] == "ERR@10" and "error" not in row
    assert row["valid_curve"][row["n_trees"] - 1] == pytest.approx(row["valid_target"], abs=1e-5)
    md = (out / "compare.md").read_text()
    assert "| method | NDCG@5 | MRR | ERR@10 | runs | trees |" in md
    assert "All test metrics of the ERR@10-optimised models" in md


def test_one_benchmarks_module_compares_metric_names():
    comparison = re.compile(r"""(==|!=|\bin\b)\s*[(\[{]?\s*["'](NDCG|MRR|ERR|DCG|MAP|RECALL|"""
                            r"""PRECISION|PFOUND)\b|["'](NDCG|MRR|ERR)[^"']*["']\s*(==|!=)""")
    comparing = sorted(p.name for p in BENCHMARKS.glob("*.py")
                       if any(comparison.search(line) and "for " not in line
                              for line in p.read_text().splitlines()))
    assert comparing == ["_targets.py"]
