"""Framework-neutral objectives: validated configuration + (grad, hess) over grouped arrays.

Protocol shared by every objective object in this package::

    obj.grad_hess(scores, labels, query_offsets, iteration=0) -> (grad, hess)

* ``scores``: the booster's raw scores (init score / base margin included), one per document;
* ``labels``, ``query_offsets``: see :mod:`stochrank_objectives.groups`;
* ``iteration``: the boosting iteration, which keys the noise streams (same seed and
  iteration -> bit-identical output, on any number of threads);
* ``grad``: the gradient of the **loss** (``-metric``), the convention of LightGBM and
  XGBoost (CatBoost's ``der1`` is ``-grad``); ``hess``: see each objective's ``hessian``.

StochasticRank (Ustimenko & Prokhorenkova, ICML 2020)
-----------------------------------------------------
For one query with scores ``z`` and labels ``r`` the loss is ``L(z) = -M(z)`` for a cascade
metric ``M`` (NDCG@k, DCG@k, ERR@k, MRR; see ``_cascade.py``), smoothed as

    L_sigma(z) = E L(z + sigma * eps),   eps ~ N(-mu * r, I),

where ``mu = 0`` is SR-R1soft (expected tie resolution) and large ``mu`` makes the smoothing
consistent with worst-permutation ties (SR-R1, Theorem 1). The gradient is estimated by
Coordinate Conditional Sampling (see :mod:`stochrank_objectives.kernels.ccs`), averaged over
``n_samples`` draws, centred per query, and orthogonalised against the centred scores ``c``
(Scale-Free Acceleration, Corollary 2)::

    g <- g - sfa * <g, c> / (||c|| + nu)^2 * c     (queries of more than two documents).

Example:

>>> import numpy as np
>>> obj = StochasticRank(metric="NDCG", top=2, seed=1)
>>> grad, hess = obj.grad_hess(np.zeros(3), np.array([2.0, 0.0, 1.0]), np.array([0, 3]))
>>> bool(grad[0] < 0 < grad[1])  # the best document is pushed up, the worst down
True
>>> hess.tolist()
[1.0, 1.0, 1.0]
"""

from __future__ import annotations

import numpy as np

from ._cascade import CascadeSpec
from .groups import _check_choice, _check_float, _check_int, as_noise, validate_grouped
from .kernels import threads_for
from .kernels.ccs import (
    DEFAULT_WINDOW,
    ccs_gradient_from_noise,
    ccs_gradient_seeded,
    center_and_accelerate,
    query_noise_scale,
    reinforce_gradient_from_noise,
    reinforce_gradient_seeded,
)
from .kernels.rng import draw_grouped_normals

__all__ = ["ObjectiveParams", "StochasticRank", "stochastic_rank_gradient", "draw_noise",
           "ESTIMATORS", "CONDITIONINGS", "HESSIANS"]

ESTIMATORS = ("ccs", "reinforce")
CONDITIONINGS = ("translation", "coordinate")
SMOOTHINGS = ("relative", "absolute")
HESSIANS = ("constant",)


def draw_noise(query_offsets, n_samples: int = 1, seed: int = 0, iteration: int = 0) -> np.ndarray:
    """The unit normals the seeded estimators use, shape ``(n_samples, n_docs)``.

    Query ``q``'s block of sample ``k`` comes from the stream keyed by
    ``(seed, iteration, q, k)``, so ``stochastic_rank_gradient(..., noise=draw_noise(...))``
    reproduces the seeded call bit for bit.
    """
    offs = np.ascontiguousarray(query_offsets, dtype=np.int64)
    n_samples = _check_int(n_samples, "n_samples", 1)
    seed = _check_int(seed, "seed", 0)
    iteration = _check_int(iteration, "iteration", 0)
    return draw_grouped_normals(offs, n_samples, seed, iteration)


def stochastic_rank_gradient(scores, labels, query_offsets, *, metric="NDCG", top=None,
                             sigma=1.0, mu=0.0, nu=0.01, sfa=1.0, n_samples=1, seed=0,
                             iteration=0, estimator="ccs", conditioning="translation",
                             gain="exp2", grade_max=None, threshold=0.0, smoothing="absolute",
                             center=True, noise=None, window=DEFAULT_WINDOW):
    """Gradient of the smoothed loss ``E L(z + sigma eps)``, ``eps ~ N(-mu r, I)`` (see module).

    Args:
      scores, labels, query_offsets: grouped data.
      metric, top, gain, grade_max, threshold: the metric (see ``_cascade.py``).
      sigma: noise scale (> 0). mu: relevance shift (>= 0; 0 = SR-R1soft).
      nu: SFA norm regulariser (> 0). sfa: SFA strength (0 = off, 1 = the paper).
      n_samples: noise draws averaged (>= 1). seed, iteration: key the noise streams.
      estimator: ``"ccs"`` or ``"reinforce"`` (score function, for the paper's ablation).
      conditioning: CCS conditional law, ``"translation"`` (default) or ``"coordinate"``.
      center: subtract each query's mean gradient (unbiased: the loss is translation invariant).
      noise: optional explicit unit normals of shape ``(n_samples, n_docs)`` instead of the
        seeded streams (for tests and common random numbers).
      window: CCS breakpoint window in conditional standard deviations (``inf`` = none).

    Returns:
      float64 array: ``d L_sigma / d z`` (gradient of the loss; descent is ``-grad``).
    """
    metric_spec = CascadeSpec.make(metric, top, gain, grade_max, threshold)
    sigma = _check_float(sigma, "sigma", gt=0.0)
    mu = _check_float(mu, "mu", ge=0.0)
    nu = _check_float(nu, "nu", gt=0.0)
    sfa = _check_float(sfa, "sfa", ge=0.0)
    _check_choice(estimator, "estimator", ESTIMATORS)
    _check_choice(conditioning, "conditioning", CONDITIONINGS)
    _check_choice(smoothing, "smoothing", SMOOTHINGS)
    window = float(window)
    if not window > 0.0:
        raise ValueError(f"window must be > 0, got {window}")
    scores, labels, offs = validate_grouped(scores, labels, query_offsets)
    return _estimate(scores, labels, offs, metric_spec.kernel_args(labels, offs), sigma=sigma,
                     mu=mu, nu=nu, sfa=sfa, n_samples=n_samples, seed=seed, iteration=iteration,
                     estimator=estimator, conditioning=conditioning, smoothing=smoothing,
                     center=center, noise=noise, window=window)


def _estimate(scores, labels, offs, prepared, **kwargs):
    """The estimator on validated arrays and precomputed metric arrays (``kernel_args``)."""
    with threads_for(scores.shape[0]):
        return _estimate_kernels(scores, labels, offs, prepared, **kwargs)


def _estimate_kernels(scores, labels, offs, prepared, *, sigma, mu, nu, sfa, n_samples, seed,
                      iteration, estimator, conditioning, smoothing="absolute", center=True,
                      noise=None, window=DEFAULT_WINDOW):
    gain_arr, cont, pos_weight, t, _, scale = prepared
    relative = smoothing == "relative"
    sigma = query_noise_scale(scores, offs, sigma, nu, relative)  # one noise scale per query
    if mu != 0.0:
        shifted = scores - mu * np.repeat(sigma, np.diff(offs)) * labels
    else:
        shifted = scores
    translation = conditioning == "translation"
    if noise is None:
        n_samples = _check_int(n_samples, "n_samples", 1)
        seed = _check_int(seed, "seed", 0)
        iteration = _check_int(iteration, "iteration", 0)
        if estimator == "ccs":
            grad = ccs_gradient_seeded(shifted, gain_arr, cont, offs, scale, pos_weight, t, sigma,
                                       translation, window, n_samples, seed, iteration)
        else:
            grad = reinforce_gradient_seeded(shifted, labels, gain_arr, cont, offs, scale,
                                             pos_weight, t, sigma, n_samples, seed, iteration)
    else:
        noise = as_noise(noise, scores.shape[0])
        if estimator == "ccs":
            grad = ccs_gradient_from_noise(shifted, gain_arr, cont, noise, offs, scale, pos_weight,
                                           t, sigma, translation, window)
        else:
            grad = reinforce_gradient_from_noise(shifted, labels, gain_arr, cont, noise, offs,
                                                 scale, pos_weight, t, sigma)
    center_and_accelerate(grad, scores, offs, bool(center), sfa, nu, relative)
    return grad


# Largest relevance shift, in noise standard deviations, between two documents of one query.
# Around tied scores (every query at iteration 0) a more relevant document must climb mu * dr
# standard deviations to pass a less relevant one, so the smoothed loss there is flat to
# ~exp(-(mu dr)^2 / 4): at 4 the gradient is ~2% of the mu = 0 one, beyond it vanishes
# (measured on MQ2008, labels 0..2: mu = 3 leaves 1e-4 of it, mu = 9 exactly 0).
MAX_SHIFT = 4.0


def check_shift(mu: float, labels) -> None:
    """Refuse a relevance shift ``mu * (label range)`` above :data:`MAX_SHIFT` noise std."""
    if mu == 0.0 or labels.shape[0] == 0:
        return
    span = float(labels.max() - labels.min())
    if mu * span > MAX_SHIFT:
        raise ValueError(
            f"mu={mu:g} shifts documents whose labels differ by {span:g} apart by {mu * span:g} "
            f"noise standard deviations: around tied scores the smoothed loss is then flat and "
            f"training returns a constant model. Use mu <= {MAX_SHIFT / span:g} for these labels "
            f"(mu * label range <= {MAX_SHIFT:g}), or mu=0 (SR-R1soft).")


class ObjectiveParams:
    """Scikit-learn style parameter handling shared by every objective object.

    Subclasses list their constructor arguments in ``_param_names``, store them unchanged in
    ``__init__`` and validate them there; ``set_params`` builds a trial instance first, so a bad
    value raises and leaves the object untouched.
    """

    _param_names: tuple = ()

    def get_params(self, deep: bool = True) -> dict:
        return {name: getattr(self, name) for name in self._param_names}

    def set_params(self, **params):
        unknown = sorted(set(params) - set(self._param_names))
        if unknown:
            raise ValueError(f"unknown parameter(s) {unknown} for {type(self).__name__}; "
                             f"valid: {list(self._param_names)}")
        trial = type(self)(**{**self.get_params(), **params})  # validates; self stays intact
        for name in params:
            setattr(self, name, getattr(trial, name))
        self._params_changed()
        return self

    def _params_changed(self):
        """Hook for subclasses that cache anything derived from their parameters."""

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.get_params().items())
        return f"{type(self).__name__}({args})"


class StochasticRank(ObjectiveParams):
    """StochasticRank objective: the CCS gradient of a Gaussian-smoothed ranking metric.

    Parameters mirror CatBoost's ``StochasticRank:metric=...;top=...;sigma=...;mu=...;nu=...;
    lambda=...;num_estimations=...`` (``sfa`` is CatBoost's ``lambda``, ``n_samples`` its
    ``num_estimations``), so settings transfer; the estimator itself follows the paper (exact
    conditional law for every sigma, exact ERR differences).

    Args:
      metric: ``"NDCG"`` (default), ``"DCG"``, ``"ERR"`` or ``"MRR"``.
      top: cutoff k (``None`` = whole list).
      sigma: smoothing noise scale, > 0 (default 1, CatBoost's).
      mu: relevance shift of the noise mean, ``eps ~ N(-mu r, I)``; 0 = SR-R1soft, > 0 = SR-R1.
      nu: SFA norm regulariser, > 0 (default 0.01, the paper's).
      sfa: SFA strength, 1 = the paper, 0 = off.
      n_samples: noise draws averaged per gradient.
      seed: noise seed (>= 0); with the iteration it keys every noise stream.
      estimator: ``"ccs"`` or ``"reinforce"`` (ablation only: unbounded variance).
      conditioning: ``"translation"`` (Rao-Blackwellised, default) or ``"coordinate"``.
      gain: NDCG/DCG gain, ``"exp2"`` (``2^r - 1``) or ``"linear"`` (``r``, CatBoost's default).
      grade_max: ERR grade mapping ``(2^r - 1) / 2^grade_max``; ``None`` = labels are probabilities.
      threshold: MRR relevance, ``label > threshold``.
      hessian: ``"constant"`` -- 1 per document. The estimator has no second derivative;
        a unit hessian makes a Newton leaf ``sum(-grad) / (count + l2)``, which is CatBoost's
        native StochasticRank step (gradient leaf estimation, unit weights).
    """

    _param_names = ("metric", "top", "sigma", "mu", "nu", "sfa", "n_samples", "seed", "estimator",
                    "conditioning", "gain", "grade_max", "threshold", "hessian", "smoothing",
                    "sigma_min", "anneal_half_life")

    def __init__(self, metric="NDCG", top=None, sigma=0.3, mu=0.0, nu=1.0, sfa=1.0, n_samples=1,
                 seed=0, estimator="ccs", conditioning="translation", gain="exp2", grade_max=None,
                 threshold=0.0, hessian="constant", smoothing="relative", sigma_min=0.1,
                 anneal_half_life=100.0):
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
        self._validated()
        self._cache_key = None
        self._cache_value = None

    @classmethod
    def paper(cls, metric="NDCG", top=None, **params):
        """The paper's and CatBoost's parametrisation: absolute smoothing, ``sigma = 1``,
        ``nu = 0.01``, no annealing (CatBoost's ``StochasticRank`` defaults)."""
        settings = dict(sigma=1.0, nu=0.01, smoothing="absolute", anneal_half_life=None)
        return cls(metric=metric, top=top, **{**settings, **params})

    def _params_changed(self):
        self._cache_key = None

    def _validated(self) -> dict:
        """Check every parameter; return the normalised keyword set for the estimator."""
        spec = CascadeSpec.make(self.metric, self.top, self.gain, self.grade_max, self.threshold)
        _check_choice(self.hessian, "hessian", HESSIANS)
        return dict(
            metric=spec.metric, top=spec.top, gain=spec.gain, grade_max=spec.grade_max,
            threshold=spec.threshold,
            sigma=_check_float(self.sigma, "sigma", gt=0.0),
            mu=_check_float(self.mu, "mu", ge=0.0),
            nu=_check_float(self.nu, "nu", gt=0.0),
            sfa=_check_float(self.sfa, "sfa", ge=0.0),
            n_samples=_check_int(self.n_samples, "n_samples", 1),
            seed=_check_int(self.seed, "seed", 0),
            estimator=_check_choice(self.estimator, "estimator", ESTIMATORS),
            conditioning=_check_choice(self.conditioning, "conditioning", CONDITIONINGS),
            smoothing=_check_choice(self.smoothing, "smoothing", SMOOTHINGS),
            sigma_min=_check_float(self.sigma_min, "sigma_min", gt=0.0),
            anneal_half_life=(None if self.anneal_half_life is None else
                              _check_float(self.anneal_half_life, "anneal_half_life", gt=0.0)),
        )

    def sigma_at(self, iteration: int) -> float:
        """The noise scale used at ``iteration``: ``max(min(sigma, sigma_min), sigma *
        2^(-iteration / anneal_half_life))`` (``sigma`` when ``anneal_half_life`` is None)."""
        iteration = _check_int(iteration, "iteration", 0)
        sigma = _check_float(self.sigma, "sigma", gt=0.0)
        if self.anneal_half_life is None:
            return sigma
        floor = min(sigma, _check_float(self.sigma_min, "sigma_min", gt=0.0))
        half_life = _check_float(self.anneal_half_life, "anneal_half_life", gt=0.0)
        return max(floor, sigma * 2.0 ** (-iteration / half_life))

    @property
    def metric_spec(self) -> CascadeSpec:
        return CascadeSpec.make(self.metric, self.top, self.gain, self.grade_max, self.threshold)

    def _prepared(self, labels, offs):
        # Gains and IDCG depend only on (labels, offsets), which a booster passes unchanged
        # every iteration: cache them (the IDCG sort would otherwise double the cost). The key
        # is the contents (a booster may refill one buffer in place), compared exactly.
        spec = self.metric_spec
        cached = self._cache_key
        if (cached is None or cached[0] != spec or not np.array_equal(cached[1], labels)
                or not np.array_equal(cached[2], offs)):
            self._cache_value = spec.kernel_args(labels, offs)
            self._cache_key = (spec, labels.copy(), offs.copy())
        return self._cache_value

    # -- the protocol -------------------------------------------------------------------
    def grad_hess(self, scores, labels, query_offsets, iteration: int = 0):
        """``(grad, hess)`` of the smoothed loss at ``scores`` (see the module protocol)."""
        kwargs = self._validated()
        for name in ("metric", "top", "gain", "grade_max", "threshold", "sigma_min",
                     "anneal_half_life"):
            del kwargs[name]
        iteration = _check_int(iteration, "iteration", 0)
        kwargs["sigma"] = self.sigma_at(iteration)
        scores, labels, offs = validate_grouped(scores, labels, query_offsets)
        check_shift(kwargs["mu"], labels)
        grad = _estimate(scores, labels, offs, self._prepared(labels, offs), iteration=iteration,
                         **kwargs)
        return grad, np.ones_like(grad)

    def loss(self, scores, labels, query_offsets) -> float:
        """The discrete loss ``-mean_q M_q`` with worst-permutation ties (what SR-R1 targets)."""
        from .metrics import evaluate

        spec = self.metric_spec
        options = {"gain": spec.gain} if spec.metric in ("NDCG", "DCG") else \
            {"grade_max": spec.grade_max} if spec.metric == "ERR" else {"threshold": spec.threshold}
        return -evaluate(spec.metric, scores, labels, query_offsets, spec.top, ties="worst",
                         **options)
