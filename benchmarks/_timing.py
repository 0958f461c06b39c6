"""What the speed benchmarks time with: an objective that records its ``grad_hess`` and
``gradient_hessian`` calls,
per-iteration timestamps from the boosters' callbacks, and paired medians of alternating runs
(so that load drift on a shared machine hits every side of a ratio)."""

from __future__ import annotations

import time

import numpy as np

from stochrank_objectives.objectives import grouped_grad_hess


class TimedObjective:
    """Forwards everything to the wrapped objective and records each ``grad_hess`` or
    ``gradient_hessian`` call as ``(end timestamp, seconds)``, so the calls can be attributed
    to iterations."""

    def __init__(self, objective):
        self._objective = objective
        self.calls = []

    def grad_hess(self, scores, labels, query_offsets, iteration=0):
        start = time.perf_counter()
        out = self._objective.grad_hess(scores, labels, query_offsets, iteration=iteration)
        end = time.perf_counter()
        self.calls.append((end, end - start))
        return out

    def gradient_hessian(self, scores, data, iteration=0):
        """What the adapters call every round (over the training's validated data)."""
        start = time.perf_counter()
        out = grouped_grad_hess(self._objective, scores, data, iteration)
        end = time.perf_counter()
        self.calls.append((end, end - start))
        return out

    def __getattr__(self, name):  # metric_spec etc. (CatBoost's default eval metric)
        return getattr(self._objective, name)

    def __deepcopy__(self, memo):  # adapters share, never copy, the objective
        return self

    def __repr__(self):
        return f"TimedObjective({self._objective!r})"


class Stamps:
    """Per-iteration timestamps from a library callback."""

    def __init__(self):
        self.t = []
        #: the tree-building work of each tree, where the booster's model shows it (LightGBM:
        #: :func:`lightgbm_histogram_rows`); None elsewhere
        self.work = None

    def mark(self):
        self.t.append(time.perf_counter())

    def per_iteration(self, warmup: int) -> np.ndarray:
        return np.diff(np.asarray(self.t))[warmup:]

    def objective_per_iteration(self, calls, warmup: int) -> np.ndarray:
        """Seconds inside grad_hess during each kept iteration (calls ending in its interval)."""
        t = np.asarray(self.t)
        ends = np.array([c[0] for c in calls])
        secs = np.array([c[1] for c in calls])
        out = np.zeros(t.size - 1)
        idx = np.searchsorted(t, ends, side="left") - 1  # interval (t[i], t[i+1]]
        ok = (idx >= 0) & (idx < out.size)
        np.add.at(out, idx[ok], secs[ok])
        return out[warmup:]


def lightgbm_histogram_rows(booster) -> np.ndarray:
    """Rows whose histograms each tree of a LightGBM ``booster`` built: the root's, plus the
    smaller child's of each split. LightGBM builds the histogram of the child with fewer rows
    and gets its sibling's by subtracting it from the parent's (LightGBM's documentation,
    Features, "histogram subtraction"), so for trees of the same number of leaves this is
    what the tree-building time follows: a tree whose splits cut the rows more evenly builds
    more histogram rows."""
    def count(node):  # a tree without a split is one leaf, without even a leaf_index
        return node["internal_count"] if "split_index" in node else node.get("leaf_count", 0)

    rows = []
    for tree in booster.dump_model()["tree_info"]:
        root = tree["tree_structure"]
        built = count(root)
        stack = [root]
        while stack:
            node = stack.pop()
            if "split_index" in node:
                left, right = node["left_child"], node["right_child"]
                built += min(count(left), count(right))
                stack.extend((left, right))
        rows.append(built)
    return np.asarray(rows, dtype=np.int64)


class CatBoostStamp:
    """A CatBoost callback that calls ``stamp()`` after every iteration."""

    def __init__(self, stamp):
        self.stamp = stamp

    def after_iteration(self, info) -> bool:
        self.stamp()
        return True


def paired_median_times(fns, repeats: int):
    """Median seconds of each function of ``fns``, run in turn so load drift hits all."""
    for fn in fns:  # warm-up (compilation, caches)
        fn()
    times = [[] for _ in fns]
    for _ in range(repeats):
        for fn, bucket in zip(fns, times):
            start = time.perf_counter()
            fn()
            bucket.append(time.perf_counter() - start)
    return [float(np.median(bucket)) for bucket in times]
