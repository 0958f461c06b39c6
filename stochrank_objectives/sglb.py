"""SGLB: Stochastic Gradient Langevin Boosting, as a library-agnostic schedule.

Ustimenko & Prokhorenkova, "SGLB: Stochastic Gradient Langevin Boosting" (arXiv:2001.07248),
in CatBoost's parametrisation (``learning_rate`` = epsilon, ``diffusion_temperature`` = beta,
``model_shrink_rate`` = gamma, Constant shrink mode).

The update
----------
With ``c = 1 - gamma * lr`` and ``F_0 = 0`` (or the booster's initial score), for t = 0, 1, ...::

    S_t     = c * F_t                                   # shrink first (CatBoost's convention)
    g, h    = objective.grad_hess(S_t, ..., iteration=t)
    g      += sqrt(h) * zeta_t,   zeta_t ~ N(0, 2 / (lr * T) * I)  # one draw per document
    h_t     = the tree the booster fits to (g, h)        # e.g. Newton leaves -sum g / (sum h + l2)
    F_{t+1} = S_t + lr * h_t                            # = (1 - gamma lr) F_t + lr h_t

``T = diffusion_temperature`` (``None`` = no noise: plain shrinkage) and ``gamma =
model_shrink_rate`` (0 = no shrinkage). The noise is preconditioned by the objective's hessian
``h`` (:meth:`SGLB.perturb`): a Newton leaf ``-sum g / (sum h + l2)`` gets the noise of the
unit-hessian case with the leaf's document count replaced by its hessian sum, so curvature
hessians of any scale (StochasticRank's default, LambdaMART's) keep the intended temperature;
with unit hessians (``h = 1``) it is the plain per-document noise, bit for bit. The noise is drawn from
``numpy.random.default_rng(SeedSequence([seed, t]))``, so it is reproducible per iteration and
independent of the number of threads.

Query weights
-------------
With query weights ``w_q`` (the loss is the weighted sum ``sum_q w_q L_q``, see
:func:`stochrank_objectives.groups.query_weights`), a document ``i`` of query ``q`` gets::

    g_i = w_q * grad_i + sqrt(w_q * hess_i) * zeta_i,    h_i = w_q * hess_i

The noise is added after weighting (the weighted loss is the potential) and scaled by
``sqrt(w_q)`` (besides the hessian's ``sqrt(hess_i)`` above): the sum of ``w`` independent draws has the variance of ``sqrt(w)`` times one, so
a query of integer weight ``w`` puts into every leaf's sums the same gradient, hessian and noise
distribution as ``w`` copies of the query, and a weight of 0 removes the query entirely, noise
included. Weights of 1 are the unweighted update.

Boosters without model shrinkage (the reparametrisation)
--------------------------------------------------------
LightGBM and XGBoost cannot rescale their existing trees during training, so the booster holds
``G_t = F_t / c^t`` instead (checked against an explicit shrink-and-refit reference that
carries ``F`` in the initial scores: equal to 1.7e-16 in LightGBM, float64, and to 1.2e-7 in
XGBoost, float32 margins):

* tree t is added with learning rate ``lr * c^-(t+1)`` (:meth:`SGLB.learning_rate_at`);
* the objective is evaluated at ``c^(t+1) * G_t = S_t`` (:meth:`SGLB.score_scale`,
  :meth:`SGLB.grad_hess`), with the same gradients and hessians as the update above, so the
  tree fitted is the same ``h_t``: ``G_{t+1} = G_t + lr c^-(t+1) h_t`` is ``F_{t+1} / c^(t+1)``;
* the final model is ``F_T = c^T * G_T`` (:meth:`SGLB.final_scale`), baked into the leaves by the
  adapters. Ranking metrics are invariant to a positive scale, so evaluation and early stopping
  on ``G_t`` select the same iteration as on ``F_t``.

The booster's raw scores ``G`` grow like ``exp(gamma * lr * t)``. XGBoost keeps margins in float32,
which overflows near ``e^88.7``; :meth:`SGLB.max_iterations` caps ``t * (-log c)`` at 80 (float32)
or 700 (float64), leaving a factor of about 3000 for the scores themselves, and
:meth:`SGLB.check_iterations` raises a clear error beyond it.

Differences from CatBoost (``langevin=True``), stated on purpose
-----------------------------------------------------------------
* CatBoost does not shrink before tree 0; here ``F_0`` is shrunk too. With ``F_0 = 0`` (the
  usual case for rankers) the two are identical; a non-zero initial score ends up multiplied by
  ``c^T`` instead of ``c^(T-1)``.
* CatBoost adds its noise to leaf sums, ``N(0, 2 lr / (T (W + l2)))`` per leaf (its per-row
  noise is inert in 1.2.10); here, as in the paper, the noise is added per document before the
  tree is fitted, so it also perturbs the structure search, and a Newton leaf with unit
  hessians gets ``N(0, 2 lr W / (T (W + l2)^2))`` -- the same when ``l2 = 0``.
* Only CatBoost's ``Constant`` shrink mode is provided.

Example:

>>> import numpy as np
>>> s = SGLB(learning_rate=0.1, model_shrink_rate=0.5, diffusion_temperature=None)
>>> s.shrink
0.95
>>> bool(np.isclose(s.learning_rate_at(3) * s.score_scale(3), 0.1))
True
"""

from __future__ import annotations

import math
import numbers
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import DTypeLike

from .groups import GroupedData
from .objectives import grouped_grad_hess
from .parameters import Parameterised
from .validation import check_float, check_int, integer, real

if TYPE_CHECKING:  # only the type checker needs it
    from .objectives import Objective

__all__ = ["SGLB", "shrink_factor", "tree_weights"]

# Largest allowed t * (-log c) per score dtype: float32 overflows at about e^88.7, float64 at
# about e^709.8; the margin leaves room for the magnitude of the scores themselves.
_LOG_CAP = {np.dtype(np.float32): 80.0, np.dtype(np.float64): 700.0}


def _temperature(value, name):
    # None and +inf both mean "no noise" (CatBoost's diffusion_temperature has no off switch)
    if value is None or (isinstance(value, numbers.Real) and not isinstance(value, bool)
                         and value == math.inf):
        return None
    return check_float(value, name, gt=0.0)


class SGLB(Parameterised):
    """The SGLB schedule: model shrinkage ``1 - gamma * lr`` and Langevin gradient noise.

    Example::

        sglb = SGLB(learning_rate=0.1, model_shrink_rate=0.001, diffusion_temperature=1e4)
        adapter = LGBMObjective(StochasticRank(metric="NDCG", top=10), sglb=sglb)

    Update: ``S_t = c F_t``, gradients at ``S_t`` plus ``N(0, 2 / (lr T))`` noise,
    ``F_{t+1} = S_t + lr h_t`` with ``c = 1 - gamma lr`` (the module docstring has the
    reparametrisation for boosters without model shrinkage).

    Source: Ustimenko & Prokhorenkova (2020), arXiv:2001.07248.

    Args:
      learning_rate: the step ``lr`` (> 0). It replaces the booster's own learning rate: the
        adapters set tree t's rate to :meth:`learning_rate_at` ``(t)``.
      model_shrink_rate: ``gamma`` (>= 0, with ``gamma * lr < 1``); 0 disables shrinkage.
      diffusion_temperature: ``T`` (> 0); per-document gradient noise has variance
        ``2 / (lr * T)``. ``None`` (or ``inf``) disables the noise.
      seed: seed of the noise (>= 0), combined with the iteration.

    Defaults are CatBoost's once ``langevin=True``: ``diffusion_temperature=10000``,
    ``model_shrink_rate=0.001``. The constructor only stores its arguments; they are checked
    at first use (every method below) or by :meth:`validate`, as the objectives' are.

    Returns:
      the schedule, whose methods the adapters call once per tree.
    """

    _parameter_constraints = {"learning_rate": real(gt=0.0), "model_shrink_rate": real(ge=0.0),
                              "diffusion_temperature": _temperature, "seed": integer(0)}

    def __init__(self, learning_rate: float = 0.1, model_shrink_rate: float = 0.001,
                 diffusion_temperature: float | None = 10000.0, seed: int = 0):
        self.learning_rate = learning_rate
        self.model_shrink_rate = model_shrink_rate
        self.diffusion_temperature = diffusion_temperature
        self.seed = seed

    def _check_together(self, values: dict) -> dict:
        if not values["model_shrink_rate"] * values["learning_rate"] < 1.0:
            raise ValueError(
                "model_shrink_rate * learning_rate must be < 1 (the shrink factor "
                f"1 - gamma * lr must be positive), got {values['model_shrink_rate']} * "
                f"{values['learning_rate']}")
        return values

    @classmethod
    def posterior_sampling(cls, n_docs: int, learning_rate: float = 0.1, seed: int = 0) -> "SGLB":
        """CatBoost's ``posterior_sampling=True``: ``T = n_docs``, ``gamma = 1 / (2 n_docs)``."""
        n_docs = check_int(n_docs, "n_docs", 1)
        return cls(learning_rate, 1.0 / (2.0 * n_docs), float(n_docs), seed)

    # -- the schedule ------------------------------------------------------------------------
    @property
    def shrink(self) -> float:
        """The shrink factor ``c = 1 - gamma * lr`` applied before every tree."""
        p = self._checked()
        return 1.0 - p["model_shrink_rate"] * p["learning_rate"]

    @property
    def noise_std(self) -> float:
        """Standard deviation ``sqrt(2 / (lr T))`` of the per-document noise (0 without noise)."""
        p = self._checked()
        if p["diffusion_temperature"] is None:
            return 0.0
        return math.sqrt(2.0 / (p["learning_rate"] * p["diffusion_temperature"]))

    def learning_rate_at(self, iteration: int) -> float:
        """Learning rate of tree ``t`` in the reparametrised booster: ``lr * c^-(t+1)``."""
        t = check_int(iteration, "iteration", 0)
        return self._checked()["learning_rate"] * self.shrink ** (-(t + 1))

    def score_scale(self, iteration: int) -> float:
        """``c^(t+1)``: the objective of tree ``t`` sees ``score_scale(t) * G_t = c F_t``."""
        t = check_int(iteration, "iteration", 0)
        return self.shrink ** (t + 1)

    def final_scale(self, n_trees: int) -> float:
        """``c^T``: the model ``F_T`` equals ``final_scale(T) * G_T`` after ``T`` trees."""
        n = check_int(n_trees, "n_trees", 0)
        return self.shrink ** n

    def noise(self, n_docs: int, iteration: int, key: tuple[int, ...] = ()) -> np.ndarray:
        """The gradient noise of iteration ``t``: ``n_docs`` draws of ``N(0, 2 / (lr T))``.

        Zeros when the noise is off. Generator: ``default_rng(SeedSequence([seed, t, *key]))``.
        ``key`` (non-negative integers) names an independent stream for one block of documents,
        e.g. a Dask partition; the default ``()`` is the single-machine stream ``[seed, t]``.
        """
        p = self._checked()
        n_docs = check_int(n_docs, "n_docs", 0)
        t = check_int(iteration, "iteration", 0)
        key = tuple(check_int(k, "key", 0) for k in key)
        if p["diffusion_temperature"] is None:
            return np.zeros(n_docs)
        rng = np.random.default_rng(np.random.SeedSequence([p["seed"], t, *key]))
        return self.noise_std * rng.standard_normal(n_docs)

    def grad_hess(self, objective: Objective, raw_scores: np.ndarray, labels: np.ndarray,
                  query_offsets: np.ndarray, iteration: int,
                  weights: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """``(grad, hess)`` for tree ``t`` of the reparametrised booster, from loose arrays
        (checked on every call): :meth:`gradient_hessian` over a
        :class:`~stochrank_objectives.groups.GroupedData` of them.

        Evaluates ``objective`` (any object with the package's ``grad_hess`` protocol) at
        ``score_scale(t) * raw_scores`` with the query weights (``weights``: one per query, or
        one per document equal within a query; see "Query weights" above), and adds
        :meth:`noise` ``(n, t)`` to the weighted gradient, times the square root of the
        weighted hessian (:meth:`perturb`); the hessian is the objective's weighted one.
        """
        return self.gradient_hessian(objective, raw_scores,
                                     GroupedData(labels, query_offsets, weights=weights),
                                     iteration)

    def gradient_hessian(self, objective: Objective, raw_scores: np.ndarray, data: GroupedData,
                         iteration: int) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`grad_hess` over the training's validated grouped data (what the adapters
        call every round: nothing about the labels, offsets or weights is checked again).

        Example::

            grad, hess = sglb.gradient_hessian(StochasticRank(), raw_scores, data, t)

        Args:
          objective: any protocol objective (:func:`~.objectives.grouped_grad_hess`).
          raw_scores: the booster's scores ``G_t``, one per document of ``data``.
          data: the training's :class:`~stochrank_objectives.groups.GroupedData`.
          iteration: the tree index ``t``.
        """
        p = self._checked()
        t = check_int(iteration, "iteration", 0)
        scores = np.asarray(raw_scores, dtype=np.float64)
        if p["model_shrink_rate"] != 0.0:
            scores = scores * self.score_scale(t)
        grad, hess = grouped_grad_hess(objective, scores, data, t)
        if p["diffusion_temperature"] is not None:
            # w h is the weighted hessian: sqrt(w h) noise, the law of w copies (see above)
            grad = self.perturb(grad, t, None, hess)
        return grad, hess

    def perturb(self, grad: np.ndarray, iteration: int, weights: np.ndarray | None = None,
                hess: np.ndarray | None = None) -> np.ndarray:
        """``w * grad + sqrt(w h) * noise(n, t)`` (``w = 1`` without ``weights``, ``h = 1``
        without ``hess``, one per document): the Langevin step on a gradient already computed
        (float64).

        The noise is preconditioned by the objective's (unweighted) hessian ``h``: a Newton
        leaf ``-sum(g) / (sum(h) + l2)`` then gets ``N(0, 2 H / (lr T (H + l2)^2))`` with ``H``
        the leaf's hessian sum -- the unit-hessian law with the document count replaced by
        ``H`` (CatBoost's leaf noise ``N(0, 2 lr / (T (W + l2)))`` in the same units), whatever
        the scale of the hessians. Unit hessians give the unpreconditioned noise, bit for bit.
        Used where the booster shrinks the model natively (CatBoost), so only the noise is ours.
        """
        grad = np.asarray(grad, dtype=np.float64)
        if weights is not None:
            grad = grad * weights
        if self._checked()["diffusion_temperature"] is None:
            return grad
        noise = self.noise(grad.shape[0], iteration)
        scale = weights
        if hess is not None:
            hess = np.broadcast_to(np.asarray(hess, dtype=np.float64), grad.shape)
            if not np.all(hess == 1.0):
                scale = hess if weights is None else weights * hess
        return grad + (noise if scale is None else np.sqrt(scale) * noise)

    def check_learning_rate(self, learning_rate: float, name: str = "learning_rate") -> None:
        """Refuse a booster learning rate that differs from the schedule's own ``lr``."""
        own = self._checked()["learning_rate"]
        if float(learning_rate) != own:
            raise ValueError(
                f"{name}={learning_rate!r} differs from sglb.learning_rate={own!r}: "
                "SGLB's shrinkage and noise are defined by its learning rate, so set both to the "
                f"same value (e.g. {name}={own!r})")

    # -- overflow guard ----------------------------------------------------------------------
    def max_iterations(self, dtype: DTypeLike = np.float32) -> int | None:
        """Most trees the booster's raw scores ``G = F c^-t`` can hold in ``dtype``.

        ``t * (-log c)`` is capped at 80 for float32 (XGBoost margins) and 700 for float64
        (LightGBM); ``None`` = unlimited (no shrinkage).
        """
        dtype = np.dtype(dtype)
        if dtype not in _LOG_CAP:
            raise ValueError(f"dtype must be float32 or float64, got {dtype}")
        if self._checked()["model_shrink_rate"] == 0.0:
            return None
        return int(math.floor(_LOG_CAP[dtype] / -math.log(self.shrink)))

    def check_iterations(self, n_trees: int, dtype: DTypeLike = np.float32) -> None:
        """Raise ``ValueError`` if ``n_trees`` exceeds :meth:`max_iterations` for ``dtype``."""
        n_trees = check_int(n_trees, "n_trees", 0)
        cap = self.max_iterations(dtype)
        if cap is not None and n_trees > cap:
            p = self._checked()
            raise ValueError(
                f"SGLB with model_shrink_rate * learning_rate = "
                f"{p['model_shrink_rate'] * p['learning_rate']:g} cannot train {n_trees} trees in "
                f"a booster with {np.dtype(dtype).name} scores: the reparametrised scores "
                f"G = F * c^-t would reach c^-{n_trees} = e^{-n_trees * math.log(self.shrink):.1f} "
                f"(cap {cap} trees). Lower model_shrink_rate or learning_rate, train fewer trees, "
                "or restart from the finished model's predictions as the initial score.")




# -- model shrinkage applied by the booster itself (CatBoost's model_shrink_rate) ----------------
SHRINK_MODES = ("Constant", "Decreasing")


def shrink_factor(model_shrink_rate: float, learning_rate: float, iteration: int,
                  mode: str = "Constant") -> float:
    """The model-shrink factor applied before tree ``t`` (0-based) by a shrinking booster.

    Example:

    >>> shrink_factor(0.5, 0.2, 3), shrink_factor(0.5, 0.2, 4, "Decreasing")
    (0.9, 0.875)

    Formula: ``1`` before tree 0, then ``1 - gamma * lr`` (``"Constant"``, the :class:`SGLB`
    shrink ``c``) or ``1 - gamma / t`` (``"Decreasing"``).

    Source: Ustimenko & Prokhorenkova (2020), arXiv:2001.07248 (both modes as CatBoost names
    them).

    Args:
      model_shrink_rate: gamma (>= 0).
      learning_rate: the booster's learning rate.
      iteration: the tree ``t`` about to be fitted (0-based).
      mode: ``"Constant"`` or ``"Decreasing"``.

    Returns:
      the factor the model is multiplied by before tree ``t``.
    """
    t = check_int(iteration, "iteration", 0)
    if t == 0 or model_shrink_rate == 0.0:
        return 1.0
    if mode not in SHRINK_MODES:
        raise ValueError(f"model_shrink_mode must be 'Constant' or 'Decreasing', got {mode!r}")
    if mode == "Constant":
        return 1.0 - model_shrink_rate * learning_rate
    return 1.0 - model_shrink_rate / t


def tree_weights(factors, keep: int | None = None) -> list[float]:
    """Weights that bake per-tree shrink factors into trees fitted one at a time.

    Example:

    >>> tree_weights([1.0, 0.5, 0.5, 0.5], keep=3)
    [0.25, 0.5, 1.0]

    Tree ``t`` was fitted to the scores after the factors ``f_0 .. f_t`` had been applied, and
    every later factor applied before tree ``keep`` shrinks it again (model shrinkage
    multiplies the whole model). The first ``keep`` trees, summed with these weights, are the
    shrunk model::

        w_t = prod_{u = t + 1}^{keep - 1} f_u,    t = 0 .. keep - 1

    Args:
      factors: the factor applied before each tree (:func:`shrink_factor` of ``t``).
      keep: how many trees to keep (default all of them), e.g. ``best_iteration + 1``.

    Returns:
      a list of ``keep`` floats.
    """
    keep = len(factors) if keep is None else check_int(keep, "keep", 0)
    if keep > len(factors):
        raise ValueError(f"keep={keep} exceeds the {len(factors)} shrink factors given")
    return [float(np.prod(factors[t + 1:keep])) for t in range(keep)]
