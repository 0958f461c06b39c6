"""StochasticRank for DCG-RR, a learning-to-select-with-order loss (Ustimenko & Prokhorenkova
2020, main text eq. 5): :class:`StochasticRankDCGRR`, an :class:`~._protocol.Objective`.

Example:

>>> import numpy as np
>>> g, h = StochasticRankDCGRR(n_samples=8, seed=1).grad_hess(
...     np.zeros(3), np.array([1.0, 0.0, 1.0]), [0, 3])
>>> bool(g[0] < 0 < g[1])  # show the relevant document, hide the one that pushes others down
True
"""

from __future__ import annotations

import numpy as np

from ..kernels.dcgrr import dcgrr_ccs, dcgrr_values
from ..validation import integer, real, seed
from ._estimator import explicit_noise_rows
from ._protocol import ObjectiveParams, check_iteration, validated

__all__ = ["StochasticRankDCGRR"]


class StochasticRankDCGRR(ObjectiveParams):
    """StochasticRank for the learning-to-select-with-order (LSO) loss DCG-RR (Ustimenko &
    Prokhorenkova 2020, main text eq. 5; supplement B.4 and C.3; LSO: Vorobev et al. 2019).

    The documents keep their **input order**; a score selects which are shown (``z_i > 0``)::

        DCG-RR(z, r) = sum_i r_i 1{z_i > 0} / (1 + sum_{j < i} 1{z_j > 0}),    L = -DCG-RR,

    each shown document's relevance divided by its rank among the shown ones. Smoothed loss
    ``L_sigma(z) = E L(z + sigma eps)``, ``eps ~ N(0, I)``. Every coordinate's only breakpoint
    is 0 (supplement C.3: ``l_j(z_j) = Delta l_j 1{z_j <= 0} + const``), so any smoothing is
    consistent (B.4) and no relevance shift ``mu`` is needed. CCS with the coordinate
    conditional law ``N(z_i, sigma^2)``: for each sample ``y = z + sigma e`` and each document
    ``i``, with the other documents' inclusions ``1{y_j > 0}`` fixed::

        grad_i = J_i phi(z_i / sigma) / sigma,
        J_i = L(i shown) - L(i hidden) = -(r_i / (1 + c_i)
                                          - sum_{j > i shown} r_j / ((1 + c'_j)(2 + c'_j))),

    ``c_i`` the number of shown documents before ``i``, ``c'_j`` those before ``j`` other than
    ``i`` (showing ``i`` pushes every later shown document down one rank); averaged over
    ``n_samples`` draws, O(n) per query and draw (a Numba kernel). ``J_i`` does not depend on
    ``e_i``, so the estimate is unbiased. DCG-RR is **not** translation invariant: no centring,
    no Scale-Free Acceleration. The noise of query ``q``, draw ``k`` is the stream
    ``(seed, iteration, q, k)`` of :mod:`stochrank_objectives.kernels.rng` (the normals of
    :func:`stochrank_objectives.objectives.draw_noise`; kernel: ``kernels.dcgrr.dcgrr_ccs``).
    Hessian: 1 per document.

    Labels are the relevances ``r_i >= 0`` (any real). Unlike the ranking objectives, queries
    with one document or equal labels are not degenerate (showing or hiding still matters);
    all-zero relevance gives a zero gradient. :meth:`loss` is ``-sum_q DCG-RR_q`` at ``z``.

    Args: sigma (> 0, default 1), n_samples (>= 1), seed (>= 0).

    >>> import numpy as np
    >>> obj = StochasticRankDCGRR(n_samples=16, seed=2)
    >>> g, h = obj.grad_hess(np.zeros(3), np.array([1.0, 0.0, 1.0]), [0, 3])
    >>> bool(g[0] < 0 < g[1]) and bool(g[2] < 0)  # show relevant documents, hide the other
    True
    >>> obj.loss(np.array([1.0, -1.0, 1.0]), np.array([1.0, 0.0, 1.0]), [0, 3])  # -(1 + 1/2)
    -1.5
    """

    _parameter_constraints = {"sigma": real(gt=0.0), "n_samples": integer(1), "seed": seed}

    def __init__(self, sigma: float = 1.0, n_samples: int = 1, seed: int = 0):
        self.sigma = sigma
        self.n_samples = n_samples
        self.seed = seed

    def gradient(self, scores, labels, query_offsets, iteration: int = 0, noise=None):
        """The CCS estimate of the gradient of the smoothed loss.

        Example: ``obj.gradient(z, r, offs, noise=draw_noise(offs, obj.n_samples, obj.seed,
        t))`` equals ``obj.gradient(z, r, offs, t)`` bit for bit.

        Args:
          scores, labels, query_offsets: grouped data; iteration: keys the noise streams.
          noise: optional unit normals ``(n_samples, n_docs)`` to use instead of the seeded
            streams (for tests and common random numbers).

        Returns:
          float64 array: the gradient of the loss per document.
        """
        iteration = check_iteration(iteration)
        scores, data = validated(scores, labels, query_offsets)
        return self._gradient(scores, data, iteration, noise)

    def _gradient(self, scores, data, iteration, noise=None):
        p = self._checked()
        return dcgrr_ccs(scores, data.labels, data.query_offsets, p["sigma"],
                         explicit_noise_rows(noise, scores.shape[0]), p["n_samples"], p["seed"],
                         iteration)

    def _grad_hess(self, scores, data, iteration):
        """``(grad, hess)``: :meth:`gradient` and a unit hessian."""
        grad = self._gradient(scores, data, iteration)
        return grad, np.ones_like(grad)

    def loss(self, scores, labels, query_offsets, iteration: int = 0) -> float:
        """``-sum_q DCG-RR_q(z)`` (the discrete loss; documents shown where ``z > 0``)."""
        check_iteration(iteration)
        scores, data = validated(scores, labels, query_offsets)
        return -float(dcgrr_values(scores, data.labels, data.query_offsets).sum())
