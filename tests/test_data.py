"""Bundled data sets: every MQ2008 fold rebuilt from the bundled Fold 1, row for row, and
LightGBM's lambdarank sample, both without anything outside the package."""

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from stochrank_objectives.data import (load_lightgbm_lambdarank, load_mq2008,
                                       load_svmlight_ranking, mq2008_parts)

REPO = Path(__file__).resolve().parents[1]
# sha256 (16 hex) of X, y, qid and query_offsets (dtype, shape, bytes) of each released file,
# recorded from the LETOR 4.0 MQ2008 Fold1-Fold5 files (and the LightGBM example files)
MQ2008_CHECKSUMS = {
    (1, "train"): "3956419e3929c4c1", (1, "vali"): "dc8fb936cf4a44c0",
    (1, "test"): "7c4a856ff32008d3", (2, "train"): "0c5dfe4e6f1fe431",
    (2, "vali"): "7c4a856ff32008d3", (2, "test"): "d8937437d7c47363",
    (3, "train"): "9ca402516b152608", (3, "vali"): "d8937437d7c47363",
    (3, "test"): "9e37dcf742c548ff", (4, "train"): "943900996127d61d",
    (4, "vali"): "9e37dcf742c548ff", (4, "test"): "cb794cffcafcc5ab",
    (5, "train"): "9519fba7327f02f8", (5, "vali"): "cb794cffcafcc5ab",
    (5, "test"): "dc8fb936cf4a44c0",
}
LAMBDARANK_CHECKSUMS = {"train": "8eace602183e93c9", "test": "d88fc8497e39b99c"}

CHECKSUM_CODE = '''
import hashlib, numpy as np
def digest(d):
    h = hashlib.sha256()
    for a in (d.X, d.y, d.qid, d.query_offsets):
        a = np.ascontiguousarray(a)
        h.update(str(a.dtype).encode()); h.update(str(a.shape).encode()); h.update(a.tobytes())
    return h.hexdigest()[:16]
'''
namespace = {}
exec(CHECKSUM_CODE, namespace)
digest = namespace["digest"]


def released_mq2008_dir():
    """The released folds, where a machine keeps them ($STOCHRANK_DATA or ../shared/data)."""
    for base in (os.environ.get("STOCHRANK_DATA"), REPO.parent / "shared" / "data"):
        if base and (Path(base) / "mq2008" / "Fold5").is_dir():
            return Path(base) / "mq2008"
    return None


def test_parts_rotate_as_in_the_release():
    for k in range(1, 6):
        previous, following = (k - 2) % 5 + 1, [(k + i - 1) % 5 + 1 for i in (1, 2, 3)]
        assert mq2008_parts("vali", k) == mq2008_parts("test", previous)
        assert mq2008_parts("train", k) == [mq2008_parts("test", j)[0] for j in following]
    assert mq2008_parts("train", 1) == [1, 2, 3] and mq2008_parts("test", 1) == [5]


@pytest.mark.parametrize("fold", [1, 2, 3, 4, 5])
def test_every_mq2008_fold_equals_the_release(fold):
    """Same X, y, qid, query order and row order as the released file (recorded checksums;
    and the files themselves where this machine has them)."""
    released = released_mq2008_dir()
    for split in ("train", "vali", "test"):
        mine = load_mq2008(split, fold)
        assert digest(mine) == MQ2008_CHECKSUMS[fold, split], (fold, split)
        if released is not None:
            folder = released / f"Fold{fold}"
            path = next(folder / name for name in (f"{split}.txt", f"{split}.txt.gz")
                        if (folder / name).exists())
            ref = load_svmlight_ranking(path, n_features=46)
            for name in ("X", "y", "qid", "query_offsets"):
                assert np.array_equal(getattr(mine, name), getattr(ref, name)), name
    assert load_mq2008("test", fold).n_queries + load_mq2008("vali", fold).n_queries + \
        load_mq2008("train", fold).n_queries == 784


def test_lightgbm_sample_is_bundled():
    for split in ("train", "test"):
        assert digest(load_lightgbm_lambdarank(split)) == LAMBDARANK_CHECKSUMS[split]


def test_benchmark_data_loads_on_a_clone_with_nothing_beside_it(tmp_path):
    """A copy of the repository's code alone (no data folder next to it, no environment
    variable) loads all five MQ2008 folds and the LightGBM sample for the benchmarks."""
    clone = tmp_path / "clone"
    for package in ("stochrank_objectives", "benchmarks"):
        shutil.copytree(REPO / package, clone / package,
                        ignore=shutil.ignore_patterns("__pycache__", "results"))
    code = CHECKSUM_CODE + '''
from benchmarks._data import load_split
for fold in (1, 2, 3, 4, 5):
    s = load_split("mq2008", fold)
    print(fold, digest(s.train), digest(s.valid), digest(s.test), s.grade_max)
s = load_split("lightgbm_lambdarank", 1)
print("lgb", s.train.n_queries, s.valid.n_queries, s.test.n_queries, s.grade_max)
'''
    env = {k: v for k, v in os.environ.items() if k != "STOCHRANK_DATA"}
    env["PYTHONPATH"] = str(clone)
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, timeout=300,
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-2000:]
    lines = out.stdout.split("\n")
    for fold in range(1, 6):
        assert lines[fold - 1].split() == [str(fold)] + [
            MQ2008_CHECKSUMS[fold, split] for split in ("train", "vali", "test")] + ["2"]
    assert lines[5].split() == ["lgb", "161", "40", "50", "4"]


def test_mq2008_refuses_a_bad_fold_or_split():
    with pytest.raises(ValueError, match="folds 1-5"):
        load_mq2008("train", 6)
    with pytest.raises(ValueError, match="split must be one of"):
        load_mq2008("valid", 1)
