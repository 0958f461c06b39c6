"""StochasticRank (or YetiRank, YetiLoss) against each booster's native LambdaMART at MSLR-WEB30K's
scale.

    python -m benchmarks.scale [--docs 3770000] [--features 136] [--trees 100] [--threads 2]
                               [--boosters lightgbm xgboost catboost] [--rounds 1]
                               [--objective stochasticrank|yetirank|yetiloss]
                               [--metric NDCG@5|MRR]
                               [--data-cache DIR] [--out benchmarks/results]

Data: :func:`benchmarks._mslr.make_data` -- MSLR-shaped queries (log-normal sizes of
mean ~120, so 3.77M documents make ~31.5k queries, as MSLR-WEB30K), ``--features`` float32
Gaussian features, labels 0-4 in MSLR-WEB30K's grade mix (52/32/13/2/1 %) cut from a noisy
linear score. It is generated once and saved as ``.npy`` files (a temporary folder removed at the
end, or ``--data-cache`` to keep it between runs); every configuration then runs in its own
subprocess that loads the files, so each peak RSS is that configuration's own.

Configurations, per booster, trained as a user would through scikit-learn rankers with the same
trees (LightGBM ``num_leaves=63, max_depth=6``; XGBoost ``hist``, ``max_depth=6``; CatBoost
``depth=6``, Plain, no bootstrap), 255 bins, learning rate 0.1, ``--threads`` threads and no
evaluation set:

* ``native``: LightGBM ``LGBMRanker(objective="lambdarank", lambdarank_truncation_level=5)``,
  XGBoost ``XGBRanker(objective="rank:ndcg")`` with top-5 pairs, CatBoost
  ``CatBoostRanker(loss_function="LambdaMart:metric=NDCG;top=5")``.
* ``sr``: the package's ``StochasticLGBMRanker`` / ``StochasticXGBRanker`` /
  ``StochasticCatBoostRanker`` with ``StochasticRank(metric="NDCG", top=5)`` (the defaults),
  wrapped in a timer that records the seconds spent inside ``grad_hess``; ``--metric MRR``:
  ``StochasticRank(metric="MRR")`` (its default reach), against the same natives at NDCG@5 (the
  time of a LambdaMART tree does not depend on its metric's cutoff here).
  With ``--objective yetirank`` the package's ``YetiRank()`` (Classic, its defaults: 10 noisy
  permutations per query and call, seed 0) in place of StochasticRank, through the same
  rankers and timer; with ``--objective yetiloss`` YetiLoss with every later partner for the
  metric (``YetiRank(mode="NDCG", top=5, num_neighbors=-1)``, with ``--metric MRR``
  ``YetiRank(mode="MRR", num_neighbors=-1)``, the objectives page's recommendation for MRR); the rows say YetiRank, the kind stays ``sr`` in the JSON (as do the
  summaries' ``sr_*`` keys: the package's objective, named by the JSON's ``objective``).
* ``python_floor`` (CatBoost only): ``CatBoost`` with :class:`NumpyRMSE`, RMSE derivatives
  computed in NumPy -- what CatBoost's own Python-objective interface costs per tree, with
  nothing of this package in it.

Measured in each child: seconds per tree (median of the intervals between per-iteration
timestamps -- the booster's callback for native runs and CatBoost, the objective's calls for
LightGBM/XGBoost + SR -- the first ``--warmup`` intervals dropped); time to load (from ``fit``'s
start to the end of the first tree, minus one median tree: the booster's dataset construction
and quantisation); the wall time the booster spends in the adapter's entry points (SR runs);
peak RSS (``VmHWM``: ``ru_maxrss`` would carry the parent's peak over through fork + exec),
with the RSS after imports and after reading the features, for reference. The Numba kernels
are compiled before anything is timed. A booster's configurations run back to back, in
alternating order over ``--rounds``.

Targets (issue 16, item 5): SR seconds per tree <= 1.2x the native LambdaMART in LightGBM and
XGBoost, <= 1.0x in CatBoost; peak RSS <= 2.5x the float32 feature matrix for LightGBM and
XGBoost. YetiRank (issue 22, item 1): <= 1.2x the native LambdaMART per tree in every booster.
Output: ``<out>/<name>.md`` and ``<out>/<name>.json`` (``--name``: ``scale``, with YetiRank
``scale_yetirank``, with ``--metric MRR`` ``scale_mrr``). A run smaller than MSLR-WEB30K's
(``--docs`` or ``--trees`` below the defaults) says so in its header.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from . import _boosters
from ._boosters import BOOSTERS, LAMBDAMART_NAMES as NATIVE_NAME
from ._mslr import make_data
from ._registry import speed_methods
from ._targets import Target
from ._timing import CatBoostStamp, TimedObjective

#: the package's objectives of the ``sr`` rows (benchmarks._registry, study "speed"): their
#: label in rows and ratio lines, their target per tree (``settings["tree_target"]``: seconds
#: per tree / the native LambdaMART's)
METHODS = speed_methods("scale")
OBJECTIVES = tuple(METHODS)
TARGET_TREE_RATIO = {name: m.settings["tree_target"] for name, m in METHODS.items()}
TARGET_RSS_RATIO = {"lightgbm": 2.5, "xgboost": 2.5}
#: configurations per booster, in run order (reversed in odd rounds)
KINDS = {"lightgbm": ("native", "sr"), "xgboost": ("native", "sr"),
         "catboost": ("native", "sr", "python_floor")}
BINS = 255
DEPTH = 6
LEARNING_RATE = 0.1
TOP = 5
FULL_SIZE = {"docs": 3_770_000, "trees": 100}  # MSLR-WEB30K's documents; the paper's trees


def sr_target(metric: str) -> Target:
    """The ``sr`` configurations' target: ``NDCG@5`` (default) or ``MRR``."""
    return Target("NDCG", TOP) if metric == f"NDCG@{TOP}" else Target(metric)


def make_objective(name: str, metric: str = f"NDCG@{TOP}"):
    """The package's objective of the ``sr`` configurations, at its defaults."""
    return METHODS[name].make(sr_target(metric), {}, seed=0)


# -- data (parent) -----------------------------------------------------------------------------
def write_data(folder: Path, n_docs: int, n_features: int) -> dict:
    """Generate the data set once into ``folder`` (reused when its description matches)."""
    meta_path = folder / "meta.json"
    wanted = {"docs": n_docs, "features": n_features, "seed": 0}
    if meta_path.exists():
        meta = json.loads(meta_path.read_text())
        if {k: meta.get(k) for k in wanted} == wanted:
            return meta
    folder.mkdir(parents=True, exist_ok=True)
    data = make_data(n_docs, n_features, seed=0)
    X, labels, sizes, qid = data.X, data.labels, data.sizes, data.qid
    np.save(folder / "X.npy", X)
    np.save(folder / "y.npy", labels)
    np.save(folder / "qid.npy", qid)
    meta = dict(wanted, rows=int(X.shape[0]), queries=int(sizes.size),
                mean_query=float(sizes.mean()), max_query=int(sizes.max()),
                x_bytes=int(X.nbytes),
                grade_mix=[float(np.mean(labels == g)) for g in range(5)])
    meta_path.write_text(json.dumps(meta))
    return meta


# -- one configuration (child) -----------------------------------------------------------------
def rss_bytes() -> int:
    """Current resident set size (Linux /proc; 0 elsewhere)."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):  # pragma: no cover
        return 0


def peak_rss_bytes() -> int:
    """This process's peak RSS: ``VmHWM`` on Linux. Not ``ru_maxrss``, which Linux carries
    over from the parent through fork + exec (every child then reported the parent's peak
    from generating the data)."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:  # pragma: no cover - not Linux
        pass
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak if sys.platform == "darwin" else peak * 1024  # KiB elsewhere


def _native_ranker(booster, trees, threads, stamp):
    """The booster's own scikit-learn ranker with its LambdaMART at NDCG@TOP."""
    common = dict(n_estimators=trees, learning_rate=LEARNING_RATE, random_state=0)
    if booster == "lightgbm":
        import lightgbm as lgb

        return lgb.LGBMRanker(**_boosters.lightgbm_lambdarank(TOP),
                              num_leaves=63, max_depth=DEPTH, max_bin=BINS, n_jobs=threads,
                              verbose=-1, **common), {"callbacks": [lambda env: stamp()]}
    if booster == "xgboost":
        import xgboost as xgb

        class Stamp(xgb.callback.TrainingCallback):
            def after_iteration(self, model, epoch, evals_log):
                stamp()
                return False

        return xgb.XGBRanker(**_boosters.xgboost_rank_ndcg(TOP, topk=True), tree_method="hist",
                             max_depth=DEPTH, max_bin=BINS, n_jobs=threads,
                             callbacks=[Stamp()], **common), {}
    from catboost import CatBoostRanker

    return CatBoostRanker(loss_function=_boosters.catboost_loss("LambdaMart", metric="NDCG",
                                                                top=TOP),
                          depth=DEPTH, border_count=BINS, boosting_type="Plain",
                          bootstrap_type="No", thread_count=threads, verbose=False,
                          allow_writing_files=False, metric_period=10 ** 6, iterations=trees,
                          learning_rate=LEARNING_RATE, random_seed=0), \
        {"callbacks": [CatBoostStamp(stamp)]}


class NumpyRMSE:
    """The cheapest Python objective: RMSE derivatives in NumPy. CatBoost trained with it
    measures the cost of CatBoost's own Python-objective interface (chunked calls under the
    GIL, one pass for the tree search and more for the leaves), with nothing of this package."""

    def calc_ders_range(self, approxes, targets, weights):
        ders = np.empty((len(approxes), 2))
        ders[:, 0] = np.asarray(targets) - np.asarray(approxes)
        ders[:, 1] = -1.0
        return ders


def _catboost_python_floor(trees, threads, stamp):
    from catboost import CatBoost

    model = CatBoost(dict(loss_function=NumpyRMSE(), eval_metric="RMSE", depth=DEPTH,
                          border_count=BINS, boosting_type="Plain", bootstrap_type="No",
                          thread_count=threads, verbose=False, allow_writing_files=False,
                          metric_period=10 ** 6, iterations=trees,
                          learning_rate=LEARNING_RATE, random_seed=0))
    return model, {"callbacks": [CatBoostStamp(stamp)]}


def _sr_ranker(booster, trees, threads, objective, stamp):
    """The package's ranker of ``booster`` with ``objective`` and the natives' trees."""
    common = dict(n_estimators=trees, learning_rate=LEARNING_RATE, random_state=0,
                  n_jobs=threads)
    trees_of = {"lightgbm": dict(num_leaves=63, max_depth=DEPTH, max_bin=BINS),
                "xgboost": dict(tree_method="hist", max_depth=DEPTH, max_bin=BINS),
                "catboost": dict(depth=DEPTH, border_count=BINS, boosting_type="Plain",
                                 bootstrap_type="No")}
    fit_kwargs = {"callbacks": [CatBoostStamp(stamp)]} if booster == "catboost" else {}
    return _boosters.ranker_class(booster)(objective, **trees_of[booster], **common), fit_kwargs


def _record_adapter_calls(booster: str, after=None) -> list:
    """Wrap the adapter's entry points (the calls the booster makes into this package) so each
    call's ``(start, end)`` is recorded (and ``after()`` called); returns the list of spans."""
    if booster == "lightgbm":
        from stochrank_objectives.adapters.lightgbm import LGBMObjective as cls
        names = ("__call__",)
    elif booster == "xgboost":
        from stochrank_objectives.adapters.xgboost import XGBObjective as cls
        names = ("__call__",)
    else:
        from stochrank_objectives.adapters.catboost import CatBoostObjective as cls
        names = ("calc_ders_range", "after_iteration")
    spans = []

    def timed(method):
        def wrapper(*args, **kwargs):
            begin = time.perf_counter()
            try:
                return method(*args, **kwargs)
            finally:
                spans.append((begin, time.perf_counter()))
                if after is not None:
                    after()
        return wrapper

    for name in names:
        setattr(cls, name, timed(getattr(cls, name)))
    return spans


def _busy_seconds(spans) -> float:
    """Wall seconds during which at least one span is open (CatBoost calls from two threads)."""
    total, reach = 0.0, -np.inf
    for begin, end in sorted(spans):
        if end > reach:
            total += end - max(begin, reach)
            reach = end
    return total


def run_child(booster: str, kind: str, folder: Path, trees: int, threads: int,
              warmup: int, objective_name: str = "stochasticrank",
              metric: str = f"NDCG@{TOP}") -> dict:
    """Train one configuration on the saved data; the measurements as a dict."""
    import numba

    numba.set_num_threads(threads)
    objective = TimedObjective(make_objective(objective_name, metric))
    rng = np.random.default_rng(1)  # compile (or load from cache) the kernels: never timed
    objective.grad_hess(rng.standard_normal(40), np.arange(40) % 5.0, np.array([0, 20, 40]))
    objective.calls.clear()
    if booster == "lightgbm":
        import lightgbm  # noqa: F401 - import cost and libraries in the baseline RSS
    elif booster == "xgboost":
        import xgboost  # noqa: F401
    else:
        import catboost  # noqa: F401
    rss_imports = rss_bytes()
    X = np.load(folder / "X.npy")
    y = np.load(folder / "y.npy")
    qid = np.load(folder / "qid.npy")
    rss_data = rss_bytes()

    stamps = []  # (wall, CPU seconds of the whole process): CPU is robust to other jobs

    def stamp():
        stamps.append((time.perf_counter(), time.process_time()))

    # LightGBM/XGBoost call the adapter once per tree, before it: those calls are the stamps
    once_per_tree = kind == "sr" and booster != "catboost"
    spans = (_record_adapter_calls(booster, stamp if once_per_tree else None)
             if kind == "sr" else [])

    if kind == "native":
        ranker, fit_kwargs = _native_ranker(booster, trees, threads, stamp)
    elif kind == "python_floor":
        ranker, fit_kwargs = _catboost_python_floor(trees, threads, stamp)
    else:
        ranker, fit_kwargs = _sr_ranker(booster, trees, threads, objective, stamp)
    if kind != "sr" and booster != "xgboost":  # LGBMRanker: group sizes; CatBoost: ids
        fit_kwargs.update({"group": np.diff(np.flatnonzero(np.r_[True, qid[1:] != qid[:-1],
                                                                  True]))}
                          if booster == "lightgbm" else {"group_id": qid})
    else:
        fit_kwargs["qid"] = qid
    start = time.perf_counter()
    ranker.fit(X, y, **fit_kwargs)
    fit_seconds = time.perf_counter() - start
    calls = list(objective.calls)  # (end timestamp, seconds)
    # the first mark comes after loading and tree 0 (for adapter calls: the second call)
    marks = np.asarray(stamps[1:] if once_per_tree else stamps)
    per_tree = np.diff(marks[:, 0])[warmup:]
    cpu_per_tree = np.diff(marks[:, 1])[warmup:]
    load = marks[0, 0] - start - float(np.median(per_tree))
    result = dict(booster=booster, kind=kind, objective=objective_name, trees=trees,
                  threads=threads,
                  seconds_per_tree=float(np.median(per_tree)),
                  cpu_seconds_per_tree=float(np.median(cpu_per_tree)),
                  per_tree_quartiles=[float(q) for q in np.percentile(per_tree, [25, 75])],
                  load_seconds=float(load), fit_seconds=fit_seconds,
                  peak_rss_bytes=peak_rss_bytes(), rss_after_imports_bytes=rss_imports,
                  rss_after_data_bytes=rss_data, x_bytes=int(X.nbytes))
    if kind == "sr":
        secs = np.array([s for _, s in calls])
        result["grad_hess_seconds_per_tree"] = float(secs.sum() / trees)
        result["grad_hess_calls"] = len(calls)
        # everything the booster waited for in this package: adapter, checks, copies, kernels
        result["adapter_seconds_per_tree"] = _busy_seconds(spans) / trees
        result["adapter_calls_per_tree"] = len(spans) / trees
    return result


def spawn(booster: str, kind: str, folder: Path, args) -> dict:
    """One configuration in a fresh interpreter (its own peak RSS); its result dict."""
    cmd = [sys.executable, "-m", "benchmarks.scale", "--child", booster, kind,
           "--data-cache", str(folder), "--trees", str(args.trees),
           "--threads", str(args.threads), "--warmup", str(args.warmup),
           "--objective", args.objective, "--metric", args.metric]
    root = str(Path(__file__).resolve().parent.parent)
    env = dict(os.environ)  # OMP_WAIT_POLICY as given: see benchmarks.training_speed
    # the child imports the same package and benchmarks as this process
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=root)
    if proc.returncode != 0:
        raise RuntimeError(f"{booster} {kind} failed (exit {proc.returncode}):\n"
                           f"{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


# -- report (parent) ---------------------------------------------------------------------------
GIB = 2.0 ** 30


def _median(values):
    return float(np.median(values))


def summarise(runs: list[dict], boosters, x_bytes: int, emit,
              objective: str = "stochasticrank", metric: str = f"NDCG@{TOP}") -> list[dict]:
    """The table and the target lines; returns one summary per booster."""
    ours = objective_label(objective, metric)
    emit("| booster | variant | s/tree (IQR) | CPU s/tree | in adapter / grad_hess s/tree | "
         "load s | fit s | peak RSS GiB (x features) | RSS after imports / data GiB |")
    emit("|---|---|---|---|---|---|---|---|---|")
    for r in runs:
        spent = ("" if r["kind"] != "sr" else f"{r.get('adapter_seconds_per_tree', np.nan):.3f}"
                 f" / {r['grad_hess_seconds_per_tree']:.3f}")
        q1, q3 = r["per_tree_quartiles"]
        label = {"sr": ours, "python_floor": "RMSE in Python (interface floor)"}.get(
            r["kind"], NATIVE_NAME[r["booster"]])
        emit(f"| {r['booster']} | {label} | "
             f"{r['seconds_per_tree']:.3f} ({q1:.3f}-{q3:.3f}) | "
             f"{r.get('cpu_seconds_per_tree', np.nan):.3f} | {spent} | "
             f"{r['load_seconds']:.1f} | "
             f"{r['fit_seconds']:.1f} | {r['peak_rss_bytes'] / GIB:.2f} "
             f"({r['peak_rss_bytes'] / x_bytes:.2f}x) | {r['rss_after_imports_bytes'] / GIB:.2f}"
             f" / {r['rss_after_data_bytes'] / GIB:.2f} |")
    emit("")
    summaries = []
    for booster in boosters:
        mine = [r for r in runs if r["booster"] == booster]
        native = [r for r in mine if r["kind"] == "native"]
        sr = [r for r in mine if r["kind"] == "sr"]
        per_round = [s["seconds_per_tree"] / n["seconds_per_tree"] for n, s in zip(native, sr)]
        ratio = _median(per_round)
        target = TARGET_TREE_RATIO[objective][booster]
        sr_rss = max(r["peak_rss_bytes"] for r in sr) / x_bytes
        native_rss = max(r["peak_rss_bytes"] for r in native) / x_bytes
        # without the interpreter and the libraries (what dominates a tiny run)
        sr_data_rss = max(r["peak_rss_bytes"] - r["rss_after_imports_bytes"] for r in sr) / x_bytes
        rss_target = TARGET_RSS_RATIO.get(booster)
        cpu_ratio = _median([s.get("cpu_seconds_per_tree", np.nan) / n.get(
            "cpu_seconds_per_tree", np.nan) for n, s in zip(native, sr)])
        def cores(rs):  # threads kept busy on average during a tree
            return _median([r.get("cpu_seconds_per_tree", np.nan) / r["seconds_per_tree"]
                            for r in rs])

        summary = dict(booster=booster, tree_ratio=ratio, tree_ratio_per_round=per_round,
                       cpu_ratio=cpu_ratio, sr_cores=cores(sr), native_cores=cores(native),
                       tree_target=target, tree_met=ratio <= target, sr_rss_ratio=sr_rss,
                       native_rss_ratio=native_rss, sr_rss_above_imports_ratio=sr_data_rss,
                       rss_target=rss_target,
                       rss_met=None if rss_target is None else sr_rss <= rss_target,
                       grad_hess_share=_median([r["grad_hess_seconds_per_tree"]
                                                / r["seconds_per_tree"] for r in sr]),
                       adapter_share=_median([r.get("adapter_seconds_per_tree", np.nan)
                                              / r["seconds_per_tree"] for r in sr]),
                       # the SR tree without the time the booster waits for this package
                       booster_part_ratio=_median([
                           (s["seconds_per_tree"] - s.get("adapter_seconds_per_tree", np.nan))
                           / n["seconds_per_tree"] for n, s in zip(native, sr)]),
                       load_ratio=_median([s["load_seconds"] / n["load_seconds"]
                                           for n, s in zip(native, sr)]))
        summaries.append(summary)
        line = (f"- {booster}: {ours} {ratio:.2f}x {NATIVE_NAME[booster]} per tree "
                f"(rounds {', '.join(f'{v:.2f}' for v in per_round)}); target <= {target:g}x: "
                f"{'met' if summary['tree_met'] else 'MISSED'}; in CPU seconds {cpu_ratio:.2f}x. "
                f"Of {'an' if ours == 'SR' else 'a'} {ours} tree, "
                f"{summary['adapter_share']:.0%} is spent in this package (grad_hess "
                f"{summary['grad_hess_share']:.0%}); the booster's own part alone is "
                f"{summary['booster_part_ratio']:.2f}x the native tree. Load "
                f"{summary['load_ratio']:.2f}x native. Peak RSS {ours} {sr_rss:.2f}x "
                f"({sr_data_rss:.2f}x above the imports), native {native_rss:.2f}x the features")
        if rss_target is not None:
            line += f"; target <= {rss_target:g}x: {'met' if summary['rss_met'] else 'MISSED'}"
        floor = [r for r in mine if r["kind"] == "python_floor"]
        if floor:  # the booster's Python-objective interface with a trivial objective
            summary["python_floor_cores"] = cores(floor)
            summary["python_floor_ratio"] = _median(
                [f["seconds_per_tree"] / n["seconds_per_tree"] for n, f in zip(native, floor)])
            line += (f". {booster} with RMSE derivatives from Python (nothing of this package): "
                     f"{summary['python_floor_ratio']:.2f}x {NATIVE_NAME[booster]} per tree")
        emit(line + "." + _verdict(summary, ours))
    return summaries


def _verdict(summary: dict, ours: str = "SR") -> str:
    """For a missed target: which side holds the figure, from the measurements."""
    out = ""
    if not summary["tree_met"]:
        if summary["booster_part_ratio"] > summary["tree_target"]:
            out += (f" Per tree: the {ours} tree without the time spent in this package is "
                    f"already {summary['booster_part_ratio']:.2f}x the native tree, so the "
                    f"booster's own pipeline for a Python objective holds the figure")
            if "python_floor_ratio" in summary:
                out += (f" (with a trivial Python objective it is "
                        f"{summary['python_floor_ratio']:.2f}x)")
            out += (f": {ours} keeps {summary['sr_cores']:.2f} cores busy during a tree, the "
                    f"native run {summary['native_cores']:.2f}")
            if "python_floor_cores" in summary:
                out += f", the trivial Python objective {summary['python_floor_cores']:.2f}"
            out += "."
        else:
            out += (" Per tree: the booster's own part is within the target, the time spent in "
                    "this package is not.")
    if summary["rss_met"] is False:
        if summary["native_rss_ratio"] > summary["rss_target"]:
            out += (f" Peak RSS: the native run alone peaks at {summary['native_rss_ratio']:.2f}x"
                    f", so the booster's own data structures hold the figure.")
        else:
            out += f" Peak RSS: the native run is within the target, {ours} is not."
    return out


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=3_770_000)
    parser.add_argument("--features", type=int, default=136)
    parser.add_argument("--trees", type=int, default=100)
    parser.add_argument("--warmup", type=int, default=2,
                        help="per-tree intervals dropped at the start of each run")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--boosters", nargs="+", choices=BOOSTERS, default=list(BOOSTERS))
    parser.add_argument("--rounds", type=int, default=1,
                        help="runs per configuration; a booster's pair alternates its order")
    parser.add_argument("--data-cache", type=Path, default=None,
                        help="folder for the generated .npy files, kept and reused "
                             "(default: a temporary folder removed at the end)")
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results"))
    parser.add_argument("--objective", choices=OBJECTIVES, default="stochasticrank",
                        help="the package's objective against the natives: StochasticRank "
                             "(default), YetiRank() (Classic) or YetiLoss for --metric with "
                             "every later partner")
    parser.add_argument("--metric", choices=(f"NDCG@{TOP}", "MRR"), default=f"NDCG@{TOP}",
                        help="the sr configurations' metric (the natives stay at NDCG@5)")
    parser.add_argument("--name", default=None,
                        help="file stem of the outputs in --out (default: scale, with "
                             "--objective yetirank scale_yetirank)")
    parser.add_argument("--report", type=Path, default=None, metavar="JSON",
                        help="only rewrite <out>/<JSON's stem>.md and .json from a previous "
                             "JSON output's runs")
    parser.add_argument("--child", nargs=2, metavar=("BOOSTER", "KIND"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.name is None:
        # StochasticRank's outputs keep the plain name
        args.name = "scale" if METHODS[args.objective].stochastic_rank \
            else f"scale_{args.objective}"
        if args.metric != f"NDCG@{TOP}":
            args.name += "_" + args.metric.lower()
    if args.trees - 1 - args.warmup < 3:
        parser.error("need at least 3 timed trees: raise --trees or lower --warmup")
    if args.threads < 1 or args.rounds < 1:
        parser.error("--threads and --rounds must be positive")
    return args


def objective_label(objective: str, metric: str = f"NDCG@{TOP}") -> str:
    """The rows' name of the package's objective (YetiLoss names its metric)."""
    target = sr_target(metric)
    return METHODS[objective].label.format(metric=target.metric,
                                           at=f"@{target.top}" if target.top else "")


def describe_objective(objective: str, metric: str = f"NDCG@{TOP}") -> str:
    """The header's sentence naming the package's objective of the ``sr`` rows."""
    method = METHODS[objective]
    target = sr_target(metric)
    return (f"{objective_label(objective, metric)} = "
            f"{method.note.format(metric=target.metric, top=target.top)} "
            "through the package's rankers")


#: what the children's OpenMP runtimes read before it was recorded (the parent set it)
_OLD_POLICY = "PASSIVE"


def write_report(args, meta, runs, generated, loads=None, policy=None) -> None:
    """``<out>/<name>.md`` and ``.json`` from the runs so far (rewritten after each run, so a
    long run interrupted keeps what it measured). ``loads``: the load averages at the start
    and at the end of the run (``None``: not recorded, an output from before they were)."""
    import catboost
    import lightgbm
    import numba
    import xgboost

    lines = []
    emit = lines.append
    x_bytes = meta["x_bytes"]
    mix = "/".join(f"{p:.0%}" for p in meta["grade_mix"])
    method = METHODS[args.objective]
    title = ("scale" if method.stochastic_rank
             else f"scale ({objective_label(args.objective, args.metric)})")
    emit(f"# {title}: {meta['rows']:,} documents x {meta['features']} float32 features "
         f"({x_bytes / GIB:.2f} GiB), {meta['queries']:,} queries (mean {meta['mean_query']:.1f}"
         f", max {meta['max_query']}), grades 0-4 {mix}")
    emit("")
    if meta["docs"] < FULL_SIZE["docs"] or args.trees < FULL_SIZE["trees"]:
        emit(f"**Reduced size**: {meta['docs']:,} documents and {args.trees} trees, where the "
             f"MSLR-WEB30K-size run is {FULL_SIZE['docs']:,} documents and "
             f"{FULL_SIZE['trees']} trees (the defaults).")
        emit("")
    if loads is None:  # an output from before the load averages were kept
        machine_load = "load average not recorded"
    else:
        start_load, load = ("/".join(f"{v:.1f}" for v in loads[k]) for k in ("start", "end"))
        machine_load = f"load average 1/5/15 min at the start {start_load}, at the end {load}"
    emit(f"{args.trees} trees, {args.threads} threads, depth {DEPTH} (LightGBM 63 leaves), "
         f"{BINS} bins, learning rate {LEARNING_RATE}, no eval set; "
         f"{describe_objective(args.objective, args.metric)}; native "
         f"rankers at NDCG@{TOP}. Each configuration ran in its own process; {args.rounds} "
         f"round(s), a booster's configurations back to back. lightgbm {lightgbm.__version__}, "
         f"xgboost {xgboost.__version__}, catboost {catboost.__version__}, numba "
         f"{numba.__version__}; OMP_WAIT_POLICY "
         f"{policy or 'unset (the runtimes spin, then sleep)'} in the children; "
         f"{os.cpu_count()} CPUs ({platform.machine()}), a machine SHARED "
         f"with other jobs ({machine_load}), so wall times are noisy: read "
         f"the back-to-back ratios, and the CPU seconds (all threads of the process), which "
         f"other jobs disturb less. Data generated in {generated:.0f} s. `load` = from fit's "
         f"start to the first tree (dataset construction and quantisation). Peak RSS = the "
         f"child's VmHWM, features included.")
    emit("")
    complete = [b for b in args.boosters
                if {r["kind"] for r in runs if r["booster"] == b} >= {"native", "sr"}]
    summaries = summarise(runs, complete, x_bytes, emit, args.objective, args.metric)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / f"{args.name}.md").write_text("\n".join(lines).rstrip() + "\n")
    (args.out / f"{args.name}.json").write_text(json.dumps(
        dict(data=meta, objective=args.objective, metric=args.metric, trees=args.trees,
             threads=args.threads,
             warmup=args.warmup, rounds=args.rounds, generated_seconds=generated,
             load_average=loads, omp_wait_policy=policy, runs=runs, summaries=summaries),
        indent=1) + "\n")


def main(argv=None):
    args = parse_args(argv)
    if args.child:
        booster, kind = args.child
        result = run_child(booster, kind, args.data_cache, args.trees, args.threads,
                           args.warmup, args.objective, args.metric)
        print(json.dumps(result), flush=True)
        return
    if args.report is not None:
        old = json.loads(args.report.read_text())
        for key in ("trees", "threads", "warmup", "rounds"):
            setattr(args, key, old[key])
        args.objective = old.get("objective", "stochasticrank")  # older outputs: SR only
        args.metric = old.get("metric", f"NDCG@{TOP}")            # older outputs: NDCG@5
        args.boosters = list(dict.fromkeys(r["booster"] for r in old["runs"]))
        args.name = args.report.stem
        write_report(args, old["data"], old["runs"], old.get("generated_seconds", 0.0),
                     old.get("load_average"), old.get("omp_wait_policy", _OLD_POLICY))
        return
    folder = args.data_cache or Path(tempfile.mkdtemp(prefix="stochrank_scale_"))
    try:
        started = time.perf_counter()
        loads = {"start": list(os.getloadavg())}
        meta = write_data(folder, args.docs, args.features)
        generated = time.perf_counter() - started
        runs = []
        for rnd in range(args.rounds):
            for booster in args.boosters:
                kinds = KINDS[booster] if rnd % 2 == 0 else KINDS[booster][::-1]
                for kind in kinds:
                    result = spawn(booster, kind, folder, args)
                    print(f"  {booster} {kind}: {result['seconds_per_tree']:.3f} s/tree "
                          f"({result['cpu_seconds_per_tree']:.3f} CPU s), peak RSS "
                          f"{result['peak_rss_bytes'] / GIB:.2f} GiB", flush=True)
                    runs.append(result)
                    loads["end"] = list(os.getloadavg())
                    write_report(args, meta, runs, generated, loads,
                                 os.environ.get("OMP_WAIT_POLICY"))
    finally:
        if args.data_cache is None:
            shutil.rmtree(folder, ignore_errors=True)
    print((args.out / f"{args.name}.md").read_text(), flush=True)


if __name__ == "__main__":
    main()
