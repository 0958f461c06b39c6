"""Numba kernels over grouped arrays (no booster imports here), one module per concern:
metrics with tie policies (``metrics``), the CCS/SFA/REINFORCE gradient estimators (``ccs``),
pairwise lambdas (``pairwise``), smooth ranks (``smooth``), DCG-RR (``dcgrr``), the
counter-based Gaussian and Gumbel noise streams (``rng``) and shared helpers (``_common``)."""

import contextlib

import numba

# Below this many documents a parallel region costs more to start (waking the worker threads,
# which on a busy machine can take milliseconds) than the work it parallelises.
SERIAL_BELOW_DOCS = 2048


@contextlib.contextmanager
def threads_for(n_docs: int):
    """Run the enclosed kernels on one thread for small inputs, else on numba's current count.

    Results do not depend on the thread count (every query is computed by one thread and the
    noise is keyed by query), so this only changes speed.
    """
    if n_docs >= SERIAL_BELOW_DOCS:
        yield
        return
    previous = numba.get_num_threads()
    numba.set_num_threads(1)
    try:
        yield
    finally:
        numba.set_num_threads(previous)
