"""A fitted ranker's files: saving its booster, and pickling it with a checksum.

A booster's own errors for an unwritable path (XGBoost's with a C++ stack trace) and for damaged
bytes (``std::bad_alloc``, "Flatbuffers model verification failed", or a silently different
model) become the package's own, naming the path or the damage and the fix, with the booster's
exception kept as the ``__cause__``.
"""

from __future__ import annotations

import errno
import hashlib
import os
import pickle
from typing import Any

__all__ = ["save_booster", "packed_state", "unpacked_state"]


def save_booster(booster, fname, booster_name: str) -> None:
    """``booster.save_model(fname)``, an unwritable path raised as an ``OSError`` that names it
    and the fix (``IsADirectoryError``, ``FileNotFoundError``, ``NotADirectoryError``,
    ``PermissionError``, else ``OSError``) with the booster's error as ``__cause__``."""
    try:
        booster.save_model(fname)
    except TypeError:
        raise  # not a path at all: the booster says which types it takes
    except Exception as exc:
        raise unwritable_path_error(fname, booster_name, exc) from exc


def packed_state(state: dict, booster_name: str) -> dict:
    """A ranker's pickled state with ``booster_`` as ``(booster name, its pickle, sha256)``."""
    booster = state.get("booster_")
    if booster is None:
        return state
    data = pickle.dumps(booster, protocol=pickle.HIGHEST_PROTOCOL)
    state = dict(state)
    del state["booster_"]
    state["_booster_pickle"] = (booster_name, data, hashlib.sha256(data).hexdigest())
    return state


def unpacked_state(state: dict, ranker: str) -> dict:
    """The inverse of :func:`packed_state` (a state of the previous format passes as it is)."""
    if "_booster_pickle" not in state:
        return state
    state = dict(state)
    state["booster_"] = _booster_from_pickle(ranker, state.pop("_booster_pickle"))
    return state


#: a file name each booster's native format is usually saved under (for the messages)
_MODEL_FILE = {"LightGBM": "model.txt", "XGBoost": "model.json", "CatBoost": "model.cbm"}


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def unwritable_path_error(fname, booster: str, exc: Exception) -> OSError:
    """The ``OSError`` for a model ``booster`` could not save to ``fname`` (``exc``: its error):
    the reason read from the file system, in the package's words, and the fix."""
    path = os.fspath(fname)
    path = path.decode() if isinstance(path, bytes) else path
    example = _MODEL_FILE.get(booster, "model")
    start = f"could not save the {booster} model to {path!r}"
    folder = os.path.dirname(os.path.abspath(path))
    existing = folder
    while not os.path.exists(existing) and os.path.dirname(existing) != existing:
        existing = os.path.dirname(existing)
    if os.path.isdir(path):
        return IsADirectoryError(errno.EISDIR, f"{start}: it is a folder; pass a file path in "
                                 f"it, e.g. os.path.join({path!r}, {example!r})")
    if not os.path.isdir(existing):
        return NotADirectoryError(errno.ENOTDIR, f"{start}: {existing!r} is a file, not a "
                                  f"folder; choose a path in an existing folder")
    if existing != folder:
        return FileNotFoundError(errno.ENOENT, f"{start}: the folder {folder!r} does not exist; "
                                 f"create it first (os.makedirs({folder!r}, exist_ok=True))")
    if not os.access(folder, os.W_OK | os.X_OK) or (
            os.path.exists(path) and not os.access(path, os.W_OK)):
        what = f"the file {path!r}" if os.path.exists(path) else f"the folder {folder!r}"
        return PermissionError(errno.EACCES, f"{start}: {what} is not writable; save to a "
                               f"folder you can write to")
    return OSError(f"{start}: {booster} said: {_first_line(exc)}; check that the path names "
                   f"a file in an existing, writable folder with space left")


def _booster_from_pickle(ranker: str, packed) -> Any:
    """The booster of a pickled ranker, from ``(booster name, its pickle, sha256)``.

    The checksum is compared before the booster reads a byte: a damaged model would otherwise
    load as a silently different one (LightGBM, XGBoost, CatBoost all did for one flipped
    bit), fail with the booster's internal error or crash the interpreter (XGBoost).
    """
    how = (f"pickle the fitted {ranker} again, or load the model it saved with save_model "
           f"(the booster's native format)")
    try:
        booster, data, digest = packed
        intact = hashlib.sha256(data).hexdigest() == digest
    except (TypeError, ValueError) as exc:
        raise pickle.UnpicklingError(f"the pickled {ranker} is damaged or truncated: its "
                                     f"booster entry is not (name, bytes, checksum); {how}"
                                     ) from exc
    if not intact:
        raise pickle.UnpicklingError(
            f"the pickled {ranker} is damaged or truncated: its {booster} model ({len(data)} "
            f"bytes) does not match the checksum written with it, so it was not loaded; {how}")
    try:
        return pickle.loads(data)
    except ImportError:
        raise  # the booster is not installed: its own message says which
    except Exception as exc:
        raise pickle.UnpicklingError(
            f"the pickled {ranker} could not be restored: {booster} could not restore its "
            f"model ({_first_line(exc)}), although the bytes match their checksum: it was "
            f"probably written by another {booster} version; {how}") from exc

