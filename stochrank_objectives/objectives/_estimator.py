"""The StochasticRank gradient estimator at one noise scale, its noise and its checks.

StochasticRank (Ustimenko & Prokhorenkova, ICML 2020)
-----------------------------------------------------
For one query with scores ``z`` and labels ``r`` the loss is ``L(z) = -M(z)`` for a ranking
metric ``M`` (the cascades NDCG@k, DCG@k, ERR@k, MRR, PFound, FilteredDCG, and Precision@k,
MAP@k, Recall@k; see :mod:`stochrank_objectives.metric_spec`), smoothed as

    L_s(z) = E L(z + s * eps),   eps ~ N(-mu * r, I),

where ``mu = 0`` is SR-R1soft (expected tie resolution) and large ``mu`` makes the smoothing
consistent with worst-permutation ties (SR-R1, Theorem 1). The noise scale ``s`` is

* ``smoothing="relative"`` (the default): ``s(z) = sigma * sqrt(var(c) + nu^2)`` per query,
  with ``c = z - mean(z)`` -- ``sigma`` is then dimensionless (noise as a fraction of the
  query's score spread; ``nu`` only matters while the spread is below ``nu``, e.g. at
  iteration 0), the smoothed loss ``E L(z + s(z) eps)`` is invariant to rescaling the scores
  once the spread exceeds ``nu``, and its gradient is orthogonal to ``c`` (Theorem 4);
* ``smoothing="absolute"`` (the paper, CatBoost): ``s = sigma`` in score units.

The gradient is estimated by Coordinate Conditional Sampling at ``s`` (the formulas:
:mod:`stochrank_objectives.kernels.ccs`), averaged over ``n_samples`` draws, centred per
query, and corrected radially (``kernels.noise_scale.center_and_accelerate``)::

    relative:  g <- g - sfa * <g, c> / (||c||^2 + n nu^2) * c   (sfa = 1: the exact gradient
               of E L(z + s(z) eps), since dL_s/ds = -<z, grad_z L_s> / s);
    absolute:  g <- g - sfa * <g, c> / (||c|| + nu)^2 * c        (Scale-Free Acceleration,
               Corollary 2; queries of more than two documents).

``sigma`` may be annealed over the boosting iterations (``sigma_at``).

Example:

>>> import numpy as np
>>> g = stochastic_rank_gradient(np.zeros(3), np.array([2.0, 0.0, 1.0]), np.array([0, 3]))
>>> bool(g[0] < 0 < g[1])  # the best document is pushed up, the worst down
True
"""

from __future__ import annotations

import numpy as np

from ..groups import as_noise, validate_grouped
from ..kernels import threads_for
from ..kernels.ccs import DEFAULT_WINDOW, PATH_AUTO, PATH_FAST, PATH_SORT, CCSOptions, ccs_gradient
from ..kernels.noise_scale import (abs_over_query_scale, center_and_accelerate, query_noise_scale,
                                   scale_in_place)
from ..kernels.reinforce import reinforce_gradient
from ..kernels.rng import draw_grouped_normals
from ..metric_spec import MetricSpec, with_virtual_documents
from .training_metric import (check_min_top_share, check_reach, reach_kernel_options,
                              training_args)
from ..validation import check_choice, check_float, check_int, check_seed
from ._protocol import weighted_mean

__all__ = ["stochastic_rank_gradient", "draw_noise", "check_shift", "MAX_SHIFT", "ESTIMATORS",
           "CONDITIONINGS", "SMOOTHINGS", "HESSIANS", "SUMMATIONS", "abs_gradient_hessian",
           "unit_mean_hessian", "HESSIAN_FLOOR"]

ESTIMATORS = ("ccs", "reinforce")
CONDITIONINGS = ("translation", "coordinate")
SMOOTHINGS = ("relative", "absolute")
HESSIANS = ("constant", "abs_gradient", "abs_gradient_normalised")
# abs_gradient: the floor, as a fraction of the mean |g_i| / s_q over the documents
HESSIAN_FLOOR = 0.01
# How the per-document breakpoint sums are computed (see kernels/ccs/fast_sums.py).
SUMMATIONS = {"auto": PATH_AUTO, "exact": PATH_SORT, "fast": PATH_FAST}


def draw_noise(query_offsets, n_samples: int = 1, seed: int = 0, iteration: int = 0) -> np.ndarray:
    """The unit normals the seeded estimators use, shape ``(n_samples, n_docs)``.

    Example:

    >>> draw_noise(np.array([0, 2, 5]), n_samples=3, seed=1).shape
    (3, 5)

    Query ``q``'s block of sample ``k`` comes from the stream keyed by
    ``(seed, iteration, q, k)`` (:mod:`stochrank_objectives.kernels.rng`), so
    ``stochastic_rank_gradient(..., noise=draw_noise(...))`` reproduces the seeded call bit for
    bit, on any number of threads.

    Args:
      query_offsets: CSR offsets of the queries.
      n_samples: draws (rows), >= 1.
      seed: noise seed in ``[0, 2**63 - 1]``.
      iteration: boosting iteration (>= 0).

    Returns:
      float64 array ``(n_samples, n_docs)`` of standard normals.
    """
    offs = np.ascontiguousarray(query_offsets, dtype=np.int64)
    n_samples = check_int(n_samples, "n_samples", 1)
    seed = check_seed(seed)
    iteration = check_int(iteration, "iteration", 0)
    return draw_grouped_normals(offs, n_samples, seed, iteration)


def stochastic_rank_gradient(scores, labels, query_offsets, *, metric="NDCG", top=None,
                             sigma=1.0, mu=0.0, nu=0.01, sfa=1.0, n_samples=1, seed=0,
                             iteration=0, estimator="ccs", conditioning="translation",
                             gain="exp2", grade_max=None, threshold=0.0, decay=0.85,
                             smoothing="absolute", center=True, noise=None,
                             window=DEFAULT_WINDOW, summation="auto", spread_top=None,
                             reach=0.0, min_top_share=0.0):
    """Gradient of the smoothed loss ``E L(z + s eps)``, ``eps ~ N(-mu r, I)`` (see module).

    Example::

        g = stochastic_rank_gradient(scores, labels, query_offsets, metric="NDCG", top=10)

    The low-level estimator at one noise scale: its defaults are the paper's parametrisation
    (absolute ``sigma = 1``, ``nu = 0.01``); :class:`StochasticRank` carries the package defaults
    and the sigma schedule, and calls this with ``sigma = obj.sigma_at(iteration)``.

    Args:
      scores, labels, query_offsets: grouped data.
      metric, top, gain, grade_max, threshold, decay: the metric (see
        :mod:`stochrank_objectives.metric_spec`).
      sigma: noise scale (> 0; relative to the score spread with ``smoothing="relative"``).
      mu: relevance shift (>= 0; 0 = SR-R1soft).
      nu: score-spread floor (relative) / SFA norm regulariser (absolute), > 0.
      sfa: radial-correction strength (0 = off, 1 = exact / the paper's SFA).
      smoothing: ``"absolute"`` (default here) or ``"relative"`` (see the module docstring).
      spread_top: relative smoothing only: the score spread of each query's ``spread_top``
        highest-scored documents (``None`` = the whole list).
      reach: MRR only, in [0, 1]: a relevant document's continuation in MRR's cascade
        (:func:`~..training_metric.with_reach`; 0 = MRR exactly, the default here; ``None`` =
        :class:`StochasticRank`'s default, ``MRR_REACH`` for MRR;
        :func:`~..training_metric.check_reach`).
      min_top_share: in [0, 1]: a query of ``n`` documents is trained at the cutoff
        ``max(top, ceil(min_top_share * n))`` (:func:`~..training_metric.training_args`; 0 =
        ``top`` everywhere, the default here; ``None`` = :class:`StochasticRank`'s default);
        1 is refused for Recall, whose value on a whole list is 1 whatever the order
        (:func:`~..training_metric.check_min_top_share`).
      n_samples: noise draws averaged (>= 1). seed, iteration: key the noise streams.
      estimator: ``"ccs"`` or ``"reinforce"`` (score function, for the paper's ablation).
      conditioning: CCS conditional law, ``"translation"`` (default) or ``"coordinate"``.
        FilteredDCG always uses ``"coordinate"``: its loss is not translation invariant (the
        virtual document sits at the fixed score 0), so the translation law does not apply.
      center: subtract each query's mean gradient (unbiased: the loss is translation invariant;
        ignored for FilteredDCG, whose loss is not).
      noise: optional explicit unit normals of shape ``(n_samples, n_docs)`` instead of the
        seeded streams (for tests and common random numbers).
      window: CCS breakpoint window in conditional standard deviations (``inf`` = none).
      summation: the per-document breakpoint sums -- ``"auto"`` (default: one-sided Gauss
        transforms on large dense queries, direct sums otherwise), ``"exact"`` (always direct,
        ``O(n^2)`` on full lists) or ``"fast"`` (always the transforms, error below
        ``1.7e-12 sum |J|`` per document; see ``kernels/ccs/gauss_transform.py``).

    Returns:
      float64 array: ``d L_sigma / d z`` (gradient of the loss; descent is ``-grad``).
    """
    metric_spec = MetricSpec.make(metric, top, gain, grade_max, threshold, decay)
    sigma = check_float(sigma, "sigma", gt=0.0)
    mu = check_float(mu, "mu", ge=0.0)
    nu = check_float(nu, "nu", gt=0.0)
    sfa = check_float(sfa, "sfa", ge=0.0)
    check_choice(estimator, "estimator", ESTIMATORS)
    check_estimator_for(estimator, metric_spec)
    check_choice(conditioning, "conditioning", CONDITIONINGS)
    check_choice(smoothing, "smoothing", SMOOTHINGS)
    check_choice(summation, "summation", tuple(SUMMATIONS))
    spread_top = check_spread_top(spread_top, smoothing)
    reach = check_reach(reach, metric_spec, estimator)
    window = float(window)
    if not window > 0.0:
        raise ValueError(f"window must be > 0, got {window}")
    scores, labels, offs = validate_grouped(scores, labels, query_offsets)
    min_top_share = check_min_top_share(min_top_share, metric_spec)
    prepared = training_args(metric_spec, labels, offs, reach=reach,
                             min_top_share=min_top_share)
    return estimate(scores, labels, offs, prepared, sigma=sigma,
                     mu=mu, nu=nu, sfa=sfa, n_samples=n_samples, seed=seed, iteration=iteration,
                     estimator=estimator, conditioning=conditioning, smoothing=smoothing,
                     center=center, noise=noise, window=window, spec=metric_spec,
                     path=SUMMATIONS[summation], spread_top=spread_top, reach=reach)


def check_spread_top(spread_top, smoothing):
    """``spread_top`` checked: ``None`` or an integer >= 2 (a spread needs two scores), and only
    with relative smoothing (absolute smoothing has no spread to measure)."""
    spread_top = check_int(spread_top, "spread_top", 2, allow_none=True)
    if spread_top is not None and smoothing != "relative":
        raise ValueError(f"spread_top={spread_top} measures the score spread of relative "
                         f"smoothing; with smoothing={smoothing!r} the noise scale is sigma "
                         "itself: set smoothing='relative' or spread_top=None")
    return spread_top


def check_estimator_for(estimator, spec):
    """REINFORCE (an ablation baseline) is wired for the plain cascades only."""
    if estimator == "reinforce" and (spec.is_counting or spec.needs_virtual_document):
        raise ValueError(f"estimator='reinforce' is not available for metric {spec.metric!r}; "
                         f"use estimator='ccs'")



def estimate(scores, labels, offs, prepared, **kwargs):
    """The estimator on validated arrays and the metric's :class:`KernelArgs` ``prepared``
    (keyword arguments: those of :func:`_estimate_kernels`)."""
    with threads_for(scores.shape[0], offs.shape[0] - 1):
        return _estimate_kernels(scores, labels, offs, prepared, **kwargs)


def _estimate_kernels(scores, labels, offs, prepared, *, spec, sigma, mu, nu, sfa, n_samples,
                      seed, iteration, estimator, conditioning, smoothing="absolute", center=True,
                      noise=None, window=DEFAULT_WINDOW, path=PATH_AUTO, spread_top=None,
                      query_scales=None, reach=0.0):
    relative = smoothing == "relative"
    region = spread_top or 0
    if query_scales is None:  # one noise scale per query
        query_scales = query_noise_scale(scores, offs, sigma, nu, relative, region)
    sigma = query_scales
    if mu != 0.0:
        shifted = scores - mu * np.repeat(sigma, np.diff(offs)) * labels
    else:
        shifted = scores
    # the translation law conditions on the others' deviations, valid only for invariant losses
    translation = conditioning == "translation" and spec.translation_invariant
    if noise is None:
        n_samples = check_int(n_samples, "n_samples", 1)
        seed = check_seed(seed)
        iteration = check_int(iteration, "iteration", 0)
    rows = explicit_noise_rows(noise, scores.shape[0])
    if estimator == "ccs" and spec.needs_virtual_document:
        grad = _filtered_ccs(shifted, prepared, rows, offs, sigma, n_samples=n_samples, seed=seed,
                             iteration=iteration, window=window, path=path)
    elif estimator == "ccs":
        kernel = dict(counting=spec.is_counting, average=spec.row.average)
        kernel.update(reach_kernel_options(reach))   # MRR's reach: the counting kernel
        options = CCSOptions(translation=translation, window=window, path=path, **kernel)
        grad = ccs_gradient(shifted, prepared, rows, offs, sigma, options, n_samples=n_samples,
                            seed=seed, iteration=iteration)
    else:
        grad = reinforce_gradient(shifted, labels, prepared, rows, offs, sigma,
                                  n_samples=n_samples, seed=seed, iteration=iteration)
    center_and_accelerate(grad, scores, offs, bool(center), sfa, nu, relative,
                          translation_invariant=spec.translation_invariant, region=region)
    return grad


def explicit_noise_rows(noise, n_docs):
    """Explicit noise as ``(n_samples, n_docs)`` rows, or no rows (``(0, n_docs)``): the
    kernels then draw from the seeded streams."""
    if noise is None:
        return np.empty((0, n_docs))
    return as_noise(noise, n_docs)


def _filtered_ccs(shifted, prepared, rows, offs, sigma, *, n_samples, seed, iteration, window,
                  path):
    """FilteredDCG through the cascade kernel: every query gets a virtual document at the fixed
    score 0 (gain 0, continuation 0, no noise), so the documents below 0 contribute nothing and
    0 is one more breakpoint of each document; coordinate conditioning (the loss is not
    translation invariant). ``n_samples``, ``seed``, ``iteration`` come validated. Returns the
    real documents' gradient."""
    ext_offs, real = with_virtual_documents(offs)
    n_ext = int(ext_offs[-1])
    ext_shifted = np.zeros(n_ext)
    ext_shifted[real] = shifted
    ext_gain = np.zeros(n_ext)
    ext_gain[real] = prepared.gain
    ext_cont = np.zeros(n_ext)
    ext_cont[real] = prepared.continuation
    ext_rows = np.zeros((rows.shape[0], n_ext))
    ext_rows[:, real] = rows
    options = CCSOptions(translation=False, window=window, path=path,
                         fixed_last=rows.shape[0] == 0)
    grad = ccs_gradient(ext_shifted, prepared._replace(gain=ext_gain, continuation=ext_cont),
                        ext_rows, ext_offs, sigma, options, n_samples=n_samples, seed=seed,
                        iteration=iteration)
    return grad[real]


def abs_gradient_hessian(grad, scores, offs, sigma, nu, relative, floor=HESSIAN_FLOOR,
                         spread_top=None, query_scales=None, doc_weights=None):
    """A curvature scale for Newton leaves: ``h_i = |g_i| / s_q + floor * mean_j(|g_j| / s_q(j))``.

    Example:

    >>> h = abs_gradient_hessian(np.array([-0.3, 0.3]), np.array([0.0, 0.0]), np.array([0, 2]),
    ...                          sigma=0.3, nu=1.0, relative=True)
    >>> np.round(h, 6).tolist()   # |g| / 0.3 = 1, plus 0.01 of the mean
    [1.01, 1.01]

    ``s_q`` is query ``q``'s noise scale (:func:`~..kernels.noise_scale.query_noise_scale`,
    the spread of its ``spread_top`` highest scores; ``None`` = the whole list), or
    ``query_scales`` when the caller has them (:func:`noise_scales`: the estimator's own).
    Along one coordinate the smoothed loss is a sum of Gaussian-smoothed steps
    ``J_b Phi((b - z_i) / s)``: its gradient is ``sum_b J_b phi(.) / s`` and its second
    derivative ``sum_b J_b phi'(.) / s^2``, of the order ``|g_i| / s`` where one breakpoint
    dominates (and of either sign). ``|g_i| / s_q`` is that order, kept positive: a one-document
    Newton step ``-g_i / h_i`` moves a document by at most ``s_q``, one noise standard
    deviation (LambdaMART's ``rho (1 - rho)`` hessian plays the same part), and a leaf of many
    documents with little gradient (far below the cutoff) no longer dilutes the step of the few
    that have one, as the unit hessian's ``sum g / count`` does. The floor keeps every
    hessian positive; it is relative, so ``h`` scales as ``1 / a^2`` when the scores (and
    with relative smoothing ``s``) scale by ``a``. All gradients zero: a unit hessian. The mean
    is over the documents of the call, each counted as often as its query's weight
    (``doc_weights``, :func:`~._protocol.weighted_mean`).
    """
    if query_scales is None:
        query_scales = noise_scales(scores, offs, sigma, nu, relative, spread_top)
    with threads_for(grad.shape[0], offs.shape[0] - 1):
        h = abs_over_query_scale(grad, offs, np.asarray(query_scales, dtype=np.float64))
    mean = weighted_mean(h, doc_weights)
    if not mean > 0.0:
        return np.ones_like(grad)
    h += floor * mean  # in place: h is this call's own array (no second 1-d allocation)
    return h


def noise_scales(scores, offs, sigma, nu, relative, spread_top=None):
    """Each query's noise scale ``s_q`` (:func:`~..kernels.noise_scale.query_noise_scale`),
    computed once per call and shared by the estimator and :func:`abs_gradient_hessian`."""
    # threads_for: a parallel kernel launched with every thread costs milliseconds on small data
    with threads_for(scores.shape[0], offs.shape[0] - 1):
        return query_noise_scale(scores, offs, sigma, nu, relative, spread_top or 0)


#: documents from which :func:`unit_mean_hessian` rescales in a parallel pass: below, NumPy's two
#: in-place products take less than launching it (20k documents: 5 us against 43 us, threads_for
#: included; 200k: 0.1 ms either way)
PARALLEL_SCALE_FROM = 1 << 16


def unit_mean_hessian(grad, hess, doc_weights=None):
    """``(c g, c h)`` with ``c = 1 / mean(h)``: the same Newton leaves ``sum g / sum h`` (without
    L2), a hessian of mean 1.

    Example:

    >>> g, h = unit_mean_hessian(np.array([-0.02, 0.01]), np.array([0.02, 0.02]))
    >>> g.tolist(), h.tolist()
    ([-1.0, 0.5], [1.0, 1.0])

    A curvature such as :func:`abs_gradient_hessian` is small where the gradients are (about
    0.003 per document on lists of hundreds), so the boosters' leaf regularisers, absolute
    hessian sums -- XGBoost's ``min_child_weight`` (default 1) and ``reg_lambda`` (1),
    CatBoost's ``l2_leaf_reg`` (3), LightGBM's ``min_sum_hessian_in_leaf`` -- would forbid or
    shrink most leaves. Rescaling both by one positive constant per call keeps every leaf's
    Newton step and gives those settings the meaning they have for a unit hessian (a leaf's
    hessian sum is about its document count on average). Each call (a Dask partition) has its
    own ``c``. The mean counts each document as often as its query's weight (``doc_weights``,
    :func:`~._protocol.weighted_mean`): a query of weight 0 does not change ``c``.

    ``grad`` and ``hess`` are scaled in place and returned (the objectives pass the arrays their
    call has just made): no copies; NumPy's products below :data:`PARALLEL_SCALE_FROM`
    documents, one parallel pass from there (the same products either way).
    """
    mean = weighted_mean(hess, doc_weights)
    if not mean > 0.0:
        return grad, hess
    scale = 1.0 / mean
    if grad.shape[0] < PARALLEL_SCALE_FROM:  # the same products, without a parallel launch
        np.multiply(grad, scale, out=grad)
        np.multiply(hess, scale, out=hess)
        return grad, hess
    with threads_for(grad.shape[0]):
        scale_in_place(grad, hess, scale)
    return grad, hess


def annealed_sigma(sigma, sigma_min, half_life, iteration):
    """``max(min(sigma, sigma_min), sigma 2^(-iteration / half_life))``; ``sigma`` when
    ``half_life`` is None (validated arguments)."""
    if half_life is None:
        return sigma
    return max(min(sigma, sigma_min), sigma * 2.0 ** (-iteration / half_life))


# Largest relevance shift, in noise standard deviations, between two documents of one query.
# Around tied scores (every query at iteration 0) a more relevant document must climb mu * dr
# standard deviations to pass a less relevant one, so the smoothed loss there is flat to
# ~exp(-(mu dr)^2 / 4): at 4 the gradient is ~2% of the mu = 0 one, beyond it vanishes
# (measured on MQ2008, labels 0..2: mu = 3 leaves 1e-4 of it, mu = 9 exactly 0).
MAX_SHIFT = 4.0


def check_shift(mu: float, labels) -> None:
    """Refuse a relevance shift ``mu * (label range)`` above :data:`MAX_SHIFT` noise std.

    Example: ``check_shift(0.5, np.array([0.0, 2.0]))`` passes (a shift of 1 std);
    ``check_shift(3.0, ...)`` raises.

    Formula: refused when ``mu * (max(labels) - min(labels)) > MAX_SHIFT``.

    Args:
      mu: the relevance shift of the noise mean (>= 0).
      labels: the training labels (float64).

    Returns:
      None; raises ValueError naming the largest usable ``mu``.
    """
    if mu == 0.0 or labels.shape[0] == 0:
        return
    span = float(labels.max() - labels.min())
    if mu * span > MAX_SHIFT:
        raise ValueError(
            f"mu={mu:g} shifts documents whose labels differ by {span:g} apart by {mu * span:g} "
            f"noise standard deviations: around tied scores the smoothed loss is then flat and "
            f"training returns a constant model. Use mu <= {MAX_SHIFT / span:g} for these labels "
            f"(mu * label range <= {MAX_SHIFT:g}), or mu=0 (SR-R1soft).")

