"""StochasticRank and its variant SoftRank (no shift, no SFA); DCG-RR (an LSO loss) is in
:mod:`.dcgrr`.

Each is an :class:`~._protocol.Objective`; the estimator they share is in :mod:`._estimator`.

Example:

>>> import numpy as np
>>> obj = StochasticRank(metric="NDCG", top=2, seed=1)
>>> grad, hess = obj.grad_hess(np.zeros(3), np.array([2.0, 0.0, 1.0]), np.array([0, 3]))
>>> bool(grad[0] < 0 < grad[1])  # the best document is pushed up, the worst down
True
>>> bool(np.all(hess > 0)), round(float(hess.mean()), 12)  # a curvature, of mean 1
(True, 1.0)
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..metric_spec import MetricSpec
from ..metric_values import evaluate_spec
from .training_metric import (check_min_top_share, check_order_can_change, check_reach,
                              training_args)
from ..validation import anything, choice, integer, real, seed
from ._estimator import (CONDITIONINGS, ESTIMATORS, HESSIAN_FLOOR, HESSIANS, SMOOTHINGS,
                         SUMMATIONS, abs_gradient_hessian, annealed_sigma,
                         check_estimator_for, check_shift, check_spread_top, estimate,
                         noise_scales, unit_mean_hessian)
from ._protocol import ObjectiveParams, check_iteration

__all__ = ["StochasticRank", "SoftRank"]

_METRIC_FIELDS = ("metric", "top", "gain", "grade_max", "threshold", "decay")


class StochasticRank(ObjectiveParams):
    """StochasticRank objective: the CCS gradient of a Gaussian-smoothed ranking metric.

    Per query the loss ``-M`` (NDCG@k, DCG@k, ERR@k, MRR) is smoothed as
    ``E L(z + s (eps - mu r))``, ``eps ~ N(0, I)``, with ``s = sigma_t * sqrt(var(z) + nu^2)``
    (relative smoothing) and ``sigma_t = max(min(sigma, sigma_min), sigma 2^(-t / half_life))``;
    the gradient is the CCS estimate plus the exact radial term (the formulas:
    :mod:`stochrank_objectives.kernels.ccs`).

    Defaults, chosen by measurement (``benchmarks.global_optimum``, ``benchmarks.synthetic``,
    ``benchmarks.defaults``, ``benchmarks.sr_levers``; ``docs/guide/stochasticrank.md``):
    relative smoothing with a constant ``sigma = 0.1`` reaches the global optimum of the paper's
    Table 1 in every booster and seed, and of random multimodal problems more often than the
    boosters' LambdaMARTs; against ``sigma = 0.3`` annealed to ``0.1`` (the default before) it
    gained on long lists and was within noise elsewhere. ``mu = 0`` because every ``mu > 0``
    tried lowered that rate.
    ``StochasticRank.paper(...)`` gives the paper's and CatBoost's parametrisation (absolute
    ``sigma = 1``, ``nu = 0.01``, no annealing); its parameters then mirror CatBoost's
    ``StochasticRank:metric=...;top=...;sigma=...;mu=...;nu=...;lambda=...;num_estimations=...``
    (``sfa`` = ``lambda``, ``n_samples`` = ``num_estimations``). The estimator follows the paper
    (exact conditional law for every sigma, exact ERR differences).

    Source: Ustimenko & Prokhorenkova, "StochasticRank: Global Optimization of Scale-Free
    Discrete Functions", ICML 2020 (the estimator's formulas: the module docstring of
    :mod:`stochrank_objectives.kernels.ccs`).

    >>> import numpy as np
    >>> obj = StochasticRank(metric="NDCG", top=5)
    >>> [obj.sigma_at(t) for t in (0, 100, 1000)]  # constant: sigma is at its floor sigma_min
    [0.1, 0.1, 0.1]
    >>> [StochasticRank(sigma=0.3).sigma_at(t) for t in (0, 100, 1000)]  # annealed to sigma_min
    [0.3, 0.15, 0.1]
    >>> g, h = obj.grad_hess(np.array([1.0, 0.0, 2.0]), np.array([2.0, 0.0, 1.0]),
    ...                      np.array([0, 3]))
    >>> bool(g[0] < 0 < g[1])
    True

    Args:
      metric: ``"NDCG"`` (default), ``"DCG"``, ``"ERR"``, ``"MRR"``, ``"PFound"``,
        ``"FilteredDCG"``, ``"Precision"``, ``"MAP"`` or ``"Recall"`` (case-insensitive; see
        :mod:`.metric_spec`).
        PFound and FilteredDCG follow CatBoost's definitions: PFound's labels are probabilities
        in [0, 1]; FilteredDCG drops the documents scored below 0 (a virtual document at 0),
        uses the Position denominator ``1/(p+1)``, is not centred, and its radial correction
        uses the scores themselves (``kernels.noise_scale.center_and_accelerate``). Precision,
        MAP and Recall count ``label > threshold`` as relevant; MAP@k and Recall@k divide by
        all relevant documents.
      top: cutoff k (``None`` = whole list; required for Precision and Recall, whose value on
        a whole list does not depend on the order). For those two the rankers refuse a
        ``top`` (grown by ``min_top_share``) that covers every query's whole list of their
        training data -- ``top >=`` the longest list's length: every gradient would be 0
        (:meth:`check_training_queries`); the first :meth:`grad_hess` on such data warns (it
        may be a part of the training data: a Dask partition). The queries it covers while
        others are longer give 0 legitimately.
      sigma: smoothing noise scale, > 0 -- relative to each query's score spread with
        ``smoothing="relative"`` (default 0.1; useful range 0.05-1), in score units with
        ``"absolute"``. The initial value when annealed (a ``sigma`` above ``sigma_min``).
      mu: relevance shift of the noise mean, ``eps ~ N(-mu r, I)`` in noise standard deviations;
        0 = SR-R1soft (default), > 0 = SR-R1 (search 0.01-0.3). ``mu * (label range) > 4`` is
        refused at training: the smoothed loss is flat around ties there.
      nu: > 0 (default 1). Relative smoothing: the floor of the score spread (in score units)
        below which the noise stays ``sigma * nu``; absolute: SFA's norm regulariser (the
        paper's 0.01).
      sfa: strength of the radial correction, 1 = exact (relative) / the paper's SFA (absolute),
        0 = off.
      n_samples: noise draws averaged per gradient.
      seed: noise seed (>= 0); with the iteration it keys every noise stream.
      estimator: ``"ccs"`` or ``"reinforce"`` (ablation only: unbounded variance).
      conditioning: ``"translation"`` (Rao-Blackwellised, default) or ``"coordinate"``.
      gain: NDCG/DCG gain, ``"exp2"`` (``2^r - 1``) or ``"linear"`` (``r``, CatBoost's default).
      grade_max: ERR grade mapping ``(2^r - 1) / 2^grade_max``; ``None`` = labels are probabilities.
      threshold: MRR / Precision / MAP relevance, ``label > threshold``.
      decay: PFound's probability of looking on past a non-relevant document, in [0, 1]
        (default 0.85, CatBoost's).
      hessian: ``"abs_gradient_normalised"`` (default) -- a curvature scale for Newton leaves,
        ``h_i = |g_i| / s_q + f mean(|g| / s)`` (``s_q`` the query's noise scale, ``f`` =
        ``hessian_floor``; :func:`~._estimator.abs_gradient_hessian`), with gradient and hessian
        both divided by ``mean(h)`` (:func:`~._estimator.unit_mean_hessian`): a leaf moves its
        documents by about one noise standard deviation, ``sum(-g) / sum(h)``, and the
        boosters' leaf regularisers (XGBoost ``min_child_weight``/``reg_lambda``, CatBoost
        ``l2_leaf_reg``) keep the meaning they have for a unit hessian. On long lists a unit
        hessian's leaf ``sum(-g) / count`` is diluted by the many documents far below the
        cutoff that have almost no gradient. ``"abs_gradient"`` -- the same hessian without the
        rescaling. ``"constant"`` -- 1 per document, ``sum(-g) / (count + l2)``: CatBoost's
        native StochasticRank step (gradient leaf estimation) and :meth:`paper`'s. Measured
        (MQ2008 depth 4 and 6, the LightGBM sample, long lists, every booster):
        ``docs/guide/objectives.md``.
      hessian_floor: ``f`` above (> 0, default 0.01): keeps every hessian positive.
      smoothing: ``"relative"`` (default) or ``"absolute"`` (the paper, CatBoost).
      reach: MRR only, in [0, 1]: a relevant document's continuation in the cascade, so that
        the trained value is ``sum_j reach^(j-1) / (p_j + 1)`` over the relevant documents in
        rank order whose weight ``reach^(j-1)`` is at least 1% (the first four at 0.3;
        :func:`~..training_metric.with_reach`); 0 = MRR exactly. ``None`` (default) = 0.3 for
        MRR with the CCS estimator, 0 for every other metric and for REINFORCE. With the
        default small noise a relevant document below the first gets no MRR gradient at all;
        LambdaMART on the same binary labels pushes every relevant document above the
        irrelevant ones near the top.
        Measured (MQ2008 depth 4 and 6, the LightGBM sample, long lists, every booster):
        ``docs/guide/stochasticrank.md``. :meth:`loss` stays MRR.
      min_top_share: in [0, 1]: the share of a query's ``n`` documents its training cutoff
        covers at least -- the query is trained on the metric at ``max(top, ceil(min_top_share
        * n))`` (:func:`~..training_metric.training_args`); 0 = ``top`` in every query.
        ``None`` (default) = 0.1 for NDCG@k (a query of more than ``10 k`` documents trains
        on NDCG at a tenth of its length), 0 for every other metric. At equal scores a
        document lands in the top ``k`` of ``n`` with probability ``k / n``: on long lists the
        top-k's small-noise gradient misses most documents. Measured (MQ2008 depth 4 and 6,
        long lists, every booster): ``docs/guide/stochasticrank.md``. :meth:`loss` stays the
        metric at ``top``. Recall refuses ``min_top_share=1``: ``ceil(1 x n) = n`` trains every
        query on its whole list, where recall is 1 whatever the order. Below 1 a query of
        ``n`` documents keeps an order to train while ``top < n`` and ``min_top_share <=
        (n - 1) / n``; training data in which no query does is refused by the rankers (see
        ``top``).
      spread_top: relative smoothing: the score spread ``rho_q`` is that of the query's
        ``spread_top`` highest-scored documents (an integer >= 2), the region a top-k metric
        ranks, rather than the whole list's (``None``, default); on lists of hundreds the
        whole list's spread is that of the documents far below the cutoff. The radial
        correction stays exact (``kernels.noise_scale.center_and_accelerate``).
      sigma_min: floor of the annealed sigma (default 0.1; never above ``sigma``): at the
        default ``sigma = 0.1`` the smoothing is constant.
      anneal_half_life: iterations over which a ``sigma`` above ``sigma_min`` halves (default
        100); ``None`` = constant.
      summation: ``"auto"`` (default), ``"exact"`` or ``"fast"``: how the per-document
        breakpoint sums are computed (see :func:`~._estimator.stochastic_rank_gradient`). Only
        speed changes: ``"fast"`` (one-sided Gauss transforms, ``O(n)`` per sample) differs
        from ``"exact"`` (``O(n^2)`` on full lists) by less than 1.7e-12 of the summed jumps.

    Returns:
      :meth:`grad_hess`: ``(grad, hess)``, float64 arrays; :meth:`loss`: the
      discrete loss ``-mean_q M_q`` with worst-permutation ties.
    """

    _parameter_constraints = {
        # the metric fields are checked together by MetricSpec.make (_check_together)
        "metric": anything, "top": anything, "gain": anything, "grade_max": anything,
        "threshold": anything, "decay": anything,
        "sigma": real(gt=0.0), "mu": real(ge=0.0), "nu": real(gt=0.0), "sfa": real(ge=0.0),
        "n_samples": integer(1), "seed": seed,
        "estimator": choice(*ESTIMATORS), "conditioning": choice(*CONDITIONINGS),
        "hessian": choice(*HESSIANS), "smoothing": choice(*SMOOTHINGS),
        "sigma_min": real(gt=0.0), "anneal_half_life": real(gt=0.0, optional=True),
        "summation": choice(*SUMMATIONS), "hessian_floor": real(gt=0.0),
        "spread_top": anything,  # checked with smoothing (_check_together)
        "reach": anything,  # checked with the metric (_check_together)
        "min_top_share": anything,  # checked with the metric (_check_together)
    }

    def __init__(self, metric: str = "NDCG", top: int | None = None, sigma: float = 0.1,
                 mu: float = 0.0, nu: float = 1.0, sfa: float = 1.0, n_samples: int = 1,
                 seed: int = 0, estimator: str = "ccs", conditioning: str = "translation",
                 gain: str = "exp2", grade_max: float | None = None, threshold: float = 0.0,
                 hessian: str = "abs_gradient_normalised", smoothing: str = "relative",
                 sigma_min: float = 0.1,
                 anneal_half_life: float | None = 100.0, decay: float = 0.85,
                 summation: str = "auto", hessian_floor: float = HESSIAN_FLOOR,
                 spread_top: int | None = None, reach: float | None = None,
                 min_top_share: float | None = None):
        self.metric = metric
        self.top = top
        self.sigma = sigma
        self.mu = mu
        self.nu = nu
        self.sfa = sfa
        self.n_samples = n_samples
        self.seed = seed
        self.estimator = estimator
        self.conditioning = conditioning
        self.gain = gain
        self.grade_max = grade_max
        self.threshold = threshold
        self.hessian = hessian
        self.smoothing = smoothing
        self.sigma_min = sigma_min
        self.anneal_half_life = anneal_half_life
        self.decay = decay
        self.summation = summation
        self.hessian_floor = hessian_floor
        self.spread_top = spread_top
        self.reach = reach
        self.min_top_share = min_top_share

    @classmethod
    def paper(cls, metric="NDCG", top=None, **params):
        """The paper's and CatBoost's parametrisation: absolute smoothing, ``sigma = 1``,
        ``nu = 0.01``, no annealing, a unit hessian, MRR without reach and the top-k in every
        query (CatBoost's ``StochasticRank`` defaults).

        Example: ``StochasticRank.paper("ERR", top=10, grade_max=4)``.

        Args:
          metric, top: the metric; params: any other parameter (overrides the settings).

        Returns:
          a :class:`StochasticRank`.
        """
        settings = dict(sigma=1.0, nu=0.01, smoothing="absolute", anneal_half_life=None,
                        hessian="constant", reach=0.0, min_top_share=0.0)
        return cls(metric=metric, top=top, **{**settings, **params})

    def _check_together(self, values: dict) -> dict:
        spec = MetricSpec.make(*(values[name] for name in _METRIC_FIELDS))
        check_estimator_for(values["estimator"], spec)
        values["spread_top"] = check_spread_top(values["spread_top"], values["smoothing"])
        values["reach"] = check_reach(values["reach"], spec, values["estimator"])
        values["min_top_share"] = check_min_top_share(values["min_top_share"], spec)
        values.update({name: getattr(spec, name) for name in _METRIC_FIELDS}, spec=spec)
        return values

    def sigma_at(self, iteration: int) -> float:
        """The noise scale used at ``iteration``: ``max(min(sigma, sigma_min), sigma *
        2^(-iteration / anneal_half_life))`` (``sigma`` when ``anneal_half_life`` is None)."""
        p = self._checked()
        return annealed_sigma(p["sigma"], p["sigma_min"], p["anneal_half_life"],
                               check_iteration(iteration))

    @property
    def metric_spec(self) -> MetricSpec:
        """The validated :class:`~.metric_spec.MetricSpec` of the objective's metric."""
        return self._checked()["spec"]

    def check_training_queries(self, query_offsets) -> None:
        """Refuse training data in which no query's order can change the metric (Precision
        or Recall with a ``top``, grown by ``min_top_share``, at or above every query's
        length: every gradient 0, a constant model), naming ``top`` and the fix. The rankers
        call it on their whole training data.

        Example::

            StochasticRank(metric="Recall", top=1000).check_training_queries([0, 118])  # raises

        Args:
          query_offsets: the training data's query offsets.
        """
        p = self._checked()
        check_order_can_change(p["spec"], np.asarray(query_offsets, dtype=np.int64),
                               p["min_top_share"])

    def _prepared(self, data):
        """The metric's per-query arguments for ``data`` (gains, IDCG, grown cutoffs), once per
        training data (:meth:`~._protocol.ObjectiveParams._per_data`; the IDCG sort would
        otherwise double the cost), with the checks that read the labels."""
        p = self._checked()

        def build(labels, offs):
            # a warning, as these may be a part of the training data (the rankers refuse on
            # the whole)
            check_order_can_change(p["spec"], offs, p["min_top_share"], refuse=False)
            check_shift(p["mu"], labels)  # the shift against these labels' range
            return training_args(p["spec"], labels, offs, reach=p["reach"],
                                 min_top_share=p["min_top_share"])

        return self._per_data(data, (p["spec"], p["reach"], p["min_top_share"], p["mu"]), build)

    # -- the protocol -------------------------------------------------------------------
    def _grad_hess(self, scores, data, iteration):
        """``(grad, hess)`` of the smoothed loss at ``scores`` (see the protocol)."""
        p = self._checked()
        sigma = annealed_sigma(p["sigma"], p["sigma_min"], p["anneal_half_life"], iteration)
        labels, offs, doc_weights = data.labels, data.query_offsets, data.document_weights()
        prepared = self._prepared(data)
        relative = p["smoothing"] == "relative"
        scales = noise_scales(scores, offs, sigma, p["nu"], relative, p["spread_top"])
        grad = estimate(scores, labels, offs, prepared, sigma=sigma,
                        mu=p["mu"], nu=p["nu"], sfa=p["sfa"], n_samples=p["n_samples"],
                        seed=p["seed"], iteration=iteration, estimator=p["estimator"],
                        conditioning=p["conditioning"], smoothing=p["smoothing"],
                        spec=p["spec"], path=SUMMATIONS[p["summation"]],
                        spread_top=p["spread_top"], query_scales=scales, reach=p["reach"])
        if p["hessian"] == "constant":
            return grad, np.ones_like(grad)
        hess = abs_gradient_hessian(grad, scores, offs, sigma, p["nu"], relative,
                                    p["hessian_floor"], query_scales=scales,
                                    doc_weights=doc_weights)
        if p["hessian"] == "abs_gradient_normalised":
            return unit_mean_hessian(grad, hess, doc_weights)
        return grad, hess

    def loss(self, scores, labels, query_offsets, iteration: int = 0) -> float:
        """The discrete loss ``-mean_q M_q`` with worst-permutation ties (what SR-R1 targets;
        ``iteration`` does not change it)."""
        check_iteration(iteration)
        return -evaluate_spec(self.metric_spec, scores, labels, query_offsets, ties="worst")


class SoftRank(StochasticRank):
    """SoftRank as the StochasticRank paper runs it (Ustimenko & Prokhorenkova 2020, Section 7).

    Example:

    >>> import numpy as np
    >>> obj = SoftRank(top=2, seed=1)
    >>> g, h = obj.grad_hess(np.zeros(3), np.array([2.0, 0.0, 1.0]), np.array([0, 3]))
    >>> bool(g[0] < 0 < g[1]) and (obj.mu, obj.sfa) == (0.0, 0.0)
    True

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
    """

    _parameter_constraints = {
        "top": anything, "sigma": real(gt=0.0), "n_samples": integer(1), "seed": seed,
        "conditioning": choice(*CONDITIONINGS), "gain": anything, "hessian": choice(*HESSIANS),
    }

    # what makes it SoftRank: fixed, not parameters (StochasticRank's constraints check them;
    # StochasticRank's defaults apply to the rest)
    _FIXED_PARAMETERS: dict[str, Any] = {"metric": "NDCG", "mu": 0.0, "sfa": 0.0, "estimator": "ccs",
                         "smoothing": "absolute", "anneal_half_life": None}

    def __init__(self, top: int | None = None, sigma: float = 1.0, n_samples: int = 1,
                 seed: int = 0, conditioning: str = "translation", gain: str = "exp2",
                 hessian: str = "constant"):
        super().__init__(top=top, sigma=sigma, n_samples=n_samples, seed=seed,
                         conditioning=conditioning, gain=gain, hessian=hessian,
                         **self._FIXED_PARAMETERS)
