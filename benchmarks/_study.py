"""One study runner for :mod:`benchmarks.compare` and :mod:`benchmarks.ablation`: parse the
shared options, run (or read from the cache) every trial, select the runs, and start the report.

Example::

    ap = study_parser(__doc__, default_boosters=["lightgbm"])
    args = ap.parse_args(argv)
    study = run_study(args, methods, targets, "ablation_runs.jsonl")
    lines = study.header("Ablation on mq2008", "ablation")
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from ._boosters import BOOSTERS
from ._data import BUNDLED, DATA_CACHE, RESULTS, resolve_dataset
from ._executor import Execution, add_execution_args
from ._reports import budget_lines, environment_line, write_csv
from ._search import Space
from ._stats import select_runs
from ._trials import Cache, TrainConfig, make_jobs, run_all, stable_hash


def add_data_args(ap):
    """``--dataset`` (bundled), ``--data PATH`` (any LETOR folder) and ``--cache-dir``."""
    ap.add_argument("--dataset", default="mq2008", choices=list(BUNDLED),
                    help="a bundled data set (ignored with --data)")
    ap.add_argument("--data", default=None, metavar="PATH",
                    help="a LETOR folder: Fold1..FoldK/{train,vali,test}.txt[.gz] (MSLR, "
                         "LETOR, Istella) or the split files directly (Yahoo: "
                         "PATH/set1 picks set1.train.txt, set1.valid.txt, set1.test.txt)")
    ap.add_argument("--cache-dir", default=None,
                    help="where --data files are kept once parsed (default "
                         f"benchmarks/results/{DATA_CACHE.name})")


def add_common_args(ap, default_budget, default_folds):
    """The options every study takes (data, budget, training, output, where the trials run)."""
    add_data_args(ap)
    ap.add_argument("--folds", type=int, nargs="+", default=default_folds,
                    help="default: every fold of the data set")
    ap.add_argument("--seeds", type=int, nargs="+", default=[0])
    ap.add_argument("--budget", type=int, default=default_budget,
                    help="random-search trials per (booster, method, target, fold, seed)")
    ap.add_argument("--max-trees", type=int, default=300)
    ap.add_argument("--patience", type=int, default=50, help="early-stopping rounds")
    ap.add_argument("--lr-min", type=float, default=1e-2,
                    help="lower end of the log-uniform learning rate (paper: 1e-3 with 1000 "
                         "trees)")
    ap.add_argument("--out", default=None, help="output folder (default "
                                                "benchmarks/results/<dataset or --data folder "
                                                "name>)")
    ap.add_argument("--no-plots", action="store_true")
    add_execution_args(ap)


def study_parser(doc: str, default_boosters) -> argparse.ArgumentParser:
    """A parser with the shared options, ``--boosters`` and ``--report-only``."""
    ap = argparse.ArgumentParser(description=doc.split("\n")[0])
    add_common_args(ap, default_budget=5, default_folds=None)
    ap.add_argument("--boosters", nargs="+", default=list(default_boosters), choices=BOOSTERS)
    ap.add_argument("--report-only", action="store_true",
                    help="write the tables and plots from the cache without training")
    return ap


@dataclass
class Study:
    """What a study ran: its options, folder, configuration, every trial and the selected runs."""

    args: argparse.Namespace
    out: Path
    space: Space
    cfg: TrainConfig
    rows: list
    selected: dict
    started: float
    wall: float = field(init=False)
    n_trials: int = field(init=False)

    def __post_init__(self):
        self.wall = sum(r.get("wall_s", 0.0) for r in self.rows)
        self.n_trials = sum(1 for r in self.rows if "error" not in r)

    def header(self, title: str, command: str, note: tuple = ()) -> list:
        """The report's title, command line, ``note`` lines and budget lines."""
        return [f"# {title}", "",
                f"Command: `python -m benchmarks.{command} {' '.join(sys.argv[1:])}`", "",
                *note, *budget_lines(self.args, self.space, self.n_trials, len(self.selected),
                              self.wall)]

    def environment(self) -> str:
        """The environment line with this invocation's wall clock."""
        where = "" if self.args.report_only else f"; {Execution.from_args(self.args).describe()}"
        return (f"{environment_line(self.cfg)}{where}; wall clock of this invocation "
                f"{(time.time() - self.started) / 60:.1f} min (cached trials are not "
                "retrained)")

    def write_csv(self, name: str):
        write_csv(self.rows, self.selected, self.out / name)

    def write_report(self, name: str, lines: list) -> str:
        """Write the markdown to ``out/name``, print it and return it."""
        md = "\n".join(lines)
        (self.out / name).write_text(md)
        print(md)
        return md


def writable_folder(path, option: str = "--out") -> Path:
    """``path`` created if missing and checked writable (a probe file written and removed), so
    that an output folder that cannot take the results stops the command before any trial
    trains, not after the first one (whose result would be lost).

    Example::

        out = writable_folder(args.out)   # SystemExit: --out /results: cannot write there ...

    Args:
      path: the output folder.
      option: the command-line option it came from, for the message.

    Returns:
      ``path`` as a Path. Raises ``SystemExit`` naming the option, the folder and the fix.
    """
    path = Path(path)
    probe = path / f".write_probe.{os.getpid()}"
    try:
        path.mkdir(parents=True, exist_ok=True)
        fd = os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        os.close(fd)
        os.remove(probe)
    except OSError as exc:
        raise SystemExit(f"{option} {path}: cannot write there ({exc.strerror or exc}): choose "
                         f"another folder with {option}, or make this one writable") from None
    return path


def _log(message):
    from tqdm.auto import tqdm

    tqdm.write(message, file=sys.stderr)  # above the progress bar, not through it


def run_study(args, methods, targets, cache_name: str) -> Study:
    """Run every (booster, method, target, fold, seed, trial) of ``args`` not in the cache
    ``out/cache_name`` (with ``--report-only`` only read it) and select the runs. The trials run
    where ``--workers`` / ``--scheduler`` say, ``--threads`` each; each finished trial is
    appended to the cache at once, so a killed study started again retrains none of them."""
    started = time.time()
    # a --data folder is a str subclass: its name in reports and paths, its files for loading
    args.dataset, args.folds = resolve_dataset(args)
    dataset = args.dataset
    out = writable_folder(args.out if args.out else RESULTS / args.dataset)
    space = Space(lr_min=args.lr_min)
    cfg = TrainConfig(max_trees=args.max_trees, patience=args.patience, threads=args.threads)
    cache = Cache(out, cache_name)
    jobs = make_jobs(dataset, args.boosters, methods, targets, args.folds, args.seeds,
                     args.budget)
    if args.report_only:
        rows = [r for r in (cache.get(stable_hash(j.key_dict(space, cfg))) for j in jobs) if r]
    else:
        rows = run_all(jobs, dataset, space, cfg, cache, Execution.from_args(args),
                       log=_log)
    failed = [r for r in rows if "error" in r]
    if rows and len(failed) == len(rows):
        # Nothing to select or report: a table of dashes with exit status 0 would pass for a run.
        raise SystemExit(f"all {len(rows)} trials failed (their errors are in {cache.path}); "
                         f"the first: {failed[0]['error']}")
    return Study(args, out, space, cfg, rows, select_runs(rows), started)
