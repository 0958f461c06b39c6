"""Where a study's trials run: in this process, in a local pool of processes (``--workers N``) or
on an existing Dask cluster (``--scheduler ADDRESS``), with a progress bar and a per-process cache
of the data splits the trials read.

Example::

    ap = argparse.ArgumentParser()
    add_execution_args(ap)
    execution = Execution.from_args(ap.parse_args(["--workers", "2"]))
    for task, result in run_tasks(math.sqrt, [1.0, 4.0], execution):
        print(task, result)

The task function and its arguments travel to the workers by pickle, by reference to their
module: workers must be able to import the ``benchmarks`` package. Local workers are started
with the ``spawn`` method (a fresh interpreter; ``fork`` would copy this process's OpenMP and
Numba thread pools, which deadlocks) and inherit this process's ``sys.path``, as do the workers
of a ``LocalCluster`` started here; the workers of any other cluster need the repository on their
``PYTHONPATH`` (``dask worker`` does not put its working directory there). Each task sets its
own threads and seeds, so where and in which order it runs does not change its result.
"""

from __future__ import annotations

import argparse
import pickle
import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Callable, Iterator, Optional

#: Splits kept per process. Tasks are submitted fold by fold, so each process reads every fold
#: once; at the paper's scale (MSLR-WEB30K, ~2 GB of features per fold) more would not fit.
SPLITS_KEPT = 2
_splits: "OrderedDict[tuple, object]" = OrderedDict()
_splits_lock = threading.Lock()  # Dask workers with several threads share the cache


def worker_split(loader: Callable, dataset: str, fold: int):
    """``loader(dataset, fold)``, read once per process and kept for the next tasks.

    Example::

        split = worker_split(load_split, "mq2008", 1)   # parsed
        split = worker_split(load_split, "mq2008", 1)   # the same object, not parsed again

    Args:
        loader: a picklable function ``(dataset, fold) -> split`` (a module function or a
            ``functools.partial`` of one).
        dataset: the dataset name (or whatever ``loader`` takes).
        fold: the fold.

    Returns:
        The split; the last ``SPLITS_KEPT`` are kept.
    """
    key = (_identity(loader), dataset, fold)
    with _splits_lock:
        if key in _splits:
            _splits.move_to_end(key)
            return _splits[key]
        split = loader(dataset, fold)
        _splits[key] = split
        while len(_splits) > SPLITS_KEPT:
            _splits.popitem(last=False)
        return split


def _identity(loader):
    # A task's loader arrives unpickled, a new object each time: equal loaders pickle equally.
    try:
        return pickle.dumps(loader)
    except Exception:  # a local function: only usable in this process, where it is one object
        return loader


def forget_splits() -> None:
    """Drop this process's cached splits (the serial path does at the end of a study)."""
    with _splits_lock:
        _splits.clear()


def _at_least_one(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be an integer >= 1, got {text!r}")
    return value


def add_execution_args(ap: argparse.ArgumentParser) -> None:
    """``--threads``, ``--workers``, ``--scheduler`` and ``--no-progress``.

    Args:
        ap: the parser to extend.
    """
    ap.add_argument("--threads", type=_at_least_one, default=1,
                    help="threads per trial (booster and Numba), in every worker")
    ap.add_argument("--workers", type=_at_least_one, default=1,
                    help="trials run at once in a local pool of processes (1: one after another "
                         "in this process)")
    ap.add_argument("--scheduler", default=None, metavar="ADDRESS",
                    help="run the trials on this dask.distributed cluster (e.g. "
                         "tcp://host:8786); its workers must import this repository's "
                         "benchmarks package")
    ap.add_argument("--no-progress", action="store_true", help="no progress bar")


@dataclass(frozen=True)
class Execution:
    """How to run tasks: ``workers`` local processes (1: in this process) or a Dask cluster at
    ``scheduler``; ``progress`` shows a bar."""

    workers: int = 1
    scheduler: Optional[str] = None
    progress: bool = True

    def __post_init__(self):
        if isinstance(self.workers, bool) or not isinstance(self.workers, int) \
                or self.workers < 1:
            raise ValueError(f"workers must be an integer >= 1 (got {self.workers!r}): use "
                             "--workers 1 to run the trials in this process")
        if self.scheduler is not None and self.workers != 1:
            raise ValueError("choose either --workers N (a local pool) or --scheduler ADDRESS "
                             "(a Dask cluster, whose workers set the parallelism), not both")

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> "Execution":
        """The execution options of parsed :func:`add_execution_args` options."""
        return cls(workers=args.workers, scheduler=args.scheduler,
                   progress=not args.no_progress)

    def describe(self) -> str:
        """Where the trials ran, for a report's environment line."""
        if self.scheduler:
            return f"trials on the Dask cluster at {self.scheduler}"
        if self.workers > 1:
            return f"trials in {self.workers} local worker processes"
        return "trials one after another in one process"


def _never_failed(result) -> bool:
    return False


def run_tasks(fn: Callable, tasks: list, execution: Execution, desc: str = "trials",
              failed: Callable = _never_failed) -> Iterator[tuple]:
    """Run ``fn(task)`` for every task and yield ``(task, result)`` as each one finishes.

    The bar counts finished tasks and those ``failed(result)`` says failed, with tqdm's estimate
    of the time left. An exception raised by ``fn`` (or a worker lost) stops the run: pending
    tasks are cancelled and the exception is raised here, after the results already yielded.

    Args:
        fn: a picklable function of one task (module-level, or a ``functools.partial`` of one).
        tasks: the tasks, in the order to submit them.
        execution: where to run them.
        desc: the bar's label.
        failed: ``result -> bool``, counted on the bar as failed.

    Returns:
        An iterator of ``(task, result)`` in completion order (task order when serial).
    """
    from tqdm.auto import tqdm

    bar = tqdm(total=len(tasks), desc=desc, unit="trial", disable=not execution.progress,
               smoothing=0.05)
    n_failed = 0
    bar.set_postfix_str("failed 0")
    try:
        for index, result in _completed(fn, tasks, execution):
            if failed(result):
                n_failed += 1
                bar.set_postfix_str(f"failed {n_failed}", refresh=False)
            bar.update(1)
            yield tasks[index], result
    finally:
        bar.close()


def _completed(fn, tasks, execution):
    if not tasks:
        return
    if execution.scheduler:
        yield from _on_dask(fn, tasks, execution.scheduler)
    elif execution.workers > 1:
        yield from _in_pool(fn, tasks, execution.workers)
    else:
        try:
            for index, task in enumerate(tasks):
                yield index, fn(task)
        finally:
            forget_splits()  # the parent keeps no data after the study


def _in_pool(fn, tasks, workers):
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor, as_completed

    pool = ProcessPoolExecutor(min(workers, len(tasks)),
                               mp_context=multiprocessing.get_context("spawn"))
    futures = {}
    finished = False
    try:
        futures = {pool.submit(fn, task): index for index, task in enumerate(tasks)}
        for future in as_completed(futures):
            yield futures[future], future.result()
        finished = True
    finally:
        # On an error or an interruption do not wait for the other running trials.
        pool.shutdown(wait=finished, cancel_futures=True)


def _on_dask(fn, tasks, address):
    from distributed import Client, as_completed

    client = Client(address)
    futures = []
    try:
        _check_workers_import_benchmarks(client, address)
        futures = client.map(fn, tasks, pure=False)  # unique keys: no deduplication
        index = {future.key: i for i, future in enumerate(futures)}
        for future in as_completed(futures):
            yield index[future.key], future.result()
    finally:
        if futures:
            client.cancel(futures)
        client.close()


def _check_workers_import_benchmarks(client, address):
    def importable():  # sent by value: it must not need the benchmarks package itself
        import importlib.util
        return importlib.util.find_spec("benchmarks") is not None

    missing = [w for w, ok in client.run(importable).items() if not ok]
    if missing:
        raise RuntimeError(f"the Dask workers {missing} at {address} cannot import the "
                           "benchmarks package: put the repository on their PYTHONPATH "
                           "(e.g. PYTHONPATH=/path/to/repo dask worker ADDRESS)")
