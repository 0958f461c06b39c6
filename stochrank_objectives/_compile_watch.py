"""Seeing when Numba compiles, so that a timing can say whether it includes compilation.

Numba announces a ``"numba:compile"`` event only when it really compiles a kernel, not when it
loads one from its on-disk cache (``cache=True``), so counting these events tells a first run
(or a changed kernel) from a warm one honestly, without guessing from the elapsed time.
"""

from __future__ import annotations

import sys
import threading

from numba.core import event

__all__ = ["CompileWatch"]


class CompileWatch(event.Listener):
    """Counts Numba compilations while active; prints ``notice`` once, at the first of them.

    Example::

        with CompileWatch("compiling the Numba kernels (first run only) ...") as watch:
            objective.grad_hess(scores, labels, offsets)
        watch.count  # 0 when every kernel came from Numba's cache

    Args:
      notice: a line printed (to ``stream``) when the first compilation starts, before Numba
        spends its time; ``None`` prints nothing.
      stream: where the notice goes (default ``sys.stdout``).

    Returns:
      as a context manager, itself; ``count`` is the number of compilations seen (kernels
      compiled inside another kernel count too; compilations in other threads as well), and
      ``names`` the qualified names of the functions compiled, in order.
    """

    def __init__(self, notice: str | None = None, stream=None):
        self.notice = notice
        self.stream = stream
        self.count = 0
        self.names: list[str] = []
        self._lock = threading.Lock()  # the boosters may call the objective from their threads

    def on_start(self, event):
        with self._lock:
            self.count += 1
            self.names.append(event.data["dispatcher"].py_func.__qualname__)
            first = self.count == 1
        if first and self.notice is not None:
            print(self.notice, file=self.stream or sys.stdout, flush=True)

    def on_end(self, event):
        pass

    def __enter__(self):
        event.register("numba:compile", self)
        return self

    def __exit__(self, *exc):
        event.unregister("numba:compile", self)
        return False
