"""Cold start: the first fit in a fresh process, with an empty Numba cache and with a warm one.

    python -m benchmarks.cold_start [--objectives sr_ndcg5 sr_mrr yetiloss lambdamart]
        [--boosters lightgbm xgboost catboost] [--repeats 1] [--precompile]
        [--out benchmarks/results/cold_start.txt]

The package's kernels are ``@njit(cache=True)``: the first process on a machine compiles the
kernels its objective calls, and every later one loads them from Numba's on-disk cache. This
measures what that first process pays. For each objective of ``--objectives`` (the defaults a
user starts from, :data:`OBJECTIVES`) on each booster's ranker (``StochasticLGBMRanker``,
``StochasticXGBRanker``, ``StochasticCatBoostRanker``, ``n_estimators=5``,
``fit(X, y, qid=...)``), on the first 50 queries of the bundled MQ2008 Fold 1 train split:

* ``empty`` -- the first fit in a fresh process whose ``NUMBA_CACHE_DIR`` is a new, empty
  temporary folder: every kernel the fit calls is compiled (and written to that folder);
* ``warm`` -- the first fit in a second fresh process with the same ``NUMBA_CACHE_DIR``: the
  kernels the first process left are loaded;
* ``precompiled`` (with ``--precompile``) -- a fresh, empty cache filled by the package's own
  warm-up, ``python -m stochrank_objectives.precompile --objectives NAME`` (its seconds are
  printed below the table), then the first fit in a fresh process: a fit that still compiles
  a kernel shows what the warm-up does not reach.

Beside them, in the same run: the booster's own ranker (LightGBM ``LGBMRanker`` lambdarank,
XGBoost ``XGBRanker`` rank:ndcg, CatBoost ``CatBoostRanker`` YetiRank, 5 trees) first fit in a
fresh process, for scale, and a yardstick: one trivial ``@njit(parallel=True)`` ``prange`` loop
compiled in a fresh process with an empty cache (what compiling the smallest parallel kernel
costs on this machine: Numba's compiler and its threading layer starting).

Every process is ``python -m benchmarks.cold_start --child ...`` and prints one JSON line that
the parent reads. Inside the child the import (the package and the booster: ``import
stochrank_objectives`` and its ranker class; the booster alone for the native rankers; Numba for
the yardstick) and the fit are timed separately, each in wall seconds and in the process's CPU
seconds (all its threads); the data loading between them is not counted. The fit is what the
target counts: **<= 20 s for each empty-cache first fit** on a 2-core machine. ``compiled`` is
the number of Numba compilations seen during the fit (``numba:compile`` events: 0 when every
kernel came from the cache). With ``--repeats N`` each cell is the median over N repeats (each
with its own empty cache) and its range.

The children run with ``OMP_WAIT_POLICY=PASSIVE`` unless it is set (as the other benchmarks,
:mod:`benchmarks._data`) and the boosters' default thread counts. Other load on the machine
inflates every number: the header records the load average, and the footer how many cores other
processes used on average while the run went.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path

from ._machine import busy_cpu_seconds, loadavg, own_cpu_seconds

# No module of the package nor any booster is imported here at module level: a child's timed
# import must be its first.

ROOT = Path(__file__).resolve().parents[1]
RESULTS = Path(__file__).resolve().parent / "results"   # benchmarks._data.RESULTS
DEFAULT_OUT = RESULTS / "cold_start.txt"
TARGET_SECONDS = 20.0     # issue 43: each empty-cache first fit, 2 cores
N_QUERIES = 50            # the first 50 queries of MQ2008 Fold 1 train
N_ESTIMATORS = 5
CHILD_TIMEOUT = 1800      # seconds; a child past it is reported as an error
RESULT_PREFIX = "COLD_START_RESULT "   # the child's JSON line (boosters also print to stdout)

#: booster -> the package's ranker of it (benchmarks._boosters.RANKERS; a test checks they agree)
RANKER_CLASSES = {"lightgbm": "StochasticLGBMRanker", "xgboost": "StochasticXGBRanker",
                  "catboost": "StochasticCatBoostRanker"}
BOOSTERS = tuple(RANKER_CLASSES)
#: the boosters' quiet settings (and no files from CatBoost)
QUIET = {"lightgbm": {"verbose": -1}, "xgboost": {},
         "catboost": {"verbose": False, "allow_writing_files": False}}


@dataclass(frozen=True)
class Objective:
    """A default objective: its label, its constructor (class and arguments) and the registry
    name that ``python -m stochrank_objectives.precompile --objectives`` takes."""

    label: str
    cls: str
    kwargs: dict = field(default_factory=dict)

    @property
    def call(self) -> str:
        return f"{self.cls}({', '.join(f'{k}={v!r}' for k, v in self.kwargs.items())})"

    @property
    def precompile_name(self) -> str:
        return self.cls

    def make(self):
        import stochrank_objectives

        return getattr(stochrank_objectives, self.cls)(**self.kwargs)


OBJECTIVES = {
    "sr_ndcg5": Objective("StochasticRank NDCG@5", "StochasticRank", {"metric": "NDCG", "top": 5}),
    "sr_mrr": Objective("StochasticRank MRR", "StochasticRank", {"metric": "MRR"}),
    "yetiloss": Objective("YetiLoss NDCG@5", "YetiRank",
                          {"mode": "NDCG", "top": 5, "num_neighbors": -1}),
    "lambdamart": Objective("LambdaMART NDCG@5", "LambdaMART", {"top": 5}),
}
#: booster -> (its own ranker class, the loss it trains with), the "for scale" rows
NATIVE = {"lightgbm": ("LGBMRanker", "lambdarank"), "xgboost": ("XGBRanker", "rank:ndcg"),
          "catboost": ("CatBoostRanker", "YetiRank")}
YARDSTICK = "prange yardstick"

COLUMNS = ["booster", "ranker", "objective", "cache", "import s", "import cpu s", "fit s",
           "fit cpu s", "compiled", f"<= {TARGET_SECONDS:g} s"]


# -- the child: one fresh process, one fit -----------------------------------------------------
def _clock():
    return time.perf_counter(), time.process_time()


def _since(start):
    wall, cpu = _clock()
    return wall - start[0], cpu - start[1]


def _data():
    """The first :data:`N_QUERIES` queries of the bundled MQ2008 Fold 1 train split, with query
    ids 0, 1, ... (XGBoost wants them non-decreasing)."""
    import numpy as np

    from stochrank_objectives.data import load_mq2008

    data = load_mq2008("train", fold=1).subset_queries(N_QUERIES)
    sizes = data.group_sizes
    return data.X, data.y, np.repeat(np.arange(sizes.size), sizes), sizes


def _numba_facts() -> dict:
    import numba

    try:
        layer = numba.threading_layer()
    except ValueError:   # no parallel kernel has run in this process
        layer = None
    return {"numba_threads": numba.config.NUMBA_NUM_THREADS, "threading_layer": layer,
            "cache_dir": numba.config.CACHE_DIR}


def child_yardstick() -> dict:
    """Import Numba, then compile and run one trivial ``prange`` loop (no ``cache=True``: the
    loop is defined here, so nothing is read from or written to a cache)."""
    start = _clock()
    import numba
    import numpy as np
    import_s, import_cpu_s = _since(start)

    def scaled_sum(x):
        total = 0.0
        for i in numba.prange(x.shape[0]):
            total += 2.0 * x[i]
        return total

    kernel = numba.njit(parallel=True)(scaled_sum)
    x = np.arange(1000.0)
    start = _clock()
    kernel(x)
    fit_s, fit_cpu_s = _since(start)
    return dict(import_s=import_s, import_cpu_s=import_cpu_s, fit_s=fit_s, fit_cpu_s=fit_cpu_s,
                compiled=len(kernel.signatures), **_numba_facts())


def _native_ranker(booster: str):
    if booster == "lightgbm":
        import lightgbm

        return lambda: lightgbm.LGBMRanker(objective="lambdarank", n_estimators=N_ESTIMATORS,
                                           random_state=0, **QUIET[booster])
    if booster == "xgboost":
        import xgboost

        return lambda: xgboost.XGBRanker(objective="rank:ndcg", n_estimators=N_ESTIMATORS,
                                         random_state=0)
    import catboost

    return lambda: catboost.CatBoostRanker(loss_function="YetiRank", iterations=N_ESTIMATORS,
                                           random_seed=0, **QUIET[booster])


def _fit_native(booster, ranker, X, y, qid, sizes):
    if booster == "lightgbm":
        return ranker.fit(X, y, group=sizes)
    if booster == "xgboost":
        return ranker.fit(X, y, qid=qid)
    return ranker.fit(X, y, group_id=qid)


def child_fit(booster: str, objective: str | None) -> dict:
    """The first fit of this process: ``objective`` (a key of :data:`OBJECTIVES`) through the
    package's ranker of ``booster``, or the booster's own ranker (``objective`` None)."""
    start = _clock()
    if objective is None:
        native = _native_ranker(booster)
    else:
        import stochrank_objectives

        ranker_class = getattr(stochrank_objectives, RANKER_CLASSES[booster])  # the booster too
    import_s, import_cpu_s = _since(start)
    start = _clock()
    X, y, qid, sizes = _data()
    data_s = _since(start)[0]
    from stochrank_objectives._compile_watch import CompileWatch

    if objective is None:
        ranker = native()
    else:
        ranker = ranker_class(OBJECTIVES[objective].make(), n_estimators=N_ESTIMATORS,
                              random_state=0, **QUIET[booster])
    with CompileWatch() as watch:
        start = _clock()
        if objective is None:
            _fit_native(booster, ranker, X, y, qid, sizes)
        else:
            ranker.fit(X, y, qid=qid)
        fit_s, fit_cpu_s = _since(start)
    return dict(import_s=import_s, import_cpu_s=import_cpu_s, data_s=data_s, fit_s=fit_s,
                fit_cpu_s=fit_cpu_s, compiled=watch.count, n_docs=int(y.size),
                n_queries=int(sizes.size), **_numba_facts())


def child_main(kind: str, booster: str | None, objective: str | None) -> dict:
    if kind == "yardstick":
        result = child_yardstick()
    else:
        result = child_fit(booster, objective if kind == "ours" else None)
    result.update(kind=kind, booster=booster, objective=objective)
    print(RESULT_PREFIX + json.dumps(result), flush=True)
    return result


# -- the parent: fresh processes, the report ---------------------------------------------------
@dataclass
class Run:
    """One row of the report: what ran, and the child results of its repeats."""

    booster: str          # "-" for the yardstick
    ranker: str
    objective: str        # the objective's label (native: its loss; the yardstick's name)
    cache: str            # empty, warm, precompiled, or fresh (the natives)
    target: bool = False  # an empty-cache fit of ours: the 20 s target applies
    results: list = field(default_factory=list)   # child dicts (or {"error": ...})


def child_env(cache_dir) -> dict:
    env = {**os.environ, "NUMBA_CACHE_DIR": str(cache_dir),
           "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH"))
                                         if p)}
    env.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    return env


def run_child(argv: list, cache_dir, workdir) -> dict:
    """``python -m benchmarks.cold_start --child ...argv`` in a fresh process with
    ``NUMBA_CACHE_DIR=cache_dir``: its JSON result, with ``process_s`` (the whole process,
    interpreter start included), or ``{"error": ...}``."""
    command = [sys.executable, "-m", "benchmarks.cold_start", "--child", *argv]
    start = time.perf_counter()
    try:
        done = subprocess.run(command, cwd=workdir, env=child_env(cache_dir),
                              capture_output=True, text=True, timeout=CHILD_TIMEOUT)
    except subprocess.TimeoutExpired:
        return {"error": f"no result in {CHILD_TIMEOUT} s"}
    process_s = time.perf_counter() - start
    lines = [line for line in done.stdout.splitlines() if line.startswith(RESULT_PREFIX)]
    if done.returncode or not lines:
        tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
        return {"error": f"exit {done.returncode}: {' / '.join(tail)}"}
    return {**json.loads(lines[-1][len(RESULT_PREFIX):]), "process_s": process_s}


def run_precompile(name: str, cache_dir, workdir) -> float | str:
    """``python -m stochrank_objectives.precompile --objectives NAME`` into ``cache_dir``: its
    wall seconds, or the error."""
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "stochrank_objectives.precompile",
                           "--objectives", name], cwd=workdir, env=child_env(cache_dir),
                          capture_output=True, text=True, timeout=CHILD_TIMEOUT)
    if done.returncode:
        return f"exit {done.returncode}: {done.stderr.strip().splitlines()[-1:]}"
    return time.perf_counter() - start


def plan(objectives, boosters, precompile: bool) -> list[Run]:
    """The report's rows, in order: the yardstick, then per booster its native ranker and, per
    objective, the empty-cache, warm (and precompiled) first fits."""
    runs = [Run("-", "numba.njit(parallel=True)", YARDSTICK, "empty")]
    for booster in boosters:
        ranker, loss = NATIVE[booster]
        runs.append(Run(booster, ranker, f"{loss} (native)", "fresh"))
        for key in objectives:
            label = OBJECTIVES[key].label
            runs.append(Run(booster, RANKER_CLASSES[booster], label, "empty", target=True))
            runs.append(Run(booster, RANKER_CLASSES[booster], label, "warm"))
            if precompile:
                runs.append(Run(booster, RANKER_CLASSES[booster], label, "precompiled"))
    return runs


def measure(objectives, boosters, repeats: int, precompile: bool, child=run_child,
            log=print, warm_up=run_precompile) -> tuple[list[Run], dict]:
    """Run every row ``repeats`` times (each repeat with fresh caches). ``child(argv,
    cache_dir, workdir)`` runs one child and ``warm_up(name, cache_dir, workdir)`` the
    package's precompile command (tests pass stand-ins). Returns the rows and the precompile
    seconds per objective key (lists over repeats)."""
    runs = plan(objectives, boosters, precompile)
    by_key = {(r.booster, r.objective, r.cache): r for r in runs}
    precompile_s = {key: [] for key in objectives} if precompile else {}
    labels = {key: OBJECTIVES[key].label for key in objectives}

    def record(run, result):
        run.results.append(result)
        shown = result.get("error") or (f"fit {result['fit_s']:.1f} s, import "
                                        f"{result['import_s']:.1f} s, {result['compiled']} "
                                        "compiled")
        log(f"  {run.booster:8s} {run.objective:24s} {run.cache:11s} {shown}")

    with tempfile.TemporaryDirectory(prefix="cold_start_") as tmp:
        tmp = Path(tmp)
        for repeat in range(repeats):
            log(f"[repeat {repeat + 1} of {repeats}]")
            top = tmp / f"r{repeat}"
            top.mkdir()
            work = top / "work"       # the children's working folder (CatBoost's files ...)
            work.mkdir()
            record(by_key["-", YARDSTICK, "empty"],
                   child(["--kind", "yardstick"], top / "yardstick", work))
            pre = {}
            for key in precompile_s:
                pre[key] = top / f"precompiled-{key}"
                seconds = warm_up(OBJECTIVES[key].precompile_name, pre[key], work)
                precompile_s[key].append(seconds)
                log(f"  precompile --objectives {OBJECTIVES[key].precompile_name}: "
                    + (f"{seconds:.1f} s" if isinstance(seconds, float) else seconds))
            for booster in boosters:
                record(by_key[booster, f"{NATIVE[booster][1]} (native)", "fresh"],
                       child(["--kind", "native", "--booster", booster],
                             top / f"native-{booster}", work))
                for key in objectives:
                    cache = top / f"{booster}-{key}"
                    argv = ["--kind", "ours", "--booster", booster, "--objective", key]
                    record(by_key[booster, labels[key], "empty"], child(argv, cache, work))
                    record(by_key[booster, labels[key], "warm"], child(argv, cache, work))
                    shutil.rmtree(cache, ignore_errors=True)
                    if key in pre:
                        run = by_key[booster, labels[key], "precompiled"]
                        if not isinstance(precompile_s[key][-1], float):
                            record(run, {"error": "the precompile command failed"})
                            continue
                        copy = top / f"{booster}-{key}-precompiled"   # each fit its own copy
                        if pre[key].exists():
                            shutil.copytree(pre[key], copy)
                        record(run, child(argv, copy, work))
                        shutil.rmtree(copy, ignore_errors=True)
    return runs, precompile_s


# -- the report ----------------------------------------------------------------------------------
def cell(values, digits: int = 1) -> str:
    """The median of ``values``, and their range when there are several: ``12.3 (11.8-13.0)``."""
    values = [v for v in values if v is not None]
    if not values:
        return "-"
    median = statistics.median(values)
    if len(values) == 1 or min(values) == max(values):
        return f"{median:.{digits}f}"
    return f"{median:.{digits}f} ({min(values):.{digits}f}-{max(values):.{digits}f})"


def count_cell(values) -> str:
    values = [int(v) for v in values if v is not None]
    if not values:
        return "-"
    low, high = min(values), max(values)
    return str(low) if low == high else f"{low}-{high}"


def verdict(run: Run) -> str:
    """``met`` / ``MISSED`` (median fit seconds against the target) for an empty-cache fit of
    ours, ``error`` when a repeat failed, ``-`` where no target applies."""
    if any("error" in r for r in run.results):
        return "error"
    if not run.target or not run.results:
        return "-"
    median = statistics.median(r["fit_s"] for r in run.results)
    return "met" if median <= TARGET_SECONDS else "MISSED"


def row_cells(run: Run) -> list[str]:
    ok = [r for r in run.results if "error" not in r]
    return [run.booster, run.ranker, run.objective, run.cache,
            cell([r["import_s"] for r in ok], 2), cell([r["import_cpu_s"] for r in ok], 2),
            cell([r["fit_s"] for r in ok], 2), cell([r["fit_cpu_s"] for r in ok], 2),
            count_cell([r["compiled"] for r in ok]), verdict(run)]


def table(runs: list[Run]) -> list[str]:
    """A pipe table of :data:`COLUMNS`, one line per row, aligned."""
    rows = [COLUMNS] + [row_cells(run) for run in runs]
    widths = [max(len(row[i]) for row in rows) for i in range(len(COLUMNS))]

    def line(row):
        return "| " + " | ".join(c.ljust(w) for c, w in zip(row, widths)) + " |"

    return [line(rows[0]), "|" + "|".join("-" * (w + 2) for w in widths) + "|",
            *(line(row) for row in rows[1:])]


def parse_table(text: str) -> list[dict]:
    """The rows of a report's table, as ``{column: cell}`` (the inverse of :func:`table`)."""
    lines = [line for line in text.splitlines() if line.startswith("|")]
    if not lines:
        return []
    header = [c.strip() for c in lines[0].strip("|").split("|")]
    return [dict(zip(header, (c.strip() for c in line.strip("|").split("|"))))
            for line in lines[2:]]


def versions(boosters) -> str:
    found = []
    for name in ("numpy", "numba", *boosters):
        try:
            found.append(f"{name} {metadata.version(name)}")
        except metadata.PackageNotFoundError:
            found.append(f"{name} (not installed)")
    return ", ".join(found)


def header(command: str, boosters, repeats: int, runs: list[Run], load_start: str) -> list[str]:
    first = next((r for run in runs for r in run.results if "n_docs" in r), {})
    numba_facts = next((r for run in runs for r in run.results if r.get("threading_layer")), {})
    data = (f"{first['n_docs']:,} documents, {first['n_queries']} queries" if first
            else f"{N_QUERIES} queries")
    return [
        f"cold_start: {command}",
        f"date: {datetime.datetime.now().isoformat(timespec='seconds')}",
        f"machine: {os.cpu_count()} CPUs ({platform.machine()}), {platform.system()}, "
        f"Python {platform.python_version()}, {versions(boosters)}; Numba threading layer "
        f"{numba_facts.get('threading_layer') or 'n/a'}, "
        f"{numba_facts.get('numba_threads', '?')} Numba threads",
        f"data: MQ2008 Fold 1 train (bundled), the first {data}; every ranker fits "
        f"n_estimators={N_ESTIMATORS} at the booster's defaults otherwise (threads included)",
        "each row is a fresh process (python -m benchmarks.cold_start --child ...); cache: "
        "empty = a new, empty NUMBA_CACHE_DIR, warm = a second fresh process reusing the cache "
        "the empty one left, precompiled = a fresh cache filled by python -m "
        "stochrank_objectives.precompile --objectives NAME, fresh = a native ranker (no "
        "package kernels)",
        "import s = importing the package and the booster (natives: the booster; yardstick: "
        "numba), fit s = the first fit (yardstick: compiling and running the prange loop); wall "
        "seconds, and the process's CPU seconds (all threads); compiled = Numba compilations "
        f"during the fit; the target is <= {TARGET_SECONDS:g} s of fit wall time for each "
        "empty-cache fit",
        f"{'median (range) over ' + str(repeats) + ' repeats' if repeats > 1 else '1 repeat'}; "
        f"OMP_WAIT_POLICY={os.environ.get('OMP_WAIT_POLICY', 'PASSIVE')} in the children",
        "note: other load on the machine inflates these numbers (compilation is CPU-bound); "
        f"load average (1/5/15 min) at start: {load_start}",
    ]


def footer(runs: list[Run], precompile_s: dict, objectives, others_cores, load_end) -> list[str]:
    lines = []
    targeted = [run for run in runs if run.target]
    met = [run for run in targeted if verdict(run) == "met"]
    if targeted:
        lines.append(f"empty-cache first fits within {TARGET_SECONDS:g} s: {len(met)} of "
                     f"{len(targeted)}")
    timed = [(statistics.median(r["fit_s"] for r in run.results), run) for run in targeted
             if run.results and verdict(run) != "error"]
    yard = [r["fit_s"] for run in runs if run.objective == YARDSTICK for r in run.results
            if "error" not in r]
    if timed:
        slowest, run = max(timed, key=lambda t: t[0])
        line = f"slowest: {run.booster} {run.objective}, {slowest:.1f} s"
        if yard:
            line += f" ({slowest / statistics.median(yard):.0f}x the prange yardstick)"
        lines.append(line)
    for key, values in precompile_s.items():
        name = OBJECTIVES[key].precompile_name
        seconds = [v for v in values if isinstance(v, float)]
        errors = [v for v in values if not isinstance(v, float)]
        lines.append(f"python -m stochrank_objectives.precompile --objectives {name}: "
                     f"{cell(seconds)} s" + (f" ({'; '.join(errors)})" if errors else ""))
    for run in runs:
        for r in run.results:
            if "error" in r:
                lines.append(f"error: {run.booster} {run.objective} {run.cache}: {r['error']}")
    names = sorted({OBJECTIVES[key].precompile_name for key in objectives})
    lines.append("objectives: " + "; ".join(f"{OBJECTIVES[key].label} = {OBJECTIVES[key].call}"
                                            for key in objectives))
    if names:
        lines.append("to pay the compilation ahead (a Docker build, a CI cache step): python -m "
                     f"stochrank_objectives.precompile --objectives {' '.join(names)}")
    if others_cores is not None:
        lines.append(f"other processes used {others_cores:.2f} cores on average during the run "
                     f"(of {os.cpu_count()}); load average at end: {load_end}")
    return lines


def report(command, boosters, objectives, repeats, runs, precompile_s, load_start,
           others_cores=None, load_end="n/a") -> str:
    lines = header(command, boosters, repeats, runs, load_start)
    lines += ["", *table(runs), ""]
    lines += footer(runs, precompile_s, objectives, others_cores, load_end)
    return "\n".join(lines) + "\n"


def parse_args(argv=None):
    ap = argparse.ArgumentParser(prog="python -m benchmarks.cold_start",
                                 description=__doc__.splitlines()[0])
    ap.add_argument("--objectives", nargs="+", choices=list(OBJECTIVES), default=list(OBJECTIVES),
                    metavar="NAME", help=f"of {', '.join(OBJECTIVES)} (default: all)")
    ap.add_argument("--boosters", nargs="+", choices=BOOSTERS, default=list(BOOSTERS))
    ap.add_argument("--repeats", type=int, default=1,
                    help="repeats of every row, each with fresh caches (default 1: an empty-cache "
                         "run costs about a minute of CPU)")
    ap.add_argument("--precompile", action="store_true",
                    help="also a first fit after python -m stochrank_objectives.precompile")
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    # a child process (run by the parent)
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--kind", choices=("ours", "native", "yardstick"), help=argparse.SUPPRESS)
    ap.add_argument("--booster", choices=BOOSTERS, help=argparse.SUPPRESS)
    ap.add_argument("--objective", choices=list(OBJECTIVES), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.repeats < 1:
        ap.error(f"--repeats must be >= 1, got {args.repeats}")
    if args.child and (args.kind is None or (args.kind != "yardstick" and args.booster is None)
                       or (args.kind == "ours" and args.objective is None)):
        ap.error("--child needs --kind, and --booster (and --objective for ours)")
    return args


def main(argv=None, child=run_child) -> str | dict:
    args = parse_args(argv)
    if args.child:
        return child_main(args.kind, args.booster, args.objective)
    given = sys.argv[1:] if argv is None else list(argv)
    command = shlex.join(["python", "-m", "benchmarks.cold_start", *given])
    boosters = list(dict.fromkeys(args.boosters))
    objectives = list(dict.fromkeys(args.objectives))
    load_start = loadavg()
    busy_start, ours_start, start = busy_cpu_seconds(), own_cpu_seconds(), time.perf_counter()
    print(f"cold_start: {command}", flush=True)
    runs, precompile_s = measure(objectives, boosters, args.repeats, args.precompile, child=child,
                                 log=lambda line: print(line, flush=True))
    wall = time.perf_counter() - start
    busy_end = busy_cpu_seconds()
    others = None
    if busy_start is not None and busy_end is not None and wall > 0:
        ours = own_cpu_seconds() - ours_start
        others = max(0.0, (busy_end - busy_start - ours) / wall)
    text = report(command, boosters, objectives, args.repeats, runs, precompile_s, load_start,
                  others, loadavg())
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text)
    print(text, end="")
    return text


if __name__ == "__main__":
    main()
