"""Numba kernels over grouped arrays (no booster imports here), one module per concern:

* ``ccs`` -- the StochasticRank estimator (CCS), a subpackage; its docstring holds the formulas:
  ``ccs.gaussian`` (density, conditional law), ``ccs.noisy_order`` (sort or top-k selection
  of the noisy scores), ``ccs.gauss_transform`` (one-sided Gauss transforms),
  ``ccs.fast_sums`` (the per-document sums through them), ``ccs.gradient`` (the driver);
* ``noise_scale`` -- the per-query noise scale and the gradient's centring and radial
  correction (Scale-Free Acceleration, relative smoothing);
* ``reinforce`` -- the REINFORCE (score-function) estimator, the ablation baseline;
* ``dcgrr`` -- DCG-RR's closed-form CCS (StochasticRankDCGRR);
* ``metrics`` -- metric values with tie policies;
* ``pairwise`` -- pairwise lambdas: LambdaMART, LambdaLoss, the LightGBM/XGBoost emulations;
* ``smooth_rank`` -- smooth-rank losses: ApproxNDCG, ListNet, SmoothNDCG;
* ``yetirank`` -- YetiRank / YetiLoss: noisy orders, pair weights, pairwise-logistic derivatives;
* ``stable_order`` -- the descending stable orders of YetiRank's noisy scores (a bucket sort,
  merge sort as fallback);
* ``rng`` -- the counter-based Gaussian, Gumbel and logistic noise streams;
* ``common`` -- shared helpers (stable orders, safe sigmoids, DCG discounts).
"""

import contextlib
import signal
import threading

import numba

try:  # the C functions behind signal.signal / signal.getsignal, without their enum conversions
    # (about 2 us each, a Python exception per callable handler): 12 us of the 15 us that each
    # kernel call's threads_for took on 20k documents
    from _signal import getsignal as _getsignal
    from _signal import signal as _set_signal
except ImportError:  # another Python implementation: the public wrappers
    _getsignal, _set_signal = signal.getsignal, signal.signal

# Below this many documents a parallel region costs more to start (waking the worker threads,
# which on a busy machine can take milliseconds) than the work it parallelises.
SERIAL_BELOW_DOCS = 2048


@contextlib.contextmanager
def sigint_deferred():
    """Hold a Ctrl-C that arrives while the enclosed kernels run; raise it when they are done.

    Python runs a signal's handler at the next bytecode, and Numba's nopython code runs none.
    A SIGINT arriving while a kernel runs was thus handled where the kernel returns: boxing each
    array it returns calls back into Python (``numba.core.serialize._numba_unpickle``) without
    checking for an exception, and the ``KeyboardInterrupt`` raised there surfaced as
    ``SystemError: CPUDispatcher(<yetirank_grad_hess>) returned a result with an exception
    set``, or was lost, leaving a NULL in the returned tuple (a segmentation fault when used).
    In the block a SIGINT is only recorded; on leaving it, the handler it replaced is called
    with it (Python's default raises ``KeyboardInterrupt``; a ranker's recorder records it
    first), so Ctrl-C stops the caller at the end of the kernel calls. Only in the main thread
    (the only one where Python runs handlers and may set them) and over a Python-level handler
    (not ``SIG_IGN``/``SIG_DFL``); elsewhere the block runs as it is.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = _getsignal(signal.SIGINT)
    if not callable(previous):
        yield
        return
    held: list = []

    def hold(signum, frame):
        held.append(frame)

    _set_signal(signal.SIGINT, hold)
    try:
        yield
    finally:
        if _getsignal(signal.SIGINT) is hold:
            _set_signal(signal.SIGINT, previous)
        if held:
            previous(signal.SIGINT, held[0])


@contextlib.contextmanager
def threads_for(n_docs: int, n_queries: int | None = None):
    """Run the enclosed kernels on no more threads than can work: one for small inputs, at most
    ``n_queries`` (the kernels give each query to one thread), else numba's current count.

    A single large query thus runs serially: its parallel region would only wake an idle
    worker and wait for it, which on a busy machine costs a scheduler time slice (measured:
    a 10k-document NDCG query took 41 ms on 2 threads against 10 ms on one).
    Results do not depend on the thread count (every query is computed by one thread and the
    noise is keyed by query), so this only changes speed. A Ctrl-C during the block is raised
    at its end (:func:`sigint_deferred`: a kernel returning arrays cannot take it).
    """
    previous = numba.get_num_threads()
    wanted = 1 if n_docs < SERIAL_BELOW_DOCS else previous
    if n_queries is not None:
        wanted = max(1, min(wanted, n_queries))
    with sigint_deferred():
        if wanted >= previous:
            yield
            return
        numba.set_num_threads(wanted)
        try:
            yield
        finally:
            numba.set_num_threads(previous)
