"""Emulation of the boosters' native LambdaMART objectives (``LambdaMART(compat=...)``).

``compat="lightgbm"`` reproduces LightGBM's ``objective="lambdarank"`` (its label-gain table,
its sigmoid lookup table, the float literal ``0.01f`` and float32 accumulation);
``compat="xgboost"`` reproduces XGBoost's ``objective="rank:ndcg"`` with
``lambdarank_pair_method="topk"``. The facts of both implementations are restated in the
docstrings here and in :mod:`stochrank_objectives.kernels.pairwise`.

Example:

>>> from stochrank_objectives import LambdaMART
>>> LambdaMART.lightgbm().compat, LambdaMART.xgboost().top
('lightgbm', 32)
"""

from __future__ import annotations

import functools

import numpy as np

from ..kernels.pairwise import LGB_SCORE_NORM_EPS, lightgbm_sigmoid_table
from ..metric_table import metric_row
from ..validation import check_bool

__all__ = ["COMPAT", "LIGHTGBM_DEFAULT_LABEL_GAIN", "lightgbm_lambdarank_params",
           "xgboost_ndcg_params", "check_compat", "label_table_gains", "sigmoid_lookup"]

COMPAT = (None, "lightgbm", "xgboost")
LIGHTGBM_DEFAULT_LABEL_GAIN = tuple(float(2 ** i - 1) for i in range(31))
_NO_TABLE = (np.empty(0), 0.0, 0.0, 1.0)


def lightgbm_lambdarank_params(sigmoid=1.0, lambdarank_truncation_level=30,
                               lambdarank_norm=True, label_gain=None) -> dict:
    """LambdaMART's parameters for LightGBM's ``lambdarank`` with LightGBM's parameters.

    Example: ``LambdaMART(**lightgbm_lambdarank_params(sigmoid=2.0))``.

    Source: LightGBM's ``rank_objective.hpp`` (pairs with the upper position below the
    truncation level, both normalisations switched by ``lambdarank_norm``).

    Args:
      sigmoid, lambdarank_truncation_level, lambdarank_norm, label_gain: LightGBM's.

    Returns:
      dict of :class:`~.lambda_family.LambdaMART` keyword arguments.
    """
    return dict(metric="NDCG", top=lambdarank_truncation_level, sigma=sigmoid,
                label_gain=label_gain, score_norm=lambdarank_norm, norm=lambdarank_norm,
                compat="lightgbm")


def xgboost_ndcg_params(lambdarank_num_pair_per_sample=32, lambdarank_normalization=True,
                        lambdarank_score_normalization=True, ndcg_exp_gain=True) -> dict:
    """LambdaMART's parameters for XGBoost's ``rank:ndcg`` (topk pairs) with XGBoost's.

    Example: ``LambdaMART(**xgboost_ndcg_params(ndcg_exp_gain=False))``.

    Source: XGBoost's ``lambdarank_obj.cc`` (no sigmoid parameter: ``sigma = 1``).

    Args:
      lambdarank_num_pair_per_sample, lambdarank_normalization,
      lambdarank_score_normalization, ndcg_exp_gain: XGBoost's.

    Returns:
      dict of :class:`~.lambda_family.LambdaMART` keyword arguments.
    """
    exp_gain = check_bool(ndcg_exp_gain, "ndcg_exp_gain")
    return dict(metric="NDCG", top=lambdarank_num_pair_per_sample, sigma=1.0,
                gain="exp2" if exp_gain else "linear",
                score_norm=lambdarank_score_normalization, norm=lambdarank_normalization,
                compat="xgboost")


def check_compat(compat, metric, label_gain) -> None:
    """Refuse what the emulated booster objective does not have.

    Example: ``check_compat("xgboost", "MRR", None)`` raises (XGBoost's is NDCG only).

    Args:
      compat: ``None``, ``"lightgbm"`` or ``"xgboost"`` (checked by the caller).
      metric: the canonical metric name; label_gain: the validated table or None.

    Returns:
      None; raises ValueError.
    """
    native = metric_row(metric).native_lambdarank  # the boosters' lambdarank: NDCG
    if compat == "lightgbm" and not native:
        raise ValueError("compat='lightgbm' reproduces LightGBM's lambdarank, metric='NDCG' only")
    if compat == "xgboost":
        if not native:
            raise ValueError(
                "compat='xgboost' reproduces XGBoost's rank:ndcg, metric='NDCG' only")
        if label_gain is not None:
            raise ValueError("compat='xgboost' takes gain='exp2'/'linear' (XGBoost's "
                             "ndcg_exp_gain), not label_gain")


def label_table_gains(labels, table):
    """Gains ``table[label]`` (LightGBM's ``label_gain``; its default ``2^i - 1`` if None).

    Example: labels ``[2, 0]`` with the default table give ``[3.0, 0.0]``.

    Args:
      labels: float64 labels, which must be integers in ``[0, len(table) - 1]``.
      table: float64 gain of each label, or None.

    Returns:
      float64 array, one gain per document.
    """
    if table is None:
        table = np.asarray(LIGHTGBM_DEFAULT_LABEL_GAIN)
    bad = (labels != np.round(labels)) | (labels >= table.size)
    if np.any(bad):
        raise ValueError(
            f"labels must be integers in [0, {table.size - 1}] to index label_gain "
            f"(got {labels[np.argmax(bad)]:g})")
    return table[labels.astype(np.int64)]


@functools.lru_cache(maxsize=4)
def _lightgbm_table(sigma: float):
    # 2^20 bins: built once per sigma, not per boosting iteration
    return lightgbm_sigmoid_table(sigma)


def sigmoid_lookup(compat, sigma):
    """The kernel's sigmoid settings: ``(table, lo, hi, factor, score_norm_eps)``.

    Example: ``sigmoid_lookup(None, 1.0)`` has an empty table (the exact sigmoid).

    Source: LightGBM's lambdarank sigmoid table and its ``0.01f`` score-norm literal.

    Args:
      compat: ``"lightgbm"`` for LightGBM's table, else the exact sigmoid.
      sigma: the sigmoid's scale (> 0).

    Returns:
      tuple, the fields of ``kernels.pairwise.SigmoidLookup``.
    """
    if compat == "lightgbm":
        return (*_lightgbm_table(sigma), LGB_SCORE_NORM_EPS)
    return (*_NO_TABLE, 0.01)
