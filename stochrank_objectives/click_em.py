"""Regression-EM over data held in chunks: examination propensities from clicks.

The model and its E- and M-steps are those of
:func:`stochrank_objectives.clicks.estimate_propensities` (Wang et al., WSDM 2018). Every step is
a sum over rows of one of this module's chunk functions, so :func:`regression_em` runs the same
on one array (``clicks.estimate_propensities``) and on the partitions of a Dask frame
(``adapters.dask.estimate_propensities``), to rounding.
"""

from __future__ import annotations

import numbers
import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning

__all__ = ["regression_em", "em_design", "DEFAULT_MAX_ITER", "DEFAULT_TOL",
           "check_em_settings"]

#: default cap on the EM iterations: generous, the EM stops earlier once converged (``tol``)
DEFAULT_MAX_ITER = 10_000
#: default tolerance: the EM has converged when no propensity moves more than this in one step
DEFAULT_TOL = 1e-6


def check_em_settings(max_iter=DEFAULT_MAX_ITER, tol=DEFAULT_TOL, ridge=1.0, *, n_iter=None,
                      where="estimate_propensities"):
    """``(max_iter, tol, ridge)`` checked: an integer cap >= 1, a finite tolerance >= 0 and a
    finite ridge >= 0; ``n_iter`` is the deprecated name of ``max_iter`` (a ``FutureWarning``).

    >>> check_em_settings(500, 1e-8)
    (500, 1e-08, 1.0)

    Args:
      max_iter: the most EM iterations; tol: the convergence tolerance on the propensities;
        ridge: L2 of the relevance model; n_iter: the old name of ``max_iter``; where: the
        function named in the messages.

    Returns:
      The settings as ``(int, float, float)``; ``ValueError`` naming the argument otherwise.
    """
    name = "max_iter"
    if n_iter is not None:
        if max_iter != DEFAULT_MAX_ITER and max_iter != n_iter:
            raise ValueError(f"{where}: pass max_iter= only (n_iter is its deprecated name), "
                             f"got max_iter={max_iter!r} and n_iter={n_iter!r}")
        max_iter, name = n_iter, "n_iter"
    if (isinstance(max_iter, bool) or not isinstance(max_iter, numbers.Real)
            or not np.isfinite(max_iter) or max_iter != int(max_iter) or max_iter < 1):
        raise ValueError(f"{where}: {name} must be a whole number of EM iterations >= 1, got "
                         f"{max_iter!r} (0 would return the initial guess, not an estimate)")
    if n_iter is not None:
        warnings.warn(f"{where}: n_iter is deprecated, pass max_iter= (the cap on the EM "
                      "iterations; the EM stops earlier once no propensity moves more than tol)",
                      FutureWarning, stacklevel=3)
    for arg, value in (("tol", tol), ("ridge", ridge)):
        if (isinstance(value, bool) or not isinstance(value, numbers.Real)
                or not np.isfinite(value) or value < 0):
            raise ValueError(f"{where}: {arg} must be a finite number >= 0, got {value!r}")
    return int(max_iter), float(tol), float(ridge)


def _sigmoid(z):
    return 0.5 * (1.0 + np.tanh(0.5 * z))


def _em_totals(X, ctr, pos, n_pos):
    """One chunk's sums for the start of regression-EM: rows, feature sums, click-rate sum,
    rows and click-rate sums per position."""
    return (np.float64(X.shape[0]), X.sum(axis=0), ctr.sum(), np.bincount(pos, minlength=n_pos)
            .astype(np.float64), np.bincount(pos, ctr, n_pos))


def _em_spread(X, ctr, pos, mean):
    """One chunk's sum of squared deviations from the global feature ``mean`` (a 1-tuple)."""
    return (((X - mean) ** 2).sum(axis=0),)


def em_design(X, mean, scale):
    """The relevance model's design matrix: the features standardised by the global ``mean``
    and ``scale``, and a column of ones (the intercept).

    >>> em_design(np.array([[1.0], [3.0]]), np.array([2.0]), np.array([1.0])).tolist()
    [[-1.0, 1.0], [1.0, 1.0]]

    Args:
      X: one chunk's features; mean, scale: the global feature means and standard deviations
        (1 where a feature is constant).

    Returns:
      ``[(X - mean) / scale, 1]``, one row per row of ``X``.
    """
    return np.column_stack([(X - mean) / scale, np.ones(X.shape[0])])


def _em_step(Z, ctr, pos, theta, w_gamma, w_p):
    """One chunk's E-step and Newton sums (``Z``: its :func:`em_design`): the posterior
    examination summed per position, and the gradient ``Z'(p - r)`` and hessian
    ``Z' diag(p (1 - p)) Z`` of the cross-entropy of the relevance model at ``w_p`` against the
    posterior relevance ``r`` (E-step at ``w_gamma``)."""
    gamma = np.clip(_sigmoid(Z @ w_gamma), 1e-6, 1 - 1e-6)
    t = theta[pos]
    denom = 1.0 - t * gamma
    exam = ctr + (1.0 - ctr) * t * (1.0 - gamma) / denom
    rel = ctr + (1.0 - ctr) * (1.0 - t) * gamma / denom
    p = _sigmoid(Z @ w_p)
    return (np.bincount(pos, exam, theta.shape[0]), Z.T @ (p - rel),
            (Z * (p * (1 - p))[:, None]).T @ Z)


def regression_em(total, standardised, n_pos: int, *, max_iter: int = DEFAULT_MAX_ITER,
                  ridge: float = 1.0, tol: float = DEFAULT_TOL, n_iter=None) -> np.ndarray:
    """Regression-EM over data held in chunks (the model:
    :func:`~stochrank_objectives.clicks.estimate_propensities`).

    ``total(fn, *args)`` returns the element-wise sum over the chunks of ``fn(X, ctr, pos,
    *args)`` (a tuple of arrays); ``standardised(mean, scale)`` returns the same over the
    chunks with ``X`` replaced by its :func:`em_design` (built once per chunk, kept for every
    pass; ``total`` is not called after it, so the raw chunks may be released). Every step of the algorithm is such a sum, so the same code runs on one array
    (:func:`~stochrank_objectives.clicks.estimate_propensities`) or on the partitions of a
    Dask frame (:func:`stochrank_objectives.adapters.dask.estimate_propensities`), to
    rounding. Each
    iteration is two passes over the data (the E-step with the first Newton step, then the
    second Newton step). It stops once no propensity moves more than ``tol`` in an iteration,
    or after ``max_iter`` iterations with a ``ConvergenceWarning`` (raise ``max_iter``).

    Example (two chunks of one array's rows; ``X, ctr, pos`` as in
    :func:`~stochrank_objectives.clicks.estimate_propensities`)::

        chunks = [(X[:500], ctr[:500], pos[:500]), (X[500:], ctr[500:], pos[500:])]

        def summed(parts):
            def total(fn, *args):
                sums = [fn(*part, *args) for part in parts]
                return tuple(sum(values[1:], values[0]) for values in zip(*sums))
            return total

        def standardised(mean, scale):
            return summed([(em_design(x, mean, scale), c, p) for x, c, p in chunks])

        theta = regression_em(summed(chunks), standardised, int(pos.max()) + 1)

    Args:
      total: sums a chunk function over the raw chunks (above).
      standardised: ``(mean, scale) ->`` the same over the designs.
      n_pos: the number of positions (``max(position) + 1``).
      max_iter, ridge, tol: as in
        :func:`~stochrank_objectives.clicks.estimate_propensities`.
      n_iter: deprecated name of ``max_iter``.

    Returns:
      ``theta`` per position ``0..n_pos-1``, scaled so that ``theta_0 = 1``.
    """
    max_iter, tol, ridge = check_em_settings(max_iter, tol, ridge, n_iter=n_iter,
                                             where="regression_em")
    n, x_sum, ctr_sum, counts, ctr_by_pos = total(_em_totals, n_pos)
    mean = x_sum / n
    sd = np.sqrt(total(_em_spread, mean)[0] / n)
    scale = np.where(sd > 0, sd, 1.0)
    total_z = standardised(mean, scale)
    theta = np.clip(ctr_by_pos / np.maximum(counts, 1), 1e-3, 1 - 1e-3)
    theta = np.clip(theta / theta.max(), 1e-3, 1 - 1e-3)
    w = np.zeros(x_sum.shape[0] + 1)
    ctr_mean = ctr_sum / n
    w[-1] = np.log(max(ctr_mean, 1e-3) / (1 - min(ctr_mean, 1 - 1e-3)))
    eye = ridge * np.eye(w.shape[0])
    moved = np.inf
    for _ in range(max_iter):
        exam_sums, grad, hess = total_z(_em_step, theta, w, w)
        new = exam_sums / np.maximum(counts, 1)
        new = np.where(counts > 0, np.clip(new, 1e-6, 1 - 1e-6), np.nan)
        for k in range(n_pos):  # an empty position takes the value above it
            if np.isnan(new[k]):
                new[k] = new[k - 1] if k else 1.0
        # two Newton steps of the ridge logistic regression on the posterior relevance
        w1 = w - np.linalg.solve(hess + eye, grad + ridge * w)
        _, grad, hess = total_z(_em_step, theta, w, w1)
        w = w1 - np.linalg.solve(hess + eye, grad + ridge * w1)
        moved = np.max(np.abs(new - theta))
        theta = new
        if moved <= tol:
            break
    else:
        warnings.warn(f"regression-EM stopped at max_iter={max_iter} iterations before "
                      f"converging: a propensity still moved by {moved:.2g} > tol={tol:g} in the "
                      "last one; raise max_iter (estimate_propensities(..., max_iter=), or a "
                      "ranker's fit(..., propensity=clicks.RegressionEM(max_iter=)))",
                      ConvergenceWarning, stacklevel=3)
    return np.maximum(theta / theta[0], 1e-6)
