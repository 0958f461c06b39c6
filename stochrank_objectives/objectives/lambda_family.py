"""The lambda family: LambdaMART, LambdaLoss NDCG-Loss2++ and the Gumbel E[.] around them.

Losses are **sums over queries** of per-query losses (so ``grad`` is exactly ``d loss /
d scores``; LightGBM and XGBoost also sum). Orders are stable sorts by score descending (ties
keep input order, as in LightGBM and XGBoost). Queries with one document, with all labels equal
or with no relevant document contribute nothing: zero gradient, zero hessian, zero loss. The
emulation of the boosters' own objectives (``LambdaMART.lightgbm()``, ``LambdaMART.xgboost()``)
is in :mod:`.booster_compat`.

Example:

>>> import numpy as np
>>> scores, labels, offs = np.zeros(3), np.array([2.0, 0.0, 1.0]), np.array([0, 3])
>>> grad, hess = LambdaMART(top=2).grad_hess(scores, labels, offs)
>>> bool(grad[0] < 0 < grad[1])  # the best document is pushed up, the worst down
True
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..kernels import pairwise as _k
from ..kernels.common import dcg_discounts, inverse_ideal_dcg, reciprocal_weights
from ..kernels.rng import draw_grouped_gumbel
from ..metric_spec import ndcg_constants, ndcg_gains
from ..metric_table import DCG_GAIN, LAMBDAMART_METRICS, metric_row
from ..validation import boolean, choice, integer, real, seed
from . import booster_compat
from ._protocol import GAIN, Objective, ObjectiveParams, check_iteration, validated

__all__ = ["LambdaMART", "LambdaLoss", "Gumbel", "e_lambda_mart"]



def _lambdamart_metric(value, name):
    if not isinstance(value, str) or value.upper() not in LAMBDAMART_METRICS:
        raise ValueError(f"{name} must be one of {LAMBDAMART_METRICS}, got {value!r}")
    return value.upper()


def _label_gain(value, name):
    if value is None:
        return None
    try:
        table = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{name} must be a sequence of numbers") from exc
    if table.ndim != 1 or table.size == 0:
        raise ValueError(f"{name} must be a non-empty 1-d sequence (gain of label i)")
    if not np.all(np.isfinite(table)) or np.any(table < 0):
        raise ValueError(f"{name} must be finite and non-negative")
    return table


class LambdaMART(ObjectiveParams):
    """LambdaMART lambdas for NDCG@k or MRR@k (Burges 2010, "From RankNet to LambdaRank to
    LambdaMART"; Wu, Burges, Svore, Gao 2010).

    Example:

    >>> import numpy as np
    >>> g, h = LambdaMART.lightgbm().grad_hess(np.zeros(2), np.array([1.0, 0.0]), [0, 2])
    >>> bool(g[0] < 0 < g[1]) and bool(h[0] > 0)
    True

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
      only; what follows restates XGBoost's implementation, as of xgboost 3.x): pairs
      with the upper position ``< top`` (``lambdarank_num_pair_per_sample``), untruncated
      discounts, IDCG at ``top``, ``W /= |ds| + 0.01`` (``score_norm``), the hessian
      ``2 sigma^2 max(rho (1 - rho), 1e-16) W`` (twice the logistic one, floored), the same
      ``norm``; XGBoost has no sigmoid parameter (``sigma = 1``). ``LambdaMART.xgboost(...)``
      builds it with XGBoost's parameter names and defaults (32 pairs, both normalisations on,
      exponential gain). Unit group weights (XGBoost's group-weight factor is then 1).

    :meth:`loss` is the frozen-weight surrogate ``sum_pairs W log(1 + exp(-sigma ds))``: its
    gradient is ``grad`` when ``score_norm`` and ``norm`` are off (and away from ties).

    Source: Burges (2010), MSR-TR-2010-82; LightGBM and XGBoost for the ``compat`` modes
    (:mod:`.booster_compat`).

    Returns: :meth:`grad_hess` ``(grad, hess)`` float64 arrays; :meth:`loss` a float.
    """

    _parameter_constraints = {
        "metric": _lambdamart_metric, "top": integer(1, optional=True), "sigma": real(gt=0.0),
        "gain": GAIN, "label_gain": _label_gain, "threshold": real(ge=0.0),
        "score_norm": boolean, "norm": boolean, "compat": choice(*booster_compat.COMPAT),
    }

    def __init__(self, metric: str = "NDCG", top: int | None = None, sigma: float = 1.0,
                 gain: str = "exp2", label_gain: Sequence[float] | None = None,
                 threshold: float = 0.0, score_norm: bool = False, norm: bool = False,
                 compat: str | None = None):
        self.metric = metric
        self.top = top
        self.sigma = sigma
        self.gain = gain
        self.label_gain = label_gain
        self.threshold = threshold
        self.score_norm = score_norm
        self.norm = norm
        self.compat = compat

    @classmethod
    def xgboost(cls, lambdarank_num_pair_per_sample=32, lambdarank_normalization=True,
                lambdarank_score_normalization=True, ndcg_exp_gain=True):
        """XGBoost's ``objective="rank:ndcg"`` with ``lambdarank_pair_method="topk"`` (its
        default) and the given XGBoost parameters (unweighted groups, ``lambdarank_unbiased``
        off); see ``compat="xgboost"`` in the class docstring and
        :func:`.booster_compat.xgboost_ndcg_params`."""
        return cls(**booster_compat.xgboost_ndcg_params(
            lambdarank_num_pair_per_sample, lambdarank_normalization,
            lambdarank_score_normalization, ndcg_exp_gain))

    @classmethod
    def lightgbm(cls, sigmoid=1.0, lambdarank_truncation_level=30, lambdarank_norm=True,
                 label_gain=None):
        """LightGBM's ``objective="lambdarank"`` with the given LightGBM parameters (see
        :func:`.booster_compat.lightgbm_lambdarank_params`)."""
        return cls(**booster_compat.lightgbm_lambdarank_params(
            sigmoid, lambdarank_truncation_level, lambdarank_norm, label_gain))

    def _check_together(self, values: dict) -> dict:
        graded = metric_row(values["metric"]).gain_kind == DCG_GAIN  # NDCG, not MRR
        if values["label_gain"] is not None and not graded:
            raise ValueError("label_gain applies to metric='NDCG' only")
        booster_compat.check_compat(values["compat"], values["metric"], values["label_gain"])
        return values

    def _prepared(self, data):
        """``(gains, weights, inv_ideal, top, kind)`` for ``data``, once per training data
        (:meth:`~._protocol.ObjectiveParams._per_data`): the gains, the position weights, the
        inverse ideal DCGs (a sort per query) and the cutoff depend on the labels and offsets
        alone."""
        p = self._checked()

        def build(labels, offs):
            sizes = np.diff(offs)
            max_n = int(sizes.max()) if sizes.size else 0
            lgb = p["compat"] == "lightgbm"
            untruncated = p["compat"] is not None  # both libraries discount every position
            top = max_n if p["top"] is None else p["top"]
            if metric_row(p["metric"]).gain_kind == DCG_GAIN:  # NDCG (else MRR)
                if p["label_gain"] is not None or lgb:
                    gains = booster_compat.label_table_gains(labels, p["label_gain"])
                else:
                    gains = ndcg_gains(labels, p["gain"])
                weights = dcg_discounts(max_n, max_n if untruncated else top)
                # LightGBM's ideal DCG sorts by label; ours by gain (the true ideal).
                inv_ideal = inverse_ideal_dcg(gains, labels if lgb else gains, offs,
                                              dcg_discounts(max_n, max_n), top)
                kind = _k.KIND_NDCG
            else:
                gains = (labels > p["threshold"]).astype(np.float64)
                weights = reciprocal_weights(max_n, top)
                inv_ideal = np.ones(offs.size - 1)
                kind = _k.KIND_MRR
            return gains, weights, inv_ideal, top, kind

        key = tuple(p[name] for name in ("compat", "top", "metric", "label_gain", "gain",
                                         "threshold"))
        return self._per_data(data, key, build)

    def _grad_hess(self, scores, data, iteration):
        """``(grad, hess)`` of the lambda loss at ``scores`` (see the class docstring)."""
        p = self._checked()
        labels, offs = data.labels, data.query_offsets
        gains, weights, inv_ideal, top, kind = self._prepared(data)
        if p["compat"] == "xgboost":
            return _k.xgboost_lambdarank_ndcg(scores, gains, labels, offs, inv_ideal, weights, top,
                                              p["sigma"], p["score_norm"], p["norm"])
        settings = _k.LambdaSettings(kind=kind, sigma=p["sigma"], score_norm=p["score_norm"],
                                     norm=p["norm"], lightgbm_float32=p["compat"] == "lightgbm")
        lookup = _k.SigmoidLookup._make(booster_compat.sigmoid_lookup(p["compat"], p["sigma"]))
        return _k.lambdamart_grad_hess(scores, gains, labels, offs, inv_ideal, weights, top,
                                       settings, lookup)

    def loss(self, scores, labels, query_offsets, iteration: int = 0) -> float:
        """Frozen-weight surrogate ``sum_q sum_pairs W log(1 + exp(-sigma ds))`` (no norms)."""
        check_iteration(iteration)
        scores, data = validated(scores, labels, query_offsets)
        gains, weights, inv_ideal, top, kind = self._prepared(data)
        return float(_k.lambdamart_surrogate(scores, gains, data.labels, data.query_offsets,
                                             inv_ideal, weights, top, kind,
                                             self._checked()["sigma"]).sum())


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

    Returns: :meth:`grad_hess` ``(grad, hess)``; :meth:`loss` the NDCG-Loss2++ sum.

    >>> import numpy as np
    >>> g, h = LambdaLoss().grad_hess(np.array([0.0, 1.0]), np.array([1.0, 0.0]), [0, 2])
    >>> bool(g[0] < 0 < g[1]) and abs(float(g.sum())) < 1e-12
    True
    """

    _parameter_constraints = {"mu": real(gt=0.0), "sigma": real(gt=0.0), "gain": GAIN}

    def __init__(self, mu: float = 5.0, sigma: float = 1.0, gain: str = "exp2"):
        self.mu = mu
        self.sigma = sigma
        self.gain = gain

    def _compute(self, scores, data):
        p = self._checked()
        gains, inv_ideal = self._per_data(data, p["gain"],
                                          lambda labels, offs: ndcg_constants(labels, offs,
                                                                              p["gain"]))
        return _k.lambdaloss_ndcg2pp(scores, gains, data.labels, data.query_offsets, inv_ideal,
                                     p["sigma"], p["mu"])

    def _grad_hess(self, scores, data, iteration):
        """``(grad, hess)`` of NDCG-Loss2++ with the weights at ``scores``."""
        _, grad, hess = self._compute(scores, data)
        return grad, hess

    def loss(self, scores, labels, query_offsets, iteration: int = 0) -> float:
        """The NDCG-Loss2++ value (sum over queries) with the weights at ``scores``."""
        check_iteration(iteration)
        return float(self._compute(*validated(scores, labels, query_offsets))[0].sum())


def _objective(value, name):
    if not callable(getattr(value, "grad_hess", None)):
        raise TypeError(f"{name} must have a grad_hess(scores, labels, query_offsets, "
                        f"iteration) method, got {type(value).__name__}")
    return value


class Gumbel(ObjectiveParams):
    """The stochastic treatment ``E[.]`` of Bruch, Han, Bendersky, Najork (WSDM 2020), Alg. 1.

    Example:

    >>> import numpy as np
    >>> obj = Gumbel(LambdaMART(), beta=0.25, n_samples=8, seed=3)
    >>> g1, _ = obj.grad_hess(np.zeros(3), np.array([2.0, 0.0, 1.0]), [0, 3], iteration=5)
    >>> g2, _ = obj.grad_hess(np.zeros(3), np.array([2.0, 0.0, 1.0]), [0, 3], iteration=5)
    >>> bool(np.array_equal(g1, g2)) and bool(g1[0] < 0 < g1[1])
    True

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

    Returns: :meth:`grad_hess` the averaged ``(grad, hess)``; :meth:`loss` the averaged loss.
    """

    _parameter_constraints = {"objective": _objective, "beta": real(gt=0.0),
                              "n_samples": integer(1), "seed": seed}

    def __init__(self, objective: Objective, beta: float = 0.25, n_samples: int = 8, seed: int = 0):
        self.objective = objective
        self.beta = beta
        self.n_samples = n_samples
        self.seed = seed

    @classmethod
    def examples(cls) -> list[ObjectiveParams]:
        """E[lambda-MART] and the Gumbel treatment of the default StochasticRank (tests)."""
        from .stochastic_rank import StochasticRank  # a sibling module that imports this one
        return [cls(LambdaMART()), cls(StochasticRank(), n_samples=2)]

    def noise(self, query_offsets, iteration: int = 0) -> np.ndarray:
        """The Gumbel(0, beta) perturbations, shape ``(n_samples, n_docs)``."""
        p = self._checked()
        iteration = check_iteration(iteration)
        offs = np.ascontiguousarray(query_offsets, dtype=np.int64)
        return p["beta"] * draw_grouped_gumbel(offs, p["n_samples"], p["seed"], iteration)

    def _grad_hess(self, scores, data, iteration):
        """The wrapped objective's ``(grad, hess)`` averaged over the perturbed scores."""
        noise = self.noise(data.query_offsets, iteration)
        grad = np.zeros_like(scores)
        hess = np.zeros_like(scores)
        # this package's objectives see the weights of the call in their normalisations; an
        # object of your own is called as it is (grouped_grad_hess weighs its output)
        inner = self.objective
        own = isinstance(inner, ObjectiveParams)
        for k in range(noise.shape[0]):
            g, h = (inner._grad_hess(scores + noise[k], data, iteration) if own
                    else inner.grad_hess(scores + noise[k], data.labels, data.query_offsets,
                                         iteration=iteration))
            grad += g
            hess += h
        return grad / noise.shape[0], hess / noise.shape[0]

    def loss(self, scores, labels, query_offsets, iteration: int = 0) -> float:
        """``(1/N) sum_k loss_obj(s + G_k)`` with the noise of ``iteration``."""
        if not callable(getattr(self.objective, "loss", None)):
            raise TypeError(f"{type(self.objective).__name__} exposes no loss")
        scores, data = validated(scores, labels, query_offsets)
        labels, offs = data.labels, data.query_offsets
        noise = self.noise(offs, iteration)
        return float(np.mean([self.objective.loss(scores + noise[k], labels, offs, iteration)
                              for k in range(noise.shape[0])]))


def e_lambda_mart(beta=0.25, n_samples=8, seed=0, **lambdamart_params) -> Gumbel:
    """E[lambda-MART] (Bruch et al. 2020): :class:`Gumbel` around ``LambdaMART(**params)``.

    Example:

    >>> e_lambda_mart(beta=0.5, lightgbm=True).objective.compat
    'lightgbm'

    Source: Bruch, Han, Bendersky, Najork (WSDM 2020), Algorithm 1 around LambdaMART.

    Args:
      beta, n_samples, seed: the :class:`Gumbel` parameters.
      lambdamart_params: :class:`LambdaMART` parameters; with ``lightgbm=True`` the inner
        objective is ``LambdaMART.lightgbm(**rest)`` (LightGBM parameter names), as in the
        paper's LightGBM runs.

    Returns:
      a :class:`Gumbel` objective.
    """
    if lambdamart_params.pop("lightgbm", False):
        inner = LambdaMART.lightgbm(**lambdamart_params)
    else:
        inner = LambdaMART(**lambdamart_params)
    return Gumbel(inner, beta=beta, n_samples=n_samples, seed=seed)
