"""Regression-EM over a Dask frame: examination propensities from clicks that do not fit on one
machine.

The algorithm is :func:`stochrank_objectives.click_em.regression_em` (Wang et al., WSDM 2018; the
model and the E- and M-steps: :func:`stochrank_objectives.clicks.estimate_propensities`); every
step of it is a sum over rows, so each pass maps one of its chunk functions over the partitions
and adds the results in partition order. No EM mathematics lives here: this module only reads
the partitions (once: their arrays and designs stay on the workers for every pass) and sums.
"""

from __future__ import annotations

import numpy as np

__all__ = ["estimate_propensities"]


def _arrays(part, features, click, position, n_sessions):
    """``(X, ctr, pos)`` of one partition (a pandas frame), checked as on one machine."""
    from ...clicks import check_click_rates, check_positions

    ctr = check_click_rates(part[click].to_numpy(np.float64), n_sessions)
    pos = check_positions(part[position].to_numpy(), ctr.shape[0])
    X = np.ascontiguousarray(np.nan_to_num(part[features].to_numpy(np.float64)))
    return X, ctr, pos


def _design(arrays, mean, scale):
    """``(Z, ctr, pos)``: a partition's arrays with the features replaced by their design."""
    from ...click_em import em_design

    X, ctr, pos = arrays
    return em_design(X, mean, scale), ctr, pos


def _apply(arrays, fn, args):
    return fn(*arrays, *args)


def estimate_propensities(df, qid: str, click: str, position: str, features=None, *,
                          n_sessions: float = 1.0, max_iter: int | None = None,
                          ridge: float = 1.0, tol: float | None = None,
                          n_iter: int | None = None) -> np.ndarray:
    """Examination propensities ``theta_k`` from the clicks of a Dask frame, by regression-EM.

    The same estimate as :func:`stochrank_objectives.clicks.estimate_propensities` on the
    frame's rows gathered in one array (to rounding: the sums are added partition by
    partition, in partition order, so the result does not depend on the workers). The
    partitions are read once; the relevance model's design (one float64 copy of the
    features, with the click rates and positions) stays on the workers for the two passes of
    every EM iteration, and the raw features are released once it is built.

    Example::

        theta = estimate_propensities(df, "qid", "click", "position", n_sessions=10)
        df = ips_label_column(df, "click", "position", theta)

    Args:
      df: a Dask frame (any partitioning: every step is a sum over rows).
      qid: its query column (only left out of the default features).
      click, position: click counts over ``n_sessions`` sessions (or rates with the default
        1) and 0-based display positions.
      features: the columns of the relevance model (default: all but ``qid``, ``click`` and
        ``position``).
      n_sessions, max_iter, ridge, tol: as in
        :func:`stochrank_objectives.clicks.estimate_propensities` (the EM runs until converged,
        ``ConvergenceWarning`` when ``max_iter`` stops it first; ``None``: its defaults).
      n_iter: deprecated name of ``max_iter``.

    Returns:
      ``theta`` per position ``0..max(position)``, with ``theta_0 = 1``.
    """
    import dask

    from ...click_em import DEFAULT_MAX_ITER, DEFAULT_TOL, check_em_settings, regression_em

    max_iter, tol, ridge = check_em_settings(
        DEFAULT_MAX_ITER if max_iter is None else max_iter, DEFAULT_TOL if tol is None else tol,
        ridge, n_iter=n_iter)
    if features is None:
        features = [c for c in df.columns if c not in (qid, click, position)]
    features = list(features)
    missing = [c for c in (click, position, *features) if c not in df.columns]
    if missing:
        raise ValueError(f"estimate_propensities: the frame has no column {missing[0]!r}; "
                         f"pass click=, position= and features= from {list(df.columns)}")
    if not features:
        raise ValueError("estimate_propensities needs at least one feature column for the "
                         "relevance model (features=[...])")
    n_pos = int(df[position].max().compute()) + 1
    # the partitions' arrays are computed once and kept on the workers until their designs
    # are built, which then serve every EM pass
    chunks = list(dask.persist(*[dask.delayed(_arrays)(part, features, click, position,
                                                       n_sessions) for part in df.to_delayed()]))

    def summed(chunks):
        def total(fn, *args):
            sums = dask.compute(*[dask.delayed(_apply)(chunk, fn, args) for chunk in chunks])
            return tuple(sum(values[1:], values[0]) for values in zip(*sums))
        return total

    def standardised(mean, scale):
        designs = dask.persist(*[dask.delayed(_design)(chunk, mean, scale) for chunk in chunks])
        chunks.clear()  # regression_em reads the raw chunks no more: free them on the workers
        return summed(designs)

    return regression_em(summed(chunks), standardised, n_pos, max_iter=max_iter, ridge=ridge,
                         tol=tol)
