"""The benchmarks on any LETOR folder (--data) and on every bundled MQ2008 fold, with nothing
outside the repository."""

import json

import numpy as np
import pytest

from benchmarks import _data, ablation, compare, defaults
from _letor_files import letor_lines, write_fold_folder, write_lines

TINY = ["--budget", "1", "--max-trees", "3", "--patience", "2", "--no-progress", "--no-plots",
        "--boosters", "lightgbm", "--methods", "sr_r1", "--targets", "NDCG@5"]


def read_rows(folder):
    return [json.loads(line) for line in (folder / "runs.jsonl").read_text().splitlines()]


@pytest.mark.slow
def test_compare_on_a_written_mslr_folder_and_on_bundled_mq2008_fold5(tmp_path):
    """The issue's command, ``compare --data DIR --workers 2``: the folds' files are parsed and
    cached by the pool's processes."""
    root = write_fold_folder(tmp_path / "MSLR-mini")   # five folds, gzip, sparse lines
    out, cache = tmp_path / "out", tmp_path / "cache"
    assert compare.main(TINY + ["--data", str(root), "--out", str(out),
                                "--cache-dir", str(cache), "--workers", "2"]) == 0
    rows = read_rows(out)
    assert sorted(r["fold"] for r in rows) == [1, 2, 3, 4, 5]   # every fold by default
    assert all("error" not in r and r["dataset"] == "MSLR-mini" for r in rows)
    assert "# Comparison on MSLR-mini" in (out / "compare.md").read_text()
    assert len(list(cache.glob("*.npz"))) == 15
    # the bundled MQ2008's last fold, which used to need files outside the repository
    out5 = tmp_path / "mq2008"
    assert compare.main(TINY + ["--folds", "5", "--out", str(out5), "--workers", "2"]) == 0
    assert [r["fold"] for r in read_rows(out5)] == [5]


def test_defaults_on_a_yahoo_style_set(tmp_path):
    rng = np.random.default_rng(3)
    for s in ("set1", "set2"):
        for split, n in (("train", 20), ("valid", 6), ("test", 6)):
            write_lines(tmp_path / "ltrc_yahoo" / f"{s}.{split}.txt", letor_lines(rng, n))
    out = tmp_path / "out"
    defaults.main(["--data", str(tmp_path / "ltrc_yahoo" / "set1"), "--seeds", "0",
                   "--boosters", "lightgbm", "--methods", "native LambdaMART", "--max-trees",
                   "3", "--out", str(out), "--cache-dir", str(tmp_path / "cache")])
    rows = [json.loads(line)
            for line in (out / "defaults_lightgbm.jsonl").read_text().splitlines()]
    assert {(r["fold"], r["target"]) for r in rows} == {(1, "NDCG@5"), (1, "MRR")}
    assert (out / "defaults_lightgbm.md").read_text().startswith("# ltrc_yahoo-set1 at")


def test_a_set_without_validation_files_holds_out_a_fixed_fifth_of_train(tmp_path):
    root = tmp_path / "istella-like"
    rng = np.random.default_rng(4)
    write_lines(root / "train.txt", letor_lines(rng, 30, first_qid=1, max_label=2))
    write_lines(root / "test.txt.gz", letor_lines(rng, 5, first_qid=100, max_label=3))
    dataset = _data.open_data_folder(root, tmp_path / "cache")
    split = _data.load_split(dataset, 1)
    assert (split.train.n_queries, split.valid.n_queries) == (24, 6)
    assert not set(split.train.qid) & set(split.valid.qid)
    assert split.grade_max == 3   # the largest label of the fold's files
    again = _data.load_split(_data.open_data_folder(root, tmp_path / "cache"), 1)
    assert np.array_equal(again.valid.qid, split.valid.qid)
    assert "random 20% of the train queries" in _data.validation_note(dataset)


def test_data_folder_is_its_name_and_pickles(tmp_path):
    import pickle

    dataset = _data.open_data_folder(write_fold_folder(tmp_path / "web", n_folds=2),
                                     tmp_path / "cache")
    assert dataset == "web" and _data.dataset_folds(dataset) == [1, 2]
    back = pickle.loads(pickle.dumps(dataset))
    assert back == "web" and back.layout == dataset.layout and back.cache_dir == dataset.cache_dir
    with pytest.raises(SystemExit, match="--folds 3: web has folds 1 2"):
        compare.main(TINY + ["--data", str(tmp_path / "web"), "--folds", "3",
                             "--out", str(tmp_path / "out")])


def one_fold_folder(root, seed=6):
    """train/vali/test directly in ``root`` (one fold), a few queries each."""
    rng = np.random.default_rng(seed)
    for split, n in (("train", 12), ("vali", 4), ("test", 4)):
        write_lines(root / f"{split}.txt", letor_lines(rng, n, first_qid=100 * len(split)))
    return root


def no_training(monkeypatch):
    """Make any training fail the test: the checks must come first."""
    from benchmarks import _trials

    def trainer(*args, **kwargs):
        raise AssertionError("a trial trained")

    for booster in list(_trials.TRAINERS):
        monkeypatch.setitem(_trials.TRAINERS, booster, trainer)


COMMANDS = {
    "compare": lambda argv: compare.main(TINY + argv),
    "ablation": lambda argv: ablation.main(TINY[:-4] + argv),   # no --methods/--targets
    "defaults": lambda argv: defaults.main(["--seeds", "0", "--boosters", "lightgbm",
                                            "--max-trees", "3", "--no-progress"] + argv),
}


@pytest.mark.parametrize("command", list(COMMANDS))
@pytest.mark.parametrize("split, text", [("vali", ""), ("test", ""), ("train", "# no data\n")])
def test_a_split_file_without_data_is_refused_before_any_training(tmp_path, monkeypatch,
                                                                   command, split, text):
    root = one_fold_folder(tmp_path / "web")
    (root / f"{split}.txt").write_text(text)
    no_training(monkeypatch)
    out = tmp_path / "out"
    with pytest.raises(SystemExit, match=rf"--data .*web: .*web/{split}\.txt has no data line "
                                         r".*re-download or re-create it"):
        COMMANDS[command](["--data", str(root), "--out", str(out),
                           "--cache-dir", str(tmp_path / "cache")])
    assert not list(out.glob("*.jsonl"))   # nothing recorded


def test_a_truncated_gzip_train_file_is_named(tmp_path, monkeypatch):
    root = tmp_path / "web"
    rng = np.random.default_rng(7)
    path = write_lines(root / "train.txt.gz", letor_lines(rng, 300))
    path.write_bytes(path.read_bytes()[:-40])   # the end of a download missing
    for split in ("vali", "test"):
        write_lines(root / f"{split}.txt", letor_lines(rng, 4, first_qid=1000))
    no_training(monkeypatch)
    with pytest.raises(ValueError, match=r"truncated gzip file .*web/train\.txt\.gz .*"
                                         "re-download it, or re-compress"):
        compare.main(TINY + ["--data", str(root), "--out", str(tmp_path / "out"),
                             "--cache-dir", str(tmp_path / "cache")])


def test_defaults_records_no_nan_when_no_test_query_has_a_relevant_document(tmp_path):
    root = one_fold_folder(tmp_path / "web")
    write_lines(root / "test.txt", letor_lines(np.random.default_rng(8), 4, max_label=0))
    out = tmp_path / "out"
    with pytest.raises(ValueError, match="lightgbm native LambdaMART NDCG@5 fold 1 seed 0: no "
                                         "test query has a relevant document"):
        COMMANDS["defaults"](["--data", str(root), "--out", str(out), "--methods",
                              "native LambdaMART", "--cache-dir", str(tmp_path / "cache")])
    assert not list(out.glob("*.jsonl"))


@pytest.mark.parametrize("name, regime", [("longlists", "sparse"), ("longlists_dense", "dense"),
                                          ("longlists_web", "web")])
def test_every_long_list_regime_is_a_benchmark_data_set(name, regime):
    from stochrank_objectives.longlists import REGIMES

    assert _data.LONG_LISTS[name] == regime and _data.BUNDLED[name] == [1, 2, 3, 4, 5]
    split = _data.load_split(name, 2)
    settings = REGIMES[regime]
    assert split.grade_max == len(settings.grade_thresholds)
    assert (split.train.n_queries, split.valid.n_queries, split.test.n_queries) == settings.splits
    assert split.train.X.shape[1] == settings.n_features


def test_defaults_runs_a_real_shaped_long_list_regime(tmp_path):
    defaults.main(["--dataset", "longlists_web", "--folds", "1", "--seeds", "0", "--boosters",
                   "lightgbm", "--methods", "SR-R1soft", "native LambdaMART", "--max-trees", "3",
                   "--depth", "4", "--no-progress", "--out", str(tmp_path)])
    md = (tmp_path / "defaults_lightgbm_depth4.md").read_text()
    assert "| lightgbm | NDCG@5 | SR-R1soft |" in md and "longlists_web" in md
    # the table's command is the one that made it: the methods chosen included
    assert '--depth 4 --methods SR-R1soft "native LambdaMART"`' in md
