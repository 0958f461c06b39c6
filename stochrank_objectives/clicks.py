"""Training on clicks: position-bias debiasing by inverse propensity scoring (IPS).

The model (position-based click model, PBM): a document shown at display position ``k`` of a
query's list is clicked with probability ``P(C = 1) = theta_k * gamma_d``, the examination
propensity of the position times the document's attractiveness. Positions are 0-based display
ranks (``0`` = top), as the usual choice for LightGBM's ``Dataset(position=...)``.

The estimator: ``E[c_d / theta_k(d)] = gamma_d``, so the IPS label ``c_d / theta_k(d)`` is an
unbiased estimate of the attractiveness. A DCG with linear gains is linear in the labels::

    DCG@T(s; g) = sum_d g_d * w(rank_s(d)),   w(p) = 1 / log2(p + 2) for p < T, else 0

so for every ranking ``s``, ``E[DCG@T(s; c / theta)] = DCG@T(s; gamma)``: the DCG of the IPS
labels is an unbiased estimate of the full-information DCG with gains ``gamma``, and a metric-
driven objective with linear gain (``StochasticRank(metric="DCG", gain="linear")``,
``LambdaMART(metric="DCG", gain="linear")``, ``LambdaLoss(gain="linear")``) trained on
:func:`ips_labels` optimises (a smoothing of) that estimate. ``metric="NDCG"`` divides by the
ideal DCG of the IPS labels, a ratio of two unbiased estimates: consistent as the clicks per
query grow, not exactly unbiased (on few clicks it also down-weights queries whose IPS labels
are large). Metrics that are not linear in the gains (MRR, ERR, PFound, MAP) have no such
estimate: an IPS label fed to them is a heuristic. Conditions: ``theta_k > 0`` at every position
a relevant document can be shown (a document never shown has no unbiased label), and the clicks
follow the PBM (a cascade user breaks the independence of positions).

Propensities are given (from a randomisation experiment, say) or estimated from the same clicks
by :func:`estimate_propensities` (regression-EM, Wang et al., WSDM 2018; the algorithm over
chunks of rows: :mod:`stochrank_objectives.click_em`). Clipping
``theta >= clip`` bounds the weights (variance) at the price of under-crediting the documents
shown below the clip (bias towards the logging ranking).

:func:`simulate_clicks` draws PBM or cascade clicks for experiments and tests.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .click_em import DEFAULT_MAX_ITER, DEFAULT_TOL, check_em_settings, em_design, regression_em
from .groups import as_float_array, check_positions, validate_query_offsets

__all__ = ["DEFAULT_CLIP", "ips_labels", "estimate_propensities", "RegressionEM",
           "check_click_rates", "check_positions", "power_law_propensities",
           "simulate_clicks", "display_positions", "click_probabilities"]

#: default lower bound on the propensities; chosen by measurement (docs/guide/clicks.md)
DEFAULT_CLIP = 0.01


def power_law_propensities(n_positions: int, eta: float = 1.0) -> np.ndarray:
    """Examination ``theta_k = (1 / (k + 1))^eta`` of the 0-based positions ``0..n-1``.

    Example::

        power_law_propensities(3, eta=1.0)   # array([1.0, 0.5, 0.3333])

    Args:
      n_positions: the number of positions; eta: the severity (0 = no position bias).

    Returns:
      ``theta`` per position, float64.
    """
    return (1.0 / np.arange(1, int(n_positions) + 1, dtype=np.float64)) ** float(eta)


def click_probabilities(labels, grade_max: float, low: float = 0.1,
                        high: float = 1.0) -> np.ndarray:
    """Click probability given examination, rising from ``low`` (grade 0) to ``high`` (grade
    ``grade_max``): ``low + (high - low) (2^y - 1) / (2^grade_max - 1)``.

    Example::

        click_probabilities([0, 1, 2], grade_max=2)   # array([0.1, 0.4, 1.0])

    Args:
      labels: relevance grades in ``[0, grade_max]``; grade_max: the top grade (> 0); low,
        high: the probabilities (in ``[0, 1]``) of grade 0 and of the top grade.

    Returns:
      the attractiveness ``gamma`` of each row, float64; ``ValueError`` naming the argument
      when a grade is outside ``[0, grade_max]`` (its "probability" would not be one).
    """
    y = as_float_array(labels, "labels")
    grade_max = float(grade_max)
    if not np.isfinite(grade_max) or grade_max <= 0:
        raise ValueError(f"grade_max must be the top relevance grade, a finite number > 0, got "
                         f"{grade_max}")
    for name, value in (("low", low), ("high", high)):
        if not 0.0 <= value <= 1.0:
            raise ValueError(f"{name} must be a click probability in [0, 1], got {value}")
    if y.size and not (y.min() >= 0):  # NaN fails here too
        row = int(np.flatnonzero(~(y >= 0))[0])
        raise ValueError(f"labels must be relevance grades >= 0; row {row} has {y[row]}: pass "
                         "the graded labels (0 = not relevant)")
    if y.size and y.max() > grade_max:
        row = int(np.argmax(y > grade_max))
        raise ValueError(f"labels above grade_max={grade_max:g}: row {row} has {y[row]:g}, and "
                         f"its click probability would exceed high={high}; pass grade_max= the "
                         f"top grade of the labels ({y.max():g})")
    return low + (high - low) * (2.0 ** y - 1.0) / (2.0 ** grade_max - 1.0)


def display_positions(scores, query_offsets) -> np.ndarray:
    """The 0-based position of each row when every query is shown by descending ``scores``
    (ties by row order).

    Example::

        display_positions([0.2, 0.9, 0.5], [0, 3])   # array([2, 0, 1])

    Args:
      scores: the logging ranker's scores; query_offsets: query boundaries.

    Returns:
      int64 positions, 0 = the top of its query's list.
    """
    scores = np.asarray(scores, dtype=np.float64)
    offs = np.asarray(query_offsets, dtype=np.int64)
    pos = np.empty(scores.shape[0], dtype=np.int64)
    for q in range(offs.size - 1):
        a, b = offs[q], offs[q + 1]
        order = np.argsort(-scores[a:b], kind="stable")
        pos[a + order] = np.arange(b - a)
    return pos


def simulate_clicks(attractiveness, positions, query_offsets, propensities, *,
                    n_sessions: int = 1, model: str = "pbm", seed: int = 0) -> np.ndarray:
    """Click counts over ``n_sessions`` sessions per query, one per row.

    Example::

        theta = power_law_propensities(10, eta=1.0)
        clicks = simulate_clicks(click_probabilities(y, 2), positions, offsets, theta,
                                 n_sessions=10, seed=0)

    Args:
      attractiveness: ``gamma_d``, click probability of each row when examined (e.g.
        :func:`click_probabilities` of the true grades).
      positions: 0-based display position of each row within its query.
      query_offsets: query boundaries.
      propensities: ``theta_k`` per position (``model="pbm"``), indexed by ``positions``.
      n_sessions: sessions per query (each one shows the whole list).
      model: ``"pbm"`` (examine position ``k`` with probability ``theta_k``, independently) or
        ``"cascade"`` (scan from the top, click with probability ``gamma``, stop after the first
        click: a misspecified case for the PBM estimator; ``propensities`` unused).
      seed: the draw.

    Returns:
      float64 click counts in ``0..n_sessions``; ``ValueError`` naming the argument when an
      attractiveness or propensity is not a probability, or a position is negative or has no
      entry in ``propensities``.
    """
    gamma = _probabilities(attractiveness, "attractiveness", "the click probability of each "
                           "row when examined (e.g. click_probabilities(labels, grade_max))")
    pos = check_positions(positions, gamma.shape[0], name="positions")
    offs = validate_query_offsets(query_offsets, gamma.shape[0])
    if model not in ("pbm", "cascade"):
        raise ValueError(f"model must be 'pbm' or 'cascade', got {model!r}")
    rng = np.random.default_rng(seed)
    n = gamma.shape[0]
    if model == "pbm":
        theta = _probabilities(propensities, "propensities", "the examination probability "
                               "of each position (e.g. power_law_propensities(n_positions))")
        if pos.size and pos.max() >= theta.size:
            row = int(np.argmax(pos >= theta.size))
            raise ValueError(f"positions: row {row} is at position {pos[row]}, but propensities "
                             f"has {theta.size} entries (positions 0..{theta.size - 1}); pass "
                             f"one propensity per position shown (at least {pos.max() + 1})")
        return rng.binomial(n_sessions, theta[pos] * gamma).astype(np.float64)
    clicks = np.zeros(n, dtype=np.float64)
    for q in range(offs.size - 1):
        a, b = offs[q], offs[q + 1]
        shown = a + np.argsort(pos[a:b], kind="stable")  # rows in display order
        draws = rng.random((n_sessions, b - a)) < gamma[shown]
        first = np.where(draws.any(axis=1), draws.argmax(axis=1), -1)
        np.add.at(clicks, shown[first[first >= 0]], 1.0)
    return clicks


def _probabilities(values, name, what):
    """``values`` as a 1-d float64 array of probabilities; ``ValueError`` naming the first entry
    outside ``[0, 1]`` (NaN included) and ``what`` to pass instead."""
    if values is None:
        raise ValueError(f"{name} is missing: pass {what}")
    try:
        p = np.ascontiguousarray(values, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{name} must be numeric, got {type(values).__name__}") from exc
    if p.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional, got shape {p.shape}: pass {what}")
    bad = ~((p >= 0) & (p <= 1))
    if np.any(bad):
        i = int(np.argmax(bad))
        raise ValueError(f"{name} must be probabilities in [0, 1]: entry {i} is {p[i]}; "
                         f"pass {what}")
    return p


def _propensity_table(propensities, n_positions):
    theta = as_float_array(propensities, "propensity")
    if theta.ndim != 1 or theta.size < n_positions:
        raise ValueError(f"propensity must give theta_k for every position 0..{n_positions - 1}"
                         f" (one value per position), got {theta.size} values")
    if np.any(~np.isfinite(theta)) or np.any(theta <= 0):
        raise ValueError("propensity must be finite and > 0")
    return theta


def ips_labels(clicks, positions, propensities, *, clip: float = DEFAULT_CLIP) -> np.ndarray:
    """Inverse-propensity-weighted click labels ``c_d / max(theta_k(d), clip)``.

    Example::

        ips_labels([1, 0, 1], [0, 1, 2], [1.0, 0.5, 0.25], clip=0.0)   # array([1., 0., 4.])

    Args:
      clicks: per row, clicks (0/1), click counts over sessions, or click-through rates; >= 0.
      positions: per row, the 0-based display position the clicks were collected at.
      propensities: ``theta_k`` per position ``k`` (``propensities[k]``; only ratios matter for
        NDCG, the scale multiplies a DCG).
      clip: lower bound on ``theta`` (0 = no clipping).

    Returns:
      float64 labels, unbiased for the attractiveness times the number of sessions (see the
      module docstring) where ``theta_k >= clip``.
    """
    c = as_float_array(clicks, "clicks")
    if np.any(c < 0):
        raise ValueError("clicks must be >= 0")
    pos = check_positions(positions, c.shape[0])
    theta = _propensity_table(propensities, int(pos.max()) + 1 if pos.size else 0)
    if not 0.0 <= clip < 1.0:
        raise ValueError(f"clip must be in [0, 1), got {clip}")
    return c / np.maximum(theta[pos], clip)


def check_click_rates(clicks, n_sessions: float) -> np.ndarray:
    """``clicks / n_sessions`` as float64 click rates, refused outside [0, 1].

    >>> check_click_rates([0, 3, 10], 10).tolist()
    [0.0, 0.3, 1.0]

    Args:
      clicks: click counts per row (or rates with ``n_sessions = 1``).
      n_sessions: the sessions each count is over.

    Returns:
      The rates; ValueError if one is outside [0, 1].
    """
    ctr = as_float_array(clicks, "clicks") / float(n_sessions)
    if np.any(ctr < 0) or np.any(ctr > 1):
        raise ValueError("clicks / n_sessions must be click rates in [0, 1]")
    return ctr


def estimate_propensities(X, clicks, positions, *, n_sessions: float = 1.0,
                          max_iter: int = DEFAULT_MAX_ITER, ridge: float = 1.0,
                          tol: float = DEFAULT_TOL, n_iter: int | None = None) -> np.ndarray:
    """Regression-EM (Wang et al., WSDM 2018): examination propensities from clicks alone.

    Example::

        theta = estimate_propensities(X, clicks, positions, n_sessions=10)
        labels = ips_labels(clicks / 10, positions, theta)

    Model: ``P(C = 1) = theta_k * gamma(x)`` with ``gamma(x) = sigmoid(w . x)`` a logistic
    regression on the (standardised) features. E-step, for the non-clicks of a row:
    ``P(E = 1, R = 0 | C = 0) = theta (1 - gamma) / (1 - theta gamma)`` and
    ``P(E = 0, R = 1 | C = 0) = (1 - theta) gamma / (1 - theta gamma)``; a click has ``E = R =
    1``. M-step: ``theta_k`` = the mean posterior examination at ``k``; ``gamma`` refit to the
    posterior relevance (the expectation of the paper's sampled labels: soft targets) by two
    Newton steps of a ridge logistic regression. The EM runs until no ``theta`` moves more than
    ``tol`` in an iteration; if ``max_iter`` iterations come first it warns
    (``sklearn.exceptions.ConvergenceWarning``: raise ``max_iter``). Identifiability comes from
    the features: positions must not be a function of ``x`` alone in the same family (a
    logging ranker other than a logistic model of the same features). Data too large for one
    machine: the same algorithm over a Dask frame's partitions,
    :func:`stochrank_objectives.adapters.dask.estimate_propensities`.

    Args:
      X: features, one row per document (dense array).
      clicks: click counts per row over ``n_sessions`` sessions (or rates with the default 1).
      positions: 0-based display positions.
      n_sessions: sessions per row, to turn counts into rates.
      max_iter: the most EM iterations (>= 1; a cap, the EM stops once converged); ridge: L2
        of the relevance model; tol: converged when no ``theta`` moves more than this in one
        iteration.
      n_iter: deprecated name of ``max_iter`` (a ``FutureWarning``).

    Returns:
      ``theta`` per position ``0..max(positions)``, scaled so that ``theta_0 = 1`` (clipped
      below at 1e-6; a position never shown keeps the value of the position above it).
    """
    max_iter, tol, ridge = check_em_settings(max_iter, tol, ridge, n_iter=n_iter)
    ctr = check_click_rates(clicks, n_sessions)
    pos = check_positions(positions, ctr.shape[0])
    X = np.asarray(X, dtype=np.float64)
    if X.ndim != 2 or X.shape[0] != ctr.shape[0]:
        raise ValueError("X must be a 2-d array with one row per click entry")
    X = np.ascontiguousarray(np.nan_to_num(X))  # one summation order for every memory layout

    def total(fn, *args):
        return fn(X, ctr, pos, *args)

    def standardised(mean, scale):
        Z = em_design(X, mean, scale)
        return lambda fn, *args: fn(Z, ctr, pos, *args)

    return regression_em(total, standardised, int(pos.max()) + 1, max_iter=max_iter,
                         ridge=ridge, tol=tol)


@dataclass(frozen=True)
class RegressionEM:
    """Settings of the regression-EM that estimates the propensities in a ranker's fit on
    clicks: ``fit(X, clicks, position=..., propensity=RegressionEM(...))``.

    Example::

        ranker.fit(X, ctr, qid=qid, position=positions,
                   propensity=RegressionEM(max_iter=50_000, tol=1e-8))
        ranker.propensities_   # the estimate the ranker trained with

    ``propensity=None`` is ``RegressionEM()``. The settings are checked when made.

    Args:
      max_iter, tol, ridge: as in :func:`estimate_propensities`.

    Returns:
      (as :meth:`estimate`) ``theta`` per position, ``theta_0 = 1``.
    """

    max_iter: int = DEFAULT_MAX_ITER
    tol: float = DEFAULT_TOL
    ridge: float = 1.0

    def __post_init__(self):
        max_iter, tol, ridge = check_em_settings(self.max_iter, self.tol, self.ridge,
                                                 where="RegressionEM")
        object.__setattr__(self, "max_iter", max_iter)
        object.__setattr__(self, "tol", tol)
        object.__setattr__(self, "ridge", ridge)

    def estimate(self, X, clicks, positions, *, n_sessions: float = 1.0) -> np.ndarray:
        """:func:`estimate_propensities` with these settings."""
        return estimate_propensities(X, clicks, positions, n_sessions=n_sessions,
                                     max_iter=self.max_iter, tol=self.tol, ridge=self.ridge)
