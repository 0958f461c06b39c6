"""Dask: the per-row training inputs (labels, query weights) are checked on the client, before any
worker trains, in the user's row and query numbers (issue item 10).

Before, a bad weight column reached LightGBM's distributed training and was refused by one
worker's objective mid-training, in that worker's own numbering ("query 9 rows 149..266" for
the frame's query 40, rows 618..735; a NaN weight shown as LightGBM's 0.0), while the other
worker waited in a collective: the next fit on the same client then hung, crashed the worker or
trained. Frame: the first 60 MQ2008 Fold 1 training queries in 4 partitions cut at query starts
(query 40 lies in partition 2, its 10th query).
"""

import threading

import numpy as np
import pytest

pd = pytest.importorskip("pandas")
dd = pytest.importorskip("dask.dataframe")
distributed = pytest.importorskip("distributed")
lgb = pytest.importorskip("lightgbm")
pytest.importorskip("pyarrow")

from stochrank_objectives.adapters import dask as sdask  # noqa: E402
from stochrank_objectives.baselines import LambdaMART  # noqa: E402
from stochrank_objectives.data import load_mq2008  # noqa: E402

WATCHDOG_S = 90
# Two binary features: LightGBM's bins and sums are then the same whichever worker holds which
# partition and whichever rank it gets (measured: 9 fits on 3 clients, one or two machines, the
# same model bit for bit), so a fit can be compared with a fresh client's.
LGB_PARAMS = dict(num_leaves=3, min_child_samples=20, learning_rate=0.3, verbose=-1,
                  deterministic=True, force_row_wise=True, random_state=0, metric="None",
                  n_estimators=10, time_out=1)


def _timed(fn, *args):
    """Run ``fn`` in a daemon thread; fail (instead of hanging) after WATCHDOG_S seconds."""
    box = {}

    def target():
        try:
            box["value"] = fn(*args)
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


def _cluster():
    return distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                    dashboard_address=None, silence_logs=40)


@pytest.fixture(scope="module")
def client():
    cluster = _cluster()
    c = distributed.Client(cluster, timeout=30)
    try:
        yield c
    finally:
        c.close(timeout=10)
        cluster.close(timeout=10)


@pytest.fixture(scope="module")
def data():
    d = load_mq2008("train").subset_queries(60)
    assert (int(d.query_offsets[40]), int(d.query_offsets[41])) == (618, 736)
    rng = np.random.default_rng(0)
    features = np.c_[(d.y > 0) ^ (rng.random(d.y.size) < 0.2), rng.random(d.y.size) < 0.5]
    query_w = 1.0 + np.arange(d.n_queries) % 3
    pdf = pd.DataFrame(features.astype(float), columns=["f0", "f1"]).assign(
        label=d.y, qid=d.qid, w=np.repeat(query_w, d.group_sizes))
    return d, pdf


def _frame(pdf):
    return sdask.repartition_by_query(dd.from_pandas(pdf, npartitions=4), "qid")


def _with(pdf, rows, column, value):
    bad = pdf.copy()
    bad.loc[rows, column] = value
    return bad


def _fit(X, y, group, w):
    obj = sdask.DaskLGBMObjective(LambdaMART(top=5))
    model = lgb.DaskLGBMRanker(objective=obj, **LGB_PARAMS)
    model.fit(X, y, group=group, sample_weight=w, callbacks=[obj.callback()])
    return obj.finalize(model)


def test_the_frame_puts_query_40_inside_a_later_partition(data):
    """The premise of the messages below: worker-local numbers differ from the frame's."""
    _, pdf = data
    sizes = sdask.check_query_partitions(_frame(pdf), "qid")
    firsts = np.cumsum([0] + [s.size for s in sizes])
    assert firsts[2] <= 40 < firsts[3] and firsts[2] > 0


BAD_WEIGHTS = {
    "differs": (700, 5.0, r"weight column 'w' differs within query 40 \(rows 618\.\.735, "
                          r"qid \d+\): 2\.0 at row 618, 5\.0 at row 700"),
    "nan": (700, np.nan, r"weight column 'w' has NaN at row 700 \(query 40, rows 618\.\.735, "
                         r"qid \d+\)"),
    "negative": (slice(618, 735), -1.0, r"weight column 'w' has -1\.0 at row 618 \(query 40, "
                                        r"rows 618\.\.735, qid \d+\)"),
    "all zero": (slice(None), 0.0, r"weight column 'w' is 0 for every query"),
}


@pytest.mark.parametrize("case", list(BAD_WEIGHTS))
def test_bad_weights_are_refused_before_training_in_the_users_numbers(case, data, client):
    _, pdf = data
    rows, value, message = BAD_WEIGHTS[case]
    df = _frame(_with(pdf, rows, "w", value))
    with pytest.raises(ValueError, match=message):
        sdask.lightgbm_inputs(df, "qid", "label", weight="w")   # before any fit starts
    layout = sdask.query_layout(df, "qid", "label")
    with pytest.raises(ValueError, match=message):
        sdask.lightgbm_inputs(df, "qid", "label", weight="w", layout=layout)


def test_a_nan_weight_is_named_nan(data, client):
    """LightGBM hands a NaN weight to the objective as 0.0: the check reads the frame itself."""
    _, pdf = data
    df = _frame(_with(pdf, 700, "w", np.nan))
    with pytest.raises(ValueError, match="has NaN at row 700") as info:
        sdask.lightgbm_inputs(df, "qid", "label", weight="w")
    assert "0.0" not in str(info.value)


def test_a_partition_of_zero_weights_is_refused(data, client):
    """A worker holding only that partition would refuse it mid-training (nothing to learn)."""
    d, pdf = data
    sizes = sdask.check_query_partitions(_frame(pdf), "qid")
    rows = np.cumsum([0] + [int(s.sum()) for s in sizes])
    zero = _with(pdf, slice(int(rows[1]), int(rows[2]) - 1), "w", 0.0)
    with pytest.raises(ValueError, match=rf"weight column 'w' is 0 for every query of "
                                         rf"partition 1 \(rows {rows[1]}\.\.{rows[2] - 1}\): "
                                         r".*drop the queries of weight 0"):
        sdask.lightgbm_inputs(_frame(zero), "qid", "label", weight="w")
    first = int(np.searchsorted(d.query_offsets, rows[1]))   # the partition's first query
    some = _with(pdf, slice(int(rows[1]), int(d.query_offsets[first + 1]) - 1), "w", 0.0)
    assert len(sdask.lightgbm_inputs(_frame(some), "qid", "label", weight="w")) == 4


@pytest.mark.parametrize("value, shown", [(np.nan, "NaN"), (-1.0, "-1.0"), (np.inf, "inf")])
def test_bad_labels_are_refused_for_both_libraries(value, shown, data, client):
    pytest.importorskip("xgboost")
    _, pdf = data
    df = _frame(_with(pdf, 700, "label", value))
    message = rf"label column 'label' has {shown} at row 700 \(query 40, rows 618\.\.735, qid \d+\)"
    with pytest.raises(ValueError, match=message):
        sdask.lightgbm_inputs(df, "qid", "label")
    with pytest.raises(ValueError, match=message):
        sdask.xgboost_dmatrix(client, df, "qid", "label")


def test_a_layout_of_another_frame_is_refused_before_training(data, client):
    """The workers would find no partition of the layout in their data, mid-training."""
    _, pdf = data
    df = _frame(pdf)
    other = sdask.query_layout(_frame(_with(pdf, 700, "label", 2.0)), "qid", "label")
    with pytest.raises(ValueError, match=r"partition 2 .* does not match the layout"):
        sdask.lightgbm_inputs(df, "qid", "label", layout=other)


@pytest.mark.slow
def test_a_refused_fit_leaves_the_client_clean(data, client):
    """A refused fit, then a valid weighted fit on the same client: it trains, and gives the
    model a fresh client gives (before: a worker was left in LightGBM's collective, and the next
    fit hung or crashed the worker)."""
    d, pdf = data
    with pytest.raises(ValueError, match="weight"):
        X, y, group, w = sdask.lightgbm_inputs(_frame(_with(pdf, 700, "w", 5.0)), "qid",
                                               "label", weight="w")
        _timed(_fit, X, y, group, w)   # before: refused by a worker's objective, mid-training
    df = _frame(pdf).persist()
    after = _timed(_fit, *sdask.lightgbm_inputs(df, "qid", "label", weight="w"))
    features = pdf[["f0", "f1"]].to_numpy()
    with _cluster() as cluster, distributed.Client(cluster, timeout=30) as fresh:
        df_fresh = fresh.persist(_frame(pdf))
        reference = _timed(_fit, *sdask.lightgbm_inputs(df_fresh, "qid", "label", weight="w"))
    np.testing.assert_array_equal(after.predict(features), reference.predict(features))
    assert np.ptp(reference.predict(features)) > 0   # it learnt something
