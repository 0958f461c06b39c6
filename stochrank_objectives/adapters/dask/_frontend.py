"""The part of the Dask front ends that does not depend on the boosting library.

How it works on the workers. Both libraries concatenate the Dask partitions a worker holds into
one local data set (a *shard*) and call the objective with that shard's labels and query sizes
only. The objective objects shipped to the workers are light, picklable front ends: at the start
of every training run (the callback's first call) each worker thread builds its own
``LGBMObjective`` / ``XGBObjective`` and drives it with that adapter's own callback, so no state
is shared between workers, also not between in-process workers (``processes=False``).

Shrinkage is exactly the single-machine schedule: every worker sets the same per-tree learning
rate ``lr * c^-(t+1)`` and evaluates its objective at ``c^(t+1) * G_t``; the finished model is
scaled by ``c^T`` once. The noise is keyed per partition (:mod:`.seeding`).

Example (what a subclass adds)::

    class DaskLGBMObjective(DaskFrontEnd):
        _adapter_type = LGBMObjective
        def __call__(self, y_true, y_pred, weight, group):
            return self._state()[0](y_true, y_pred, weight, group)
"""

from __future__ import annotations

import copy
import threading
import uuid

from ...sglb import SGLB
from .layout import QueryLayout
from .partitions import refuse_empty_partitions
from .seeding import PartitionSGLB, PartitionSeeded, Segmenter

# Per worker thread: token of the running front end -> (adapter, adapter callback). Thread-local
# because in-process workers share the module, and each must drive its own adapter.
_LOCAL = threading.local()


def _thread_runs() -> dict:
    runs = getattr(_LOCAL, "runs", None)
    if runs is None:
        runs = _LOCAL.runs = {}
    return runs


class DaskFrontEnd:
    """Picklable front end; the real adapter lives per worker thread, per training run.

    Subclasses set ``_adapter_type`` (the single-machine adapter class) and ``_name`` (how to
    pass the callback, for the error message) and forward the library's objective call to
    ``self._state()[0]``.

    Args:
      objective: one of this package's objectives (anything with the ``grad_hess`` protocol).
      sglb: an :class:`~stochrank_objectives.sglb.SGLB` schedule, or None.
      layout: the :class:`~.layout.QueryLayout` of the trained frame, or None.
    """

    _adapter_type: type  # the single-machine adapter class, set by each subclass
    _name = ""

    def __init__(self, objective, sglb: SGLB | None = None, layout: QueryLayout | None = None):
        self._adapter_type(objective, sglb=sglb)  # validates both
        if layout is not None and not isinstance(layout, QueryLayout):
            raise TypeError(f"layout must be a QueryLayout or None, got {type(layout).__name__}")
        if layout is not None:   # the trained frame has the layout's partitions: refuse now
            refuse_empty_partitions(layout.sizes, "frame of the layout")
        self.objective = objective
        self.sglb = sglb
        self.layout = layout
        self._token = uuid.uuid4().hex

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.objective!r}, sglb={self.sglb!r})"

    def _start(self):
        """Build this worker thread's adapter and callback for a new training run."""
        segmenter = Segmenter(self.layout)
        sglb = None if self.sglb is None else PartitionSGLB.from_sglb(self.sglb, segmenter)
        adapter = self._adapter_type(PartitionSeeded(copy.deepcopy(self.objective), segmenter),
                                     sglb=sglb)
        runs = _thread_runs()
        runs.clear()  # one run per worker thread at a time; drop finished ones
        runs[self._token] = (adapter, adapter.callback())
        return runs[self._token]

    def _state(self):
        state = _thread_runs().get(self._token)
        if state is None:
            raise RuntimeError(f"{type(self).__name__} needs its callback on the workers: pass "
                               f"{self._name}")
        return state

    def _stop(self):
        return _thread_runs().pop(self._token, None)
