"""The arguments of a LightGBM objective or eval function: either call form, with its query
groups checked against the predictions."""

from __future__ import annotations

import lightgbm as lgb
import numpy as np

from ...groups import query_offsets_from_sizes

#: marks an argument that was not passed (``None`` is a valid weight or group)
MISSING = object()


def group_error(where: str) -> ValueError:
    return ValueError(
        f"the {where} has no query groups: ranking objectives need them. Pass the number of "
        "documents per query, e.g. lgb.Dataset(X, y, group=sizes) or "
        "LGBMRanker().fit(X, y, group=sizes) (sizes = numpy.diff(query_offsets); for a qid "
        "column use numpy.diff(stochrank_objectives.query_offsets_from_qid(qid)))")


def grouped(labels, sizes, n_preds: int, where: str):
    """float64 labels and int64 offsets, checked against the number of predictions."""
    if labels is None:
        raise ValueError(f"the {where} has no labels")
    if sizes is None:
        raise group_error(where)
    labels = np.asarray(labels, dtype=np.float64).ravel()
    offsets = query_offsets_from_sizes(np.asarray(sizes).ravel())
    if not (labels.shape[0] == offsets[-1] == n_preds):
        raise ValueError(
            f"length mismatch in the {where}: {n_preds} predictions, {labels.shape[0]} labels, "
            f"query sizes summing to {offsets[-1]}; they must all describe the same documents")
    return labels, offsets


def call_arguments(who, first, second, weight, group):
    """``(preds, labels, sizes, weight, container)`` from either call form of a LightGBM
    callable: ``lgb.train``'s ``(preds, dataset)`` or the scikit-learn API's ``(y_true, y_pred,
    weight, group)``. ``container`` is what the validated data is kept by: the Dataset, or the
    label array LightGBM passes (the same object every round)."""
    if weight is MISSING and group is MISSING:
        preds, data = first, second
        if not isinstance(data, lgb.Dataset):
            raise TypeError(f"called with two arguments, {who} expects "
                            f"(preds, lightgbm.Dataset), got a {type(data).__name__}")
        return preds, data.get_label(), data.get_group(), data.get_weight(), data
    return (second, first, None if group is MISSING else group,
            None if weight is MISSING else weight, first)

