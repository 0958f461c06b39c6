"""Query weights on XGBoost's Dask front end (issue 35, item 5).

``xgboost.dask.DaskDMatrix`` refuses ``weight=`` together with ``qid=`` ("per-group weight is
not implemented"), so the package hands the query weights to its own objective on the workers:
``xgboost_dmatrix(..., weight="w")`` checks the column on the client (as ``lightgbm_inputs``
does) and returns ``(dtrain, weights)``; ``train_xgboost(..., weights=weights)`` gives every
worker the weights of the partitions it holds. Before, ``xgboost_dmatrix`` refused ``weight=``.

Data: 60 small queries with integer features of few distinct values, so that XGBoost's
quantile bins are the values themselves, on one machine and on two workers alike; the model
of a 2-worker fit is then the single-machine model to float32 rounding.
"""

from __future__ import annotations

import threading

import numpy as np
import pytest

pd = pytest.importorskip("pandas")
dd = pytest.importorskip("dask.dataframe")
distributed = pytest.importorskip("distributed")
xgb = pytest.importorskip("xgboost")
pytest.importorskip("pyarrow")

from stochrank_objectives import SGLB, StochasticRank, StochasticXGBRanker  # noqa: E402
from stochrank_objectives.adapters import dask as sdask  # noqa: E402
from stochrank_objectives.baselines import LambdaMART  # noqa: E402

WATCHDOG_S = 90
N_TREES = 8
PARAMS = dict(max_depth=3, learning_rate=0.3, tree_method="hist", nthread=1)
FEATURES = [f"f{i}" for i in range(4)]


def _timed(fn, *args, **kwargs):
    """Run ``fn`` in a daemon thread; fail (instead of hanging) after WATCHDOG_S seconds."""
    box = {}

    def target():
        try:
            box["value"] = fn(*args, **kwargs)
        except BaseException as exc:  # noqa: BLE001 -- re-raised in the test thread
            box["error"] = exc

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(WATCHDOG_S)
    if thread.is_alive():
        pytest.fail(f"distributed training did not finish within {WATCHDOG_S} s")
    if "error" in box:
        raise box["error"]
    return box["value"]


def _frame(n_queries=60, seed=0):
    rng = np.random.default_rng(seed)
    sizes = rng.integers(3, 12, n_queries)
    qid = np.repeat(np.arange(n_queries) * 3 + 10, sizes)
    X = rng.integers(0, 20, size=(qid.size, len(FEATURES))).astype(np.float64)
    y = np.clip(np.round(X[:, 0] / 5 + X[:, 1] / 10 + rng.normal(0, 0.7, qid.size)), 0, 4)
    w = np.repeat(rng.choice([0.5, 1.0, 2.0, 3.0], n_queries), sizes)
    pdf = pd.DataFrame(X, columns=FEATURES).assign(label=y, qid=qid, w=w)
    return pdf


@pytest.fixture(scope="module")
def client():
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                       dashboard_address=None, silence_logs=40)
    c = distributed.Client(cluster, timeout=30)
    try:
        yield c
    finally:
        c.close(timeout=10)
        cluster.close(timeout=10)


def _dask(pdf, npartitions=4):
    df = sdask.repartition_by_query(dd.from_pandas(pdf, npartitions=npartitions), "qid")
    df = df.persist()
    distributed.wait(df)
    return df


def _dask_fit(client, df, objective, sglb=None, layout=None):
    dtrain, weights = sdask.xgboost_dmatrix(client, df, "qid", "label", weight="w",
                                            layout=layout)
    out = _timed(sdask.train_xgboost, client, dict(PARAMS), dtrain, N_TREES, objective,
                 sglb=sglb, layout=layout, weights=weights)
    return out["booster"]


def _margins(booster, pdf):
    return booster.predict(xgb.DMatrix(pdf[FEATURES]), output_margin=True).astype(np.float64)


def test_weighted_dask_fit_is_the_single_machine_fit(client):
    pdf = _frame()
    df = _dask(pdf)
    assert len({w for w, keys in client.has_what().items() if keys}) == 2   # distributed
    booster = _dask_fit(client, df, LambdaMART(top=5))
    assert booster.feature_names == FEATURES   # the weight column is not a feature
    single = StochasticXGBRanker(LambdaMART(top=5), n_estimators=N_TREES, max_depth=3,
                                 learning_rate=0.3, tree_method="hist", n_jobs=1)
    single.fit(pdf[FEATURES], pdf["label"], qid=pdf["qid"], sample_weight=pdf["w"])
    expected = single.predict(pdf[FEATURES])
    np.testing.assert_allclose(_margins(booster, pdf), expected, rtol=0, atol=1e-6)
    # the weights matter: the unweighted single-machine model is another one
    unweighted = StochasticXGBRanker(LambdaMART(top=5), n_estimators=N_TREES, max_depth=3,
                                     learning_rate=0.3, tree_method="hist", n_jobs=1)
    unweighted.fit(pdf[FEATURES], pdf["label"], qid=pdf["qid"])
    assert np.abs(unweighted.predict(pdf[FEATURES]) - expected).max() > 1e-3


@pytest.mark.parametrize("objective, sglb, with_layout", [
    (LambdaMART(top=5), None, False),
    (StochasticRank(top=5, seed=3), SGLB(0.3, 0.01, 1e3, seed=3), True),
], ids=["lambdamart", "stochasticrank_sglb_layout"])
def test_weight_zero_removes_a_query(client, objective, sglb, with_layout):
    """Queries of weight 0 with their labels reversed: the same model as with their own
    labels (the noise is keyed per partition, not by the labels; without a layout, by the
    layout the weights bring)."""
    pdf = _frame(seed=1)
    zero = pdf["qid"].isin(pdf["qid"].unique()[1::3])
    pdf["w"] = np.where(zero, 0.0, pdf["w"])
    reversed_ = pdf.assign(label=np.where(zero, pdf["label"].max() - pdf["label"],
                                          pdf["label"]))
    def fit(frame):
        df = _dask(frame)
        layout = sdask.query_layout(df, "qid", "label") if with_layout else None
        return _dask_fit(client, df, objective, sglb, layout)

    first, second = fit(pdf), fit(reversed_)
    np.testing.assert_allclose(_margins(second, pdf), _margins(first, pdf), rtol=0, atol=1e-6)
    # reversing the labels of queries that count changes the model
    third = fit(reversed_.assign(w=np.where(zero, 1.0, pdf["w"])))
    assert np.abs(_margins(third, pdf) - _margins(first, pdf)).max() > 1e-3


def test_weights_are_checked_on_the_client(client):
    pdf = _frame()
    bad = pdf.copy()
    bad.loc[bad.index[5], "w"] = 7.0   # differs within query 0
    with pytest.raises(ValueError, match=r"xgboost_dmatrix: weight column 'w' differs within "
                                         r"query 0"):
        sdask.xgboost_dmatrix(client, _dask(bad), "qid", "label", weight="w")
    df = _dask(pdf)
    with pytest.raises(TypeError, match=r"takes the name of the frame's weight column"):
        sdask.xgboost_dmatrix(client, df, "qid", "label", weight=df["w"])
    dtrain, weights = sdask.xgboost_dmatrix(client, df, "qid", "label", weight="w")
    with pytest.raises(TypeError, match=r"returns \(dtrain, weights\)"):
        sdask.train_xgboost(client, dict(PARAMS), (dtrain, weights), 2, LambdaMART())
    with pytest.raises(TypeError, match="weights must be"):
        sdask.train_xgboost(client, dict(PARAMS), dtrain, 2, LambdaMART(), weights=pdf["w"])


def test_identical_partitions_with_different_weights_are_refused(client):
    """A worker finds its partitions by their labels and query sizes; two partitions alike in
    both but weighted differently could not be told apart."""
    one = _frame(n_queries=6, seed=2)
    two = one.assign(qid=one["qid"] + 1000, w=one["w"] * 2)
    pdf = pd.concat([one, two], ignore_index=True)
    df = sdask.repartition_by_query(dd.from_pandas(pdf, npartitions=2), "qid", npartitions=2)
    assert [int(s.sum()) for s in sdask.query_layout(df, "qid", "label").sizes] == [len(one)] * 2
    with pytest.raises(ValueError, match=r"partitions 0 and 1 .* same labels and query sizes"):
        sdask.xgboost_dmatrix(client, df, "qid", "label", weight="w")
    same = pd.concat([one, one.assign(qid=one["qid"] + 1000)], ignore_index=True)
    df = sdask.repartition_by_query(dd.from_pandas(same, npartitions=2), "qid", npartitions=2)
    sdask.xgboost_dmatrix(client, df, "qid", "label", weight="w")   # same weights: fine
