"""Dask scaling: seconds per iteration and peak memory per worker, 1 vs 2 workers.

    python -m benchmarks.dask_scaling [--docs 1050000] [--partitions 8] [--features 32]
                                      [--iterations 20] [--warmup 3] [--workers 1 2]
                                      [--libraries lightgbm xgboost]
                                      [--out benchmarks/results/dask_scaling.txt]

Data: generated MSLR-shaped queries (query sizes log-normal with mean ~120, labels 0-4 in
MSLR-WEB30K's grade mix, from :func:`benchmarks._mslr.make_data`), ``--features`` float32
Gaussian features with a label signal. Each of ``--partitions`` partitions is generated on a
worker (seeded by its index, whole queries only), so the data set is identical for every
cluster size, and checked with :func:`~stochrank_objectives.adapters.dask.query_layout`.

Training: ``StochasticRank(metric="NDCG", top=10)`` with SGLB (lr 0.1, shrink 0.01, T = 1e4),
through ``lightgbm.DaskLGBMRanker`` (:class:`DaskLGBMObjective`, ``num_leaves=63, max_depth=6``)
and ``xgboost.dask.train`` (:func:`train_xgboost`, ``hist, max_depth=6``), no evaluation.

Every (library, workers) pair gets a fresh ``LocalCluster`` of worker *processes* (one thread
each, ``OMP_WAIT_POLICY=PASSIVE``, ``NUMBA_NUM_THREADS=1``), so that a worker's peak resident
memory (``ru_maxrss``, read in the worker after training) belongs to that run only; the
"data" column is each worker's RSS after the partitions are persisted, before training.
Seconds per iteration: each worker records a timestamp per iteration in a callback; the time of
an iteration is the difference of consecutive timestamps, the first ``--warmup`` are dropped,
and the figure is the median over the kept iterations of the slowest worker. The machine may be
shared: the load average is printed with every row. A watchdog fails a run after 300 s instead
of hanging.
"""

from __future__ import annotations

import argparse
import os
import platform
import resource
import sys
import tempfile
import threading
import time
from pathlib import Path

# Before LightGBM / XGBoost / numba load an OpenMP runtime, here and in the worker processes.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("NUMBA_NUM_THREADS", "1")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from benchmarks._mslr import make_data  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"
WATCHDOG_S = 300
QID_STRIDE = 10_000_000  # partition p has query ids p * QID_STRIDE + 0, 1, ...


def make_partition(index: int, n_docs: int, n_features: int, seed: int = 0) -> pd.DataFrame:
    """One partition of whole MSLR-shaped queries (runs on a worker)."""
    data = make_data(n_docs, seed=seed * 1_000_003 + index)
    offsets, labels = data.query_offsets, data.labels
    n = labels.size
    rng = np.random.default_rng([seed, index, 1])
    X = rng.standard_normal((n, n_features), dtype=np.float32)
    X[:, : min(4, n_features)] += (0.5 * labels)[:, None].astype(np.float32)
    frame = pd.DataFrame(X, columns=[f"f{i}" for i in range(n_features)])
    frame["label"] = labels
    frame["qid"] = index * QID_STRIDE + np.repeat(np.arange(offsets.size - 1), np.diff(offsets))
    return frame


def make_frame(n_docs: int, n_partitions: int, n_features: int, seed: int = 0):
    import dask
    import dask.dataframe as dd

    per = -(-n_docs // n_partitions)
    meta = make_partition(0, 10, n_features, seed).iloc[:0]
    parts = [dask.delayed(make_partition)(p, per, n_features, seed) for p in range(n_partitions)]
    return dd.from_delayed(parts, meta=meta, verify_meta=False)


class _Stamps:
    """Per-iteration timestamps appended to a file per worker process (LightGBM callback)."""

    def __init__(self, folder: str):
        self.folder = folder
        self.order = 30
        self.before_iteration = False

    def __call__(self, env) -> None:
        self.stamp()

    def stamp(self):
        with open(os.path.join(self.folder, f"stamps_{os.getpid()}.txt"), "a") as fh:
            fh.write(f"{time.perf_counter()!r}\n")


def _xgb_stamps(folder: str):
    import xgboost as xgb

    class XGBStamps(xgb.callback.TrainingCallback):
        def __init__(self):
            super().__init__()
            self.inner = _Stamps(folder)

        def after_iteration(self, model, epoch, evals_log) -> bool:
            self.inner.stamp()
            return False

    return XGBStamps()


def _busy_jiffies():
    """(busy, total) CPU jiffies of the whole machine, from /proc/stat (None elsewhere)."""
    try:
        with open("/proc/stat") as fh:
            values = [int(v) for v in fh.readline().split()[1:]]
    except OSError:
        return None
    idle = values[3] + (values[4] if len(values) > 4 else 0)
    return sum(values) - idle, sum(values)


def _rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def _current_rss_mib() -> float:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def _watchdog(fn, *args, **kwargs):
    box = {}

    def target():
        try:
            box["value"] = fn(*args, **kwargs)
        except BaseException as exc:  # noqa: BLE001 -- re-raised below
            box["error"] = exc

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(WATCHDOG_S)
    if thread.is_alive():
        raise TimeoutError(f"training did not finish within {WATCHDOG_S} s")
    if "error" in box:
        raise box["error"]
    return box["value"]


def _per_iteration(folder: str, warmup: int) -> float:
    medians = []
    for name in os.listdir(folder):
        stamps = np.loadtxt(os.path.join(folder, name), ndmin=1)
        diffs = np.diff(stamps)[max(warmup - 1, 0):]
        if diffs.size:
            medians.append(float(np.median(diffs)))
    return max(medians)


def run_one(library: str, n_workers: int, args) -> dict:
    import distributed
    import lightgbm as lgb

    from stochrank_objectives import SGLB, StochasticRank
    from stochrank_objectives.adapters import dask as sdask

    sglb = SGLB(0.1, 0.01, 1e4, seed=0)
    objective = StochasticRank(metric="NDCG", top=10)
    start = time.perf_counter()
    jiffies = _busy_jiffies()
    with distributed.LocalCluster(n_workers=n_workers, threads_per_worker=1, processes=True,
                                  dashboard_address=None, silence_logs=40,
                                  memory_limit=0) as cluster, \
            distributed.Client(cluster, timeout=60) as client, \
            tempfile.TemporaryDirectory() as folder:
        df = make_frame(args.docs, args.partitions, args.features).persist()
        distributed.wait(df)
        layout = sdask.query_layout(df, "qid", "label")
        n_rows = sum(int(s.sum()) for s in layout.sizes)
        n_queries = sum(s.size for s in layout.sizes)
        if library == "lightgbm":
            X, y, group = sdask.lightgbm_inputs(df, "qid", "label", layout=layout)
            X, y = client.persist([X, y])  # expressions and the group array: two calls
            group = client.persist(group)
            distributed.wait([X, y, group])
            data_rss = client.run(_current_rss_mib)
            obj = sdask.DaskLGBMObjective(objective, sglb=sglb, layout=layout)
            model = lgb.DaskLGBMRanker(objective=obj, n_estimators=args.iterations,
                                       num_leaves=63, max_depth=6, metric="None", verbose=-1,
                                       time_out=5)
            _watchdog(model.fit, X, y, group=group, callbacks=[obj.callback(), _Stamps(folder)])
            obj.finalize(model)
        else:
            dtrain = sdask.xgboost_dmatrix(client, df, "qid", "label", layout=layout)
            data_rss = client.run(_current_rss_mib)
            _watchdog(sdask.train_xgboost, client, {"max_depth": 6, "tree_method": "hist"},
                      dtrain, args.iterations, objective, sglb=sglb, layout=layout,
                      callbacks=[_xgb_stamps(folder)])
        peak = client.run(_rss_mib)
        per_iter = _per_iteration(folder, args.warmup)
        placement = sorted(len(v) for v in client.has_what().values())
    busy = None
    end = _busy_jiffies()
    if jiffies and end and end[1] > jiffies[1]:
        busy = (os.cpu_count() or 1) * (end[0] - jiffies[0]) / (end[1] - jiffies[1])
    return dict(library=library, workers=n_workers, rows=n_rows, queries=n_queries, busy=busy,
                s_per_iter=per_iter, peak=sorted(peak.values()), data=sorted(data_rss.values()),
                wall=time.perf_counter() - start, load=os.getloadavg(), placement=placement)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--docs", type=int, default=1_050_000)
    parser.add_argument("--partitions", type=int, default=8)
    parser.add_argument("--features", type=int, default=32)
    parser.add_argument("--iterations", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--libraries", nargs="+", default=["lightgbm", "xgboost"],
                        choices=["lightgbm", "xgboost"])
    parser.add_argument("--out", type=Path, default=RESULTS / "dask_scaling.txt")
    args = parser.parse_args(argv)

    import dask
    import distributed
    import lightgbm
    import xgboost

    started = time.perf_counter()
    rows = []
    lines = [
        f"dask_scaling: generated MSLR-shaped data, >= {args.docs:,} documents in "
        f"{args.partitions} partitions of whole queries, {args.features} float32 features",
        "objective: StochasticRank(metric='NDCG', top=10) + SGLB(lr=0.1, shrink=0.01, T=1e4, "
        "noise keyed per partition); LightGBM DaskLGBMRanker num_leaves=63 max_depth=6; "
        "XGBoost xgboost.dask.train hist max_depth=6",
        f"{args.iterations} iterations per run, first {args.warmup} dropped; s/iter = median of "
        "the slowest worker; fresh LocalCluster of worker processes (1 thread each) per row",
        f"dask {dask.__version__}, distributed {distributed.__version__}, lightgbm "
        f"{lightgbm.__version__}, xgboost {xgboost.__version__}; {os.cpu_count()} CPUs, "
        f"{platform.machine()}; OMP_WAIT_POLICY={os.environ['OMP_WAIT_POLICY']}",
        "peak = worker's ru_maxrss after training; data = worker's RSS with the data persisted, "
        "before training (MiB, per worker); busy = CPU cores in use on the whole machine during "
        "the row (all processes, /proc/stat), load = load average at its end",
        "",
        f"  {'library':9s} {'workers':>7s} {'s/iter':>7s} {'speed-up':>8s} "
        f"{'peak MiB per worker':>22s} {'data MiB per worker':>22s} {'wall s':>7s} "
        f"{'busy':>5s}  load 1/5/15",
    ]
    print("\n".join(lines), flush=True)
    for library in args.libraries:
        base = None
        for n_workers in args.workers:
            row = run_one(library, n_workers, args)
            rows.append(row)
            base = row["s_per_iter"] if base is None else base
            busy = "-" if row["busy"] is None else f"{row['busy']:.2f}"
            line = (f"  {library:9s} {n_workers:7d} {row['s_per_iter']:7.3f} "
                    f"{base / row['s_per_iter']:7.2f}x "
                    f"{' / '.join(f'{v:.0f}' for v in row['peak']):>22s} "
                    f"{' / '.join(f'{v:.0f}' for v in row['data']):>22s} "
                    f"{row['wall']:7.1f} {busy:>5s}  "
                    f"{'/'.join(f'{v:.2f}' for v in row['load'])}")
            lines.append(line)
            print(line, flush=True)
    n_rows, n_queries = rows[0]["rows"], rows[0]["queries"]
    cores = os.cpu_count() or 1
    # The row's own workers use up to one core each; flag rows where other work took more
    # than half a core on top of them.
    contended = [r for r in rows if r["busy"] is not None and r["busy"] - r["workers"] > 0.5]
    if contended:
        lines += ["", f"NOTE: other processes used more than half a core on top of the workers "
                  f"during {len(contended)} of {len(rows)} rows: s/iter and speed-ups there "
                  "measure contention, not scaling; the memory columns are unaffected. Rerun on a "
                  "quiet machine."]
    else:
        lines += ["", "The machine was otherwise idle during every row (busy minus workers <= 0.5 "
                  f"core). With {cores} cores, 2 workers also share them with the client and the "
                  "scheduler, which bounds the speed-up here."]
    lines += ["", f"data: {n_rows:,} documents, {n_queries:,} queries (mean size "
              f"{n_rows / n_queries:.1f})",
              f"total wall time {time.perf_counter() - started:.0f} s; "
              f"python {sys.version.split()[0]}"]
    print(lines[-2], lines[-1], sep="\n")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("\n".join(lines) + "\n")
    print(f"written to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
