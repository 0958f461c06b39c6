"""Regression-EM over a Dask frame: examination propensities from clicks that do not fit on one
machine.

The algorithm is :func:`stochrank_objectives.clicks.regression_em` (Wang et al., WSDM 2018; the
model and the E- and M-steps: :func:`stochrank_objectives.clicks.estimate_propensities`); every
step of it is a sum over rows, so each pass maps one of its chunk functions over the partitions
and adds the results in partition order. No EM mathematics lives here: this module only reads
the partitions and sums.
"""

from __future__ import annotations

import numpy as np

__all__ = ["estimate_propensities"]


def _partial(part, fn, args, features, click, position, n_sessions):
    """``fn(X, ctr, pos, *args)`` of one partition (a pandas frame)."""
    from ...clicks import check_click_rates, check_positions

    ctr = check_click_rates(part[click].to_numpy(np.float64), n_sessions)
    pos = check_positions(part[position].to_numpy(), ctr.shape[0])
    X = np.ascontiguousarray(np.nan_to_num(part[features].to_numpy(np.float64)))
    return fn(X, ctr, pos, *args)


def estimate_propensities(df, qid: str, click: str, position: str, features=None, *,
                          n_sessions: float = 1.0, n_iter: int = 50, ridge: float = 1.0,
                          tol: float = 1e-6) -> np.ndarray:
    """Examination propensities ``theta_k`` from the clicks of a Dask frame, by regression-EM.

    The same estimate as :func:`stochrank_objectives.clicks.estimate_propensities` on the
    frame's rows gathered in one array (to rounding: the sums are added partition by
    partition, in partition order, so the result does not depend on the workers). Each EM
    iteration reads the frame twice: persist it first (``df = df.persist()``).

    Example::

        df = df.persist()
        theta = estimate_propensities(df, "qid", "click", "position", n_sessions=10)
        df = ips_label_column(df, "click", "position", theta)

    Args:
      df: a Dask frame (any partitioning: every step is a sum over rows).
      qid: its query column (only left out of the default features).
      click, position: click counts over ``n_sessions`` sessions (or rates with the default
        1) and 0-based display positions.
      features: the columns of the relevance model (default: all but ``qid``, ``click`` and
        ``position``).
      n_sessions, n_iter, ridge, tol: as in
        :func:`stochrank_objectives.clicks.estimate_propensities`.

    Returns:
      ``theta`` per position ``0..max(position)``, with ``theta_0 = 1``.
    """
    import dask

    from ...clicks import regression_em

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
    parts = df.to_delayed()
    n_pos = int(df[position].max().compute()) + 1

    def total(fn, *args):
        sums = dask.compute(*[dask.delayed(_partial)(part, fn, args, features, click,
                                                     position, n_sessions) for part in parts])
        return tuple(sum(values[1:], values[0]) for values in zip(*sums))

    return regression_em(total, n_pos, n_iter=n_iter, ridge=ridge, tol=tol)
