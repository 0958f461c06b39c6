"""Ctrl-C that a fit must not lose: a recorder of the SIGINTs delivered while a fit runs.

A ``KeyboardInterrupt`` can land where nothing passes it on: in a ctypes callback of llvmlite
while Numba compiles a kernel (first run, cold cache; Python prints "Exception ignored on
calling ctypes callback function" and goes on), or in a Python function CatBoost calls and never
checks. The fit would then return a model as if there had been no Ctrl-C. The rankers record
each SIGINT of their fit and raise ``KeyboardInterrupt`` at its end if one was lost.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Callable, Iterator

__all__ = ["sigints_recorded"]


@contextlib.contextmanager
def sigints_recorded(on_signal: Callable[[], None] | None = None) -> Iterator[list]:
    """A list that records each SIGINT delivered while the block runs.

    The signal still raises ``KeyboardInterrupt`` as the handler it replaces does (Python's
    default one, or an enclosing recorder's, which records it too: recorders nest), after
    ``on_signal()``. Only in the main thread (the only one that may set handlers) and over
    Python's default handler or another recorder; any other handler is the caller's to keep,
    and the list then stays empty.
    """
    record: list = []
    previous = signal.getsignal(signal.SIGINT)
    if (threading.current_thread() is not threading.main_thread()
            or not (previous is signal.default_int_handler
                    or getattr(previous, "records_sigint", False))):
        yield record
        return

    def handler(signum, frame):
        record.append(signum)
        if on_signal is not None:
            on_signal()
        previous(signum, frame)

    handler.records_sigint = True  # type: ignore[attr-defined]
    signal.signal(signal.SIGINT, handler)
    try:
        yield record
    finally:
        if signal.getsignal(signal.SIGINT) is handler:
            signal.signal(signal.SIGINT, previous)
