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
For one query with scores ``z`` and labels ``r`` the loss is ``L(z) = -M(z)`` for a ranking
metric ``M`` (the cascades NDCG@k, DCG@k, ERR@k, MRR, PFound, FilteredDCG, and Precision@k,
MAP@k; see ``_cascade.py``), smoothed as

    L_s(z) = E L(z + s * eps),   eps ~ N(-mu * r, I),

where ``mu = 0`` is SR-R1soft (expected tie resolution) and large ``mu`` makes the smoothing
consistent with worst-permutation ties (SR-R1, Theorem 1). The noise scale ``s`` is

* ``smoothing="relative"`` (the default): ``s(z) = sigma * sqrt(var(c) + nu^2)`` per query,
  with ``c = z - mean(z)`` -- ``sigma`` is then dimensionless (noise as a fraction of the
  query's score spread; ``nu`` only matters while the spread is below ``nu``, e.g. at
  iteration 0), the smoothed loss ``E L(z + s(z) eps)`` is invariant to rescaling the scores
  once the spread exceeds ``nu``, and its gradient is orthogonal to ``c`` (Theorem 4);
* ``smoothing="absolute"`` (the paper, CatBoost): ``s = sigma`` in score units.

The gradient is estimated by Coordinate Conditional Sampling at ``s`` (see
:mod:`stochrank_objectives.kernels.ccs`), averaged over ``n_samples`` draws, centred per
query, and corrected radially (``kernels.ccs.center_and_accelerate``)::

    relative:  g <- g - sfa * <g, c> / (||c||^2 + n nu^2) * c   (sfa = 1: the exact gradient
               of E L(z + s(z) eps), since dL_s/ds = -<z, grad_z L_s> / s);
    absolute:  g <- g - sfa * <g, c> / (||c|| + nu)^2 * c        (Scale-Free Acceleration,
               Corollary 2; queries of more than two documents).

``sigma`` may be annealed over the boosting iterations (``sigma_at``).

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

from ._cascade import CascadeSpec, with_virtual_documents
from .groups import (_check_choice, _check_float, _check_int, _check_seed, as_noise,
                     validate_grouped)
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
    seed = _check_seed(seed)
    iteration = _check_int(iteration, "iteration", 0)
    return draw_grouped_normals(offs, n_samples, seed, iteration)


def stochastic_rank_gradient(scores, labels, query_offsets, *, metric="NDCG", top=None,
                             sigma=1.0, mu=0.0, nu=0.01, sfa=1.0, n_samples=1, seed=0,
                             iteration=0, estimator="ccs", conditioning="translation",
                             gain="exp2", grade_max=None, threshold=0.0, decay=0.85,
                             smoothing="absolute", center=True, noise=None,
                             window=DEFAULT_WINDOW):
    """Gradient of the smoothed loss ``E L(z + s eps)``, ``eps ~ N(-mu r, I)`` (see module).

    The low-level estimator at one noise scale: its defaults are the paper's parametrisation
    (absolute ``sigma = 1``, ``nu = 0.01``); :class:`StochasticRank` carries the package defaults
    and the sigma schedule, and calls this with ``sigma = obj.sigma_at(iteration)``.

    Args:
      scores, labels, query_offsets: grouped data.
      metric, top, gain, grade_max, threshold, decay: the metric (see ``_cascade.py``).
      sigma: noise scale (> 0; relative to the score spread with ``smoothing="relative"``).
      mu: relevance shift (>= 0; 0 = SR-R1soft).
      nu: score-spread floor (relative) / SFA norm regulariser (absolute), > 0.
      sfa: radial-correction strength (0 = off, 1 = exact / the paper's SFA).
      smoothing: ``"absolute"`` (default here) or ``"relative"`` (see the module docstring).
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

    Returns:
      float64 array: ``d L_sigma / d z`` (gradient of the loss; descent is ``-grad``).
    """
    metric_spec = CascadeSpec.make(metric, top, gain, grade_max, threshold, decay)
    sigma = _check_float(sigma, "sigma", gt=0.0)
    mu = _check_float(mu, "mu", ge=0.0)
    nu = _check_float(nu, "nu", gt=0.0)
    sfa = _check_float(sfa, "sfa", ge=0.0)
    _check_choice(estimator, "estimator", ESTIMATORS)
    _check_estimator_for(estimator, metric_spec)
    _check_choice(conditioning, "conditioning", CONDITIONINGS)
    _check_choice(smoothing, "smoothing", SMOOTHINGS)
    window = float(window)
    if not window > 0.0:
        raise ValueError(f"window must be > 0, got {window}")
    scores, labels, offs = validate_grouped(scores, labels, query_offsets)
    return _estimate(scores, labels, offs, metric_spec.kernel_args(labels, offs), sigma=sigma,
                     mu=mu, nu=nu, sfa=sfa, n_samples=n_samples, seed=seed, iteration=iteration,
                     estimator=estimator, conditioning=conditioning, smoothing=smoothing,
                     center=center, noise=noise, window=window, spec=metric_spec)


def _check_estimator_for(estimator, spec):
    """REINFORCE (an ablation baseline) is wired for the plain cascades only."""
    if estimator == "reinforce" and (spec.is_counting or spec.needs_virtual_document):
        raise ValueError(f"estimator='reinforce' is not available for metric {spec.metric!r}; "
                         f"use estimator='ccs'")



def _estimate(scores, labels, offs, prepared, **kwargs):
    """The estimator on validated arrays and precomputed metric arrays (``kernel_args``)."""
    with threads_for(scores.shape[0]):
        return _estimate_kernels(scores, labels, offs, prepared, **kwargs)


def _estimate_kernels(scores, labels, offs, prepared, *, sigma, mu, nu, sfa, n_samples, seed,
                      iteration, estimator, conditioning, smoothing="absolute", center=True,
                      noise=None, window=DEFAULT_WINDOW, spec=None):
    gain_arr, cont, pos_weight, t, _, scale = prepared
    counting = spec is not None and spec.is_counting
    average = counting and spec.metric == "MAP"
    virtual = spec is not None and spec.needs_virtual_document
    translation_invariant = spec is None or spec.translation_invariant
    relative = smoothing == "relative"
    sigma = query_noise_scale(scores, offs, sigma, nu, relative)  # one noise scale per query
    if mu != 0.0:
        shifted = scores - mu * np.repeat(sigma, np.diff(offs)) * labels
    else:
        shifted = scores
    # the translation law conditions on the others' deviations, valid only for invariant losses
    translation = conditioning == "translation" and translation_invariant
    if noise is None:
        n_samples = _check_int(n_samples, "n_samples", 1)
        seed = _check_seed(seed)
        iteration = _check_int(iteration, "iteration", 0)
    if virtual and estimator == "ccs":
        grad = _filtered_ccs(shifted, gain_arr, cont, offs, scale, pos_weight, t, sigma, window,
                             noise, n_samples, seed, iteration)
    elif noise is None:
        if estimator == "ccs":
            grad = ccs_gradient_seeded(shifted, gain_arr, cont, offs, scale, pos_weight, t, sigma,
                                       translation, window, n_samples, seed, iteration,
                                       counting, average, False)
        else:
            grad = reinforce_gradient_seeded(shifted, labels, gain_arr, cont, offs, scale,
                                             pos_weight, t, sigma, n_samples, seed, iteration)
    else:
        noise = as_noise(noise, scores.shape[0])
        if estimator == "ccs":
            grad = ccs_gradient_from_noise(shifted, gain_arr, cont, noise, offs, scale, pos_weight,
                                           t, sigma, translation, window, counting, average)
        else:
            grad = reinforce_gradient_from_noise(shifted, labels, gain_arr, cont, noise, offs,
                                                 scale, pos_weight, t, sigma)
    center_and_accelerate(grad, scores, offs, bool(center), sfa, nu, relative,
                          translation_invariant)
    return grad


def _filtered_ccs(shifted, gain_arr, cont, offs, scale, pos_weight, t, sigma, window, noise,
                  n_samples, seed, iteration):
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
    ext_gain[real] = gain_arr
    ext_cont = np.zeros(n_ext)
    ext_cont[real] = cont
    if noise is None:
        grad = ccs_gradient_seeded(ext_shifted, ext_gain, ext_cont, ext_offs, scale, pos_weight,
                                   t, sigma, False, window, n_samples, seed, iteration, False,
                                   False, True)
    else:
        noise = as_noise(noise, real.shape[0])
        ext_noise = np.zeros((noise.shape[0], n_ext))
        ext_noise[:, real] = noise
        grad = ccs_gradient_from_noise(ext_shifted, ext_gain, ext_cont, ext_noise, ext_offs, scale,
                                       pos_weight, t, sigma, False, window, False, False)
    return grad[real]


def _annealed_sigma(sigma, sigma_min, half_life, iteration):
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

    Per query the loss ``-M`` (NDCG@k, DCG@k, ERR@k, MRR) is smoothed as
    ``E L(z + s (eps - mu r))``, ``eps ~ N(0, I)``, with ``s = sigma_t * sqrt(var(z) + nu^2)``
    (relative smoothing) and ``sigma_t = max(min(sigma, sigma_min), sigma 2^(-t / half_life))``;
    the gradient is the CCS estimate plus the exact radial term (see the module docstring).

    Defaults, chosen by measurement (``benchmarks.global_optimum``, ``benchmarks.synthetic``,
    ``benchmarks.defaults``; README "Choosing the parameters"): relative smoothing with
    ``sigma = 0.3`` annealed to ``0.1`` (half-life 100 trees) reaches the global optimum of the
    paper's Table 1 in every booster and seed, and of random multimodal problems more often than
    the boosters' LambdaMARTs; ``mu = 0`` because every ``mu > 0`` tried lowered that rate.
    ``StochasticRank.paper(...)`` gives the paper's and CatBoost's parametrisation (absolute
    ``sigma = 1``, ``nu = 0.01``, no annealing); its parameters then mirror CatBoost's
    ``StochasticRank:metric=...;top=...;sigma=...;mu=...;nu=...;lambda=...;num_estimations=...``
    (``sfa`` = ``lambda``, ``n_samples`` = ``num_estimations``). The estimator follows the paper
    (exact conditional law for every sigma, exact ERR differences).

    >>> import numpy as np
    >>> obj = StochasticRank(metric="NDCG", top=5)
    >>> [obj.sigma_at(t) for t in (0, 100, 1000)]
    [0.3, 0.15, 0.1]
    >>> g, h = obj.grad_hess(np.array([1.0, 0.0, 2.0]), np.array([2.0, 0.0, 1.0]),
    ...                      np.array([0, 3]))
    >>> bool(g[0] < 0 < g[1])
    True

    Args:
      metric: ``"NDCG"`` (default), ``"DCG"``, ``"ERR"``, ``"MRR"``, ``"PFound"``,
        ``"FilteredDCG"``, ``"Precision"`` or ``"MAP"`` (case-insensitive; see ``_cascade.py``).
        PFound and FilteredDCG follow CatBoost's definitions: PFound's labels are probabilities
        in [0, 1]; FilteredDCG drops the documents scored below 0 (a virtual document at 0),
        uses the Position denominator ``1/(p+1)``, is not centred, and its radial correction
        uses the scores themselves (see ``kernels.ccs.center_and_accelerate``). Precision and
        MAP count ``label > threshold`` as relevant; MAP@k divides by all relevant documents.
      top: cutoff k (``None`` = whole list; required for Precision).
      sigma: smoothing noise scale, > 0 -- relative to each query's score spread with
        ``smoothing="relative"`` (default 0.3; useful range 0.1-1), in score units with
        ``"absolute"``. The initial value when annealed.
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
      hessian: ``"constant"`` -- 1 per document. The estimator has no second derivative;
        a unit hessian makes a Newton leaf ``sum(-grad) / (count + l2)``, which is CatBoost's
        native StochasticRank step (gradient leaf estimation, unit weights).
      smoothing: ``"relative"`` (default) or ``"absolute"`` (the paper, CatBoost).
      sigma_min: floor of the annealed sigma (default 0.1; never above ``sigma``).
      anneal_half_life: iterations over which sigma halves (default 100); ``None`` = constant.
    """

    _param_names = ("metric", "top", "sigma", "mu", "nu", "sfa", "n_samples", "seed", "estimator",
                    "conditioning", "gain", "grade_max", "threshold", "hessian", "smoothing",
                    "sigma_min", "anneal_half_life", "decay")

    def __init__(self, metric="NDCG", top=None, sigma=0.3, mu=0.0, nu=1.0, sfa=1.0, n_samples=1,
                 seed=0, estimator="ccs", conditioning="translation", gain="exp2", grade_max=None,
                 threshold=0.0, hessian="constant", smoothing="relative", sigma_min=0.1,
                 anneal_half_life=100.0, decay=0.85):
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
        spec = self.metric_spec
        _check_choice(self.hessian, "hessian", HESSIANS)
        _check_estimator_for(self.estimator, spec)
        return dict(
            spec=spec, metric=spec.metric, top=spec.top, gain=spec.gain,
            grade_max=spec.grade_max, threshold=spec.threshold, decay=spec.decay,
            sigma=_check_float(self.sigma, "sigma", gt=0.0),
            mu=_check_float(self.mu, "mu", ge=0.0),
            nu=_check_float(self.nu, "nu", gt=0.0),
            sfa=_check_float(self.sfa, "sfa", ge=0.0),
            n_samples=_check_int(self.n_samples, "n_samples", 1),
            seed=_check_seed(self.seed),
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
        p = self._validated()
        return _annealed_sigma(p["sigma"], p["sigma_min"], p["anneal_half_life"],
                               _check_int(iteration, "iteration", 0))

    @property
    def metric_spec(self) -> CascadeSpec:
        return CascadeSpec.make(self.metric, self.top, self.gain, self.grade_max, self.threshold,
                                self.decay)

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
        spec = kwargs.pop("spec")
        for name in ("metric", "top", "gain", "grade_max", "threshold", "decay"):
            del kwargs[name]
        iteration = _check_int(iteration, "iteration", 0)
        kwargs["sigma"] = _annealed_sigma(kwargs["sigma"], kwargs.pop("sigma_min"),
                                          kwargs.pop("anneal_half_life"), iteration)
        scores, labels, offs = validate_grouped(scores, labels, query_offsets)
        check_shift(kwargs["mu"], labels)
        grad = _estimate(scores, labels, offs, self._prepared(labels, offs), iteration=iteration,
                         spec=spec, **kwargs)
        return grad, np.ones_like(grad)

    def loss(self, scores, labels, query_offsets) -> float:
        """The discrete loss ``-mean_q M_q`` with worst-permutation ties (what SR-R1 targets)."""
        from .metrics import evaluate, metric_options

        spec = self.metric_spec
        return -evaluate(spec.metric, scores, labels, query_offsets, spec.top, ties="worst",
                         **metric_options(spec))
