"""Dask adapter: query partitioning, per-partition SGLB / objective seeding, and training on
MQ2008 Fold 1 with a 2-worker ``distributed.LocalCluster`` to the single-machine validation NDCG@5.

Tolerances (validation NDCG@5, 30 trees, absolute):
  * LambdaMART (deterministic gradients): |dask - single| <= 0.03. With whole queries every
    worker computes exactly the single-machine gradients; what differs is LightGBM's /
    XGBoost's distributed histogram binning and float summation order.
  * StochasticRank + SGLB: |dask - single| <= 0.04. The noise streams differ (keyed per
    partition), and LightGBM's rank assignment varies between fits; the single-machine
    seed-to-seed spread of this setting is about 0.02 (seeds 0-3:
    LightGBM 0.716-0.734, XGBoost 0.702-0.723).
  Observed over 4 runs of this file on a loaded 2-core machine: LambdaMART 0.004-0.015,
  StochasticRank + SGLB 0.011-0.022 (both libraries).

In-process workers (``processes=False``, one thread each), LightGBM ``time_out=1`` (minute) and
a 120 s watchdog around every training call keep a failure from hanging CI.
"""

import os
import re
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

pd = pytest.importorskip("pandas")
dask = pytest.importorskip("dask")
dd = pytest.importorskip("dask.dataframe")
da = pytest.importorskip("dask.array")
distributed = pytest.importorskip("distributed")
lgb = pytest.importorskip("lightgbm")
xgb = pytest.importorskip("xgboost")
pytest.importorskip("pyarrow")

from stochrank_objectives import SGLB, StochasticRank  # noqa: E402
from stochrank_objectives.adapters import dask as sdask  # noqa: E402
from stochrank_objectives.adapters.dask import seeding  # noqa: E402
from stochrank_objectives.adapters.lightgbm import LGBMObjective  # noqa: E402
from stochrank_objectives.adapters.xgboost import DEFAULT_PARAMS, XGBObjective  # noqa: E402
from stochrank_objectives.baselines import LambdaMART  # noqa: E402
from stochrank_objectives.data import load_mq2008  # noqa: E402
from stochrank_objectives.metrics import evaluate  # noqa: E402

N_TREES = 30
LGB_PARAMS = dict(num_leaves=7, min_child_samples=20, learning_rate=0.3, verbose=-1,
                  deterministic=True, force_row_wise=True, random_state=0, metric="None",
                  n_estimators=N_TREES)
XGB_PARAMS = dict(max_depth=4, learning_rate=0.3, tree_method="hist", seed=0)
WATCHDOG_S = 120


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


@pytest.fixture(scope="module")
def mq2008():
    train, vali = load_mq2008("train"), load_mq2008("vali")
    cols = [f"f{i}" for i in range(train.X.shape[1])]
    frame = pd.DataFrame(train.X, columns=cols)
    frame["label"] = train.y
    frame["qid"] = train.qid
    return train, vali, frame, cols


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


@pytest.fixture(scope="module")
def frame(mq2008, client):
    """MQ2008 train as 4 partitions cut at query starts, persisted (one partitioning)."""
    pdf = mq2008[2]
    df = sdask.repartition_by_query(dd.from_pandas(pdf, npartitions=4), "qid").persist()
    distributed.wait(df)
    if len(_workers_used(client, df)) < 2:  # rare: the scheduler put everything on one worker
        client.rebalance()
    return df


def _ndcg5(scores, vali):
    return evaluate("NDCG", np.asarray(scores, dtype=np.float64), vali.y, vali.query_offsets, 5)


# -- partitioning (no cluster needed: the default scheduler) -----------------------------------
def test_split_query_is_detected(mq2008):
    train, _, pdf, _ = mq2008
    df = dd.from_pandas(pdf, npartitions=4)  # cuts by row count: inside queries
    with pytest.raises(sdask.SplitQueryError, match="split across partitions"):
        sdask.check_query_partitions(df, "qid")
    with pytest.raises(sdask.SplitQueryError, match="split across partitions"):
        sdask.lightgbm_inputs(df, "qid", "label")
    qid = da.from_array(train.qid, chunks=1000)
    with pytest.raises(sdask.SplitQueryError, match="split across"):
        sdask.check_query_partitions(qid)


def test_repartition_by_query_keeps_rows_and_queries(mq2008):
    train, _, pdf, _ = mq2008
    df = sdask.repartition_by_query(dd.from_pandas(pdf, npartitions=4), "qid", npartitions=3)
    sizes = sdask.check_query_partitions(df, "qid")
    assert len(sizes) == 3 and all(s.size > 0 for s in sizes)
    np.testing.assert_array_equal(np.concatenate(sizes), train.group_sizes)
    assert abs(int(sizes[0].sum()) - train.y.size / 3) < 300  # balanced to a query
    pd.testing.assert_frame_equal(df.compute(), pdf)  # same rows, same order

    qid, y = sdask.rechunk_by_query(da.from_array(train.qid, chunks=1000),
                                    da.from_array(train.y, chunks=1000))
    assert qid.chunks == y.chunks
    np.testing.assert_array_equal(np.concatenate(sdask.check_query_partitions(qid)),
                                  train.group_sizes)


def test_non_contiguous_query_is_refused():
    pdf = pd.DataFrame({"qid": [1, 1, 2, 2, 1, 1], "label": [0.0, 1, 0, 1, 0, 1]})
    df = dd.from_pandas(pdf, npartitions=2)
    with pytest.raises(sdask.SplitQueryError, match="non-contiguous"):
        sdask.check_query_partitions(df, "qid")
    with pytest.raises(sdask.SplitQueryError, match="non-contiguous"):
        sdask.repartition_by_query(df, "qid")


# -- frames straight from files (one partition per file; the 2-worker LocalCluster) ------------
# A column of such a frame (df["qid"]) is read in fewer, fused partitions than the frame itself;
# every function below must still see one partition per file.
N_FILE_QUERIES = 40  # the first queries of MQ2008 train: enough rows for 5 files, seconds


def _write_files(directory, pdf, row_bounds, fmt):
    """File i holds rows row_bounds[i]:row_bounds[i + 1] of pdf; the frame read back from them."""
    for i, (lo, hi) in enumerate(zip(row_bounds[:-1], row_bounds[1:])):
        part = pdf.iloc[lo:hi]
        if fmt == "parquet":
            part.to_parquet(directory / f"part{i:02d}.parquet", index=False)
        else:
            part.to_csv(directory / f"part{i:02d}.csv", index=False)
    if fmt == "parquet":
        return dd.read_parquet(directory)
    return dd.read_csv(directory / "*.csv")


def _file_bounds(query_offsets, n_files, cut_last=False):
    """Row bounds of n_files files at query starts; cut_last: the last file's first row goes to
    the file before it (a query split across files, hidden on main by the fused qid column)."""
    n_queries = query_offsets.size - 1
    bounds = query_offsets[np.linspace(0, n_queries, n_files + 1).round().astype(int)].copy()
    if cut_last:
        bounds[-2] += 1
    return bounds


def _first_queries(mq2008):
    train, _, pdf, _ = mq2008
    offsets = train.query_offsets[:N_FILE_QUERIES + 1]
    return pdf.iloc[:offsets[-1]].reset_index(drop=True), offsets


@pytest.mark.parametrize("fmt, n_files", [("parquet", 1), ("parquet", 2), ("parquet", 3),
                                          ("parquet", 5), ("csv", 3)])
def test_frames_read_from_files_have_one_partition_per_file(fmt, n_files, mq2008, client,
                                                            tmp_path):
    pdf, offsets = _first_queries(mq2008)
    bounds = _file_bounds(offsets, n_files)
    df = _write_files(tmp_path, pdf, bounds, fmt)
    per_file = [np.diff(offsets[(offsets >= lo) & (offsets <= hi)])
                for lo, hi in zip(bounds[:-1], bounds[1:])]

    repaired = sdask.repartition_by_query(df, "qid")  # main: IndexError (the fused qid column)
    assert repaired.npartitions == n_files
    pd.testing.assert_frame_equal(repaired.compute().reset_index(drop=True), pdf)
    sizes = sdask.check_query_partitions(df, "qid")
    assert [s.tolist() for s in sizes] == [s.tolist() for s in per_file]
    layout = sdask.query_layout(df, "qid", "label")
    assert [s.tolist() for s in layout.sizes] == [s.tolist() for s in per_file]
    for given in (layout, None):
        X, y, group = sdask.lightgbm_inputs(df, "qid", "label", layout=given)
        assert len(X.to_delayed()) == len(y.to_delayed()) == group.numblocks[0] == n_files
        assert group.chunks[0] == tuple(s.size for s in per_file)
        np.testing.assert_allclose(y.compute().to_numpy(), pdf["label"].to_numpy())
        assert X.compute().shape == (len(pdf), pdf.shape[1] - 2)


@pytest.mark.parametrize("n_files", [2, 3, 5])
def test_query_cut_by_a_file_boundary_is_refused_or_repaired(n_files, mq2008, client, tmp_path):
    pdf, offsets = _first_queries(mq2008)
    df = _write_files(tmp_path, pdf, _file_bounds(offsets, n_files, cut_last=True), "parquet")
    for refused in (lambda: sdask.check_query_partitions(df, "qid"),
                    lambda: sdask.query_layout(df, "qid", "label"),
                    lambda: sdask.lightgbm_inputs(df, "qid", "label"),
                    lambda: sdask.xgboost_dmatrix(client, df, "qid", "label")):
        with pytest.raises(sdask.SplitQueryError, match="split across partitions"):
            refused()
    repaired = sdask.repartition_by_query(df, "qid")
    sizes = sdask.check_query_partitions(repaired, "qid")
    assert len(sizes) == n_files and all(s.size for s in sizes)
    np.testing.assert_array_equal(np.concatenate(sizes), np.diff(offsets))
    pd.testing.assert_frame_equal(repaired.compute().reset_index(drop=True), pdf)


# -- per-partition seeding (no cluster) --------------------------------------------------------
def _toy_layout(seed=0, n_parts=3):
    """Partitions of random labels / query sizes, and their QueryLayout."""
    rng = np.random.default_rng(seed)
    parts = []
    for _ in range(n_parts):
        sizes = rng.integers(2, 12, rng.integers(2, 6))
        parts.append((rng.integers(0, 3, sizes.sum()).astype(float), sizes))
    layout = sdask.QueryLayout([s for _, s in parts],
                               [sdask.partition_digest(y, s) for y, s in parts])
    return parts, layout


def _shard(parts, order):
    labels = np.concatenate([parts[p][0] for p in order])
    sizes = np.concatenate([parts[p][1] for p in order])
    return labels, np.concatenate([[0], np.cumsum(sizes)])


def _worker_grad(parts, layout, order, objective, sglb, t):
    """Gradients a worker holding partitions ``order`` (in that order) computes, by partition."""
    labels, offs = _shard(parts, order)
    seg = seeding.Segmenter(layout)
    wrapped = seeding.PartitionSeeded(objective, seg)
    shard_sglb = seeding.PartitionSGLB.from_sglb(sglb, seg)
    scores = np.concatenate([np.sin(np.arange(parts[p][0].size) + p) for p in order])
    grad = shard_sglb.grad_hess(wrapped, scores, labels, offs, t)[0]
    bounds = np.cumsum([0] + [parts[p][0].size for p in order])
    return {p: grad[bounds[i]:bounds[i + 1]] for i, p in enumerate(order)}, scores


def test_layout_cuts_a_shard_back_into_partitions():
    parts, layout = _toy_layout()
    labels, offs = _shard(parts, [2, 0])
    segments = layout.segments(labels, offs)
    assert [key for key, *_ in segments] == [(2,), (0,)]
    assert segments[0][1:3] == (0, parts[2][0].size)
    bad = labels.copy()
    bad[0] += 1
    with pytest.raises(RuntimeError, match="match no partition"):
        layout.segments(bad, offs)


def test_noise_is_keyed_by_partition_and_iteration_not_by_placement():
    parts, layout = _toy_layout()
    sglb = SGLB(0.1, 0.01, 100.0, seed=3)
    obj = StochasticRank(top=5, seed=7)
    a, _ = _worker_grad(parts, layout, [0, 1, 2], obj, sglb, 4)
    b, _ = _worker_grad(parts, layout, [2, 0], obj, sglb, 4)  # another placement and order
    c, _ = _worker_grad(parts, layout, [1], obj, sglb, 4)
    for p in (0, 2):
        np.testing.assert_array_equal(a[p], b[p])
    np.testing.assert_array_equal(a[1], c[1])
    later, _ = _worker_grad(parts, layout, [0, 1, 2], obj, sglb, 5)
    assert not np.allclose(a[0], later[0])  # new iteration, new draws
    reseeded, _ = _worker_grad(parts, layout, [0, 1, 2], obj, SGLB(0.1, 0.01, 100.0, seed=4), 4)
    assert not np.allclose(a[0], reseeded[0])
    assert obj.seed == 7  # the user's objective is not modified


def test_partition_noise_law_and_schedule():
    sglb = SGLB(0.1, 0.01, 100.0, seed=3)
    parts, layout = _toy_layout(1, n_parts=2)
    labels, offs = _shard(parts, [0, 1])
    seg = seeding.Segmenter(layout)
    seg(labels, offs)
    shard = seeding.PartitionSGLB.from_sglb(sglb, seg)
    shard._segments = seg.segments
    n0 = parts[0][0].size
    noise = shard.noise(labels.size, 2)
    assert not np.allclose(noise[:n0][:5], noise[n0:][:5])  # partitions: independent streams
    np.testing.assert_array_equal(noise, shard.noise(labels.size, 2))
    big = seeding.PartitionSGLB.from_sglb(sglb).noise(200_000, 0)  # no segmenter: plain law
    assert abs(np.std(big) - sglb.noise_std) < 0.01 * sglb.noise_std + 1e-3
    assert shard.learning_rate_at(7) == sglb.learning_rate_at(7)
    assert shard.score_scale(7) == sglb.score_scale(7) and shard.shrink == sglb.shrink


def test_partition_noise_is_sglb_noise_keyed_by_partition():
    """The per-partition streams are SGLB.noise with key=(p,), i.e. SeedSequence([seed, t, p])."""
    sglb = SGLB(0.1, 0.01, 100.0, seed=3)
    np.testing.assert_array_equal(sglb.noise(20, 4, key=()), sglb.noise(20, 4))
    rng = np.random.default_rng(np.random.SeedSequence([3, 4, 2]))
    np.testing.assert_array_equal(sglb.noise(20, 4, key=(2,)),
                                  sglb.noise_std * rng.standard_normal(20))
    with pytest.raises(ValueError, match="key"):
        sglb.noise(3, 0, key=(-1,))
    parts, layout = _toy_layout(1, n_parts=2)
    labels, offs = _shard(parts, [1, 0])
    seg = seeding.Segmenter(layout)
    shard = seeding.PartitionSGLB.from_sglb(sglb, seg)
    shard._segments = seg(labels, offs)
    expected = [sglb.noise(parts[p][0].size, 4, key=(p,)) for p in (1, 0)]
    np.testing.assert_array_equal(shard.noise(labels.size, 4), np.concatenate(expected))


def test_objectives_without_seed_are_used_as_is():
    parts, layout = _toy_layout(2)
    labels, offs = _shard(parts, [0, 1, 2])
    wrapped = seeding.PartitionSeeded(LambdaMART(top=5), seeding.Segmenter(layout))
    scores = np.linspace(-1, 1, labels.size)
    g = wrapped.grad_hess(scores, labels, offs, 0)[0]
    np.testing.assert_allclose(g, LambdaMART(top=5).grad_hess(scores, labels, offs, 0)[0],
                               rtol=1e-12, atol=1e-15)  # per-query objective: same gradients


@pytest.mark.parametrize("with_layout", [True, False])
@pytest.mark.parametrize("offsets", [np.array([0]), np.zeros(0, dtype=np.int64)])
def test_a_worker_without_rows_gets_an_empty_gradient(with_layout, offsets):
    """A worker holding only empty partitions: no bare numpy error from the seeding layer."""
    layout = _toy_layout()[1] if with_layout else None
    seg = seeding.Segmenter(layout)
    wrapped = seeding.PartitionSeeded(StochasticRank(top=5, seed=1), seg)
    sglb = seeding.PartitionSGLB.from_sglb(SGLB(0.1, 0.01, 100.0, seed=3), seg)
    empty = np.zeros(0)
    for grad, hess in (wrapped.grad_hess(empty, empty, offsets, 0),
                       sglb.grad_hess(wrapped, empty, empty, offsets, 2)):
        assert grad.shape == hess.shape == (0,) and grad.dtype == np.float64
    with pytest.raises(RuntimeError, match="3 scores for a shard without queries"):
        wrapped.grad_hess(np.zeros(3), empty, offsets, 0)


def test_front_end_needs_its_callback():
    obj = sdask.DaskLGBMObjective(StochasticRank(top=5))
    with pytest.raises(RuntimeError, match="callback"):
        obj(np.zeros(3), np.zeros(3), None, np.array([3]))
    with pytest.raises(TypeError):
        sdask.DaskXGBObjective(object())


# -- each front end imports only its own booster -----------------------------------------------
_BLOCKED_IMPORT = """
import sys
sys.modules[{blocked!r}] = None  # any `import {blocked}` now raises ImportError
from stochrank_objectives import StochasticRank
from stochrank_objectives.adapters.dask import {names}
{front}(StochasticRank(top=5))
try:
    from stochrank_objectives.adapters.dask import {other}
except ImportError:
    pass
else:
    raise SystemExit("{other} was importable with {blocked} blocked")
"""


@pytest.mark.parametrize("blocked, names, front, other", [
    ("xgboost", "DaskLGBMObjective, lightgbm_inputs, query_layout, repartition_by_query",
     "DaskLGBMObjective", "DaskXGBObjective"),
    ("lightgbm", "DaskXGBObjective, train_xgboost, xgboost_dmatrix, query_layout",
     "DaskXGBObjective", "DaskLGBMObjective"),
])
def test_front_end_imports_without_the_other_booster(blocked, names, front, other):
    # A fresh interpreter: this one has imported both libraries already.
    code = _BLOCKED_IMPORT.format(blocked=blocked, names=names, front=front, other=other)
    root = str(Path(__file__).resolve().parents[2])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        p for p in (root, os.environ.get("PYTHONPATH")) if p)}
    done = subprocess.run([sys.executable, "-c", code], cwd=root, env=env, capture_output=True,
                          text=True, timeout=WATCHDOG_S)
    assert done.returncode == 0, done.stderr[-2000:] + done.stdout[-2000:]


# -- training on a 2-worker LocalCluster -------------------------------------------------------
def _single_lgb(train, vali, objective, sglb):
    adapter = LGBMObjective(objective, sglb=sglb)
    model = lgb.LGBMRanker(objective=adapter, n_jobs=1, **LGB_PARAMS)
    model.fit(train.X, train.y, group=train.group_sizes, callbacks=[adapter.callback()])
    return _ndcg5(adapter.finalize(model).predict(vali.X), vali)


def _dask_lgb(frame, objective, sglb):
    # Without SGLB: no layout (the fallback path, whole-shard keys); with SGLB: per partition.
    layout = None if sglb is None else sdask.query_layout(frame, "qid", "label")
    X, y, group = sdask.lightgbm_inputs(frame, "qid", "label", layout=layout)
    obj = sdask.DaskLGBMObjective(objective, sglb=sglb, layout=layout)
    model = lgb.DaskLGBMRanker(objective=obj, time_out=1, **LGB_PARAMS)
    _timed(model.fit, X, y, group=group, callbacks=[obj.callback()])
    return obj.finalize(model)


def _single_xgb(train, vali, objective, sglb):
    adapter = XGBObjective(objective, sglb=sglb)
    params = {**DEFAULT_PARAMS, **XGB_PARAMS, "nthread": 1}
    booster = xgb.train(params, xgb.DMatrix(train.X, train.y, qid=train.qid), N_TREES,
                        obj=adapter, callbacks=[adapter.callback()])
    return _ndcg5(booster.predict(xgb.DMatrix(vali.X), output_margin=True), vali)


def _dask_xgb(client, frame, objective, sglb, dtrain=None, layout=None):
    if dtrain is None:
        layout = sdask.query_layout(frame, "qid", "label")
        dtrain = sdask.xgboost_dmatrix(client, frame, "qid", "label", layout=layout)
    out = _timed(sdask.train_xgboost, client, dict(XGB_PARAMS), dtrain, N_TREES, objective,
                 sglb=sglb, layout=layout)
    return out["booster"]


def _workers_used(client, frame):
    distributed.wait(frame)
    return {worker for worker, keys in client.has_what().items() if keys}


def test_empty_partitions_are_refused_for_both_libraries(mq2008, client):
    """XGBoost used to take a frame with an empty partition (and fail in its allreduce or the
    seeding layer); now both builders and both front ends name it, with the fix."""
    pdf = mq2008[2]
    cut = int(np.flatnonzero(np.diff(pdf["qid"].to_numpy()))[40]) + 1   # a query start
    pieces = [pdf.iloc[:cut], pdf.iloc[:0], pdf.iloc[cut:]]
    df = dd.from_delayed([dask.delayed(p) for p in pieces], meta=pdf.iloc[:0],
                         verify_meta=False)
    message = (r"1 of the 3 partitions of the frame.* are empty \(partition 1\): .*"
               r"repartition_by_query\(df, qid\) first")
    layout = sdask.query_layout(df, "qid", "label")
    for given in (None, layout):
        with pytest.raises(ValueError, match=message):
            sdask.xgboost_dmatrix(client, df, "qid", "label", layout=given)
        with pytest.raises(ValueError, match=message):
            sdask.lightgbm_inputs(df, "qid", "label", layout=given)
    with pytest.raises(ValueError, match=message):
        sdask.train_xgboost(client, dict(XGB_PARAMS), None, 2, StochasticRank(top=5),
                            layout=layout)
    with pytest.raises(ValueError, match=message):
        sdask.DaskLGBMObjective(StochasticRank(top=5), layout=layout)
    fixed = sdask.repartition_by_query(df, "qid", npartitions=2)   # the fix the message names
    assert all(s.size for s in sdask.query_layout(fixed, "qid", "label").sizes)


CASES = {
    "lambdamart": (lambda: LambdaMART(top=5), None, 0.03),
    "stochasticrank_sglb": (lambda: StochasticRank(metric="NDCG", top=5),
                            SGLB(0.3, 0.01, 1e4, seed=0), 0.04),
}


@pytest.mark.slow
@pytest.mark.parametrize("case", list(CASES))
def test_lightgbm_dask_matches_single_machine(case, mq2008, client, frame):
    train, vali, _, cols = mq2008
    make, sglb, tol = CASES[case]
    assert len(_workers_used(client, frame)) == 2  # really distributed
    single = _single_lgb(train, vali, make(), sglb)
    booster = _dask_lgb(frame, make(), sglb)
    dist = _ndcg5(booster.predict(vali.X), vali)
    print(f"{case}: single {single:.4f} dask {dist:.4f}")
    assert single > 0.65 and abs(dist - single) <= tol, (dist, single)


@pytest.mark.slow
@pytest.mark.parametrize("case", list(CASES))
def test_xgboost_dask_matches_single_machine(case, mq2008, client, frame):
    train, vali, _, cols = mq2008
    make, sglb, tol = CASES[case]
    single = _single_xgb(train, vali, make(), sglb)
    booster = _dask_xgb(client, frame, make(), sglb)
    dmat = xgb.DMatrix(pd.DataFrame(vali.X, columns=cols))
    dist = _ndcg5(booster.predict(dmat, output_margin=True), vali)
    print(f"{case}: single {single:.4f} dask {dist:.4f}")
    assert single > 0.65 and abs(dist - single) <= tol, (dist, single)
    if sglb is not None:
        assert booster.attr("stochrank_sglb_final_scale") is not None  # finalised on the workers


@pytest.mark.slow
def test_dask_sglb_run_is_reproducible(mq2008, client, frame):
    """Same partitioning and placement (one DaskDMatrix) and seed: the same model."""
    _, vali, _, cols = mq2008
    layout = sdask.query_layout(frame, "qid", "label")
    dtrain = sdask.xgboost_dmatrix(client, frame, "qid", "label", layout=layout)
    dmat = xgb.DMatrix(pd.DataFrame(vali.X, columns=cols))

    def predict(seed):
        booster = _dask_xgb(client, frame, StochasticRank(top=5, seed=seed),
                            SGLB(0.3, 0.01, 1e3, seed=seed), dtrain, layout)
        return booster.predict(dmat, output_margin=True)

    p1 = predict(5)
    np.testing.assert_array_equal(p1, predict(5))
    assert not np.array_equal(p1, predict(6))  # the seed matters


@pytest.mark.slow
def test_lightgbm_dask_weights_remove_reversed_queries(mq2008, client):
    """Query weights through a weight column (issue 23): the queries with reversed labels get
    weight 0 and are ignored, as on one machine."""
    train, vali, _, cols = mq2008
    odd = (train.qid % 2 == 1)   # the reversed queries
    y_mixed = np.where(odd, train.y.max() - train.y, train.y)
    w = (~odd).astype(float)
    pdf = mq2008[2].assign(label=y_mixed, w=w)
    df = sdask.repartition_by_query(dd.from_pandas(pdf, npartitions=4), "qid").persist()
    X, y, group, weights = sdask.lightgbm_inputs(df, "qid", "label", weight="w")
    assert list(X.columns) == cols   # the weight column is not a feature
    obj = sdask.DaskLGBMObjective(LambdaMART(top=5))
    model = lgb.DaskLGBMRanker(objective=obj, time_out=1, **LGB_PARAMS)
    _timed(model.fit, X, y, group=group, sample_weight=weights, callbacks=[obj.callback()])
    dist = _ndcg5(obj.finalize(model).predict(vali.X), vali)
    adapter = LGBMObjective(LambdaMART(top=5))
    single = lgb.LGBMRanker(objective=adapter, n_jobs=1, **LGB_PARAMS).fit(
        train.X, y_mixed, group=train.group_sizes, sample_weight=w,
        callbacks=[adapter.callback()])
    expected = _ndcg5(single.predict(vali.X), vali)
    assert expected > 0.65 and abs(dist - expected) <= 0.03, (dist, expected)
    # XGBoost's Dask front end takes the weight column by name (tests/adapters/
    # test_dask_xgboost_weights.py), not a Series
    with pytest.raises(TypeError, match="name of the frame's weight column"):
        sdask.xgboost_dmatrix(client, df, "qid", "label", weight=weights)


# -- the docs' recipe (docs/guide/dask.md) -----------------------------------------------------------------------
# What LightGBM's and XGBoost's Dask front ends print before any parameter reaches them (network
# set-up, once per worker thread; two threads' lines may interleave), LightGBM's warning on every
# Dask fit, distributed's notice when another cluster on the machine holds the dashboard port,
# and its teardown notice of a comm closed mid-send.
# Anything left once these are removed (a training log such as "Total Bins", a warning of ours, a
# traceback) fails the test.
_SETUP_OUTPUT = re.compile("|".join([
    r"\[LightGBM\] \[(Info|Warning)\]", r"Finding random open ports for workers",
    r"Trying to bind port \d+\.\.\.", r"Binding port \d+ succeeded", r"Listening\.\.\.",
    r"Connected to rank \d+", r"Local rank: \d+, total number of machines: \d+",
    r"Connecting to rank \d+ failed, waiting for \d+ milliseconds",
    r"\S*lightgbm.dask\.py:\d+: UserWarning:", r"Parameter n_jobs will be ignored\.",
    r'_log_warning\(f"Parameter \{param_alias\} will be ignored\."\)',
    r"\[[\d:]+\] Task \[xgboost\.dask-\d+\]:\S+ got rank \d+",
    r"\S*distributed.node\.py:\d+: UserWarning: Port \d+ is already in use\.\s+Perhaps you "
    r"already have a cluster running\?\s+Hosting the HTTP server on port \d+ instead\s+"
    r"warnings\.warn\(",
    # distributed's own teardown race (rare): an in-process comm closed while a batch was sent,
    # logged at INFO with its traceback when the client closes
    r"(?s:[\d\- :,]+ - distributed\.batched - INFO - Batched Comm Closed .*?"
    r"distributed\.comm\.core\.CommClosedError)"]))


def _docs_dask_block():
    page = Path(__file__).resolve().parents[2] / "docs" / "guide" / "dask.md"
    blocks = re.findall(r"```python\n(.*?)```", page.read_text(), flags=re.S)
    assert len(blocks) == 1, "the Dask page has one python recipe"
    return blocks[0]


@pytest.mark.slow
def test_docs_dask_recipe_runs_quietly_as_written(tmp_path):
    """The recipe, as a user copies it, in a fresh interpreter (it starts its own 2-worker
    cluster): it reads 3 parquet files that cut queries, trains both boosters, saves both
    models and prints no booster log beyond the network set-up."""
    root = str(Path(__file__).resolve().parents[2])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        p for p in (root, os.environ.get("PYTHONPATH")) if p)}
    done = subprocess.run([sys.executable, "-c", _docs_dask_block()], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=WATCHDOG_S)
    assert done.returncode == 0, done.stderr[-3000:] + done.stdout[-3000:]
    assert (tmp_path / "model.txt").stat().st_size and (tmp_path / "model.json").stat().st_size
    noise = _SETUP_OUTPUT.sub("", done.stdout + done.stderr).strip()
    assert not noise, noise[:3000]


def test_a_partition_whose_lists_a_recall_cutoff_covers_trains_beside_longer_ones():
    """Each partition is its own objective call on a worker: one whose every list is within
    Recall's top gives 0 legitimately (it warns, never refuses: a worker refusing mid-training
    stalls the others), while the longer lists of another partition train."""
    rng = np.random.default_rng(3)
    parts = [((rng.random(sizes.sum()) > 0.5).astype(float), sizes)
             for sizes in (np.array([3, 4]), np.array([8, 9]))]
    layout = sdask.QueryLayout([s for _, s in parts],
                               [sdask.partition_digest(y, s) for y, s in parts])
    labels, offs = _shard(parts, [0, 1])
    wrapped = seeding.PartitionSeeded(StochasticRank(metric="Recall", top=5, seed=0),
                                      seeding.Segmenter(layout))
    with pytest.warns(UserWarning, match="covers the whole list of every query"):
        grad = wrapped.grad_hess(np.sin(np.arange(labels.size)), labels, offs, 0)[0]
    assert np.all(grad[:7] == 0.0) and np.any(grad[7:] != 0.0)
