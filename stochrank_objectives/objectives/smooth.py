"""Smooth-rank objectives: ApproxNDCG, ListNet and SmoothNDCG (deterministic surrogates).

Losses are sums over queries; queries whose labels are all equal (or, for the NDCG-type
objectives, without a relevant document) contribute nothing. Kernels:
:mod:`stochrank_objectives.kernels.smooth_rank`.

Example:

>>> import numpy as np
>>> scores, labels, offs = np.zeros(3), np.array([2.0, 0.0, 1.0]), np.array([0, 3])
>>> loss = ListNet().loss(scores, labels, offs)
>>> bool(abs(loss - np.log(3.0)) < 1e-12)  # uniform scores: cross-entropy = log n
True
"""

from __future__ import annotations

import numpy as np

from ..kernels import smooth_rank as _k
from ..kernels.common import dcg_discounts, inverse_ideal_dcg
from ..metric_spec import ndcg_constants, ndcg_gains
from ..validation import choice, integer, real
from ._protocol import GAIN, ObjectiveParams, check_iteration, validated

__all__ = ["ApproxNDCG", "ListNet", "SmoothNDCG"]

def constant_label_queries(labels, offs) -> np.ndarray:
    """The queries (non-empty) whose labels are all equal: they carry no ranking information,
    so the listwise objectives give them zero loss, gradient and hessian."""
    sizes = np.diff(offs)
    nonempty = sizes > 0
    if not np.any(nonempty):
        return np.zeros(0, dtype=np.int64)
    starts = offs[:-1][nonempty]
    mx = np.maximum.reduceat(labels, starts)
    mn = np.minimum.reduceat(labels, starts)
    return np.flatnonzero(nonempty)[mx == mn]


def _zero_queries(queries, offs, loss, grad, hess):
    for q in queries:
        loss[q] = 0.0
        grad[offs[q]:offs[q + 1]] = 0.0
        hess[offs[q]:offs[q + 1]] = 0.0


class ApproxNDCG(ObjectiveParams):
    """ApproxNDCG (Qin, Liu, Li, "A general approximation framework for direct optimization of
    information retrieval measures", Inf. Retr. 2010; Bruch et al. 2020, eqs. 15-18).

    Per query, smooth ranks and loss (``G_i = gain_i / IDCG``, IDCG of the whole list)::

        pi_i = 1 + sum_{j != i} sigmoid(eta (s_j - s_i)),     loss = -sum_i G_i / log2(1 + pi_i)

    ``grad`` is its exact gradient, ``eta sum_{j != k} q_kj (a_j - a_k)`` with
    ``q_kj = sigmoid'(.)`` and ``a_i = d loss / d pi_i``; O(n^2) per query.
    ``hessian="exact"`` gives the exact diagonal second derivative (it can be negative: the loss
    is not convex); ``"constant"`` (default) gives 1 per document, a gradient-step leaf
    (``-sum grad / (count + l2)``), which is what the smooth-metric papers use (first order).

    Args: eta (> 0, default 10 as in Bruch et al. 2020), gain, hessian.

    Returns: :meth:`grad_hess` ``(grad, hess)``; :meth:`loss` ``-sum_q ApproxNDCG_q``.

    >>> import numpy as np
    >>> obj = ApproxNDCG(eta=10)
    >>> round(-obj.loss(np.array([3.0, 0.0]), np.array([1.0, 0.0]), [0, 2]), 4)  # ~ NDCG = 1
    1.0
    """

    _parameter_constraints = {"eta": real(gt=0.0), "gain": GAIN,
                              "hessian": choice("constant", "exact")}

    def __init__(self, eta: float = 10.0, gain: str = "exp2", hessian: str = "constant"):
        self.eta = eta
        self.gain = gain
        self.hessian = hessian

    def _compute(self, scores, data):
        p = self._checked()

        def build(labels, offs):
            return (*ndcg_constants(labels, offs, p["gain"]), constant_label_queries(labels, offs))

        gains, inv_ideal, constant = self._per_data(data, p["gain"], build)
        offs = data.query_offsets
        loss, grad, hess = _k.approx_ndcg(scores, gains, offs, inv_ideal, p["eta"])
        # queries with all labels equal carry no ranking information: nothing to learn
        _zero_queries(constant, offs, loss, grad, hess)
        return loss, grad, hess

    def _grad_hess(self, scores, data, iteration):
        """``(grad, hess)``: the exact gradient and the ``hessian`` option's hessian."""
        _, grad, hess = self._compute(scores, data)
        if self._checked()["hessian"] == "constant":
            hess = np.ones_like(grad)
        return grad, hess

    def loss(self, scores, labels, query_offsets, iteration: int = 0) -> float:
        """``-sum_q ApproxNDCG_q`` (queries with equal labels or no gain excluded)."""
        check_iteration(iteration)
        return float(self._compute(*validated(scores, labels, query_offsets))[0].sum())


class ListNet(ObjectiveParams):
    """ListNet top-one cross-entropy (Cao, Qin, Liu, Tsai, Li, ICML 2007).

    Per query, ``P_s = softmax(s)`` and the label distribution ``P_y = softmax(y)``
    (``target="exp"``, ListNet's phi = exp) or ``y / sum(y)`` (``target="linear"``, Bruch et al.
    2020, eq. 6)::

        loss = -sum_i P_y,i log P_s,i,   grad = P_s - P_y,   hess = P_s (1 - P_s)  (exact diagonal)

    Queries whose labels are all equal carry no ranking information and are skipped (zero loss,
    gradient and hessian), like the pairwise objectives; ``target="linear"`` also needs a
    positive label in the query.

    Args: target (``"exp"`` or ``"linear"``).

    Returns: :meth:`grad_hess` ``(grad, hess)``; :meth:`loss` the summed cross-entropy.

    >>> import numpy as np
    >>> g, h = ListNet().grad_hess(np.zeros(2), np.array([1.0, 0.0]), [0, 2])
    >>> [round(float(v), 6) for v in g]  # P_s = (1/2, 1/2), P_y = (e, 1) / (e + 1)
    [-0.231059, 0.231059]
    """

    _parameter_constraints = {"target": choice("exp", "linear")}

    def __init__(self, target: str = "exp"):
        self.target = target

    def _targets(self, labels, offs):
        """``(targets, active)``: each document's target probability ``P_y`` and whether each
        query is trained (its labels differ; ``target="linear"``: and it has a positive one)."""
        p = self._checked()
        nq = offs.size - 1
        targets = np.zeros_like(labels)
        active = np.zeros(nq, dtype=np.bool_)
        sizes = np.diff(offs)
        nonempty = np.flatnonzero(sizes > 0)
        if nonempty.size:
            starts = offs[:-1][nonempty]
            mx = np.maximum.reduceat(labels, starts)
            mn = np.minimum.reduceat(labels, starts)
            active[nonempty] = mx > mn
            q_of = np.repeat(np.arange(nq), sizes)
            if p["target"] == "exp":
                shifted = np.exp(labels - np.repeat(np.maximum.reduceat(labels, starts),
                                                    sizes[nonempty]))
            else:
                shifted = labels.copy()
            totals = np.bincount(q_of, weights=shifted, minlength=nq)
            with np.errstate(invalid="ignore", divide="ignore"):
                targets = shifted / totals[q_of]
            active &= totals > 0
            targets = np.where(active[q_of], targets, 0.0)
        return targets, active

    def _compute(self, scores, data):
        targets, active = self._per_data(data, self._checked()["target"], self._targets)
        return _k.listnet(scores, targets, data.query_offsets, active)

    def _grad_hess(self, scores, data, iteration):
        """``(grad, hess)``: ``P_s - P_y`` and the exact diagonal ``P_s (1 - P_s)``."""
        _, grad, hess = self._compute(scores, data)
        return grad, hess

    def loss(self, scores, labels, query_offsets, iteration: int = 0) -> float:
        """Cross-entropy summed over the (non-constant-label) queries."""
        check_iteration(iteration)
        return float(self._compute(*validated(scores, labels, query_offsets))[0].sum())


class SmoothNDCG(ObjectiveParams):
    """SmoothNDCG (Chapelle & Wu, "Gradient descent optimization of smoothed information
    retrieval metrics", Information Retrieval 13(3), 2010), with its annealing of the smoothing.

    Soft position indicators (eq. 7): with ``d(j)`` the document at position ``j`` of the
    current order (stable, by score descending) and ``sigma`` the smoothing parameter,

        h_ij = exp(-(s_i - s_d(j))^2 / sigma) / sum_k exp(-(s_k - s_d(j))^2 / sigma),

    (``sigma`` divides the *squared* difference, as in the paper), and the smoothed NDCG@k of a
    query (eq. 8, section 2.1), ``G(l) = 2^l - 1`` (or ``l``), ``D(j) = 1 / log2(1 + j)`` for
    1-based ``j <= k`` and 0 beyond, ``Z`` the ideal DCG@k:

        A_q = (1 / Z) sum_{i, j} G(l_i) D(j) h_ij,        loss = -sum_q A_q.

    ``h -> 1{d(j) = i}`` as ``sigma -> 0`` (so ``A_q -> NDCG@k``, error ``O(exp(-mu/sigma))``);
    ``A_q`` is continuous, differentiable except at score ties. ``grad`` is the exact gradient of
    :meth:`loss`, computed per position in O(m) (eq. 10 summed as in appendix B: the sums over
    ``i`` and ``p`` factorise), O(m min(m, k)) per query, not O(m^3). ``hess``: 1 per document
    (gradient-step leaves; the paper uses first-order (conjugate) gradient descent).

    Annealing (section 4.4.2, Algorithm 1): start with a large ``sigma``, minimise, divide it by
    2, repeat (the paper: 2^6 down to 2^-6). In boosting the minimisation stages are blocks of
    ``anneal_every`` trees; the schedule lives in the objective and is driven by the
    ``iteration`` argument every adapter passes (the tree index), so it needs no per-library
    callback::

        smoothing_at(t) = max(smoothing / anneal_factor ** ((t - start_iterations) // anneal_every),
                              min_smoothing)           (just ``smoothing`` when anneal_every=None)

    Starting point (section 4.4.1, Algorithm 1 step 1): the gradient vanishes where all of a
    query's scores are equal (``h_ij = 1/m`` is a stationary point), which is where boosting
    starts. The paper starts from ``w0``, the least-squares regression on the gains; here the
    first ``start_iterations`` trees fit that regression (``grad = s - G(l)``, ``hess = 1``)
    and SmoothNDCG takes over from tree ``start_iterations``. Alternatively leave it at 0 and
    pass an initial score (LightGBM ``init_score``, XGBoost ``base_margin``). The paper's
    regulariser ``lambda ||w - w0||^2`` has no tree counterpart (use the boosters' own).

    Queries with one document, equal labels or no relevant document contribute nothing.

    Args:
      smoothing: initial ``sigma`` (> 0, default 1).
      top: truncation k of the trained NDCG@k (``None`` = whole list; the paper trains k = 50).
      gain: ``"exp2"`` (``2^l - 1``) or ``"linear"``.
      anneal_every: trees per annealing stage (>= 1), ``None`` = constant smoothing.
      anneal_factor: divisor per stage (> 1, default 2 as in the paper).
      min_smoothing: floor of the schedule (> 0, <= smoothing); default ``smoothing / 2^12``
        (the paper's 2^6 -> 2^-6 range).
      start_iterations: trees fitting the regression starting point (>= 0, default 0).

    Returns: :meth:`grad_hess` ``(grad, hess)``; :meth:`loss` ``-sum_q A_q``.

    >>> import numpy as np
    >>> obj = SmoothNDCG(smoothing=0.01)
    >>> round(-obj.loss(np.array([2.0, 0.0, 1.0]), np.array([2.0, 0.0, 1.0]), [0, 3]), 6)
    1.0
    >>> SmoothNDCG(smoothing=64, anneal_every=10, min_smoothing=1 / 64).smoothing_at(35)
    8.0
    """

    _parameter_constraints = {
        "smoothing": real(gt=0.0), "top": integer(1, optional=True), "gain": GAIN,
        "anneal_every": integer(1, optional=True), "anneal_factor": real(gt=1.0),
        "min_smoothing": real(gt=0.0, optional=True), "start_iterations": integer(0),
    }

    def __init__(self, smoothing: float = 1.0, top: int | None = None, gain: str = "exp2",
                 anneal_every: int | None = None, anneal_factor: float = 2.0,
                 min_smoothing: float | None = None, start_iterations: int = 0):
        self.smoothing = smoothing
        self.top = top
        self.gain = gain
        self.anneal_every = anneal_every
        self.anneal_factor = anneal_factor
        self.min_smoothing = min_smoothing
        self.start_iterations = start_iterations

    def _check_together(self, values: dict) -> dict:
        if values["min_smoothing"] is None:
            values["min_smoothing"] = values["smoothing"] / 4096.0  # the paper's 2^6 -> 2^-6
        elif values["min_smoothing"] > values["smoothing"]:
            raise ValueError(f"min_smoothing ({values['min_smoothing']}) must not exceed "
                             f"smoothing ({values['smoothing']})")
        return values

    def smoothing_at(self, iteration: int) -> float:
        """The smoothing ``sigma`` of boosting iteration ``iteration`` (see the class docstring)."""
        p = self._checked()
        iteration = check_iteration(iteration)
        if p["anneal_every"] is None:
            return p["smoothing"]
        stage = max(0, iteration - p["start_iterations"]) // p["anneal_every"]
        # stop dividing once the floor is reached (no overflow of anneal_factor ** stage)
        value = p["smoothing"]
        for _ in range(stage):
            value /= p["anneal_factor"]
            if value <= p["min_smoothing"]:
                return p["min_smoothing"]
        return value

    def _constants(self, data):
        """``(gains, inv_ideal, discounts, constant queries)`` of ``data``, once per training
        data."""
        p = self._checked()

        def build(labels, offs):
            gains = ndcg_gains(labels, p["gain"])
            sizes = np.diff(offs)
            max_n = int(sizes.max()) if sizes.size else 0
            top = max_n if p["top"] is None else p["top"]
            inv_ideal = inverse_ideal_dcg(gains, gains, offs, dcg_discounts(max_n, max_n), top)
            return gains, inv_ideal, dcg_discounts(max_n, top), constant_label_queries(labels, offs)

        return self._per_data(data, (p["gain"], p["top"]), build)

    def _compute(self, scores, data, smoothing):
        gains, inv_ideal, discounts, constant = self._constants(data)
        offs = data.query_offsets
        loss, grad = _k.smooth_ndcg(scores, gains, offs, inv_ideal, discounts, smoothing)
        _zero_queries(constant, offs, loss, grad, np.zeros_like(grad))
        return loss, grad

    def _grad_hess(self, scores, data, iteration):
        """``(grad, hess)``: SmoothNDCG at ``smoothing_at(iteration)``, or the regression
        starting point while ``iteration < start_iterations``."""
        if iteration < self._checked()["start_iterations"]:
            grad = scores - self._constants(data)[0]
            return grad, np.ones_like(grad)
        grad = self._compute(scores, data, self.smoothing_at(iteration))[1]
        return grad, np.ones_like(grad)

    def loss(self, scores, labels, query_offsets, iteration: int = 0) -> float:
        """``-sum_q A_q`` at ``smoothing_at(iteration)`` (iteration 0: the initial
        ``smoothing``)."""
        scores, data = validated(scores, labels, query_offsets)
        return float(self._compute(scores, data, self.smoothing_at(iteration))[0].sum())
