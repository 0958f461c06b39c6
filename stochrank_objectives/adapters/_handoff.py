"""The cores handed over between a booster's OpenMP runtime and the kernels' (numba's ``omp``
layer) when the two are separate copies of GNU libgomp, as with XGBoost's Linux wheel.

An OpenMP runtime's idle threads keep spinning on the cores for a while after each parallel
loop (libgomp's default, ``OMP_WAIT_POLICY`` unset). A booster that shares the kernels' runtime
(LightGBM and numba both load the system's ``libgomp.so.1``) hands its threads to the next
kernel loop and back, so nothing spins against anything. XGBoost's wheel ships its own copy
(``xgboost.libs/libgomp-*.so``): then three threads want two cores at every hand-off -- the
booster's idle worker spins while the kernels run, and numba's idle worker spins through the
next tree. Measured (xgboost 3.2.0, 2 threads, 20k documents, YetiLoss with every partner):
XGBoost's tree outside the objective took 6.0 ms instead of 3.9 ms, and the objective 2.0 ms,
which is why running the kernels on one thread (3.3 ms, no idle worker) was faster overall.

:func:`handed_off` puts the idle threads to sleep at the two hand-offs, with the OpenMP 5.0
routine ``omp_pause_resource_all(omp_pause_soft)`` on the calling thread: libgomp then releases
that thread's pool (its threads exit; the next parallel loop starts new ones, tens of
microseconds), and returns an error instead when the caller is inside a parallel region. A pool
belongs to the thread that started it, so concurrent trainings in other threads keep theirs.
Measured as above: 3.9 ms outside the objective and 1.9 ms in it (5.8 ms per tree against 8.0
ms). Nothing else changes: the kernels' results do not depend on their threads.

The hand-off is used only where it is known to help and to be safe: both sides GNU libgomp
(Linux), in two different copies, with ``omp_pause_resource_all`` (GCC 9 or later). CatBoost
runs its own thread pool (no OpenMP), and pausing numba's threads after its objective was
measured not to help (8.6 ms per tree either way), so its adapter does not use it. On a shared
2-core AMD EPYC (20k documents, YetiLoss, 2 threads) the pause did shorten CatBoost's tree
search (3.9 ms instead of 6.8, with no idle worker spinning against it), but the next kernel
re-created the pool on an idle core and took about 10 ms instead of 1.9: 18 ms per tree
against 9.8.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import os
import threading
from collections.abc import Callable, Iterator
from typing import Any

import numba

__all__ = ["RuntimeHandOff", "handed_off", "libgomp_pause"]

OMP_PAUSE_SOFT = 1
"""``omp_pause_soft`` of OpenMP 5.0's ``omp_pause_resource_t``."""


class _DlInfo(ctypes.Structure):
    _fields_ = [("dli_fname", ctypes.c_char_p), ("dli_fbase", ctypes.c_void_p),
                ("dli_sname", ctypes.c_char_p), ("dli_saddr", ctypes.c_void_p)]


def _dladdr() -> Any:
    """``dladdr`` (glibc: in libc since 2.34, in libdl before), or None."""
    for name in (None, ctypes.util.find_library("dl")):
        try:
            function = ctypes.CDLL(name).dladdr
        except (OSError, AttributeError, TypeError):
            continue
        function.argtypes = [ctypes.c_void_p, ctypes.POINTER(_DlInfo)]
        function.restype = ctypes.c_int
        return function
    return None


def _defining_file(address: int) -> str | None:
    """The path of the shared object that defines the code at ``address``, or None."""
    dladdr = _dladdr()
    info = _DlInfo()
    if dladdr is None or not dladdr(address, ctypes.byref(info)) or not info.dli_fname:
        return None
    return os.fsdecode(info.dli_fname)


def libgomp_pause(library: Any) -> tuple[int, Callable[[int], int]] | None:
    """``(address, omp_pause_resource_all)`` as ``library`` (a ``ctypes.CDLL``) resolves the
    routine (its own or a dependency's) when the definition is GNU libgomp's, else None.

    Example::

        pause = libgomp_pause(ctypes.CDLL("libgomp.so.1"))  # (address, function) on Linux

    Args:
      library: a loaded shared object; None gives None.
    """
    if library is None:
        return None
    try:
        function = library.omp_pause_resource_all
    except AttributeError:  # no OpenMP 5.0 runtime behind this library
        return None
    function.argtypes = [ctypes.c_int]
    function.restype = ctypes.c_int
    address = ctypes.cast(function, ctypes.c_void_p).value
    if address is None:
        return None
    path = _defining_file(address)
    if path is None or not os.path.basename(path).startswith("libgomp"):
        return None  # LLVM's or Intel's runtime: its pause is process-wide, not per pool
    return address, function


def _kernels_library() -> tuple[bool, Any]:
    """Whether numba has chosen its threading layer (at its first parallel kernel), and then the
    library of its ``omp`` layer, or None for another layer."""
    try:
        layer = numba.threading_layer()
    except ValueError:  # no parallel kernel has run yet
        return False, None
    if layer != "omp":  # workqueue threads sleep when idle; TBB has its own scheduler
        return True, None
    from numba.np.ufunc import omppool  # type: ignore[attr-defined]  # a compiled module

    return True, ctypes.CDLL(omppool.__file__)


class RuntimeHandOff:
    """Where one booster's OpenMP runtime and the kernels' meet: the two pause routines, found
    on the first hand-off after a kernel ran, or nothing to do (one shared runtime, not GNU
    libgomp, or no OpenMP at all).

    Example::

        XGBOOST = RuntimeHandOff(lambda: xgboost.core._LIB)
        with handed_off(XGBOOST):
            grad, hess = objective.grad_hess(scores, labels, query_offsets)

    Args:
      booster_library: returns the booster's loaded library (``ctypes.CDLL``) or None.
    """

    enabled = True
    """Class-wide switch (a benchmark's A/B); the hand-off changes speed only."""

    def __init__(self, booster_library: Callable[[], Any]) -> None:
        self._booster_library = booster_library
        self._lock = threading.Lock()
        self._resolved = False
        self.booster: Callable[[int], int] | None = None
        self.kernels: Callable[[int], int] | None = None

    def resolve(self) -> None:
        """Find both pause routines (once numba's layer is known); idempotent."""
        with self._lock:
            if self._resolved:
                return
            chosen, kernels = _kernels_library()
            if not chosen:
                return  # try again after the next kernel
            try:
                booster = libgomp_pause(self._booster_library())
            except OSError:
                booster = None
            kernels = libgomp_pause(kernels)
            if booster is not None and kernels is not None and booster[0] != kernels[0]:
                self.booster, self.kernels = booster[1], kernels[1]
            self._resolved = True


@contextlib.contextmanager
def handed_off(handoff: RuntimeHandOff) -> Iterator[None]:
    """Run the enclosed kernels with the booster's idle threads asleep, and put the kernels'
    idle threads to sleep before the booster goes on (see the module docstring)."""
    if not RuntimeHandOff.enabled:
        yield
        return
    if handoff.booster is not None:
        handoff.booster(OMP_PAUSE_SOFT)
    try:
        yield
    finally:
        if not handoff._resolved:
            handoff.resolve()
        if handoff.kernels is not None:
            handoff.kernels(OMP_PAUSE_SOFT)
