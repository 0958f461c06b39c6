"""Dask adapter: train with ``lightgbm.dask`` and ``xgboost.dask`` on data partitioned by query.

No gradient mathematics lives here. The modules, by concern:

* :mod:`.partitions`: :func:`check_query_partitions` (raises :class:`SplitQueryError` if a
  query is cut by a partition boundary -- both boosting libraries would silently treat the
  pieces as two queries), :func:`repartition_by_query` / :func:`rechunk_by_query` (move the
  boundaries to query starts, keeping the row order and balancing the row counts); all of them
  work on frames straight from ``read_parquet`` / ``read_csv`` (one partition per file);
* :mod:`.layout`: :func:`query_layout` (:class:`QueryLayout`: each partition's query sizes and
  digest);
* :mod:`.inputs`: :func:`lightgbm_inputs` (``X, y, group`` for ``DaskLGBMRanker.fit``),
  :func:`xgboost_dmatrix` (a ``DaskDMatrix`` with the global query number as ``qid``) and
  :func:`ips_label_column` (clicks -> IPS labels with given propensities);
* :mod:`.checks`: the input builders' check of the frame (split queries, empty partitions,
  labels, query weights), on the client before any worker trains, in the frame's row numbers;
* :mod:`.propensities`: :func:`estimate_propensities` (regression-EM over the partitions);
* :mod:`.seeding`: noise keyed per partition (:class:`PartitionSGLB`, whose formula is
  :meth:`SGLB.noise <stochrank_objectives.sglb.SGLB.noise>` with a key), so that it does not
  depend on which worker holds a partition;
* :mod:`.lightgbm`: :class:`DaskLGBMObjective`; :mod:`.xgboost`: :class:`DaskXGBObjective` and
  :func:`train_xgboost`.

The names are imported from their modules on first use, so the LightGBM front end works without
XGBoost installed and vice versa. Both need ``pyarrow`` (``dask.dataframe``) and Dask installed
(``pip install stochrank_objectives[dask]``).

Example::

    from stochrank_objectives.adapters.dask import (DaskLGBMObjective, lightgbm_inputs,
                                                    query_layout, repartition_by_query)

    df = repartition_by_query(df, "qid").persist()
    layout = query_layout(df, "qid", "label")
    X, y, group = lightgbm_inputs(df, "qid", "label", layout=layout)
    obj = DaskLGBMObjective(StochasticRank(top=5), sglb=SGLB(0.1, 0.01, 1e4), layout=layout)
    ranker = lgb.DaskLGBMRanker(objective=obj, metric="None")
    ranker.fit(X, y, group=group, callbacks=[obj.callback()])
    booster = obj.finalize(ranker)
"""

from __future__ import annotations

import importlib

# Public name -> the submodule defining it. Resolved lazily (module ``__getattr__``) because the
# front ends import their boosting library: a LightGBM user need not have XGBoost, and back.
_WHERE = {
    "SplitQueryError": "partitions",
    "check_query_partitions": "partitions",
    "repartition_by_query": "partitions",
    "rechunk_by_query": "partitions",
    "query_layout": "layout",
    "QueryLayout": "layout",
    "partition_digest": "layout",
    "lightgbm_inputs": "inputs",
    "xgboost_dmatrix": "inputs",
    "ips_label_column": "inputs",
    "estimate_propensities": "propensities",
    "PartitionSGLB": "seeding",
    "DaskLGBMObjective": "lightgbm",
    "DaskXGBObjective": "xgboost",
    "train_xgboost": "xgboost",
    "QueryWeights": "xgboost",
}

__all__ = ["SplitQueryError", "check_query_partitions", "repartition_by_query",
           "rechunk_by_query", "query_layout", "QueryLayout", "lightgbm_inputs",
           "ips_label_column", "estimate_propensities",
           "xgboost_dmatrix", "DaskLGBMObjective", "DaskXGBObjective", "train_xgboost", "QueryWeights",
           "PartitionSGLB", "partition_digest"]


def __getattr__(name: str):
    """Import the submodule defining the public ``name`` and return the object.

    Example::

        from stochrank_objectives.adapters.dask import DaskLGBMObjective  # imports .lightgbm

    Args:
      name: one of ``__all__``.

    Returns:
      The object; AttributeError for any other name.
    """
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value  # cache: later lookups skip __getattr__
    return value


def __dir__():
    return sorted({*globals(), *__all__})
