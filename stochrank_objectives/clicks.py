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

import numpy as np

from .click_em import em_design, regression_em
from .groups import as_float_array, validate_query_offsets

__all__ = ["DEFAULT_CLIP", "ips_labels", "estimate_propensities", "check_click_rates",
           "check_positions", "power_law_propensities",
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
      labels: relevance grades; grade_max: the top grade; low, high: the probabilities of
        grade 0 and of the top grade.

    Returns:
      the attractiveness ``gamma`` of each row, float64.
    """
    y = np.asarray(labels, dtype=np.float64)
    return low + (high - low) * (2.0 ** y - 1.0) / (2.0 ** float(grade_max) - 1.0)


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
    """
    gamma = as_float_array(attractiveness, "attractiveness")
    pos = np.asarray(positions, dtype=np.int64)
    offs = validate_query_offsets(query_offsets, gamma.shape[0])
    rng = np.random.default_rng(seed)
    n = gamma.shape[0]
    if model == "pbm":
        theta = np.asarray(propensities, dtype=np.float64)[pos]
        return rng.binomial(n_sessions, theta * gamma).astype(np.float64)
    if model != "cascade":
        raise ValueError(f"model must be 'pbm' or 'cascade', got {model!r}")
    clicks = np.zeros(n, dtype=np.float64)
    for q in range(offs.size - 1):
        a, b = offs[q], offs[q + 1]
        shown = a + np.argsort(pos[a:b], kind="stable")  # rows in display order
        draws = rng.random((n_sessions, b - a)) < gamma[shown]
        first = np.where(draws.any(axis=1), draws.argmax(axis=1), -1)
        np.add.at(clicks, shown[first[first >= 0]], 1.0)
    return clicks


def check_positions(positions, n_rows):
    """0-based display positions as int64, one per row; refused if not whole numbers >= 0.

    >>> check_positions([0, 2.0, 1], 3).tolist()
    [0, 2, 1]

    Args:
      positions: the display position of each row (0 = the top of the list).
      n_rows: the number of rows they must cover.

    Returns:
      The positions, int64; ValueError names the fix otherwise.
    """
    pos = np.asarray(positions)
    if pos.shape != (n_rows,):
        raise ValueError(f"position must have one entry per row ({n_rows}), got shape "
                         f"{pos.shape}")
    if not np.issubdtype(pos.dtype, np.integer):
        if not np.all(np.isfinite(pos)) or np.any(pos != np.round(pos)):
            raise ValueError("position must hold integer display positions (0 = top)")
        pos = pos.astype(np.int64)
    if pos.size and pos.min() < 0:
        raise ValueError("position must be >= 0 (0 = the top of the list)")
    return pos.astype(np.int64)


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
                          n_iter: int = 50, ridge: float = 1.0,
                          tol: float = 1e-6) -> np.ndarray:
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
    Newton steps of a ridge logistic regression. Identifiability comes from the features:
    positions must not be a function of ``x`` alone in the same family (a logging ranker other
    than a logistic model of the same features). Data too large for one machine: the same
    algorithm over a Dask frame's partitions,
    :func:`stochrank_objectives.adapters.dask.estimate_propensities`.

    Args:
      X: features, one row per document (dense array).
      clicks: click counts per row over ``n_sessions`` sessions (or rates with the default 1).
      positions: 0-based display positions.
      n_sessions: sessions per row, to turn counts into rates.
      n_iter: EM iterations (at most); ridge: L2 of the relevance model; tol: stop when no
        ``theta`` moves more than this.

    Returns:
      ``theta`` per position ``0..max(positions)``, scaled so that ``theta_0 = 1`` (clipped
      below at 1e-6; a position never shown keeps the value of the position above it).
    """
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

    return regression_em(total, standardised, int(pos.max()) + 1, n_iter=n_iter, ridge=ridge,
                         tol=tol)
