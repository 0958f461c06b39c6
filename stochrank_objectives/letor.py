"""Any LETOR folder: find its folds and split files, parse each file once into a binary cache.

>>> import tempfile, pathlib
>>> root = pathlib.Path(tempfile.mkdtemp()) / "tiny"
>>> for k in (1, 2):
...     (root / f"Fold{k}").mkdir(parents=True)
...     for split in ("train", "vali", "test"):
...         _ = (root / f"Fold{k}" / f"{split}.txt").write_text(
...             "2 qid:1 1:0.5 3:1\\n0 qid:1 2:0.25\\n1 qid:7 3:2\\n")
>>> layout = letor_layout(root)
>>> layout.name, sorted(layout.folds), layout.has_validation
('tiny', [1, 2], True)
>>> fold = load_letor_fold(layout, 2)
>>> fold["train"].X.shape, fold["train"].X.dtype, fold["test"].n_queries
((3, 3), dtype('float32'), 2)

Layouts (``path`` as given to :func:`letor_layout`):

* ``Fold1`` ... ``FoldK`` sub-folders, each with a train, a test and (in every fold or in
  none) a validation file: MSLR-WEB10K/30K, LETOR 3.0/4.0, Istella.
* The split files directly in ``path`` (one fold): e.g. Istella-S or one Yahoo set.
* ``path`` = ``folder/prefix``: the split files of ``folder`` whose name starts with
  ``prefix`` (Yahoo's ``ltrc_yahoo/set1`` picks ``set1.train.txt``, ``set1.valid.txt``,
  ``set1.test.txt`` beside ``set2.*``).

A split's file is the one whose name ends in ``.txt`` or ``.txt.gz`` and contains ``train``,
``vali`` (so also ``valid``, ``validation``) or ``test`` at the start of a word (not after a
letter: ``trainingset.txt`` is train, ``latest.txt`` is not test). Lines are
``label qid:Q i:v ... # comment`` with 1-based, increasing feature indices (any may be missing:
the number of features of a fold is the largest index in its files) and the lines of a query
contiguous.
A file without any data line (empty, or only blank and comment lines) and a truncated or
corrupt ``.gz`` are refused with the file named (:func:`check_letor_files` finds the first kind
from the start of each file, before anything is parsed).

Cache: with ``cache_dir``, each parsed file is kept there as an uncompressed ``.npz`` (float32
features, float64 labels, int64 query ids), keyed by the source's resolved path, size and
modification time (ns): a changed, touched or replaced file is parsed again.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import re
import zipfile
import zlib
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from sklearn.datasets import load_svmlight_file

from .data import RankingData
from .groups import query_offsets_from_qid

__all__ = ["LetorLayout", "letor_layout", "check_letor_files", "load_letor_file",
           "load_letor_fold"]

SPLITS = ("train", "vali", "test")
_SPLIT_PATTERNS = {split: re.compile(rf"(?<![a-z]){split}") for split in SPLITS}
_SUFFIXES = (".txt", ".txt.gz")
_FOLD_DIR = re.compile(r"fold(\d+)$", re.IGNORECASE)
CACHE_VERSION = 1   # bump when the cached arrays change meaning


@dataclass
class LetorLayout:
    """The split files of a LETOR data set: ``folds[k][split]`` (``vali`` None when the set has
    no validation files).

    Example::

        layout = letor_layout("MSLR-WEB30K")   # Fold1..Fold5
        layout.folds[3]["vali"]                # .../MSLR-WEB30K/Fold3/vali.txt

    Args:
      name: the data set's name (its folder's, ``folder-prefix`` for a prefix).
      root: the folder the files were found in.
      folds: fold number -> split -> file.

    Returns:
      A plain record; :func:`load_letor_fold` reads it.
    """

    name: str
    root: Path
    folds: dict = field(default_factory=dict)

    @property
    def has_validation(self) -> bool:
        return all(files["vali"] is not None for files in self.folds.values())


def _is_split_file(name: str, split: str) -> bool:
    name = name.lower()
    return name.endswith(_SUFFIXES) and _SPLIT_PATTERNS[split].search(name) is not None


def _split_files(folder: Path, prefix: str = "") -> dict:
    """split -> list of matching files of ``folder`` (names starting with ``prefix``)."""
    files = sorted(p for p in folder.iterdir() if p.is_file() and p.name.startswith(prefix))
    return {split: [p for p in files if _is_split_file(p.name[len(prefix):], split)]
            for split in SPLITS}


def _pick(found: dict, where: str, root: Path) -> dict:
    picked = {}
    for split, files in found.items():
        if len(files) > 1:
            names = ", ".join(p.name for p in files)
            raise ValueError(f"several {split} files in {where} ({names}): keep one, or pass "
                             f"{root}/<prefix> (e.g. {root}/set1) to choose the files whose "
                             "name starts with <prefix>")
        picked[split] = files[0] if files else None
    return picked


def letor_layout(path) -> LetorLayout:
    """Find the folds and split files of a LETOR data set (layouts: see the module docstring).

    Example::

        letor_layout("MSLR-WEB10K").folds.keys()   # dict_keys([1, 2, 3, 4, 5])
        letor_layout("ltrc_yahoo/set1").name         # 'ltrc_yahoo-set1'

    Args:
      path: a folder with ``Fold1..FoldK`` or split files, or ``folder/prefix``.

    Returns:
      :class:`LetorLayout`. Raises ``FileNotFoundError`` naming the missing file (train and
      test in every fold; validation in every fold or none) and ``ValueError`` when a split
      has several candidate files.
    """
    path = Path(path).expanduser()
    if path.is_dir():
        root, prefix = path.resolve(), ""
        name = root.name
    elif path.parent.is_dir() and path.name:
        root, prefix = path.parent.resolve(), path.name
        name = f"{root.name}-{prefix}"
    else:
        raise FileNotFoundError(f"--data {path}: no such folder")
    fold_dirs = {}
    if not prefix:
        for sub in root.iterdir():
            match = _FOLD_DIR.match(sub.name)
            if match and sub.is_dir():
                fold_dirs[int(match.group(1))] = sub
    if fold_dirs:
        folds = {k: _pick(_split_files(d), d.name, root) for k, d in sorted(fold_dirs.items())}
    else:
        found = _split_files(root, prefix)
        if not any(found.values()):
            raise FileNotFoundError(
                f"no LETOR data in {path}: expected Fold1..FoldK/{{train,vali,test}}.txt[.gz] "
                "or files named like train.txt / vali.txt / test.txt (a .txt or .txt.gz name "
                f"containing train, vali or test){' starting with ' + prefix if prefix else ''}")
        folds = {1: _pick(found, str(root), root)}
    with_vali = [k for k, files in folds.items() if files["vali"] is not None]
    for k, files in folds.items():
        required = ("train", "vali", "test") if with_vali else ("train", "test")
        for split in required:
            if files[split] is None:
                where = f"Fold{k}/" if fold_dirs else prefix
                raise FileNotFoundError(f"{where}{split}.txt(.gz) not found in {root}"
                                        + (f" (folds {with_vali} have one)" if split == "vali"
                                           else ""))
    return LetorLayout(name, root, folds)


# ------------------------------------------------------------------------------ bad lines
def _open_text(path: Path):
    opener = gzip.open if path.name.endswith(".gz") else open
    return opener(path, "rt", encoding="utf-8", errors="replace")


# What the gzip module raises for a cut download (EOFError) or damaged bytes: neither names the
# file, so the readers turn them into a ValueError that does.
_GZIP_ERRORS = (EOFError, zlib.error, gzip.BadGzipFile)


def _gzip_error(path: Path, exc: Exception) -> ValueError:
    what = "truncated" if isinstance(exc, EOFError) else "corrupt"
    return ValueError(f"{what} gzip file {path} ({exc}): re-download it, or re-compress the "
                      "text file (gzip -k FILE)")


def _no_data(path: Path) -> str:
    return (f"{path} has no data line (it is empty, or holds only blank and comment lines): "
            "re-download or re-create it")


def _has_data_line(path: Path) -> bool:
    """Whether ``path`` has a line that is not blank or a comment (reads up to that line)."""
    try:
        with _open_text(path) as handle:
            return any(line.split("#", 1)[0].strip() for line in handle)
    except _GZIP_ERRORS as exc:
        raise _gzip_error(path, exc) from None


def check_letor_files(layout: LetorLayout, folds: Iterable[int] | None = None) -> None:
    """Refuse a split file without any data line, before anything is parsed or trained.

    Only the start of each file is read (up to its first data line), so this is cheap on the
    largest sets; bad lines further down are found by :func:`load_letor_file`.

    Example::

        check_letor_files(letor_layout("MSLR-WEB30K"), folds=[1, 2])

    Args:
      layout: from :func:`letor_layout`.
      folds: the fold numbers to check (default: all of ``layout.folds``).

    Returns:
      None. Raises ``ValueError`` naming the first file that is empty (or holds only blank and
      comment lines) or whose gzip stream cannot be read, with what to do about it.
    """
    for fold in sorted(layout.folds) if folds is None else folds:
        for split, path in layout.folds[fold].items():
            if path is not None and not _has_data_line(path):
                hint = (" (or delete the validation file of every fold: a set may have none)"
                        if split == "vali" else "")
                raise ValueError(_no_data(path) + hint)


def _line_problem(tokens: list) -> str | None:
    """What is wrong with one data line's tokens (``None`` if nothing)."""
    previous_index = 0
    try:
        label = float(tokens[0])
    except ValueError:
        return f"label {tokens[0]!r} is not a number"
    if not np.isfinite(label) or label < 0:
        return f"label {tokens[0]} is not a finite number >= 0"
    if len(tokens) < 2 or not re.fullmatch(r"qid:-?\d+", tokens[1]):
        return "the second field must be qid:<integer>"
    for token in tokens[2:]:
        index, sep, value = token.partition(":")
        if not sep or not index.isdigit():
            return f"feature {token!r} is not <index>:<value>"
        try:
            float(value)
        except ValueError:
            return f"feature {token!r} has a value that is not a number"
        if int(index) < 1:
            return f"feature index {index}: indices start at 1"
        if int(index) <= previous_index:
            return f"feature index {index} after {previous_index}: indices must increase"
        previous_index = int(index)
    return None


def _first_bad_line(path: Path) -> str:
    """``path, line N: what is wrong: the line`` for the first bad line of a LETOR file."""
    finished: set[str | None] = set()  # query ids already left behind
    current: str | None = None  # the current one
    with _open_text(path) as handle:
        for number, line in enumerate(handle, start=1):
            tokens = line.split("#", 1)[0].split()
            if not tokens:
                continue
            problem = _line_problem(tokens)
            if problem is None and tokens[1] != current:
                if tokens[1] in finished:
                    problem = (f"query {tokens[1]} appears again after other queries (the "
                               "lines of a query must be contiguous)")
                finished.add(current)
                current = tokens[1]
            if problem:
                return f"{path}, line {number}: {problem}: {line.strip()[:80]!r}"
    return f"{path}: not a LETOR/svmlight file"


# ---------------------------------------------------------------------------- parse + cache
def _parse(path: Path):
    """Features (float32, dense, width = the largest index), labels and query ids of a file."""
    try:
        try:
            X, y, qid = load_svmlight_file(str(path), dtype=np.float32, query_id=True,
                                           zero_based=False)
        except ValueError:
            raise ValueError(_first_bad_line(path)) from None
    except _GZIP_ERRORS as exc:
        raise _gzip_error(path, exc) from None
    if y.size == 0:   # svmlight reads an empty file as 0 rows: no query to train or score on
        raise ValueError(_no_data(path))
    runs = np.count_nonzero(np.diff(qid)) + 1 if qid.size else 0
    if (qid.size != y.size or not np.all(np.isfinite(y)) or np.any(y < 0)
            or runs != np.unique(qid).size):
        raise ValueError(_first_bad_line(path))
    return X.toarray(), y.astype(np.float64), qid.astype(np.int64)


def _source_key(path: Path) -> str:
    stat = path.stat()
    return json.dumps({"path": str(path), "size": stat.st_size, "mtime_ns": stat.st_mtime_ns,
                       "version": CACHE_VERSION}, sort_keys=True)


def _cache_file(path: Path, cache_dir: Path) -> Path:
    digest = hashlib.sha256(str(path).encode()).hexdigest()[:16]
    return cache_dir / f"{path.parent.name}-{path.name}-{digest}.npz"


def load_letor_file(path, cache_dir=None):
    """One LETOR file as ``(X float32, y float64, qid int64)``, from the cache when it is fresh.

    Example::

        X, y, qid = load_letor_file("MSLR-WEB30K/Fold1/train.txt", cache_dir="cache")
        # first call: parsed and cached; later calls: read back (about 100x faster)

    Args:
      path: a ``.txt`` or ``.txt.gz`` LETOR file.
      cache_dir: folder of the binary cache (created; its ``.gitignore`` ignores it); None
        parses every time.

    Returns:
      The arrays; ``X`` has as many columns as the file's largest feature index. Raises
      ``ValueError`` naming the file: with the line number of the first bad line, for a file
      without any data line, and for a truncated or corrupt ``.gz``.
    """
    path = Path(path).resolve()
    if not path.is_file():
        raise FileNotFoundError(f"LETOR file not found: {path}")
    if cache_dir is None:
        return _parse(path)
    cache_dir = Path(cache_dir)
    cached, key = _cache_file(path, cache_dir), _source_key(path)
    if cached.exists():
        try:
            with np.load(cached, allow_pickle=False) as stored:
                if str(stored["source"]) == key:
                    return stored["X"], stored["y"], stored["qid"]
        except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile):
            pass   # a cut or foreign file: parse again
    X, y, qid = _parse(path)
    cache_dir.mkdir(parents=True, exist_ok=True)
    ignore = cache_dir / ".gitignore"
    if not ignore.exists():
        ignore.write_text("*\n")
    # write then rename, so that a concurrent reader never sees half a file
    partial = cached.with_name(f"{cached.name}.{os.getpid()}.tmp.npz")
    np.savez(partial, X=X, y=y, qid=qid, source=np.array(key))
    os.replace(partial, cached)
    return X, y, qid


def load_letor_fold(layout: LetorLayout, fold: int, cache_dir=None) -> dict:
    """The splits of one fold with one feature count (the largest index in the fold's files).

    Example::

        splits = load_letor_fold(letor_layout("MSLR-WEB30K"), 1, cache_dir="cache")
        splits["train"].X.shape   # (2270296, 136)

    Args:
      layout: from :func:`letor_layout`.
      fold: a fold number of ``layout.folds``.
      cache_dir: as in :func:`load_letor_file`.

    Returns:
      ``{"train", "vali", "test"}`` -> :class:`~stochrank_objectives.data.RankingData`
      (``vali`` None when the set has no validation files).
    """
    if fold not in layout.folds:
        raise ValueError(f"fold {fold} not in {layout.root} (folds: {sorted(layout.folds)})")
    parsed = {split: load_letor_file(path, cache_dir)
              for split, path in layout.folds[fold].items() if path is not None}
    n_features = max(X.shape[1] for X, _, _ in parsed.values())
    splits = dict.fromkeys(SPLITS)
    for split, (X, y, qid) in parsed.items():
        if X.shape[1] < n_features:
            X = np.pad(X, ((0, 0), (0, n_features - X.shape[1])))
        splits[split] = RankingData(X, y, qid, query_offsets_from_qid(qid))
    return splits
