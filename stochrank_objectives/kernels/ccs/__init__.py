"""The StochasticRank gradient estimator (Ustimenko & Prokhorenkova, ICML 2020) in Numba.

Example::

    grad = ccs_gradient(shifted, metric, noise, query_offsets, query_sigma, CCSOptions(),
                        n_samples=1, seed=0, iteration=0)

Smoothing
---------
Loss of one query (supplement D): ``L(z) = -scale * sum_p w_p g_{s_p} prod_{u<p} d_{s_u}``,
``s`` = documents by score descending (gain ``g``, continuation ``d``, position weight ``w``:
NDCG@k, DCG@k, ERR@k, MRR, PFound, FilteredDCG; Precision@k and AP@k below). Smoothed loss

    L_sigma(z) = E L(z + sigma * eps),   eps ~ N(-mu * r, I),

with labels ``r`` (``mu = 0``: SR-R1soft; ``mu > 0`` shifts the relevant documents down, so the
smoothing agrees with worst-permutation ties as it vanishes: SR-R1, Theorem 1). Writing
``a = z - sigma * mu * r`` (the *shifted* scores, passed in as ``shifted``) and
``e ~ N(0, I)`` it is ``E L(a + sigma * e)``. The noise scale of query ``q`` is ``sigma``
(absolute smoothing, the paper and CatBoost) or, relative smoothing,

    sigma_q = sigma * rho_q,   rho_q = sqrt(mean_i (z_i - mean z)^2 + nu^2)

(:func:`stochrank_objectives.kernels.noise_scale.query_noise_scale`). The kernels return
``d L_sigma / d z`` -- the gradient of the **loss** (descent direction is its negative);
CatBoost's ``Der1`` is its negation.

CCS: the per-document derivative (Theorem 3 / Corollary 1)
----------------------------------------------------------
Draw ``e``; let ``y = a + sigma * e`` be the noisy scores. For document ``i`` hold the other
documents at ``y_k`` and move ``i`` alone: the loss is a step function of its score ``x`` with
breakpoints at the ``y_k``. With ``J_k`` the jump (loss just above ``y_k`` minus just below)
and ``f_i`` the conditional density of ``i``'s score,

    d L_sigma / d z_i = E[ sum_{k != i} J_k f_i(y_k) ].

Two conditional laws are available (both unbiased):

* ``translation`` (default): the loss is translation invariant, so only the scores relative
  to the others matter. Conditioning on the others' deviations from their mean leaves
  ``x ~ N(a_i + sigma * mean_{k != i} e_k, sigma^2 n / (n - 1))`` -- a Rao-Blackwellisation
  of the coordinate law, hence lower variance. At ``sigma = 1`` this is CatBoost's estimator;
  for ``sigma != 1`` CatBoost mixes units in the mean, this kernel does not.
* ``coordinate``: the paper's literal law, ``x ~ N(a_i, sigma^2)`` (eps has identity
  covariance, so conditioning on the other coordinates leaves the marginal).

Jumps in O(1): if the other documents are ``o_0, o_1, ...`` (descending) and ``P`` is the
continuation product of ``o_0..o_{t-1}``, moving ``i`` from slot ``t`` to slot ``t + 1``
(below ``o_t``) changes only two terms of the cascade:

    M(i above o_t) - M(i below o_t) = P [g_i (w_t - d_o w_{t+1}) - g_o (w_t - d_i w_{t+1})].

``P`` is a prefix product of the sampled order (before ``i``) or that product with ``i``
removed (after it); a zero continuation (ERR label 1, MRR relevant document) is handled by a
second prefix product that skips the first zero, so nothing is ever divided by zero.
Only slots ``t < top`` can jump, and none below the second zero continuation, so only the
``m <= min(top, n - 1) + 1`` best noisy scores need an order: when ``m`` is small against ``n``
they are selected in ``O(n + m log m)`` instead of sorting the query in ``O(n log n)``
(:mod:`.noisy_order`), and each document sums over at most ``m`` breakpoints. For full-list
losses the breakpoints further than ``window`` conditional standard deviations from the
document's mean are skipped (each contributes below ``|J| phi(window) / s``; with the default
``window = 9`` that is ``1e-18 |J| / s`` per breakpoint), and the scan stops once ``P`` is 0.
Once a query's windows hold many breakpoints (large full lists), these ``O(n^2)`` sums are
computed instead by one-sided Gauss transforms in ``O(n K)`` (:mod:`.fast_sums` through
:mod:`.gauss_transform`, error below ``1.7e-12 sum |J|`` per document).

Precision@k and AP@k are not cascades, but their adjacent-swap jumps are O(1) from the prefix
count of relevant documents (:func:`.gradient.ccs_counting_query`, same protocol, same cost).
PFound is a cascade (``w_p = decay^p``, ``d = 1 - r``); FilteredDCG is a cascade over the query
plus a noise-free virtual document at score 0 with continuation 0 (``fixed_last`` of
:class:`CCSOptions`).

Radial correction: SFA and relative smoothing
---------------------------------------------
The CCS estimate ``g`` is averaged over the samples, centred per query and corrected along
``c = z - mean(z)`` (:func:`stochrank_objectives.kernels.noise_scale.center_and_accelerate`)::

    absolute:  g <- g - sfa * <g, c> / (||c|| + nu)^2 * c        (Scale-Free Acceleration,
               Corollary 2; queries of more than two documents)
    relative:  g <- g - sfa * <g, c> / (||c||^2 + n nu^2) * c    (sfa = 1: the exact gradient
               of E L(z + sigma rho(z) eps), since dL_s/ds = -<z, grad_z L_s> / s and
               grad rho = c / (n rho))

Modules, lowest first (each imports only those above it in this list): :mod:`.gaussian`
(density, conditional law) and :mod:`.noisy_order` (sort or top-k selection of the noisy
scores), :mod:`.gauss_transform` (one-sided Gauss transforms), :mod:`.fast_sums` (the
per-document sums through them), :mod:`.gradient` (the driver: one query's sample and the
grouped gradient). Only the driver receives ``sigma``.
"""

from .gaussian import DEFAULT_WINDOW, gaussian_kernel
from .gradient import CCSOptions, QueryMetric, ccs_counting_query, ccs_gradient, ccs_query
from .noisy_order import PATH_AUTO, PATH_FAST, PATH_SELECT, PATH_SORT

__all__ = ["ccs_query", "ccs_counting_query", "ccs_gradient", "CCSOptions", "QueryMetric",
           "gaussian_kernel", "DEFAULT_WINDOW", "PATH_AUTO", "PATH_SORT", "PATH_SELECT",
           "PATH_FAST"]
