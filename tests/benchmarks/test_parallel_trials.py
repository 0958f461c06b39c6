"""Trials of a study in parallel (benchmarks/_executor.py): a local pool (--workers) and a Dask
cluster (--scheduler) give the serial rows bit for bit; a killed or interrupted study resumes
without retraining a finished trial; the cache survives a torn last line; the progress bar counts
done and failed trials with the time left; each fold is read once per process."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from benchmarks import _executor, _targets, _trials, compare, defaults

REPO = Path(__file__).resolve().parents[2]


def tiny(budget=2, trees=4):
    """LightGBM, native LambdaMART and SR-R1, NDCG@5: ``2 * budget`` trials."""
    return ["--folds", "1", "--budget", str(budget), "--max-trees", str(trees), "--patience",
            str(trees // 2), "--boosters", "lightgbm", "--methods", "native_lambdamart", "sr_r1",
            "--targets", "NDCG@5", "--no-plots", "--no-progress"]


TINY = tiny()
DEFAULTS_TINY = ["--folds", "1", "--seeds", "0", "--boosters", "lightgbm", "--methods",
                 "SR-R1soft", "native LambdaMART", "--max-trees", "4", "--depth", "4"]


def rows_of(path):
    """The cached rows by configuration, without the wall time (the only field that may differ)."""
    rows = [json.loads(line) for line in Path(path).read_text().splitlines()]
    return {r.get("hash", json.dumps([r["booster"], r["method"], r["target"], r["fold"],
                                      r["seed"]])): {k: v for k, v in r.items() if k != "wall_s"}
            for r in rows}


@pytest.fixture(scope="module")
def serial(tmp_path_factory):
    """The tiny compare and defaults studies run one trial after another in this process."""
    out = tmp_path_factory.mktemp("serial")
    assert compare.main(TINY + ["--out", str(out / "compare")]) == 0
    defaults.main(DEFAULTS_TINY + ["--no-progress", "--out", str(out / "defaults")])
    return {"compare": rows_of(out / "compare" / "runs.jsonl"),
            "defaults": rows_of(out / "defaults" / "defaults_lightgbm_depth4.jsonl")}


def counting_trainers(monkeypatch, stop_after=None):
    """Wrap the trainers to count the trials trained; raise KeyboardInterrupt (as Ctrl-C
    would) when trial ``stop_after + 1`` starts."""
    calls = []

    def wrap(trainer):
        def counted(*args, **kwargs):
            if stop_after is not None and len(calls) == stop_after:
                raise KeyboardInterrupt
            calls.append(args[:2])
            return trainer(*args, **kwargs)
        return counted

    for booster, trainer in list(_trials.TRAINERS.items()):
        monkeypatch.setitem(_trials.TRAINERS, booster, wrap(trainer))
    return calls


@pytest.mark.slow
def test_local_workers_give_the_serial_rows_bit_for_bit(serial, tmp_path):
    assert compare.main(TINY + ["--workers", "2", "--out", str(tmp_path / "c")]) == 0
    assert rows_of(tmp_path / "c" / "runs.jsonl") == serial["compare"]
    assert len(serial["compare"]) == 4
    assert "trials in 2 local worker processes" in (tmp_path / "c" / "compare.md").read_text()


@pytest.mark.slow
def test_dask_scheduler_gives_the_serial_rows_bit_for_bit(serial, tmp_path):
    distributed = pytest.importorskip("distributed")
    # Worker processes started from this process inherit its sys.path: they import benchmarks.
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=":0") as cluster:
        address = cluster.scheduler_address
        assert compare.main(TINY + ["--scheduler", address, "--out", str(tmp_path / "c")]) == 0
        defaults.main(DEFAULTS_TINY + ["--no-progress", "--scheduler", address,
                                       "--out", str(tmp_path / "d")])
    assert rows_of(tmp_path / "c" / "runs.jsonl") == serial["compare"]
    assert rows_of(tmp_path / "d" / "defaults_lightgbm_depth4.jsonl") == serial["defaults"]


@pytest.mark.slow
def test_killed_parallel_study_retrains_nothing_that_finished(serial, tmp_path, monkeypatch):
    out = tmp_path / "killed"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(REPO)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]))
    args = tiny(budget=4, trees=60)  # longer trials, so that the kill lands half-way
    proc = subprocess.Popen([sys.executable, "-m", "benchmarks.compare", *args, "--workers", "2",
                             "--out", str(out)], cwd=REPO, env=env, start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    cache = out / "runs.jsonl"
    deadline = time.time() + 120
    while time.time() < deadline and proc.poll() is None:
        if cache.exists() and len(cache.read_text().splitlines()) >= 2:
            break
        time.sleep(0.02)
    os.killpg(proc.pid, signal.SIGKILL)  # the study and its workers, as a lost machine would
    proc.wait()
    before = rows_of(cache)
    total = 8
    assert 2 <= len(before) < total, "the kill did not land half-way"

    calls = counting_trainers(monkeypatch)
    assert compare.main(args + ["--out", str(out)]) == 0
    assert len(calls) == total - len(before)
    after = rows_of(cache)
    assert len(after) == total and all(after[h] == row for h, row in before.items())


def test_interrupted_study_retrains_nothing_that_finished(tmp_path, monkeypatch):
    out = str(tmp_path)
    counting_trainers(monkeypatch, stop_after=3)
    with pytest.raises(KeyboardInterrupt):
        compare.main(TINY + ["--out", out])
    assert len(rows_of(tmp_path / "runs.jsonl")) == 3
    monkeypatch.undo()
    calls = counting_trainers(monkeypatch)
    assert compare.main(TINY + ["--out", out]) == 0
    assert len(calls) == 1 and len(rows_of(tmp_path / "runs.jsonl")) == 4


def test_cache_keeps_the_row_appended_after_a_torn_line(tmp_path):
    (tmp_path / "runs.jsonl").write_text('{"hash": "a", "n_trees": 3}\n{"hash": "b", "n_tr')
    cache = _trials.Cache(tmp_path, "runs.jsonl")  # a kill tore the last line
    assert set(cache.rows) == {"a"}
    cache.add({"hash": "c", "n_trees": 5})
    assert set(_trials.Cache(tmp_path, "runs.jsonl").rows) == {"a", "c"}


def test_progress_bar_shows_done_failed_and_time_left(capsys):
    execution = _executor.Execution(progress=True)
    results = list(_executor.run_tasks(abs, [-1, 2, -3], execution, desc="toy trials",
                                       failed=lambda r: r > 2))
    assert results == [(-1, 1), (2, 2), (-3, 3)]
    bar = capsys.readouterr().err
    assert "toy trials" in bar and "3/3" in bar and "failed 1" in bar
    assert "<00:00" in bar  # tqdm's elapsed<remaining
    list(_executor.run_tasks(abs, [-1], _executor.Execution(progress=False)))
    assert capsys.readouterr().err == ""


def test_each_fold_is_read_once_per_process(monkeypatch):
    loads = []

    def loader(dataset, fold):
        loads.append(fold)
        return object()

    _executor.forget_splits()
    try:
        for fold in (1, 1, 2, 2, 2, 1, 3, 3):
            _executor.worker_split(loader, "toy", fold)
    finally:
        _executor.forget_splits()
    assert loads == [1, 2, 3]  # fold-major tasks: each fold once (the last two kept)


def test_execution_options_are_checked(capsys):
    with pytest.raises(SystemExit):
        compare.main(TINY + ["--workers", "0"])
    assert "--workers: must be an integer >= 1" in capsys.readouterr().err
    with pytest.raises(ValueError, match="not both"):
        _executor.Execution(workers=2, scheduler="tcp://127.0.0.1:8786")
    with pytest.raises(ValueError, match="--workers 1"):
        _executor.Execution(workers=0)


def test_a_trial_with_nan_metrics_is_a_failure_and_all_failed_exits_non_zero(tmp_path,
                                                                              monkeypatch):
    """An empty split or NaN scores give NaN metrics: never a successful trial (selection would
    compare NaNs); a study whose every trial failed stops with the first error."""
    monkeypatch.setattr(_targets.Target, "evaluate", lambda *args: float("nan"))
    args = tiny(budget=1) + ["--out", str(tmp_path)]
    with pytest.raises(SystemExit, match=r"all 2 trials failed \(their errors are in .*runs"
                                         r"\.jsonl\); the first: ValueError: non-finite "
                                         r"metrics \(valid_target=nan\)"):
        compare.main(args)
    rows = list(rows_of(tmp_path / "runs.jsonl").values())
    assert len(rows) == 2 and all("non-finite metrics" in r["error"] for r in rows)
    monkeypatch.undo()
    calls = counting_trainers(monkeypatch)
    assert compare.main(args) == 0 and len(calls) == 2   # failed trials are retried


def test_a_cached_row_with_nan_metrics_counts_as_failed(tmp_path):
    (tmp_path / "runs.jsonl").write_text('{"hash": "a", "valid_target": NaN, "test_MRR": 0.5}\n'
                                         '{"hash": "b", "valid_target": 0.7, "test_MRR": 0.5}\n')
    cache = _trials.Cache(tmp_path, "runs.jsonl")
    assert "non-finite metrics (valid_target=nan)" in cache.get("a")["error"]
    assert "error" not in cache.get("b")


@pytest.mark.parametrize("command", ["compare", "defaults"])
def test_an_unwritable_out_folder_stops_before_any_training(tmp_path, monkeypatch, command):
    out = tmp_path / "readonly"
    out.mkdir()
    out.chmod(0o555)
    if os.geteuid() == 0:   # root writes through the mode bits: refuse writes there instead
        real_open = os.open

        def refusing_open(path, *args, **kwargs):
            if Path(path).parent == out:
                raise PermissionError(13, "Permission denied", str(path))
            return real_open(path, *args, **kwargs)

        monkeypatch.setattr(os, "open", refusing_open)
    calls = counting_trainers(monkeypatch)
    try:
        with pytest.raises(SystemExit, match=r"--out .*readonly: cannot write there "
                                             r"\(Permission denied\): choose another folder"):
            if command == "compare":
                compare.main(TINY + ["--out", str(out)])
            else:
                defaults.main(DEFAULTS_TINY + ["--no-progress", "--out", str(out)])
    finally:
        out.chmod(0o755)
    assert calls == []
