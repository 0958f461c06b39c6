"""Any LETOR folder: layouts, sparse features, errors naming the file or line, and the parse-once
cache (hit without parsing, invalidated when the source changes)."""

import os

import numpy as np
import pytest

from stochrank_objectives import letor
from stochrank_objectives.letor import letor_layout, load_letor_file, load_letor_fold

from _letor_files import letor_lines, write_fold_folder, write_lines


def test_fold_layout_sparse_features_and_gzip(tmp_path):
    root = write_fold_folder(tmp_path / "MSLR-like")
    layout = letor_layout(root)
    assert layout.name == "MSLR-like" and sorted(layout.folds) == [1, 2, 3, 4, 5]
    assert layout.has_validation
    splits = load_letor_fold(layout, 3)
    # the fold's width is its largest index (fold 3's test goes to 33, train/vali to 12)
    assert {s.X.shape[1] for s in splits.values()} == {33}
    assert splits["train"].X.dtype == np.float32 and splits["train"].n_queries == 24
    assert np.all(splits["train"].X[:, 12:] == 0)
    assert splits["test"].qid[0] == 3400 and splits["test"].query_offsets[-1] == \
        splits["test"].y.size
    with pytest.raises(ValueError, match=r"fold 7 not in .* \(folds: \[1, 2, 3, 4, 5\]\)"):
        load_letor_fold(layout, 7)


def test_flat_layouts_yahoo_prefix_and_letor3_names(tmp_path):
    rng = np.random.default_rng(1)
    yahoo = tmp_path / "ltrc_yahoo"
    for s in ("set1", "set2"):
        for split in ("train", "valid", "test"):
            write_lines(yahoo / f"{s}.{split}.txt", letor_lines(rng, 4))
    with pytest.raises(ValueError, match=r"several train files .*set1.train.txt, "
                                         r"set2.train.txt.*ltrc_yahoo/set1"):
        letor_layout(yahoo)
    layout = letor_layout(yahoo / "set1")
    assert layout.name == "ltrc_yahoo-set1"
    assert {s: p.name for s, p in layout.folds[1].items()} == {
        "train": "set1.train.txt", "vali": "set1.valid.txt", "test": "set1.test.txt"}
    letor3 = tmp_path / "OHSUMED" / "Fold1"
    for name in ("trainingset.txt", "validationset.txt", "testset.txt", "latest_notes.txt"):
        write_lines(letor3 / name, letor_lines(rng, 2))
    files = letor_layout(tmp_path / "OHSUMED").folds[1]
    assert [files[s].name for s in ("train", "vali", "test")] == [
        "trainingset.txt", "validationset.txt", "testset.txt"]


def test_no_validation_files_anywhere_is_allowed(tmp_path):
    root = write_fold_folder(tmp_path / "istella", n_folds=2, splits=("train", "test"))
    layout = letor_layout(root)
    assert not layout.has_validation and load_letor_fold(layout, 2)["vali"] is None


def test_missing_files_are_named(tmp_path):
    root = write_fold_folder(tmp_path / "web", n_folds=5)
    (root / "Fold3" / "vali.txt.gz").unlink()
    with pytest.raises(FileNotFoundError, match=r"Fold3/vali.txt\(.gz\) not found in .*web "
                                                r"\(folds \[1, 2, 4, 5\] have one\)"):
        letor_layout(root)
    (root / "Fold2" / "test.txt.gz").unlink()
    with pytest.raises(FileNotFoundError, match=r"Fold2/test.txt\(.gz\) not found"):
        letor_layout(root)
    with pytest.raises(FileNotFoundError, match="no such folder"):
        letor_layout(tmp_path / "nowhere" / "set1")
    (tmp_path / "empty").mkdir()
    with pytest.raises(FileNotFoundError, match="no LETOR data in .*Fold1..FoldK"):
        letor_layout(tmp_path / "empty")


@pytest.mark.parametrize("bad_line, problem", [
    ("1 qid:2 1:0.5 x:1", "feature 'x:1' is not <index>:<value>"),
    ("1 qid:2 1:0.5 2:abc", "feature .2:abc. has a value that is not a number"),
    ("1 1:0.5 2:1", "the second field must be qid:<integer>"),
    ("1 qid:2 0:0.5", "feature index 0: indices start at 1"),
    ("1 qid:2 3:0.5 2:1", "feature index 2 after 3: indices must increase"),
    ("-1 qid:2 1:0.5", "label -1 is not a finite number >= 0"),
    ("1 qid:1 1:0.5", "query qid:1 appears again"),
])
def test_the_first_bad_line_is_named(tmp_path, bad_line, problem):
    lines = ["2 qid:1 1:0.5 3:1 # doc", "", "0 qid:1 2:0.25", "1 qid:2 3:2", bad_line,
             "1 qid:1 1:0.5 2:1"]
    path = write_lines(tmp_path / "Fold1" / "train.txt.gz", lines)
    with pytest.raises(ValueError, match=rf"train.txt.gz, line 5: {problem}"):
        load_letor_file(path)


def test_cache_is_read_back_without_parsing_and_follows_the_source(tmp_path, monkeypatch):
    path = write_lines(tmp_path / "data" / "train.txt", letor_lines(np.random.default_rng(2), 5))
    cache = tmp_path / "cache"
    calls = []
    parse = letor._parse
    monkeypatch.setattr(letor, "_parse", lambda p: calls.append(p) or parse(p))
    first = load_letor_file(path, cache)
    second = load_letor_file(path, cache)
    assert len(calls) == 1 and (cache / ".gitignore").read_text() == "*\n"
    for a, b in zip(first, second):
        assert np.array_equal(a, b) and a.dtype == b.dtype
    # touched (same content, newer mtime): parsed again
    stat = path.stat()
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))
    load_letor_file(path, cache)
    assert len(calls) == 2
    # changed content (the first label 3, written one second later): parsed again
    lines = path.read_text().splitlines()
    lines[0] = "3" + lines[0][1:]
    path.write_text("\n".join(lines) + "\n")
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 2 * 10**9))
    assert load_letor_file(path, cache)[1][0] == 3 and len(calls) == 3
    assert load_letor_file(path, cache)[1][0] == 3 and len(calls) == 3
    # a cut cache file is parsed again, not an error
    cached = next(cache.glob("*.npz"))
    cached.write_bytes(cached.read_bytes()[:100])
    load_letor_file(path, cache)
    assert len(calls) == 4


@pytest.mark.parametrize("cut", ["truncated", "corrupt", "not gzip"])
def test_a_damaged_gzip_file_is_named(tmp_path, cut):
    path = write_lines(tmp_path / "Fold1" / "train.txt.gz",
                       letor_lines(np.random.default_rng(5), 400))
    data = path.read_bytes()
    if cut == "truncated":   # a download stopped half-way
        data = data[: len(data) // 2]
    elif cut == "corrupt":   # a flipped byte inside the deflate stream
        data = data[:200] + bytes([data[200] ^ 0xFF]) + data[201:]
    else:
        data = b"1 qid:1 1:0.5\n" * 10
    path.write_bytes(data)
    what = "truncated" if cut == "truncated" else "corrupt"
    with pytest.raises(ValueError, match=rf"{what} gzip file .*train\.txt\.gz .*re-download it, "
                                         "or re-compress"):
        load_letor_file(path, tmp_path / "cache")


@pytest.mark.parametrize("text", ["", "\n# only a comment\n\n"])
def test_a_file_without_data_lines_is_named(tmp_path, text):
    root = write_fold_folder(tmp_path / "web", n_folds=2, suffix=".txt")
    (root / "Fold2" / "vali.txt").write_text(text)
    layout = letor_layout(root)
    letor.check_letor_files(layout, [1])   # only the folds asked for are read
    with pytest.raises(ValueError, match=r"Fold2/vali\.txt has no data line .*re-download or "
                                         r"re-create it \(or delete the validation file"):
        letor.check_letor_files(layout)
    with pytest.raises(ValueError, match=r"Fold2/vali\.txt has no data line"):
        load_letor_fold(layout, 2)
    (root / "Fold1" / "train.txt").write_text(text)
    with pytest.raises(ValueError, match=r"Fold1/train\.txt has no data line .*re-create it$"):
        letor.check_letor_files(layout, [1])
