"""Training inputs for the boosting libraries, built from a frame partitioned by query.

Each library receives the query structure in its own form: LightGBM a ``group`` array of query
sizes chunked exactly like the frame (:func:`lightgbm_inputs`), XGBoost a ``qid`` column that must
be non-decreasing on every worker (:func:`xgboost_dmatrix`). Both builders first check the
frame on the client, in one pass (:func:`~.checks.check_training_inputs`): split queries (or the
given :class:`~.layout.QueryLayout` against the frame), empty partitions, labels and query
weights, refused in the frame's own row and query numbers before any worker trains. Features, labels
and query structure are all cut from the frame's own partitions (see :mod:`.partitions`): a
column of a frame read from files may be read in fewer, fused partitions, and both libraries
pair the partitions of ``X``, ``y`` and the query structure one to one. Booster modules are
imported inside the builder that needs them, so either library alone is enough.

Example::

    X, y, group = lightgbm_inputs(df, "qid", "label", layout=layout)
    dtrain = xgboost_dmatrix(client, df, "qid", "label", layout=layout)
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ...groups import query_offsets_from_sizes, query_weights
from .checks import check_training_inputs
from .layout import QueryLayout, partition_digest
from .partitions import frame_parts, query_runs

__all__ = ["lightgbm_inputs", "xgboost_dmatrix", "ips_label_column"]


def _select(part, columns):
    return part[columns]


def _frame_inputs(df, qid, label, features, layout, who, weight=None):
    """``(parts, sizes, X, y)``: the frame's parts, their query sizes, features and labels.

    The frame is checked first, on the client (:func:`~.checks.check_training_inputs`: split
    queries, empty partitions, labels, weights, the layout), so that a bad input is refused
    here, in the frame's own row and query numbers, and never by a worker mid-training. ``X``
    and ``y`` are built from the same delayed parts, so they have exactly one partition per
    entry of ``sizes`` (and share the reads when computed together).
    """
    import dask
    import dask.dataframe as dd

    if features is None:
        features = [c for c in df.columns if c not in (qid, label, weight)]
    features = list(features)
    parts = frame_parts(df, qid, label, *features, *([weight] if weight is not None else []))
    sizes = check_training_inputs(df, qid, label, weight, layout, who)
    X = dd.from_delayed([dask.delayed(_select)(p, features) for p in parts],
                        meta=df._meta[features], verify_meta=False)
    y = dd.from_delayed([dask.delayed(_select)(p, label) for p in parts],
                        meta=df._meta[label], verify_meta=False)
    return parts, sizes, X, y


def lightgbm_inputs(df, qid: str, label: str, features=None, layout=None,
                    weight: str | None = None):
    """``(X, y, group)`` for ``DaskLGBMRanker.fit(X, y, group=group)``; with ``weight``,
    ``(X, y, group, w)`` for ``fit(X, y, group=group, sample_weight=w)``.

    ``group``, the query sizes, is a dask Array with exactly one chunk per partition of ``df``,
    because LightGBM pairs the chunks of ``group`` with the partitions of ``X``.

    Example::

        X, y, group = lightgbm_inputs(df, "qid", "label", layout=layout)
        ranker.fit(X, y, group=group, callbacks=[obj.callback()])

    Args:
      df: a dask DataFrame with no query split across partitions and no empty partition.
      qid: the query-id column.
      label: the label column.
      features: the feature columns (default: all columns but ``qid`` and ``label``).
      layout: :func:`~.layout.query_layout` of ``df``, checked against it (sizes and digest of
        every partition); without it the partitions are checked for split queries, as
        :func:`~.partitions.check_query_partitions` does. Either way the frame is read once
        here (persist it first).
      weight: the column of query weights (one per row, the same for the rows of a query;
        not a feature), or None. LightGBM hands each worker's weights to the objective, which
        weighs its queries as on one machine (:func:`~stochrank_objectives.groups.query_weights`).
        Pass the returned ``w`` to ``fit``: it is checked here, before training (a weight
        series of your own is checked only by each worker's objective, mid-training).

    Returns:
      ``(X, y, group)`` (and ``w``, the weight series, when ``weight`` is given): the feature
      frame, the label series and the query-size array. Raises, in the frame's row and query
      numbers (from 0), before any training: :class:`~.partitions.SplitQueryError` for a split
      query; ``ValueError`` for a layout of another frame, empty partitions, a NaN, infinite
      or negative label or weight, weights that differ within a query, or that are 0 for
      every query (or for every query of a partition); ``TypeError`` for a non-numeric column
      (:func:`~.checks.check_training_inputs`).
    """
    import dask.array as da

    import dask
    import dask.dataframe as dd

    parts, sizes, X, y = _frame_inputs(df, qid, label, features, layout, "lightgbm_inputs",
                                       weight)
    group = da.concatenate([da.from_array(s, chunks=(s.size,)) for s in sizes])
    if weight is None:
        return X, y, group
    w = dd.from_delayed([dask.delayed(_select)(p, weight) for p in parts],
                        meta=df._meta[weight], verify_meta=False)
    return X, y, group, w


def _query_numbers(part, qid, first: int):
    _, lengths = query_runs(part[qid].to_numpy())
    return pd.Series(np.repeat(np.arange(first, first + lengths.size, dtype=np.int64), lengths),
                     index=part.index, name=qid)


def _partition_query_weights(part, qid, label, weight, with_digest):
    """One partition, on a worker: its query weights (the rows were checked on the client) and,
    for a frame without a layout, its query sizes and digest."""
    _, sizes = query_runs(part[qid].to_numpy())
    w = query_weights(part[weight].to_numpy(dtype=np.float64),
                      query_offsets_from_sizes(sizes), f"weight column {weight!r}")
    digest = partition_digest(part[label].to_numpy(), sizes) if with_digest else None
    return w, sizes, digest


def xgboost_dmatrix(client, df, qid: str, label: str, features=None, layout=None,
                    weight: str | None = None, **kwargs):
    """An ``xgboost.dask.DaskDMatrix`` with ``qid`` = the global query number (0, 1, ...);
    with ``weight``, ``(dtrain, weights)`` for ``train_xgboost(..., weights=weights)``.

    The original query ids may be any values; XGBoost needs them non-decreasing on each worker,
    which the global numbering (in row order) gives as long as a worker concatenates its
    partitions in order, as ``xgboost.dask`` does.

    Example::

        dtrain = xgboost_dmatrix(client, df, "qid", "label", layout=layout)
        dtrain, weights = xgboost_dmatrix(client, df, "qid", "label", layout=layout, weight="w")
        out = train_xgboost(client, params, dtrain, 100, objective, layout=layout,
                            weights=weights)

    Args:
      client: the ``distributed.Client``.
      df, qid, label, features, layout: as in :func:`lightgbm_inputs`.
      weight: the column of query weights, as in :func:`lightgbm_inputs` (one per row, the
        same for the rows of a query; not a feature), checked here before training, or None.
        ``xgboost.dask`` refuses weights with ``qid`` ("per-group weight is not implemented",
        xgboost 3.2), so they are not put in the ``DaskDMatrix``: they come back as a
        :class:`~.xgboost.QueryWeights` (one weight per query of each partition) that
        :func:`~.xgboost.train_xgboost` hands to the package's objective on every worker,
        which weighs its queries as ``StochasticXGBRanker.fit(..., sample_weight=w)`` does.
        Without ``layout`` the frame's layout is computed here (the workers find their
        partitions' weights by it).
      kwargs: passed to ``DaskDMatrix`` (not ``qid``: it is built from the column).

    Returns:
      The ``DaskDMatrix``; with ``weight``, ``(dtrain, weights)``. Raises as
      :func:`lightgbm_inputs` does (split queries, a layout of another frame, empty
      partitions, bad labels or weights), before any training; ``ValueError`` also for two
      partitions alike in labels and query sizes but weighted differently (a worker could not
      tell them apart).
    """
    import dask
    import dask.dataframe as dd
    from xgboost import dask as dxgb

    if weight is not None and not isinstance(weight, str):
        raise TypeError(
            f"xgboost_dmatrix(weight=...) takes the name of the frame's weight column (as "
            f"lightgbm_inputs does), got a {type(weight).__name__}: add the weights to the "
            "frame as a column (one per row, the same for the rows of a query) and pass its "
            "name")
    parts, sizes, X, y = _frame_inputs(df, qid, label, features, layout, "xgboost_dmatrix",
                                       weight)
    weights = None
    if weight is not None:   # checked above; one weight per query of each partition
        from .xgboost import QueryWeights

        per_part = dask.compute(*[dask.delayed(_partition_query_weights)(
            p, qid, label, weight, layout is None) for p in parts])
        if layout is None:
            layout = QueryLayout([s for _, s, _ in per_part], [d for _, _, d in per_part])
        weights = QueryWeights(layout, [w for w, _, _ in per_part])
    firsts = np.concatenate([[0], np.cumsum([s.size for s in sizes])])
    numbers = dd.from_delayed(
        [dask.delayed(_query_numbers)(p, qid, int(f)) for p, f in zip(parts, firsts[:-1])],
        meta=pd.Series(dtype=np.int64, name=qid), verify_meta=False)
    dtrain = dxgb.DaskDMatrix(client, X, y, qid=numbers, **kwargs)
    return dtrain if weights is None else (dtrain, weights)


def _with_ips(part, click, position, theta, clip, name):
    from ...clicks import ips_labels

    part = part.copy()
    part[name] = ips_labels(part[click].to_numpy(np.float64), part[position].to_numpy(),
                            theta, clip=clip) if len(part) else np.zeros(0)
    return part


def ips_label_column(df, click: str, position: str, propensity, *, clip: float | None = None,
                     name: str = "ips_label"):
    """``df`` with a column ``name`` of IPS labels ``click / max(theta_position, clip)``
    (:func:`stochrank_objectives.clicks.ips_labels`), partition by partition: train on clicks
    by giving ``name`` as the label column of :func:`~.layout.query_layout`,
    :func:`lightgbm_inputs` and :func:`xgboost_dmatrix`, with a linear-gain objective.

    Example::

        df = ips_label_column(df, "click", "position", theta)
        layout = query_layout(df, "qid", "ips_label")
        X, y, group = lightgbm_inputs(df, "qid", "ips_label", layout=layout)

    ``propensity`` (``theta_k`` per 0-based position ``k``) must be given: estimate it from the
    same frame with :func:`~.propensities.estimate_propensities` (regression-EM over the
    partitions) or take it from a randomisation experiment.

    Args:
      df: a Dask frame partitioned by query; click, position: its click (or click-through
        rate) and 0-based position columns; propensity: ``theta`` per position; clip: lower
        bound on ``theta`` (default :data:`~stochrank_objectives.clicks.DEFAULT_CLIP`); name:
        the new column.

    Returns:
      the frame with the IPS label column added.
    """
    from ...clicks import DEFAULT_CLIP

    if propensity is None:
        raise ValueError("ips_label_column needs propensity= (theta per position): estimate "
                         "it with stochrank_objectives.adapters.dask.estimate_propensities(df, "
                         "qid, click, position) or give a randomisation experiment's")
    theta = np.asarray(propensity, dtype=np.float64)
    clip = DEFAULT_CLIP if clip is None else float(clip)
    meta = df._meta.assign(**{name: np.zeros(0, dtype=np.float64)})
    return df.map_partitions(_with_ips, click, position, theta, clip, name, meta=meta)
