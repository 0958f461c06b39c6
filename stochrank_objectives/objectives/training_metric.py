"""Training surrogates of a metric: the arrays an objective trains on when they are not the
metric's own.

Two levers of :class:`~.objectives.StochasticRank` that reach the documents a top-k metric
leaves without gradient: MRR's ``reach`` (:func:`with_reach`: relevant documents below the
first continue the cascade) and ``min_top_share`` (:func:`training_args`: a query's training
cutoff grows with its length, to cover at least that share of its documents). Both leave the
metric the objective reports (its ``loss``) unchanged.
"""

from __future__ import annotations

import warnings
from dataclasses import replace

import numpy as np

from ..kernels.metrics import ideal_values
from ..metric_spec import KernelArgs, MetricSpec
from ..metric_table import GROWING_CUTOFF_METRICS, MRR_REACH, NDCG_MIN_TOP_SHARE
from ..validation import real

__all__ = ["with_reach", "reach_depth", "reach_kernel_options", "training_args",
           "training_cutoffs", "check_reach", "check_min_top_share", "check_order_can_change",
           "GROWING_CUTOFF_METRICS",
           "MRR_REACH", "NDCG_MIN_TOP_SHARE", "REACH_TAIL"]

# GROWING_CUTOFF_METRICS, MRR_REACH and NDCG_MIN_TOP_SHARE are facts of the metric table
# (stochrank_objectives.metric_table), re-exported here.
_UNIT_INTERVAL = real(ge=0.0, le=1.0)  # reach and min_top_share
#: MRR's reach cascade keeps the relevant documents whose weight ``reach^(j-1)`` is at least
#: this share of the first's (:func:`reach_depth`): the first four at the default reach 0.3
#: (weights 1, 0.3, 0.09, 0.027; the fifth's would be 0.0081). The depth bounds a sample's
#: work to the positions above the next relevant document (benchmarks.kernel_speed)
REACH_TAIL = 1e-2


def reach_depth(reach: float) -> int:
    """How many relevant documents MRR's reach cascade counts: those whose weight
    ``reach^(j-1)`` is at least :data:`REACH_TAIL` (0 = all of them, at ``reach = 1``).

    Example: ``reach_depth(0.3)`` is 4 (``0.3^3 = 0.027``, ``0.3^4 = 0.0081``);
    ``reach_depth(0.0)`` is 1 (MRR).

    Args:
      reach: ``rho`` in [0, 1].

    Returns:
      ``K`` >= 1, or 0 for no depth.
    """
    if reach >= 1.0:
        return 0
    depth, weight = 0, 1.0
    while weight >= REACH_TAIL:
        depth += 1
        weight *= reach
    return depth


def reach_kernel_options(reach: float) -> dict:
    """The :class:`~..kernels.ccs.CCSOptions` fields that train MRR with a positive reach in
    the counting kernel: ``c(h) = reach^h`` for ``h < reach_depth(reach)``, else 0; ``{}`` at
    reach 0 (MRR itself, the cascade kernel)."""
    if reach == 0.0:
        return {}
    return dict(counting=True, count_decay=float(reach), count_depth=reach_depth(reach))


def with_reach(args: KernelArgs, reach: float, query_offsets) -> KernelArgs:
    """MRR's arrays with a reach: a relevant document's continuation is ``reach``, not 0.

    Example:

    >>> spec = MetricSpec.make("MRR")
    >>> offs = np.array([0, 3])
    >>> args = with_reach(spec.kernel_args(np.array([1.0, 0.0, 1.0]), offs), 0.3, offs)
    >>> args.continuation.tolist(), args.ideal.tolist()   # ideal: 1 + 0.3 / 2
    ([0.3, 1.0, 0.3], [1.15])

    In MRR's cascade form (the table of :mod:`.metric_spec`) nothing below the first relevant
    document counts: its continuation ``1 - g`` is 0. With a reach ``rho`` it is
    ``1 - (1 - rho) g``, so the value is ``sum_{j <= K} rho^(j-1) / (p_j + 1)`` over the relevant
    documents in rank order ``j`` at positions ``p_j``: the reciprocal rank of the first,
    ``rho`` times that of the second, and so on -- binary ERR with a satisfaction probability
    ``1 - rho``, rescaled by ``1 / (1 - rho)`` -- up to the depth ``K = reach_depth(rho)``
    (the relevant documents whose weight ``rho^(j-1)`` is at least :data:`REACH_TAIL`; 4 at
    ``rho = 0.3``), so that no breakpoint below the ``(K + 1)``-th relevant document can jump
    and a sample orders only the positions above it. ``rho = 0`` is MRR. A training surrogate
    (the objective's ``reach``): with small smoothing noise a relevant document below the first
    has no MRR gradient at all, and the reach gives it one. The objective trains it through the
    counting kernel (:func:`reach_kernel_options`; the continuation here is the cascade form of
    the same value above the depth).

    Args:
      args: :meth:`MetricSpec.kernel_args` of an MRR spec; reach: ``rho`` in [0, 1];
      query_offsets: the offsets the arrays were built for.

    Returns:
      :class:`KernelArgs` with the new continuation and ideal values (the ideal counts at
      most ``K`` relevant documents; ``args`` when ``reach`` is 0).
    """
    if reach == 0.0:
        return args
    continuation = args.continuation + reach * args.gain   # 1 - g + rho g
    offs = np.asarray(query_offsets, np.int64)
    gain = args.gain
    depth = reach_depth(reach)
    if depth:  # the ideal ranks the relevant documents first; those beyond the depth count 0
        relevant = gain > 0.0
        counted = np.concatenate(([0], np.cumsum(relevant)))
        rank = counted[1:] - np.repeat(counted[offs[:-1]], np.diff(offs))
        gain = np.where(relevant & (rank <= depth), gain, 0.0)
    ideal = ideal_values(gain, continuation, offs, args.position_weights, args.cutoff,
                         args.query_cutoff)
    return args._replace(continuation=continuation, ideal=ideal)


def training_cutoffs(top: int, sizes, min_top_share: float) -> np.ndarray:
    """Each query's training cutoff ``T_q = max(top, ceil(min_top_share * n_q))``.

    Example: ``training_cutoffs(5, np.array([20, 50, 51, 300]), 0.1)`` is ``[5, 5, 6, 30]``.

    Args:
      top: the metric's cutoff ``k``; sizes: the queries' document counts ``n_q``;
      min_top_share: the share of a query's documents its cutoff covers at least, in [0, 1].

    Returns:
      int64 array, one cutoff per query (``top`` where the share asks for less).
    """
    # round first: 0.1 * 120 is 12.000000000000002 in floating point, and its ceiling 13
    wanted = np.ceil(np.round(min_top_share * np.asarray(sizes, np.float64), 9))
    return np.maximum(top, wanted).astype(np.int64)


def training_args(spec: MetricSpec, labels, query_offsets, *, reach: float = 0.0,
                  min_top_share: float = 0.0) -> KernelArgs:
    """The arrays an objective trains on: the metric's, with MRR's reach and each query's
    training cutoff.

    Example:

    >>> spec = MetricSpec.make("NDCG", top=1)
    >>> args = training_args(spec, np.ones(5), np.array([0, 2, 5]), min_top_share=0.5)
    >>> args.query_cutoff.tolist(), args.cutoff   # 1 of 2, and ceil(0.5 x 3) = 2 of 3
    ([1, 2], 2)

    A query of ``n`` documents is trained on the metric at the cutoff ``T_q = max(k,
    ceil(min_top_share * n))`` (:func:`training_cutoffs`; its own ideal value too), so that its
    cutoff covers at least that share of it: with a small smoothing noise the documents far
    below a top-k get almost no gradient -- at equal scores a document lands in the top ``k``
    of ``n`` with probability ``k / n``. Where no query needs more than ``k``, the arrays are
    the metric's own (no per-query cutoffs). MRR's ``reach`` (:func:`with_reach`) applies
    after.

    Args:
      spec: the metric; labels, query_offsets: validated grouped labels and int64 offsets;
      reach: MRR's continuation (0 = none); min_top_share: in [0, 1] (0 = the metric's
        cutoff in every query; checked by the objective: a cutoff and one of
        :data:`GROWING_CUTOFF_METRICS`).

    Returns:
      :class:`KernelArgs`; ``query_cutoff`` is empty unless some query's cutoff grew.
    """
    offs = np.asarray(query_offsets, np.int64)
    args = None
    if min_top_share > 0.0 and spec.top is not None:
        cutoffs = training_cutoffs(spec.top, np.diff(offs), min_top_share)
        if cutoffs.size and cutoffs.max() > spec.top:
            wide = replace(spec, top=int(cutoffs.max()))
            args = wide.kernel_args(labels, offs, query_cutoff=cutoffs)
    if args is None:
        args = spec.kernel_args(labels, offs)
    return with_reach(args, reach, offs)


def check_reach(reach, spec, estimator="ccs"):
    """The reach in use: ``None`` -> ``MRR_REACH`` for MRR with the CCS estimator, else 0; a
    positive one for MRR and CCS only (REINFORCE's cascade kernel has no depth); in [0, 1]."""
    default = spec.row.default_reach
    if reach is None:
        return 0.0 if default is None or estimator != "ccs" else default
    reach = _UNIT_INTERVAL(reach, "reach")
    if reach > 0.0 and default is None:
        raise ValueError(f"reach={reach:g} applies to metric='MRR' only (got metric="
                         f"{spec.metric!r}); leave reach=None or set it to 0")
    if reach > 0.0 and estimator != "ccs":
        raise ValueError(f"reach={reach:g} is trained by estimator='ccs' only (got estimator="
                         f"{estimator!r}, which trains MRR itself); leave reach=None or set "
                         "it to 0")
    return reach


def check_min_top_share(share, spec):
    """The share in use: ``None`` -> ``NDCG_MIN_TOP_SHARE`` for NDCG with a cutoff, else 0; a
    positive one needs a cutoff and one of ``GROWING_CUTOFF_METRICS``; in [0, 1]; 1 is refused
    for a metric whose value on a whole list does not depend on the order (the table's
    ``needs_top``: Recall), since ``ceil(1 x n) = n`` trains every query on its whole list."""
    if share is None:
        return spec.row.default_min_top_share if spec.top is not None else 0.0
    share = _UNIT_INTERVAL(share, "min_top_share")
    if share > 0.0 and not spec.row.may_grow_cutoff:
        raise ValueError(f"min_top_share={share:g} grows the training cutoff of the metrics "
                         f"{GROWING_CUTOFF_METRICS} only (got metric={spec.metric!r}); leave "
                         "min_top_share=None or set it to 0")
    if share > 0.0 and spec.top is None:
        raise ValueError(f"min_top_share={share:g} grows a cutoff, and top=None has none (every "
                         "query is trained on its whole list); set top=k or min_top_share=0")
    reason = spec.row.needs_top  # the metric of a whole list does not depend on the order
    if share >= 1.0 and reason is not None:
        # ceil(1 x n) = n: every query, of any length, is trained on its whole list. Any share
        # below 1 leaves the lists of n > 1 / (1 - share) documents an order to train; whether
        # the data has one is checked at training (check_order_can_change)
        raise ValueError(
            f"min_top_share={share:g} with metric='{spec.metric.capitalize()}' grows every "
            f"query's training cutoff to its whole list, and {reason}: every gradient would be "
            f"0 (a constant model); set min_top_share below 1 (a query of n documents keeps an "
            f"order to train while top < n and min_top_share <= (n - 1) / n), or to 0 to train "
            f"at top={spec.top} in every query")
    return share


def check_order_can_change(spec: MetricSpec, query_offsets, min_top_share: float = 0.0,
                           refuse: bool = True):
    """Refuse (or warn of) a training in which no query's order can change the metric: for a
    metric whose
    value on a whole list does not depend on the order (the table's ``needs_top``: Precision,
    Recall), when every query's training cutoff ``T_q`` (:func:`training_cutoffs`) covers its
    list, ``T_q >= n_q``. Every gradient would then be 0 and a booster would fit a constant
    model. Queries covered while others are not give 0 legitimately (they are not refused), and
    so do data without a list of two documents (no metric has an order to train there).
    ``O(number of queries)``. The rankers run it on their whole training data and refuse;
    the objective runs it once per data it is given and warns, since a caller may hand it a
    part of the training data (a Dask partition), where covered lists are legitimate.

    Example: Recall at ``top=1000`` on lists of at most 118 documents raises ValueError.

    Args:
      spec: the metric; query_offsets: validated int64 offsets; min_top_share: the share in
        use (:func:`check_min_top_share`); refuse: raise a ``ValueError`` (else a
        ``UserWarning`` with the same message).
    """
    reason = spec.row.needs_top
    if reason is None or spec.top is None:
        return
    sizes = np.diff(np.asarray(query_offsets, np.int64))
    longest = int(sizes.max()) if sizes.size else 0
    if longest < 2:
        return
    cutoffs = (training_cutoffs(spec.top, sizes, min_top_share) if min_top_share > 0.0
               else spec.top)
    if np.all(cutoffs >= sizes):
        share = (f" and min_top_share={min_top_share:g}" if min_top_share > 0.0 else "")
        cutoff = (" max(top, ceil(min_top_share * n))" if min_top_share > 0.0 else "")
        fix = (f" and min_top_share <= {longest - 1}/{longest}" if min_top_share > 0.0 else "")
        message = (
            f"metric='{spec.metric.capitalize()}' with top={spec.top}{share}: the training "
            f"cutoff{cutoff} covers the whole list of every query (the longest has {longest} "
            f"documents), and {reason}: every gradient would be 0 (a constant model); set top "
            f"below {longest}{fix}, so that at least the longest list has an order to train")
        if refuse:
            raise ValueError(message)
        warnings.warn(message, UserWarning, stacklevel=5)
