"""Baseline ranking objectives: LambdaMART, LambdaLoss, ApproxNDCG, ListNet and the Gumbel E[.].

All follow the protocol of :mod:`stochrank_objectives.objectives`::

    obj.grad_hess(scores, labels, query_offsets, iteration=0) -> (grad, hess)

``grad`` is the gradient of the **loss** (descent is ``-grad``), per document; ``hess`` is a
per-document (diagonal) second derivative. Losses are **sums over queries** of per-query losses
(so ``grad`` is exactly ``d loss / d scores``; LightGBM and XGBoost also sum). Orders are stable
sorts by score descending (ties keep input order, as in LightGBM and XGBoost). Queries with one
document, with all labels equal or (NDCG-type objectives) with no relevant document contribute
nothing: zero gradient, zero hessian, zero loss.

Classes
-------
* :class:`LambdaMART` -- lambda gradients for NDCG@k and MRR@k (Burges 2010; Wu et al. 2010);
  ``LambdaMART.lightgbm()`` reproduces LightGBM's ``lambdarank`` objective.
* :class:`LambdaLoss` -- NDCG-Loss2++ (Wang, Li, Golbandi, Bendersky, Najork, CIKM 2018).
* :class:`ApproxNDCG` -- smooth-rank NDCG (Qin, Liu, Li 2010; eta = 10 in Bruch et al. 2020).
* :class:`ListNet` -- top-one softmax cross-entropy (Cao et al., ICML 2007).
* :class:`Gumbel` -- the stochastic treatment E[.] of Bruch et al. (WSDM 2020), Algorithm 1,
  around any objective; :func:`e_lambda_mart` is E[lambda-MART].
* :class:`SoftRank` -- the Gaussian-smoothed NDCG with CCS gradients, as the StochasticRank paper
  runs it (StochasticRank with ``mu = 0`` and no SFA).
* :class:`SmoothNDCG` -- soft position indicators (Chapelle & Wu 2010), O(m^2) gradient,
  annealing of the smoothing over boosting iterations (``smoothing_at(iteration)``).
* :class:`StochasticRankDCGRR` -- StochasticRank (CCS) for the LSO loss DCG-RR (documents in
  input order, selected by ``z > 0``; not translation invariant).

``LambdaMART.lightgbm()`` and ``LambdaMART.xgboost()`` reproduce LightGBM's ``lambdarank`` and
XGBoost's ``rank:ndcg`` (topk pairs) gradients and hessians.

Example:

>>> import numpy as np
>>> scores, labels, offs = np.zeros(3), np.array([2.0, 0.0, 1.0]), np.array([0, 3])
>>> grad, hess = LambdaMART(top=2).grad_hess(scores, labels, offs)
>>> bool(grad[0] < 0 < grad[1])  # the best document is pushed up, the worst down
True
>>> loss = ListNet().loss(scores, labels, offs)
>>> bool(abs(loss - np.log(3.0)) < 1e-12)  # uniform scores: cross-entropy = log n
True
"""

from __future__ import annotations

import functools

import numpy as np

from ._cascade import CascadeSpec
from .groups import (_check_choice, _check_float, _check_int, _check_seed, as_noise,
                     validate_grouped)
from .kernels import baselines as _k
from .objectives import ObjectiveParams, StochasticRank

__all__ = ["LambdaMART", "LambdaLoss", "ApproxNDCG", "ListNet", "Gumbel", "e_lambda_mart",
           "SoftRank", "SmoothNDCG", "StochasticRankDCGRR"]

LAMBDAMART_METRICS = ("NDCG", "MRR")
COMPAT = (None, "lightgbm", "xgboost")
LISTNET_TARGETS = ("exp", "linear")
APPROX_HESSIANS = ("constant", "exact")
LIGHTGBM_DEFAULT_LABEL_GAIN = tuple(float(2 ** i - 1) for i in range(31))


def _check_bool(value, name):
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be True or False, got {value!r}")
    return bool(value)


def _check_iteration(iteration):
    return _check_int(iteration, "iteration", 0)


@functools.lru_cache(maxsize=4)
def _lightgbm_table(sigma: float):
    return _k.lightgbm_sigmoid_table(sigma)


_EMPTY_TABLE = np.empty(0)


def _ndcg_gains(labels, gain):
    """Gains ``2^r - 1`` / ``r`` (labels checked by the metric spec)."""
    return CascadeSpec.make("NDCG", None, gain).gain_and_continuation(labels)[0]


def _inverse_full_idcg(gains, offs):
    sizes = np.diff(offs)
    max_n = int(sizes.max()) if sizes.size else 0
    disc = _k.dcg_discounts(max_n, max_n)
    return _k.inverse_ideal_dcg(gains, gains, offs, disc, max_n)


# -------------------------------------------------------------------------------------------
class LambdaMART(ObjectiveParams):
    """LambdaMART lambdas for NDCG@k or MRR@k (Burges 2010, "From RankNet to LambdaRank to
    LambdaMART"; Wu, Burges, Svore, Gao 2010).

    For each pair of documents in the current order (stable, by score descending) whose labels
    differ, ``h`` the more relevant one, ``ds = s_h - s_l``, and ``W = |Delta M_hl|`` the change
    of the metric when the two swap places:

        grad_h -= sigma W rho,   grad_l += sigma W rho,   rho = 1 / (1 + exp(sigma ds)),
        hess_h += sigma^2 W rho (1 - rho),   hess_l += the same,

    i.e. the gradient and hessian of ``W log(1 + exp(-sigma ds))`` with ``W`` held constant.

    * NDCG@k: ``W = |g_h - g_l| |w(p_h) - w(p_l)| / IDCG@k``, ``w(p) = 1 / log2(p + 2)`` for the
      0-based position ``p < k`` and 0 from ``k`` on (``compat=None``: the exact swap change).
      Gains ``2^r - 1`` (``gain="exp2"``), ``r`` (``"linear"``) or ``label_gain[r]``.
    * MRR@k: reciprocal rank of the first document with ``label > threshold`` (0 beyond k);
      ``W`` is the exact change from the swap (only pairs with one relevant document count).

    Options:

    * ``score_norm``: ``W /= 0.01 + |ds|`` when the query's best and worst scores differ;
    * ``norm``: scale the query's grad and hess by ``log2(1 + L) / L``,
      ``L = sum_pairs 2 sigma W rho`` (when ``L > 0``);
    * ``compat="lightgbm"``: LightGBM's ``lambdarank`` literally (NDCG only): pairs with the
      upper position ``< top`` (``lambdarank_truncation_level``) but untruncated discounts for
      both positions, IDCG at ``top``, its sigmoid lookup table, the float literal ``0.01f`` and
      float32 accumulation. ``LambdaMART.lightgbm(...)`` builds that configuration with
      LightGBM's parameter names and defaults (sigmoid 1, truncation 30, norm on).
    * ``compat="xgboost"``: XGBoost's ``rank:ndcg`` with ``lambdarank_pair_method="topk"`` (NDCG
      only; the facts are restated in ``shared/notes/native_semantics.md`` section 5): pairs
      with the upper position ``< top`` (``lambdarank_num_pair_per_sample``), untruncated
      discounts, IDCG at ``top``, ``W /= |ds| + 0.01`` (``score_norm``), the hessian
      ``2 sigma^2 max(rho (1 - rho), 1e-16) W`` (twice the logistic one, floored), the same
      ``norm``; XGBoost has no sigmoid parameter (``sigma = 1``). ``LambdaMART.xgboost(...)``
      builds it with XGBoost's parameter names and defaults (32 pairs, both normalisations on,
      exponential gain). Unit group weights (XGBoost's group-weight factor is then 1).

    :meth:`loss` is the frozen-weight surrogate ``sum_pairs W log(1 + exp(-sigma ds))``: its
    gradient is ``grad`` when ``score_norm`` and ``norm`` are off (and away from ties).

    >>> import numpy as np
    >>> g, h = LambdaMART.lightgbm().grad_hess(np.zeros(2), np.array([1.0, 0.0]), [0, 2])
    >>> bool(g[0] < 0 < g[1]) and bool(h[0] > 0)
    True
    """

    _param_names = ("metric", "top", "sigma", "gain", "label_gain", "threshold", "score_norm",
                    "norm", "compat")

    def __init__(self, metric="NDCG", top=None, sigma=1.0, gain="exp2", label_gain=None,
                 threshold=0.0, score_norm=False, norm=False, compat=None):
        self.metric = metric
        self.top = top
        self.sigma = sigma
        self.gain = gain
        self.label_gain = label_gain
        self.threshold = threshold
        self.score_norm = score_norm
        self.norm = norm
        self.compat = compat
        self._validated()

    @classmethod
    def xgboost(cls, lambdarank_num_pair_per_sample=32, lambdarank_normalization=True,
                lambdarank_score_normalization=True, ndcg_exp_gain=True):
        """XGBoost's ``objective="rank:ndcg"`` with ``lambdarank_pair_method="topk"`` (its
        default) and the given XGBoost parameters (unweighted groups, ``lambdarank_unbiased``
        off); see ``compat="xgboost"`` in the class docstring."""
        return cls(metric="NDCG", top=lambdarank_num_pair_per_sample, sigma=1.0,
                   gain="exp2" if _check_bool(ndcg_exp_gain, "ndcg_exp_gain") else "linear",
                   score_norm=lambdarank_score_normalization, norm=lambdarank_normalization,
                   compat="xgboost")

    @classmethod
    def lightgbm(cls, sigmoid=1.0, lambdarank_truncation_level=30, lambdarank_norm=True,
                 label_gain=None):
        """LightGBM's ``objective="lambdarank"`` with the given LightGBM parameters."""
        return cls(metric="NDCG", top=lambdarank_truncation_level, sigma=sigmoid,
                   label_gain=label_gain, score_norm=lambdarank_norm, norm=lambdarank_norm,
                   compat="lightgbm")

    def _validated(self) -> dict:
        if not isinstance(self.metric, str) or self.metric.upper() not in LAMBDAMART_METRICS:
            raise ValueError(f"metric must be one of {LAMBDAMART_METRICS}, got {self.metric!r}")
        metric = self.metric.upper()
        top = _check_int(self.top, "top", 1, allow_none=True)
        sigma = _check_float(self.sigma, "sigma", gt=0.0)
        _check_choice(self.gain, "gain", ("exp2", "linear"))
        label_gain = None
        if self.label_gain is not None:
            try:
                label_gain = np.asarray(self.label_gain, dtype=np.float64)
            except (TypeError, ValueError) as exc:
                raise TypeError("label_gain must be a sequence of numbers") from exc
            if label_gain.ndim != 1 or label_gain.size == 0:
                raise ValueError("label_gain must be a non-empty 1-d sequence (gain of label i)")
            if not np.all(np.isfinite(label_gain)) or np.any(label_gain < 0):
                raise ValueError("label_gain must be finite and non-negative")
            if metric != "NDCG":
                raise ValueError("label_gain applies to metric='NDCG' only")
        threshold = _check_float(self.threshold, "threshold", ge=0.0)
        score_norm = _check_bool(self.score_norm, "score_norm")
        norm = _check_bool(self.norm, "norm")
        _check_choice(self.compat, "compat", COMPAT)
        if self.compat == "lightgbm" and metric != "NDCG":
            raise ValueError("compat='lightgbm' reproduces LightGBM's lambdarank, metric='NDCG' only")
        if self.compat == "xgboost":
            if metric != "NDCG":
                raise ValueError(
                    "compat='xgboost' reproduces XGBoost's rank:ndcg, metric='NDCG' only")
            if self.label_gain is not None:
                raise ValueError("compat='xgboost' takes gain='exp2'/'linear' (XGBoost's "
                                 "ndcg_exp_gain), not label_gain")
        return dict(metric=metric, top=top, sigma=sigma, label_gain=label_gain,
                    threshold=threshold, score_norm=score_norm, norm=norm)

    def _prepare(self, scores, labels, query_offsets):
        p = self._validated()
        scores, labels, offs = validate_grouped(scores, labels, query_offsets)
        sizes = np.diff(offs)
        max_n = int(sizes.max()) if sizes.size else 0
        lgb = self.compat == "lightgbm"
        untruncated = self.compat is not None  # both libraries discount every position
        top = max_n if p["top"] is None else p["top"]
        if p["metric"] == "NDCG":
            if p["label_gain"] is not None or lgb:
                table = p["label_gain"]
                if table is None:
                    table = np.asarray(LIGHTGBM_DEFAULT_LABEL_GAIN)
                bad = (labels != np.round(labels)) | (labels >= table.size)
                if np.any(bad):
                    raise ValueError(
                        f"labels must be integers in [0, {table.size - 1}] to index label_gain "
                        f"(got {labels[np.argmax(bad)]:g})")
                gains = table[labels.astype(np.int64)]
            else:
                gains = _ndcg_gains(labels, self.gain)
            weights = _k.dcg_discounts(max_n, max_n if untruncated else top)
            # LightGBM's ideal DCG sorts by label; ours by gain (the true ideal).
            inv_ideal = _k.inverse_ideal_dcg(gains, labels if lgb else gains, offs,
                                             _k.dcg_discounts(max_n, max_n), top)
            kind = _k.KIND_NDCG
        else:
            gains = (labels > p["threshold"]).astype(np.float64)
            weights = _k.reciprocal_weights(max_n, top)
            inv_ideal = np.ones(offs.size - 1)
            kind = _k.KIND_MRR
        return scores, labels, offs, gains, weights, inv_ideal, top, kind, p

    def grad_hess(self, scores, labels, query_offsets, iteration: int = 0):
        """``(grad, hess)`` of the lambda loss at ``scores`` (see the class docstring)."""
        _check_iteration(iteration)
        scores, labels, offs, gains, weights, inv_ideal, top, kind, p = self._prepare(
            scores, labels, query_offsets)
        lgb = self.compat == "lightgbm"
        if self.compat == "xgboost":
            return _k.xgboost_lambdarank_ndcg(scores, gains, labels, offs, inv_ideal, weights, top,
                                              p["sigma"], p["score_norm"], p["norm"])
        if lgb:
            table, t_lo, t_hi, t_factor = _lightgbm_table(p["sigma"])
            eps = _k.LGB_SCORE_NORM_EPS
        else:
            table, t_lo, t_hi, t_factor = _EMPTY_TABLE, 0.0, 0.0, 1.0
            eps = 0.01
        return _k.lambdamart_grad_hess(scores, gains, labels, offs, inv_ideal, weights, top, kind,
                                       p["sigma"], p["score_norm"], p["norm"], lgb, table, t_lo,
                                       t_hi, t_factor, eps)

    def loss(self, scores, labels, query_offsets) -> float:
        """Frozen-weight surrogate ``sum_q sum_pairs W log(1 + exp(-sigma ds))`` (no norms)."""
        scores, labels, offs, gains, weights, inv_ideal, top, kind, p = self._prepare(
            scores, labels, query_offsets)
        return float(_k.lambdamart_surrogate(scores, gains, labels, offs, inv_ideal, weights, top,
                                             kind, p["sigma"]).sum())


# -------------------------------------------------------------------------------------------
class LambdaLoss(ObjectiveParams):
    """LambdaLoss NDCG-Loss2++ (Wang, Li, Golbandi, Bendersky, Najork, CIKM 2018).

    Per query, with ``G_i = (2^y_i - 1) / IDCG`` (``gain="linear"``: ``y_i / IDCG``; IDCG of the
    whole list), ``r_i`` the 1-based rank of document ``i`` under the current scores (stable
    order) and ``D(p) = log2(1 + p)``::

        loss = sum_{y_i > y_j} (rho_ij + mu delta_ij) log2(1 + exp(-sigma (s_i - s_j)))
        rho_ij   = |G_i - G_j| |1/D(r_i) - 1/D(r_j)|
        delta_ij = |G_i - G_j| |1/D(|r_i - r_j|) - 1/D(|r_i - r_j| + 1)|

    The weights ``rho + mu delta`` depend on the ranks and, as in LambdaLoss's EM view, are held
    constant when differentiating; ``grad`` is then the exact gradient of :meth:`loss` wherever
    the scores have no ties. ``hess`` is the exact diagonal (weights constant),
    ``sum_pairs w sigma^2 / ln2 * p (1 - p)``, ``p = sigmoid(sigma (s_i - s_j))``.

    Args: mu (> 0, default 5, the paper's NDCG-Loss2++), sigma (> 0, default 1), gain.

    >>> import numpy as np
    >>> g, h = LambdaLoss().grad_hess(np.array([0.0, 1.0]), np.array([1.0, 0.0]), [0, 2])
    >>> bool(g[0] < 0 < g[1]) and abs(float(g.sum())) < 1e-12
    True
    """

    _param_names = ("mu", "sigma", "gain")

    def __init__(self, mu=5.0, sigma=1.0, gain="exp2"):
        self.mu = mu
        self.sigma = sigma
        self.gain = gain
        self._validated()

    def _validated(self):
        return dict(mu=_check_float(self.mu, "mu", gt=0.0),
                    sigma=_check_float(self.sigma, "sigma", gt=0.0),
                    gain=_check_choice(self.gain, "gain", ("exp2", "linear")))

    def _compute(self, scores, labels, query_offsets):
        p = self._validated()
        scores, labels, offs = validate_grouped(scores, labels, query_offsets)
        gains = _ndcg_gains(labels, p["gain"])
        return _k.lambdaloss_ndcg2pp(scores, gains, labels, offs, _inverse_full_idcg(gains, offs),
                                     p["sigma"], p["mu"])

    def grad_hess(self, scores, labels, query_offsets, iteration: int = 0):
        _check_iteration(iteration)
        _, grad, hess = self._compute(scores, labels, query_offsets)
        return grad, hess

    def loss(self, scores, labels, query_offsets) -> float:
        """The NDCG-Loss2++ value (sum over queries) with the weights at ``scores``."""
        return float(self._compute(scores, labels, query_offsets)[0].sum())


# -------------------------------------------------------------------------------------------
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

    >>> import numpy as np
    >>> obj = ApproxNDCG(eta=10)
    >>> round(-obj.loss(np.array([3.0, 0.0]), np.array([1.0, 0.0]), [0, 2]), 4)  # ~ NDCG = 1
    1.0
    """

    _param_names = ("eta", "gain", "hessian")

    def __init__(self, eta=10.0, gain="exp2", hessian="constant"):
        self.eta = eta
        self.gain = gain
        self.hessian = hessian
        self._validated()

    def _validated(self):
        return dict(eta=_check_float(self.eta, "eta", gt=0.0),
                    gain=_check_choice(self.gain, "gain", ("exp2", "linear")),
                    hessian=_check_choice(self.hessian, "hessian", APPROX_HESSIANS))

    def _compute(self, scores, labels, query_offsets):
        p = self._validated()
        scores, labels, offs = validate_grouped(scores, labels, query_offsets)
        gains = _ndcg_gains(labels, p["gain"])
        loss, grad, hess = _k.approx_ndcg(scores, gains, offs, _inverse_full_idcg(gains, offs),
                                          p["eta"])
        # queries with all labels equal carry no ranking information: nothing to learn
        _zero_constant_label_queries(labels, offs, loss, grad, hess)
        return loss, grad, hess, p

    def grad_hess(self, scores, labels, query_offsets, iteration: int = 0):
        _check_iteration(iteration)
        _, grad, hess, p = self._compute(scores, labels, query_offsets)
        if p["hessian"] == "constant":
            hess = np.ones_like(grad)
        return grad, hess

    def loss(self, scores, labels, query_offsets) -> float:
        """``-sum_q ApproxNDCG_q`` (queries with equal labels or no gain excluded)."""
        return float(self._compute(scores, labels, query_offsets)[0].sum())


def _zero_constant_label_queries(labels, offs, loss, grad, hess):
    sizes = np.diff(offs)
    nonempty = sizes > 0
    if not np.any(nonempty):
        return
    starts = offs[:-1][nonempty]
    mx = np.maximum.reduceat(labels, starts)
    mn = np.minimum.reduceat(labels, starts)
    for q in np.flatnonzero(nonempty)[mx == mn]:
        loss[q] = 0.0
        grad[offs[q]:offs[q + 1]] = 0.0
        hess[offs[q]:offs[q + 1]] = 0.0


# -------------------------------------------------------------------------------------------
class ListNet(ObjectiveParams):
    """ListNet top-one cross-entropy (Cao, Qin, Liu, Tsai, Li, ICML 2007).

    Per query, ``P_s = softmax(s)`` and the label distribution ``P_y = softmax(y)``
    (``target="exp"``, ListNet's phi = exp) or ``y / sum(y)`` (``target="linear"``, Bruch et al.
    2020, eq. 6)::

        loss = -sum_i P_y,i log P_s,i,   grad = P_s - P_y,   hess = P_s (1 - P_s)  (exact diagonal)

    Queries whose labels are all equal carry no ranking information and are skipped (zero loss,
    gradient and hessian), like the pairwise objectives; ``target="linear"`` also needs a
    positive label in the query.

    >>> import numpy as np
    >>> g, h = ListNet().grad_hess(np.zeros(2), np.array([1.0, 0.0]), [0, 2])
    >>> [round(float(v), 6) for v in g]  # P_s = (1/2, 1/2), P_y = (e, 1) / (e + 1)
    [-0.231059, 0.231059]
    """

    _param_names = ("target",)

    def __init__(self, target="exp"):
        self.target = target
        self._validated()

    def _validated(self):
        return dict(target=_check_choice(self.target, "target", LISTNET_TARGETS))

    def _compute(self, scores, labels, query_offsets):
        p = self._validated()
        scores, labels, offs = validate_grouped(scores, labels, query_offsets)
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
        return _k.listnet(scores, targets, offs, active)

    def grad_hess(self, scores, labels, query_offsets, iteration: int = 0):
        _check_iteration(iteration)
        _, grad, hess = self._compute(scores, labels, query_offsets)
        return grad, hess

    def loss(self, scores, labels, query_offsets) -> float:
        """Cross-entropy summed over the (non-constant-label) queries."""
        return float(self._compute(scores, labels, query_offsets)[0].sum())


# -------------------------------------------------------------------------------------------
class Gumbel(ObjectiveParams):
    """The stochastic treatment ``E[.]`` of Bruch, Han, Bendersky, Najork (WSDM 2020), Alg. 1.

    For each of ``n_samples`` draws, every document's score is perturbed by independent
    Gumbel(0, beta) noise ``G = -beta log(-log U)``; the wrapped objective's ``grad_hess`` is
    evaluated at the stochastic scores ``s + G`` and the gradients and hessians are averaged::

        grad = (1/N) sum_k grad_obj(s + G_k),   hess = (1/N) sum_k hess_obj(s + G_k).

    Algorithm 1 feeds ``log softmax(s + G)`` to the loss; that differs from ``s + G`` by one
    constant per query, which every ranking objective of this package ignores (all are
    translation invariant), and the chain rule through the log-softmax leaves such gradients
    unchanged; so ``s + G`` is Algorithm 1 exactly for them. Noise for query ``q`` and sample
    ``k`` comes from the counter-based stream keyed by ``(seed, iteration, q, k)``: the same
    seed and iteration give bit-identical results on any number of threads. The wrapped
    objective is called with the same ``iteration``. :meth:`loss` is the Monte-Carlo estimate
    ``(1/N) sum_k loss_obj(s + G_k)`` with the noise of ``iteration``.

    Args:
      objective: any object with ``grad_hess`` (the protocol).
      beta: Gumbel scale, > 0 (the paper: 0.25 for trees, 1 for neural networks).
      n_samples: draws averaged per gradient (the paper: 8).
      seed: noise seed (>= 0).

    >>> import numpy as np
    >>> obj = Gumbel(LambdaMART(), beta=0.25, n_samples=8, seed=3)
    >>> g1, _ = obj.grad_hess(np.zeros(3), np.array([2.0, 0.0, 1.0]), [0, 3], iteration=5)
    >>> g2, _ = obj.grad_hess(np.zeros(3), np.array([2.0, 0.0, 1.0]), [0, 3], iteration=5)
    >>> bool(np.array_equal(g1, g2)) and bool(g1[0] < 0 < g1[1])
    True
    """

    _param_names = ("objective", "beta", "n_samples", "seed")

    def __init__(self, objective, beta=0.25, n_samples=8, seed=0):
        self.objective = objective
        self.beta = beta
        self.n_samples = n_samples
        self.seed = seed
        self._validated()

    def _validated(self):
        if not callable(getattr(self.objective, "grad_hess", None)):
            raise TypeError("objective must have a grad_hess(scores, labels, query_offsets, "
                            f"iteration) method, got {type(self.objective).__name__}")
        return dict(beta=_check_float(self.beta, "beta", gt=0.0),
                    n_samples=_check_int(self.n_samples, "n_samples", 1),
                    seed=_check_seed(self.seed))

    def noise(self, query_offsets, iteration: int = 0) -> np.ndarray:
        """The Gumbel(0, beta) perturbations, shape ``(n_samples, n_docs)``."""
        p = self._validated()
        iteration = _check_iteration(iteration)
        offs = np.ascontiguousarray(query_offsets, dtype=np.int64)
        return p["beta"] * _k.draw_grouped_gumbel(offs, p["n_samples"], p["seed"], iteration)

    def grad_hess(self, scores, labels, query_offsets, iteration: int = 0):
        scores, labels, offs = validate_grouped(scores, labels, query_offsets)
        noise = self.noise(offs, iteration)
        grad = np.zeros_like(scores)
        hess = np.zeros_like(scores)
        for k in range(noise.shape[0]):
            g, h = self.objective.grad_hess(scores + noise[k], labels, offs, iteration=iteration)
            grad += g
            hess += h
        return grad / noise.shape[0], hess / noise.shape[0]

    def loss(self, scores, labels, query_offsets, iteration: int = 0) -> float:
        if not callable(getattr(self.objective, "loss", None)):
            raise TypeError(f"{type(self.objective).__name__} exposes no loss")
        scores, labels, offs = validate_grouped(scores, labels, query_offsets)
        noise = self.noise(offs, iteration)
        return float(np.mean([self.objective.loss(scores + noise[k], labels, offs)
                              for k in range(noise.shape[0])]))


def e_lambda_mart(beta=0.25, n_samples=8, seed=0, **lambdamart_params) -> Gumbel:
    """E[lambda-MART] (Bruch et al. 2020): :class:`Gumbel` around ``LambdaMART(**params)``.

    With ``lightgbm=True`` in ``lambdamart_params`` the inner objective is
    ``LambdaMART.lightgbm(**rest)`` (LightGBM parameter names), as in the paper's LightGBM runs.
    """
    if lambdamart_params.pop("lightgbm", False):
        inner = LambdaMART.lightgbm(**lambdamart_params)
    else:
        inner = LambdaMART(**lambdamart_params)
    return Gumbel(inner, beta=beta, n_samples=n_samples, seed=seed)


# -------------------------------------------------------------------------------------------
class SoftRank(StochasticRank):
    """SoftRank as the StochasticRank paper runs it (Ustimenko & Prokhorenkova 2020, Section 7).

    SoftRank (Taylor, Guiver, Robertson, Minka, WSDM 2008) maximises the expected NDCG of the
    scores corrupted by Gaussian noise; per query, with ``L = -NDCG@k``,

        L_sigma(z) = E L(z + sigma eps),   eps ~ N(0, I),

    whose gradient the StochasticRank paper estimates by Coordinate Conditional Sampling
    ("For SoftRank we used CCS to estimate gradients, since the original approach is
    computation and memory demanding"; main text Section 7) instead of SoftRank's O(m^3)
    rank-binomial approximation. That is :class:`StochasticRank` with ``metric="NDCG"``,
    unbiased noise (``mu = 0``: expected tie resolution, no consistency correction) and without
    Scale-Free Acceleration (``sfa = 0``) -- and without SGLB (which is a boosting setting,
    not part of an objective: do not pass ``sglb=`` to the adapters). The gradient is centred per
    query (unbiased: NDCG is translation invariant); ``conditioning`` picks the CCS conditional
    law (``"translation"``, a Rao-Blackwellisation of the paper's ``"coordinate"`` law; both are
    unbiased for the same ``L_sigma``). Unit hessian (a gradient-step leaf).

    Args: top (k; ``None`` = whole list), sigma (> 0), n_samples, seed, conditioning, gain,
    hessian -- as in :class:`StochasticRank`, which has the estimator.

    >>> import numpy as np
    >>> obj = SoftRank(top=2, seed=1)
    >>> g, h = obj.grad_hess(np.zeros(3), np.array([2.0, 0.0, 1.0]), np.array([0, 3]))
    >>> bool(g[0] < 0 < g[1]) and (obj.mu, obj.sfa) == (0.0, 0.0)
    True
    """

    _param_names = ("top", "sigma", "n_samples", "seed", "conditioning", "gain", "hessian")

    def __init__(self, top=None, sigma=1.0, n_samples=1, seed=0, conditioning="translation",
                 gain="exp2", hessian="constant"):
        super().__init__(metric="NDCG", top=top, sigma=sigma, mu=0.0, sfa=0.0, n_samples=n_samples,
                         seed=seed, estimator="ccs", conditioning=conditioning, gain=gain,
                         hessian=hessian, smoothing="absolute", anneal_half_life=None)


# -------------------------------------------------------------------------------------------
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

    >>> import numpy as np
    >>> obj = SmoothNDCG(smoothing=0.01)
    >>> round(-obj.loss(np.array([2.0, 0.0, 1.0]), np.array([2.0, 0.0, 1.0]), [0, 3]), 6)
    1.0
    >>> SmoothNDCG(smoothing=64, anneal_every=10, min_smoothing=1 / 64).smoothing_at(35)
    8.0
    """

    _param_names = ("smoothing", "top", "gain", "anneal_every", "anneal_factor",
                    "min_smoothing", "start_iterations")

    def __init__(self, smoothing=1.0, top=None, gain="exp2", anneal_every=None, anneal_factor=2.0,
                 min_smoothing=None, start_iterations=0):
        self.smoothing = smoothing
        self.top = top
        self.gain = gain
        self.anneal_every = anneal_every
        self.anneal_factor = anneal_factor
        self.min_smoothing = min_smoothing
        self.start_iterations = start_iterations
        self._validated()

    def _validated(self):
        smoothing = _check_float(self.smoothing, "smoothing", gt=0.0)
        anneal_factor = _check_float(self.anneal_factor, "anneal_factor", gt=1.0)
        min_smoothing = smoothing / 4096.0
        if self.min_smoothing is not None:
            min_smoothing = _check_float(self.min_smoothing, "min_smoothing", gt=0.0)
            if min_smoothing > smoothing:
                raise ValueError(f"min_smoothing ({min_smoothing}) must not exceed smoothing "
                                 f"({smoothing})")
        return dict(smoothing=smoothing,
                    top=_check_int(self.top, "top", 1, allow_none=True),
                    gain=_check_choice(self.gain, "gain", ("exp2", "linear")),
                    anneal_every=_check_int(self.anneal_every, "anneal_every", 1, allow_none=True),
                    anneal_factor=anneal_factor, min_smoothing=min_smoothing,
                    start_iterations=_check_int(self.start_iterations, "start_iterations", 0))

    def smoothing_at(self, iteration: int) -> float:
        """The smoothing ``sigma`` of boosting iteration ``iteration`` (see the class docstring)."""
        p = self._validated()
        iteration = _check_iteration(iteration)
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

    def _compute(self, scores, labels, query_offsets, smoothing):
        p = self._validated()
        scores, labels, offs = validate_grouped(scores, labels, query_offsets)
        gains = _ndcg_gains(labels, p["gain"])
        sizes = np.diff(offs)
        max_n = int(sizes.max()) if sizes.size else 0
        top = max_n if p["top"] is None else p["top"]
        inv_ideal = _k.inverse_ideal_dcg(gains, gains, offs, _k.dcg_discounts(max_n, max_n), top)
        loss, grad = _k.smooth_ndcg(scores, gains, offs, inv_ideal, _k.dcg_discounts(max_n, top),
                                    smoothing)
        _zero_constant_label_queries(labels, offs, loss, grad, np.zeros_like(grad))
        return loss, grad, scores, labels, offs, gains, inv_ideal

    def grad_hess(self, scores, labels, query_offsets, iteration: int = 0):
        """``(grad, hess)``: SmoothNDCG at ``smoothing_at(iteration)``, or the regression
        starting point while ``iteration < start_iterations``."""
        p = self._validated()
        iteration = _check_iteration(iteration)
        if iteration < p["start_iterations"]:
            scores, labels, offs = validate_grouped(scores, labels, query_offsets)
            grad = scores - _ndcg_gains(labels, p["gain"])
            return grad, np.ones_like(grad)
        grad = self._compute(scores, labels, query_offsets, self.smoothing_at(iteration))[1]
        return grad, np.ones_like(grad)

    def loss(self, scores, labels, query_offsets, iteration=None) -> float:
        """``-sum_q A_q`` at ``smoothing_at(iteration)`` (``None``: the initial ``smoothing``)."""
        sigma = self._validated()["smoothing"] if iteration is None else \
            self.smoothing_at(iteration)
        return float(self._compute(scores, labels, query_offsets, sigma)[0].sum())


# -------------------------------------------------------------------------------------------
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
    ``i``, with the other documents' inclusions ``1{y_j > 0}`` fixed,

        grad_i = J_i phi(z_i / sigma) / sigma,
        J_i = L(i shown) - L(i hidden) = -(r_i / (1 + c_i)
                                          - sum_{j > i shown} r_j / ((1 + c'_j)(2 + c'_j))),

    ``c_i`` the number of shown documents before ``i``, ``c'_j`` those before ``j`` other than
    ``i`` (showing ``i`` pushes every later shown document down one rank); averaged over
    ``n_samples`` draws, O(n) per query and draw (a Numba kernel). ``J_i`` does not depend on
    ``e_i``, so the estimate is unbiased. DCG-RR is **not** translation invariant: no centring,
    no Scale-Free Acceleration. The noise of query ``q``, draw ``k`` is the stream
    ``(seed, iteration, q, k)`` of :mod:`stochrank_objectives.kernels.rng` (the normals of
    :func:`stochrank_objectives.objectives.draw_noise`). Hessian: 1 per document.

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

    _param_names = ("sigma", "n_samples", "seed")

    def __init__(self, sigma=1.0, n_samples=1, seed=0):
        self.sigma = sigma
        self.n_samples = n_samples
        self.seed = seed
        self._validated()

    def _validated(self):
        return dict(sigma=_check_float(self.sigma, "sigma", gt=0.0),
                    n_samples=_check_int(self.n_samples, "n_samples", 1),
                    seed=_check_seed(self.seed))

    def gradient(self, scores, labels, query_offsets, iteration: int = 0, noise=None):
        """The CCS estimate; ``noise``: optional unit normals ``(n_samples, n_docs)`` to use
        instead of the seeded streams (for tests and common random numbers)."""
        p = self._validated()
        iteration = _check_iteration(iteration)
        scores, labels, offs = validate_grouped(scores, labels, query_offsets)
        if noise is None:
            return _k.dcgrr_ccs_seeded(scores, labels, offs, p["sigma"], p["n_samples"],
                                       p["seed"], iteration)
        noise = as_noise(noise, scores.shape[0])
        return _k.dcgrr_ccs_from_noise(scores, labels, noise, offs, p["sigma"])

    def grad_hess(self, scores, labels, query_offsets, iteration: int = 0):
        grad = self.gradient(scores, labels, query_offsets, iteration)
        return grad, np.ones_like(grad)

    def loss(self, scores, labels, query_offsets) -> float:
        """``-sum_q DCG-RR_q(z)`` (the discrete loss; documents shown where ``z > 0``)."""
        scores, labels, offs = validate_grouped(scores, labels, query_offsets)
        return -float(_k.dcgrr_values(scores, labels, offs).sum())
