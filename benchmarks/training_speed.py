"""Seconds per boosting iteration: StochasticRank (or YetiRank) through each adapter vs the booster's own rankers.

    python -m benchmarks.training_speed [--docs 120000] [--iterations 30] [--rounds 3]
                                        [--threads 1 2] [--metric NDCG] [--top 10]
                                        [--objective stochasticrank|yetirank|yetiloss]
                                        [--omp-wait-policy passive] [--out benchmarks/results]
                                        [--suffix _200k]

Data: generated MSLR-shaped queries (query sizes log-normal with mean ~120, as in
:mod:`benchmarks.kernel_speed`), ``--features`` Gaussian features (float32), labels 0-4 cut from
a noisy linear score ``X w / |w| + N(0, 1)`` at the quantiles of MSLR-WEB30K's grade mix
(52/32/13/2/1 %), so the trees have something to learn and the scores spread out over the run.

Variants, per booster, all with the same depth, threads, learning rate 0.1 and no metric
evaluation during training (no eval sets; LightGBM ``metric="None"``, XGBoost
``disable_default_eval_metric``, CatBoost learn metrics skipped):

* LightGBM (``num_leaves=63, max_depth=6``): ``lambdarank`` (``lambdarank_truncation_level=10``,
  i.e. NDCG@10 like the SR config), SR through :class:`LGBMObjective`, and ``regression`` as the
  tree-building floor.
* XGBoost (``tree_method="hist", max_depth=6``): ``rank:ndcg`` (``lambdarank_pair_method="topk"``,
  ``lambdarank_num_pair_per_sample=10``, i.e. NDCG@10), SR through :class:`XGBObjective`, and
  ``reg:squarederror`` as the floor.
* CatBoost (``depth=6``, Plain boosting, ``bootstrap_type="No"``): native
  ``LambdaMart:metric=NDCG;top=10`` (its native LambdaMART), SR through
  :class:`StochasticCatBoostRanker` (pointer route), native ``StochasticRank:metric=NDCG;top=10``
  (same sigma/mu/nu defaults, 1 sample), and for context ``YetiRank`` and ``RMSE`` (floor).

SR is ``StochasticRank(metric="NDCG", top=10)`` (CCS estimator, one sample, the package defaults);
``--metric MRR`` (into ``training_speed_mrr.*``) or ``--top 0`` (full-list NDCG) time other
configurations.

``--objective yetirank`` runs :class:`YetiRank` (Classic, its defaults: 10 permutations) in
place of SR, ``--objective yetiloss`` ``YetiRank(mode="NDCG", top=--top, num_neighbors=-1)``
(the package's YetiLoss, as :mod:`benchmarks.defaults` trains it); CatBoost's native
counterpart (``YetiRank``, ``YetiRank:mode=NDCG;top=10;num_neighbors=-1``) replaces its native
StochasticRank, the target is YetiRank's (<= 1.2x the booster's native LambdaMART per tree),
and the output goes to ``training_speed_yetirank.*`` / ``training_speed_yetiloss.*``.

Timing: each run records a timestamp in the library's own per-iteration callback; the
per-iteration times are the differences, the first ``--warmup`` are dropped (numba is compiled
and the data touched before any run, so compilation is never timed), and a variant's ms/iter is
the median over the kept iterations of all its runs. Every variant is trained ``--rounds``
times; within a round the variants of a booster run back to back (native LambdaMART next to
SR), and the order is reversed in alternate rounds, so load drift on a shared machine hits both
sides of every ratio. A ratio is the median over rounds of the per-round ratio of the two
variants' medians (paired), printed with its range over rounds. The SR objective is wrapped in a timer, so the table also shows the
milliseconds per iteration spent inside ``grad_hess`` (the objective's own share); the rest is
tree building plus the adapter's interop, to be compared with the floor row.

OpenMP: ``OMP_WAIT_POLICY`` is left as the environment has it (``--omp-wait-policy
default``), so the runtimes wait as they do for a user: libgomp's default lets idle threads spin
for a while after each parallel loop, then sleep. libgomp reads the variable once, when it is
loaded, and this module's imports load both copies this process uses (the system's, for
LightGBM and numba's omp layer, and the one XGBoost's wheel shares with scikit-learn's), so
``--omp-wait-policy passive`` or ``active`` starts the benchmark again with the variable set
(and refuses when :func:`main` is called with arguments from Python). The header prints what
the runtimes read. ``PASSIVE`` was this benchmark's default until it was found to reach no
runtime (both were loaded before it was set); measured on the 2-core Intel Xeon machine, it
makes the natives slower (20k documents, 2 threads: LightGBM's regression tree 2.1 -> 12 ms,
XGBoost's 3.2 -> 5.2 ms), while with another process busy on one of two cores the default's
spinning was once measured to stretch a LightGBM iteration from ~45 ms to 2.4 s: the header's
load line tells such a run apart.

Targets: each booster's SR <= 1.2x its native LambdaMART per tree (set for ``--metric MRR``;
NDCG@10's, first 1.3x, is the same since), and LightGBM + SR <= 0.5x CatBoost's native
StochasticRank. The output goes to ``<out>/training_speed.txt`` and ``.json``.

LightGBM's trees show their work: the rows each tree built histograms for (the root and the
smaller child of every split, :func:`~._timing.lightgbm_histogram_rows`) are printed with the
milliseconds per million of them, so that a tree that costs more because its splits cut the
rows more evenly is told apart from the objective's and the interop's cost.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

import numba
import numpy as np

from . import _boosters
from ._machine import busy_cpu_seconds, cpu_model, loadavg
from ._mslr import make_data
from ._registry import speed_methods
from ._targets import Target
from ._timing import CatBoostStamp, Stamps, TimedObjective, lightgbm_histogram_rows

TARGET_VS_LAMBDAMART = 1.2
TARGET_LGB_VS_CATBOOST_SR = 0.5
TARGET_YETI_VS_LAMBDAMART = 1.2
#: the objectives of the "+ SR" rows (benchmarks._registry, study "speed")
METHODS = speed_methods("training_speed")
OBJECTIVES = tuple(METHODS)
#: the SR metric by default (``--metric``); another one writes ``training_speed_<metric>.*``
DEFAULT_METRIC = "NDCG"


# -- runners: each returns (Stamps, TimedObjective | None) -------------------------------------
def speed_target(args) -> Target:
    """What the "+ SR" objective trains for: ``--metric`` at ``--top`` (0: the whole list)."""
    return Target(args.metric, args.top or None)


def sr_objective(args):
    """The objective of the "+ SR" rows: ``--objective``'s (one sample for StochasticRank)."""
    return METHODS[args.objective].make(speed_target(args), {"n_samples": 1}, seed=0)


def short_name(args) -> str:
    """The objective's name in row labels and ratio lines."""
    return METHODS[args.objective].label.format(metric=args.metric,
                                                at=f"@{args.top}" if args.top else "")


def describe_objective(args) -> str:
    """The header line naming the objective run in the "+ SR" rows."""
    method = METHODS[args.objective]
    if method.stochastic_rank:
        sr = sr_objective(args)
        schedule = (f" annealed to {sr.sigma_min} with half-life {sr.anneal_half_life:g}"
                    if sr.anneal_half_life and sr.sigma > sr.sigma_min else " constant")
        return (f"SR = StochasticRank(metric={args.metric!r}, top={args.top or None}): package "
                f"defaults (CCS, 1 sample, {sr.smoothing} smoothing, sigma {sr.sigma}{schedule}, "
                f"mu={sr.mu}, nu={sr.nu}, hessian={sr.hessian!r})")
    return f"{short_name(args)} = " + method.note.format(metric=args.metric,
                                                         top=args.top or None)


def lightgbm_run(kind, data, threads, args):
    from stochrank_objectives.adapters.lightgbm import LGBMObjective

    params = dict(num_leaves=63, max_depth=6, learning_rate=0.1, num_threads=threads,
                  verbose=-1, metric="None", seed=0)
    timed = None
    if kind == "native":
        params.update(_boosters.lightgbm_lambdarank(10))
    elif kind == "floor":
        params.update(objective="regression")
    else:
        timed = TimedObjective(sr_objective(args))
        params["objective"] = LGBMObjective(timed)
    stamps = Stamps()
    trained = _boosters.train("lightgbm", params, data, args.iterations,
                              dataset_params={"num_threads": threads, "verbose": -1},
                              construct=True,
                              callbacks=[lambda env: stamps.mark()])   # after every iteration
    stamps.work = lightgbm_histogram_rows(trained.model)
    return stamps, timed


def xgboost_run(kind, data, threads, args):
    import xgboost as xgb

    from stochrank_objectives.adapters.xgboost import DEFAULT_PARAMS, XGBObjective

    class StampCallback(xgb.callback.TrainingCallback):
        def __init__(self, stamps):
            super().__init__()
            self.stamps = stamps

        def after_iteration(self, model, epoch, evals_log):
            self.stamps.mark()
            return False

    params = dict(tree_method="hist", max_depth=6, learning_rate=0.1, nthread=threads,
                  max_bin=256, seed=0, verbosity=0, disable_default_eval_metric=1)
    timed, obj, callbacks = None, None, []
    if kind == "native":
        params.update(_boosters.xgboost_rank_ndcg(10, topk=True))
    elif kind == "floor":
        params.update(objective="reg:squarederror")
    else:
        timed = TimedObjective(sr_objective(args))
        obj = XGBObjective(timed)
        params.update(DEFAULT_PARAMS)
        callbacks.append(obj.callback())
    stamps = Stamps()
    _boosters.train("xgboost", params, data, args.iterations, obj=obj, nthread=threads,
                    callbacks=callbacks + [StampCallback(stamps)])
    return stamps, timed


#: CatBoost's rows by runner kind; "native_sr" (and "yetirank" for a YetiRank objective) is the
#: objective's own CatBoost counterpart (benchmarks._registry)
CATBOOST_NATIVE = {
    "lambdamart": _boosters.catboost_loss("LambdaMart", metric="NDCG", top=10),
    "yetirank": "YetiRank",
    "floor": "RMSE",
}


def catboost_run(kind, data, threads, args):
    common = dict(iterations=args.iterations, depth=6, learning_rate=0.1, thread_count=threads,
                  boosting_type="Plain", bootstrap_type="No", random_seed=0, verbose=False,
                  allow_writing_files=False)
    stamps = Stamps()
    cb = CatBoostStamp(stamps.mark)
    if kind == "sr":
        timed = TimedObjective(sr_objective(args))
        ranker = _boosters.ranker_class("catboost")(
            timed, n_estimators=args.iterations, learning_rate=0.1, n_jobs=threads,
            random_state=0, depth=6, boosting_type="Plain", bootstrap_type="No",
            route="pointer")
        ranker.fit(data.X, data.y, qid=data.qid, callbacks=[cb])
        return stamps, timed
    method = METHODS[args.objective]
    ours = kind == "native_sr" or (kind == "yetirank" and not method.stochastic_rank)
    loss = (method.counterpart["catboost"](speed_target(args), {})["loss_function"] if ours
            else CATBOOST_NATIVE[kind])
    _boosters.train("catboost", dict(common, loss_function=loss, metric_period=10 ** 6), data,
                    args.iterations, callbacks=[cb])
    return stamps, None


#: (booster, key, label, runner kind). Order within a booster = run order in even rounds.
VARIANTS = [
    ("LightGBM", "lgb_native", "lambdarank (NDCG@10)", lightgbm_run, "native"),
    ("LightGBM", "lgb_sr", "+ SR", lightgbm_run, "sr"),
    ("LightGBM", "lgb_floor", "regression (floor)", lightgbm_run, "floor"),
    ("XGBoost", "xgb_native", "rank:ndcg (top-10 pairs)", xgboost_run, "native"),
    ("XGBoost", "xgb_sr", "+ SR", xgboost_run, "sr"),
    ("XGBoost", "xgb_floor", "reg:squarederror (floor)", xgboost_run, "floor"),
    ("CatBoost", "cb_lambdamart", "LambdaMart NDCG@10", catboost_run, "lambdamart"),
    ("CatBoost", "cb_sr", "+ SR (ours, pointer route)", catboost_run, "sr"),
    ("CatBoost", "cb_native_sr", "native StochasticRank", catboost_run, "native_sr"),
    ("CatBoost", "cb_yetirank", "YetiRank", catboost_run, "yetirank"),
    ("CatBoost", "cb_floor", "RMSE (floor)", catboost_run, "floor"),
]


def variants(args):
    """:data:`VARIANTS` for ``--objective``: the "+ SR" rows named after it; with YetiRank,
    CatBoost's native YetiRank (or YetiLoss) in place of its native StochasticRank."""
    if METHODS[args.objective].stochastic_rank:
        return VARIANTS
    name = short_name(args)
    out = []
    for booster, key, label, runner, kind in VARIANTS:
        if kind == "native_sr":
            continue
        if kind == "sr":
            label = label.replace("SR", name)
        elif kind == "yetirank":   # CatBoost's YetiRank, or YetiLoss: the objective's native
            label = f"native {name}"
        out.append((booster, key, label, runner, kind))
    return out


def warm_up(data, threads, args):
    """Compile the SR kernels (numba) and touch the data before anything is timed."""
    y, offsets = data.labels, data.query_offsets
    obj = sr_objective(args)
    rng = np.random.default_rng(1)
    for it in range(2):
        obj.grad_hess(rng.standard_normal(y.size), y, offsets, it)


def emit_histogram_rows(emit, variants, rows, ms, obj_ms):
    """Where the booster shows its trees' work (LightGBM): the rows each tree built
    histograms for (:func:`~._timing.lightgbm_histogram_rows`, median over the timed trees) and
    the milliseconds per million of them, outside ``grad_hess``. Trees of the same leaves cost
    more when their splits cut the rows more evenly; this line tells that apart from the
    objective's and the interop's cost."""
    parts = []
    boosters = []
    for booster, key, label, *_ in variants:
        if key in rows:
            boosters.append(booster)
            rest = ms[key] - obj_ms.get(key, 0.0)
            parts.append(f"{label} {rows[key]:,.0f} ({rest / rows[key] * 1e6:.0f} ms/M)")
    emit(f"  {'/'.join(dict.fromkeys(boosters))} histogram rows per tree (root + smaller child of "
         "each split), and ms per million of them")
    emit("  outside grad_hess (the native objectives' own gradients included):")
    emit("    " + "; ".join(parts))


def run_threads(data, threads, args, emit):
    numba.set_num_threads(threads)
    VARIANTS = variants(args)  # noqa: N806 - the variants of --objective
    name = short_name(args)
    warm_up(data, threads, args)
    emit(f"[{threads} thread{'s' if threads > 1 else ''}]  load average (1/5/15 min) at start: "
         f"{loadavg()}")
    times = {key: [] for _, key, *_ in VARIANTS}
    obj_times = {key: [] for _, key, *_ in VARIANTS}
    round_ms = {key: [] for _, key, *_ in VARIANTS}
    work = {key: [] for _, key, *_ in VARIANTS}
    started = time.perf_counter()
    cpu_started = os.times()
    busy_started = busy_cpu_seconds()
    boosters = list(dict.fromkeys(v[0] for v in VARIANTS))
    for rnd in range(args.rounds):
        order = boosters if rnd % 2 == 0 else boosters[::-1]
        for booster in order:
            group = [v for v in VARIANTS if v[0] == booster]
            if rnd % 2:
                group = group[::-1]
            for _, key, _, runner, kind in group:
                stamps, timed = runner(kind, data, threads, args)
                per_it = stamps.per_iteration(args.warmup)
                times[key].append(per_it)
                round_ms[key].append(float(np.median(per_it)) * 1e3)
                if timed is not None:
                    obj_times[key].append(stamps.objective_per_iteration(timed.calls, args.warmup))
                if stamps.work is not None:  # the trees of the timed iterations
                    work[key].append(stamps.work[args.warmup + 1:])
    wall = time.perf_counter() - started
    cpu = os.times()
    cpu_used = (cpu.user - cpu_started.user) + (cpu.system - cpu_started.system)
    busy_ended = busy_cpu_seconds()
    others = (None if busy_started is None or busy_ended is None
              else max(0.0, (busy_ended - busy_started - cpu_used) / wall))
    ms = {k: float(np.median(np.concatenate(v))) * 1e3 for k, v in times.items()}
    obj_ms = {k: float(np.median(np.concatenate(v))) * 1e3 for k, v in obj_times.items() if v}

    width = max(28, max(len(v[2]) for v in VARIANTS))
    emit(f"  {'booster':<9} {'variant':<{width}} {'ms/iter':>8}  {'in grad_hess':>12}  "
         f"{'rest':>7}  per-round medians (ms)")
    for booster, key, label, *_ in VARIANTS:
        o = obj_ms.get(key)
        extra = (f"{o:10.1f}  {ms[key] - o:7.1f}" if o is not None else f"{'':10}  {'':7}")
        emit(f"  {booster:<9} {label:<{width}} {ms[key]:8.1f}  {extra}    "
             + " / ".join(f"{r:.1f}" for r in round_ms[key]))
    rows = {k: float(np.median(np.concatenate(v))) for k, v in work.items() if v}
    if rows:
        emit_histogram_rows(emit, VARIANTS, rows, ms, obj_ms)
    emit("")

    results = []

    def ratio_line(name, a, b, versus, target=None):
        # paired: the ratio of each round's two medians; headline = median over rounds
        per_round = [x / y for x, y in zip(round_ms[a], round_ms[b])]
        ratio = float(np.median(per_round))
        spread = (f"{min(per_round):.2f}-{max(per_round):.2f}" if len(per_round) > 1
                  else f"{per_round[0]:.2f}")
        line = (f"  {name}: {ratio:.2f}x {versus} ({ms[a]:.1f} vs {ms[b]:.1f} ms/iter; "
                f"rounds {spread})")
        met = None
        if target is not None:
            met = ratio <= target
            line += f"; target <= {target:g}x: {'met' if met else 'MISSED'}"
        emit(line)
        results.append(dict(threads=threads, name=name, versus=versus, numerator=a,
                            denominator=b, ratio=ratio, per_round=per_round, target=target,
                            met=met))

    if METHODS[args.objective].stochastic_rank:
        ratio_line("LightGBM + SR", "lgb_sr", "lgb_native", "lambdarank", TARGET_VS_LAMBDAMART)
        ratio_line("XGBoost + SR", "xgb_sr", "xgb_native", "rank:ndcg", TARGET_VS_LAMBDAMART)
        ratio_line("CatBoost + SR", "cb_sr", "cb_lambdamart", "CatBoost LambdaMart",
                   TARGET_VS_LAMBDAMART)
        ratio_line("CatBoost + SR", "cb_sr", "cb_native_sr", "CatBoost native SR")
        ratio_line("LightGBM + SR", "lgb_sr", "cb_native_sr", "CatBoost native SR",
                   TARGET_LGB_VS_CATBOOST_SR)
        ratio_line("XGBoost + SR", "xgb_sr", "cb_native_sr", "CatBoost native SR")
        ratio_line("CatBoost native SR", "cb_native_sr", "cb_yetirank", "CatBoost YetiRank")
    else:
        for booster, key, native_key, versus in (
                ("LightGBM", "lgb_sr", "lgb_native", "lambdarank"),
                ("XGBoost", "xgb_sr", "xgb_native", "rank:ndcg"),
                ("CatBoost", "cb_sr", "cb_lambdamart", "CatBoost LambdaMart")):
            ratio_line(f"{booster} + {name}", key, native_key, versus, TARGET_YETI_VS_LAMBDAMART)
        # the objective's CatBoost counterpart
        native = "CatBoost native " + METHODS[args.objective].per_booster["catboost"]
        ratio_line(f"CatBoost + {name}", "cb_sr", "cb_yetirank", native)
        ratio_line(native, "cb_yetirank", "cb_lambdamart", "CatBoost LambdaMart")
    emit(f"  objective's share of {name} iterations: "
         + ", ".join(f"{b} {obj_ms[k] / ms[k]:.0%}" for b, k in
                     (("LightGBM", "lgb_sr"), ("XGBoost", "xgb_sr"), ("CatBoost", "cb_sr"))))
    emit(f"  section wall time {wall:.0f} s; this process used {cpu_used / wall:.2f} cores on "
         f"average, other processes "
         + (f"{others:.2f} cores" if others is not None else "n/a")
         + f" (of {os.cpu_count()}); load average at end: {loadavg()}")
    emit("")
    table = [dict(threads=threads, booster=b, key=k, variant=lab, ms_per_iter=ms[k],
                  grad_hess_ms_per_iter=obj_ms.get(k), per_round_ms=round_ms[k],
                  histogram_rows_per_tree=rows.get(k))
             for b, k, lab, *_ in VARIANTS]
    load = dict(threads=threads, wall_seconds=wall, process_cores=cpu_used / wall,
                other_processes_cores=others, loadavg_end=loadavg())
    return table, results, load


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=120_000)
    parser.add_argument("--features", type=int, default=30)
    parser.add_argument("--iterations", type=int, default=30,
                        help="trees per training run (including --warmup)")
    parser.add_argument("--warmup", type=int, default=6,
                        help="per-iteration times dropped at the start of each run")
    parser.add_argument("--rounds", type=int, default=3,
                        help="runs per variant, in alternating order")
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--metric", default=DEFAULT_METRIC, help="SR metric (NDCG, MRR, ...)")
    parser.add_argument("--top", type=int, default=10, help="SR truncation; 0 = full list")
    parser.add_argument("--objective", choices=OBJECTIVES, default="stochasticrank",
                        help="the objective of the '+ SR' rows: StochasticRank (default), "
                             "YetiRank Classic, or YetiLoss (YetiRank mode='NDCG', top=--top)")
    parser.add_argument("--omp-wait-policy", choices=["passive", "active", "default"],
                        default="default",
                        help="OMP_WAIT_POLICY for LightGBM, XGBoost and numba's omp layer "
                             "('default' leaves the environment alone; another value restarts "
                             "the benchmark with it set, as the runtimes read it when loaded)")
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results"))
    parser.add_argument("--suffix", default="",
                        help="appended to the output files' stem, e.g. _200k for a second size")
    args = parser.parse_args(argv)
    if args.iterations - 1 - args.warmup < 5:
        parser.error("need at least 5 timed iterations: raise --iterations or lower --warmup")
    wanted = args.omp_wait_policy.upper()
    if args.omp_wait_policy != "default" and os.environ.get("OMP_WAIT_POLICY") != wanted:
        # libgomp reads the variable when it is loaded, and this module's imports have loaded
        # it already (see the module docstring): only a new process honours it
        if argv is not None:
            raise SystemExit(f"--omp-wait-policy {args.omp_wait_policy}: set OMP_WAIT_POLICY="
                             f"{wanted} in the environment before Python starts")
        os.execve(sys.executable, [sys.executable, "-m", "benchmarks.training_speed",
                                   *sys.argv[1:]], {**os.environ, "OMP_WAIT_POLICY": wanted})

    import catboost
    import lightgbm
    import xgboost

    data = make_data(args.docs, args.features)
    X, y, sizes = data.X, data.labels, data.sizes
    mix = "/".join(f"{np.mean(y == g):.0%}" for g in range(5))
    sr = METHODS[args.objective].stochastic_rank   # StochasticRank: the unsuffixed files
    sr_desc = (f"StochasticRank(metric={args.metric!r}, top={args.top or None})"
               if sr else repr(sr_objective(args)))
    suffix = "" if sr else f"_{args.objective}"
    if sr and args.metric.upper() != DEFAULT_METRIC:   # the default's files stay as they are
        suffix += f"_{args.metric.lower()}"
    suffix += args.suffix
    lines = []

    def emit(line=""):
        print(line, flush=True)
        lines.append(line)

    emit(f"training_speed: {y.size:,} documents, {sizes.size:,} queries (mean size "
         f"{sizes.mean():.1f}, max {sizes.max()}), {X.shape[1]} float32 Gaussian features, "
         f"labels 0-4 ({mix}) from a noisy linear score")
    emit(describe_objective(args))
    emit(f"trees: depth 6 everywhere (LightGBM num_leaves=63 max_depth=6; XGBoost hist "
         f"max_depth=6 max_bin=256; CatBoost depth=6 Plain, no bootstrap), learning rate 0.1, "
         f"no metric evaluation; {args.iterations} iterations per run, first {args.warmup} "
         f"per-iteration times dropped, median over {args.rounds} alternating runs per variant")
    emit(f"lightgbm {lightgbm.__version__}, xgboost {xgboost.__version__}, catboost "
         f"{catboost.__version__}, numba {numba.__version__} ({numba.config.THREADING_LAYER} "
         f"layer); {os.cpu_count()} CPUs, {platform.machine()} ({cpu_model()}); "
         f"{short_name(args)} kernels use numba.set_num_threads(threads); OMP_WAIT_POLICY="
         f"{os.environ.get('OMP_WAIT_POLICY', '(unset: the runtimes spin, then sleep)')}")
    emit("'in grad_hess' = time inside the objective per iteration; 'rest' = the booster's "
         "tree building + adapter interop (compare with the floor row); ms/iter = median over "
         "all kept iterations of all runs; ratio = median over rounds of the paired per-round "
         "ratio (its range over rounds after 'rounds')")
    emit()
    tables, ratios, loads = [], [], []
    for threads in args.threads:
        if threads > numba.config.NUMBA_NUM_THREADS:
            emit(f"[{threads} threads] skipped: numba allows {numba.config.NUMBA_NUM_THREADS}")
            continue
        table, res, load = run_threads(data, threads, args, emit)
        tables += table
        ratios += res
        loads.append(load)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / f"training_speed{suffix}.txt").write_text("\n".join(lines).rstrip() + "\n")
    (args.out / f"training_speed{suffix}.json").write_text(json.dumps(
        dict(docs=int(y.size), queries=int(sizes.size), features=int(X.shape[1]),
             iterations=args.iterations, warmup=args.warmup, rounds=args.rounds,
             omp_wait_policy=os.environ.get("OMP_WAIT_POLICY"), cpu=cpu_model(),
             objective=args.objective, sr=sr_desc, table=tables,
             ratios=ratios, load=loads), indent=1) + "\n")


if __name__ == "__main__":
    main()
