"""The one writer of exported files: atomic, so a failed write leaves no partial file.

Every export target that writes a file (today: :meth:`~._vespa.VespaModel.save`) writes it
with :func:`write_atomic`: the bytes go to a temporary file in the same folder, which is
flushed to disk and then renamed over the destination (``os.replace``, atomic on POSIX and
Windows within one file system). A failure (a full disk, a missing permission) removes the
temporary file, leaves any earlier file at the path as it was, and raises an ``OSError`` that
names the path, with the operating system's error as ``__cause__``.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path

__all__ = ["write_atomic"]

_CHUNK = 1 << 16
_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0)


def _temporary(path: Path) -> tuple[int, str]:
    """A new file beside ``path``, open for writing, with the permissions a plain ``open``
    would give (``0o666`` less the umask)."""
    while True:
        name = str(path.with_name(f".{path.name}.{secrets.token_hex(6)}.tmp"))
        try:
            return os.open(name, _FLAGS, 0o666), name
        except FileExistsError:
            continue


def write_atomic(path, data: bytes | str) -> Path:
    """Write ``data`` (text is UTF-8 encoded) to ``path`` atomically; returns the path.

    Example::

        write_atomic("my-app/models/stochrank.json", json.dumps(trees))

    Args:
      path: the file to write (its folder is created if needed).
      data: the file's bytes, or text to encode as UTF-8.

    Returns:
      ``path`` as a :class:`pathlib.Path`.

    Raises:
      OSError: naming ``path`` (same ``errno``), from the operating system's error.
    """
    path = Path(path)
    payload = data.encode("utf-8") if isinstance(data, str) else bytes(data)
    temporary = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, temporary = _temporary(path)
        try:
            view = memoryview(payload)
            while view:
                view = view[os.write(fd, view[:_CHUNK]):]
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(temporary, path)
    except OSError as error:
        if temporary is not None:
            try:
                os.unlink(temporary)
            except OSError:
                pass
        reason = error.strerror or str(error)
        raise OSError(error.errno, f"cannot write the exported file {path}: {reason} (nothing "
                      "was written there; free space or pick another folder, then save again)",
                      str(path)) from error
    return path
