"""Whether a file is a whole LightGBM text model file, read before LightGBM reads it.

LightGBM 4.7's loader aborts the process on a model file cut inside a tree, so the ranker's
``init_model=`` path is checked here first (:func:`model_file_damage`).

Example::

    model_file_damage(open("model.txt", "rb").read())   # None for a whole file
"""

from __future__ import annotations

import json

__all__ = ["model_file_damage"]


def _line_at(text: bytes, marker: bytes, start: int = 0) -> int:
    """The offset of the first line of ``text`` (from ``start``, a line start) beginning with
    ``marker``, or -1."""
    if text.startswith(marker, start):
        return start
    found = text.find(b"\n" + marker, start)
    return -1 if found < 0 else found + 1


def model_file_damage(text: bytes) -> str | None:
    """Why the bytes ``text`` are not a whole LightGBM text model file (``save_model``'s), as
    a phrase after the file's name ("is not a LightGBM model file: ...", "is a damaged or
    truncated LightGBM model file: ..."), or None for a whole one.

    LightGBM's loader aborts the process on a file cut inside a tree ("terminate called without
    an active exception": its parse error is thrown inside an OpenMP loop), and raises its
    internal "Unknown model format" for any other file. Checked here, in one pass over the
    bytes: the first line ``tree``; every tree where the header's ``tree_sizes`` (byte counts)
    puts it, starting ``Tree=<i>``, and the ``end of trees`` line right after the last; a
    ``parameters:`` section closed by ``end of parameters``; and the Python package's last line,
    ``pandas_categorical:<JSON>``, whole. A cut after ``end of trees`` that leaves no section
    half-written keeps every tree, and LightGBM loads the same model from it.
    """
    if not text.strip():
        return "is not a LightGBM model file: the file is empty"
    newline = text.find(b"\n")
    first = (text if newline < 0 else text[:newline]).strip()
    if first != b"tree":
        if text.lstrip()[:1] in (b"{", b"["):
            return ("is not a LightGBM model file: it holds JSON (e.g. an XGBoost model, or "
                    "LightGBM's dump_model() output, which LightGBM cannot load), not LightGBM's "
                    "model text")
        shown = first[:40].decode("utf-8", "backslashreplace")
        return (f"is not a LightGBM model file: it starts with {shown!r}, not LightGBM's model "
                "text (whose first line is 'tree')")
    damaged = "is a damaged or truncated LightGBM model file: "
    trees = _line_at(text, b"Tree=")
    end = _line_at(text, b"end of trees")
    header = text[:min(i for i in (trees, end, len(text)) if i >= 0)]
    sizes_at = _line_at(header, b"tree_sizes=")
    sizes = None
    if sizes_at >= 0:
        line = header[sizes_at + len(b"tree_sizes="):].split(b"\n", 1)[0]
        try:
            sizes = [int(size) for size in line.split()]
        except ValueError:
            return damaged + "its header's tree_sizes is not a list of byte counts"
    if end < 0:
        found = 0 if trees < 0 else text.count(b"\nTree=") + text.startswith(b"Tree=")
        if found == 0:
            return damaged + "it ends in its header, before any tree"
        listed = "" if sizes is None else f" of the {len(sizes)} its header lists"
        return damaged + (f"it ends inside tree {found - 1}{listed}, with no 'end of trees' "
                          "line")
    if sizes is not None:
        at = end if trees < 0 or trees > end else trees
        for i, size in enumerate(sizes):
            if not text.startswith(b"Tree=%d\n" % i, at):
                return damaged + (f"tree {i} of the {len(sizes)} its header lists is not where "
                                  f"its tree_sizes puts it (byte {at})")
            at += size
        if at != end:
            return damaged + ("its 'end of trees' line is not where the header's tree_sizes "
                              f"puts it (byte {at}, found at {end})")
    parameters = _line_at(text, b"parameters:", end)
    closed = -1 if parameters < 0 else _line_at(text, b"end of parameters", parameters)
    if parameters >= 0 and closed < 0:
        return damaged + "its parameters section has no 'end of parameters' line"
    if closed >= 0:
        rest = text[closed:].split(b"\n", 1)[1] if b"\n" in text[closed:] else b""
        last = rest.strip()
        if last and not last.startswith(b"pandas_categorical:"):
            return damaged + "it ends inside its last line (pandas_categorical)"
        if last:
            try:
                json.loads(last[len(b"pandas_categorical:"):])
            except ValueError:
                return damaged + "its last line, pandas_categorical, is cut"
    return None
