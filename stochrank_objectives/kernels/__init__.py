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
* ``_common`` -- shared helpers (stable orders, safe sigmoids, DCG discounts).
"""

import contextlib

import numba

# Below this many documents a parallel region costs more to start (waking the worker threads,
# which on a busy machine can take milliseconds) than the work it parallelises.
SERIAL_BELOW_DOCS = 2048


@contextlib.contextmanager
def threads_for(n_docs: int, n_queries: int | None = None):
    """Run the enclosed kernels on no more threads than can work: one for small inputs, at most
    ``n_queries`` (the kernels give each query to one thread), else numba's current count.

    A single large query thus runs serially: its parallel region would only wake an idle
    worker and wait for it, which on a busy machine costs a scheduler time slice (measured:
    a 10k-document NDCG query took 41 ms on 2 threads against 10 ms on one).
    Results do not depend on the thread count (every query is computed by one thread and the
    noise is keyed by query), so this only changes speed.
    """
    previous = numba.get_num_threads()
    wanted = 1 if n_docs < SERIAL_BELOW_DOCS else previous
    if n_queries is not None:
        wanted = max(1, min(wanted, n_queries))
    if wanted >= previous:
        yield
        return
    numba.set_num_threads(wanted)
    try:
        yield
    finally:
        numba.set_num_threads(previous)
