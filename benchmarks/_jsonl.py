"""Result files of one JSON object per line, written so that a study killed at any moment leaves
every finished row readable: one ``write`` per line, append-only, and a torn last line (a kill in
the middle of that write) skipped on reading and closed off before the next row is appended.

Example::

    append_row(path, {"hash": "ab12", "test_NDCG@5": 0.71})
    rows = read_rows(path)
"""

from __future__ import annotations

import json
import os
from pathlib import Path


def read_rows(path: Path) -> list:
    """The JSON objects of ``path``, in file order; lines that do not parse (a line torn by a kill)
    are skipped.

    Args:
        path: a ``.jsonl`` file (missing: no rows).

    Returns:
        A list of dicts.
    """
    path = Path(path)
    if not path.exists():
        return []
    rows = []
    for line in path.read_text().splitlines():
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(row, dict):
            rows.append(row)
    return rows


def append_row(path: Path, row: dict) -> None:
    """Append ``row`` as one line with a single ``write`` on an append-only descriptor.

    If the file ends without a newline (its last row was torn by a kill), a newline is written
    first: otherwise the new row would be glued to the torn one and lost with it.

    Args:
        path: the ``.jsonl`` file (created if missing).
        row: a JSON-serialisable dict.
    """
    data = (json.dumps(row) + "\n").encode()
    fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        size = os.fstat(fd).st_size
        if size and os.pread(fd, 1, size - 1) != b"\n":
            data = b"\n" + data
        while data:  # a regular file takes the whole line at once; loop for the rare short write
            data = data[os.write(fd, data):]
    finally:
        os.close(fd)
