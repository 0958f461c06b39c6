"""Independent reference implementations for the test suite.

Everything here is written from the definitions (the project brief, the StochasticRank paper
sections 3-5 and supplement C/D), deliberately without looking at the package's kernels:

* ranking metrics of one *ordered* label list, computed from scratch (scalar loops and a
  vectorised batch form used by the brute-force estimators);
* tie policies by explicit enumeration of the orderings of tied blocks;
* a brute-force CCS gradient: for every document ``i`` and every noise row, ``i`` is removed
  and explicitly re-inserted at every slot of the others' noisy order, the metric of every
  resulting list is recomputed from scratch, and the jumps are weighted with the conditional
  density of ``i``'s score at the breakpoints;
* a brute-force REINFORCE gradient and the centring / Scale-Free-Acceleration post-processing;
* random grouped-data generators (with heavy ties).
"""

from __future__ import annotations

import itertools
import math

import numpy as np

# ----------------------------------------------------------------------------------------
# Per-document transforms of the labels
# ----------------------------------------------------------------------------------------


def dcg_gain(labels, gain="exp2"):
    labels = np.asarray(labels, dtype=np.float64)
    return np.exp2(labels) - 1.0 if gain == "exp2" else labels.copy()


def err_prob(labels, grade_max=None):
    labels = np.asarray(labels, dtype=np.float64)
    if grade_max is None:
        return labels.copy()
    return (np.exp2(labels) - 1.0) / 2.0 ** grade_max


# ----------------------------------------------------------------------------------------
# Scalar metrics of one ordered list (plain loops, straight from the definitions)
# ----------------------------------------------------------------------------------------


def _cut(k, n):
    return n if k is None else min(k, n)


def dcg_list(ordered, k=None, gain="exp2"):
    total = 0.0
    for p in range(_cut(k, len(ordered))):
        r = float(ordered[p])
        g = (2.0 ** r - 1.0) if gain == "exp2" else r
        total += g / math.log2(p + 2)
    return total


def idcg(labels, k=None, gain="exp2"):
    return dcg_list(sorted(labels, reverse=True), k, gain)


def ndcg_list(ordered, k=None, gain="exp2", empty=1.0):
    ideal = idcg(ordered, k, gain)
    if ideal == 0.0:
        return empty
    return dcg_list(ordered, k, gain) / ideal


def err_list(ordered, k=None, grade_max=None):
    total, still = 0.0, 1.0
    for p in range(_cut(k, len(ordered))):
        r = float(ordered[p])
        prob = r if grade_max is None else (2.0 ** r - 1.0) / 2.0 ** grade_max
        total += still * prob / (p + 1)
        still *= 1.0 - prob
    return total


def rr_list(ordered, k=None, threshold=0.0):
    for p in range(_cut(k, len(ordered))):
        if ordered[p] > threshold:
            return 1.0 / (p + 1)
    return 0.0


def pfound_list(ordered, k=None, decay=0.85):
    total, look = 0.0, 1.0
    for p in range(_cut(k, len(ordered))):
        r = float(ordered[p])
        total += look * r
        look *= (1.0 - r) * decay
    return total


def filtered_dcg_list(ordered_scores, ordered, k=None, gain="exp2"):
    """Position-discounted DCG of the documents (in the given order) scored above 0."""
    total, position = 0.0, 0
    for s, r in zip(ordered_scores, ordered):
        if s > 0.0 and (k is None or position < k):
            g = (2.0 ** float(r) - 1.0) if gain == "exp2" else float(r)
            total += g / (position + 1)
            position += 1
    return total


def precision_list(ordered, k, threshold=0.0):
    hits = sum(1 for p in range(min(k, len(ordered))) if ordered[p] > threshold)
    return hits / k


def ap_list(ordered, k=None, threshold=0.0, empty=1.0):
    n_rel = sum(1 for r in ordered if r > threshold)
    if n_rel == 0:
        return empty
    hits, total = 0, 0.0
    for p in range(_cut(k, len(ordered))):
        if ordered[p] > threshold:
            hits += 1
            total += hits / (p + 1)
    return total / n_rel


def recall_list(ordered, k=None, threshold=0.0):
    """Recall@k of one ordered label list, from its definition: the share of the relevant
    documents (``label > threshold``) in the top ``k``; 1 without relevant documents."""
    n_rel = sum(1 for r in ordered if r > threshold)
    cut = len(ordered) if k is None else min(k, len(ordered))
    return sum(1 for r in ordered[:cut] if r > threshold) / n_rel if n_rel else 1.0


def metric_list(metric, ordered, k=None, *, gain="exp2", grade_max=None, threshold=0.0,
                empty=None, decay=0.85):
    """Metric of one ordered label list. ``empty``: value when nothing is relevant (NDCG/MAP)."""
    metric = metric.upper()
    if metric == "DCG":
        return dcg_list(ordered, k, gain)
    if metric == "NDCG":
        return ndcg_list(ordered, k, gain, 1.0 if empty is None else empty)
    if metric == "ERR":
        return err_list(ordered, k, grade_max)
    if metric == "MRR":
        return rr_list(ordered, k, threshold)
    if metric == "PFOUND":
        return pfound_list(ordered, k, decay)
    if metric == "PRECISION":
        return precision_list(ordered, k, threshold)
    if metric == "MAP":
        return ap_list(ordered, k, threshold, 1.0 if empty is None else empty)
    if metric == "RECALL":
        return recall_list(ordered, k, threshold)
    raise ValueError(metric)


# ----------------------------------------------------------------------------------------
# Orderings of a query under the tie policies (explicit enumeration)
# ----------------------------------------------------------------------------------------


def order_with_ties(scores, labels, ties):
    """Document indices by score descending; ties broken by ``ties`` (worst/best/input_order)."""
    idx = list(range(len(scores)))
    if ties == "worst":
        key = lambda i: (-scores[i], labels[i], i)  # noqa: E731
    elif ties == "best":
        key = lambda i: (-scores[i], -labels[i], i)  # noqa: E731
    elif ties == "input_order":
        key = lambda i: (-scores[i], i)  # noqa: E731
    else:
        raise ValueError(ties)
    return sorted(idx, key=key)


def all_tie_orderings(scores):
    """Every ordering of the documents consistent with the scores (permute each tied block)."""
    scores = np.asarray(scores, dtype=np.float64)
    values = sorted(set(scores.tolist()), reverse=True)
    blocks = [[i for i in range(len(scores)) if scores[i] == v] for v in values]
    for perms in itertools.product(*(itertools.permutations(b) for b in blocks)):
        yield [i for block in perms for i in block]


def tie_policy_values(metric, scores, labels, k=None, **opts):
    """(min, max, mean) of the metric over all orderings of the tied blocks."""
    labels = np.asarray(labels, dtype=np.float64)
    vals = [metric_list(metric, labels[list(o)], k, **opts) for o in all_tie_orderings(scores)]
    return min(vals), max(vals), float(np.mean(vals))


def grouped_metric(metric, scores, labels, offs, k=None, ties="worst", **opts):
    """Per-query values under ``ties`` in {worst, best, input_order, expected} (enumeration)."""
    out = []
    for lo, hi in zip(offs[:-1], offs[1:]):
        s, r = np.asarray(scores[lo:hi]), np.asarray(labels[lo:hi], dtype=np.float64)
        if hi == lo:
            out.append(np.nan)  # an empty query is no query (NaN per query, never averaged)
            continue
        if ties == "expected":
            vals = [metric_list(metric, r[list(o)], k, **opts) for o in all_tie_orderings(s)]
            out.append(float(np.mean(vals)) if vals else np.nan)
        else:
            out.append(metric_list(metric, r[order_with_ties(s, r, ties)], k, **opts))
    return np.array(out)


# ----------------------------------------------------------------------------------------
# Vectorised metric of many ordered label lists (last axis = positions)
# ----------------------------------------------------------------------------------------


def reach_depth_reference(reach, tail=1e-2):
    """How many relevant documents MRR's reach counts: those with ``reach^(j-1) >= tail``
    (None: all, at reach 1)."""
    if reach >= 1.0:
        return None
    return sum(1 for j in range(200) if reach ** j >= tail)


def metric_batch(metric, lists, k=None, *, gain="exp2", grade_max=None, threshold=0.0,
                 ideal=None, decay=0.85, reach=0.0):
    """Metric of each ordered list along the last axis, from scratch.

    ``ideal``: IDCG for NDCG (the caller computes it once; 0 is returned where it is 0).
    ``reach``: MRR's training value ``sum_{j <= K} reach^(j-1) / (p_j + 1)`` over the relevant
    documents in rank order (``K`` = :func:`reach_depth_reference`).
    FILTEREDDCG: a NaN label marks the virtual document at score 0; only the documents before
    it count.
    """
    lists = np.asarray(lists, dtype=np.float64)
    n = lists.shape[-1]
    pos = np.arange(n, dtype=np.float64)
    inside = pos < _cut(k, n)
    if metric in ("DCG", "NDCG"):
        w = np.where(inside, 1.0 / np.log2(pos + 2.0), 0.0)
        val = (dcg_gain(lists, gain) * w).sum(axis=-1)
        if metric == "NDCG":
            val = val / ideal if ideal > 0 else np.zeros_like(val)
        return val
    if metric == "ERR":
        prob = err_prob(lists, grade_max)
        still = np.cumprod(1.0 - prob, axis=-1)
        before = np.concatenate([np.ones_like(still[..., :1]), still[..., :-1]], axis=-1)
        w = np.where(inside, 1.0 / (pos + 1.0), 0.0)
        return (prob * before * w).sum(axis=-1)
    if metric == "MRR" and reach > 0.0:
        rel = (lists > threshold).astype(np.float64)
        above = np.cumsum(rel, axis=-1) - rel   # relevant documents before each position
        depth = reach_depth_reference(reach)
        kept = np.ones_like(above, dtype=bool) if depth is None else above < depth
        w = np.where(inside, 1.0 / (pos + 1.0), 0.0)
        return (rel * np.where(kept, reach ** above, 0.0) * w).sum(axis=-1)
    if metric == "MRR":
        rel = lists > threshold
        first = np.argmax(rel, axis=-1)
        ok = rel.any(axis=-1) & (first < _cut(k, n))
        return np.where(ok, 1.0 / (first + 1.0), 0.0)
    if metric == "PFOUND":
        look = np.cumprod((1.0 - lists) * decay, axis=-1)
        before = np.concatenate([np.ones_like(look[..., :1]), look[..., :-1]], axis=-1)
        return (lists * before * inside).sum(axis=-1)
    if metric == "FILTEREDDCG":
        above_virtual = np.cumsum(np.isnan(lists), axis=-1) == 0
        g = np.where(above_virtual, dcg_gain(np.nan_to_num(lists), gain), 0.0)
        w = np.where(inside, 1.0 / (pos + 1.0), 0.0)
        return (g * w).sum(axis=-1)
    if metric == "PRECISION":
        rel = (lists > threshold).astype(np.float64)
        return (rel * inside).sum(axis=-1) / k
    if metric == "MAP":
        rel = (lists > threshold).astype(np.float64)
        hits = np.cumsum(rel, axis=-1)
        n_rel = rel.sum(axis=-1)
        total = (rel * hits / (pos + 1.0) * inside).sum(axis=-1)
        return np.where(n_rel > 0, total / np.maximum(n_rel, 1.0), 0.0)
    raise ValueError(metric)


def query_ideal(metric, labels, k=None, gain="exp2"):
    if metric == "NDCG":
        return idcg(list(labels), k, gain)
    return None


# ----------------------------------------------------------------------------------------
# Brute-force estimators
# ----------------------------------------------------------------------------------------


def _normal_pdf(x, mean, sd):
    return np.exp(-0.5 * ((x - mean) / sd) ** 2) / (sd * math.sqrt(2.0 * math.pi))


def ccs_raw_query(z, labels, noise, *, metric, top=None, sigma=1.0, mu=0.0,
                  conditioning="translation", gain="exp2", grade_max=None, threshold=0.0,
                  decay=0.85, reach=0.0):
    """Raw (uncentred, no SFA) CCS estimate for one query, averaged over the noise rows.

    For each document i and noise row: the other documents sit at y_k = a_k + sigma e_k, i is
    re-inserted just above / just below every y_k, the loss (-metric) of each list is
    recomputed from scratch, and the jump at y_k is weighted by the density of i's score there.
    """
    z = np.asarray(z, dtype=np.float64)
    r = np.asarray(labels, dtype=np.float64)
    noise = np.atleast_2d(np.asarray(noise, dtype=np.float64))
    n = z.shape[0]
    grad = np.zeros(n)
    if metric == "FILTEREDDCG":  # one document still crosses the virtual one at 0
        return filtered_ccs_raw_query(z, r, noise, top=top, sigma=sigma, mu=mu, gain=gain)
    if n < 2:
        return grad
    ideal = query_ideal(metric, r, top, gain)
    if metric == "NDCG" and ideal == 0.0:
        return grad
    opts = dict(gain=gain, grade_max=grade_max, threshold=threshold, ideal=ideal, decay=decay,
                reach=reach)
    a = z - sigma * mu * r
    y = a[None, :] + sigma * noise  # (R, n)
    # slot template: list position j of "i inserted at slot p" -> index into [others..., i]
    tmpl = np.empty((n, n), dtype=np.int64)
    for p in range(n):
        for j in range(n):
            tmpl[p, j] = j if j < p else (n - 1 if j == p else j - 1)
    for i in range(n):
        others = np.array([k for k in range(n) if k != i])
        y_o = y[:, others]
        order = np.argsort(-y_o, axis=1, kind="stable")
        y_sorted = np.take_along_axis(y_o, order, axis=1)  # (R, n-1) descending
        ext = np.concatenate([r[others][order], np.full((y.shape[0], 1), r[i])], axis=1)
        lists = ext[:, tmpl]  # (R, n slots, n positions)
        loss = -metric_batch(metric, lists, top, **opts)  # (R, n)
        jumps = loss[:, :-1] - loss[:, 1:]  # just above y_(j) minus just below y_(j)
        if conditioning == "coordinate":
            mean, sd = a[i], sigma
        elif conditioning == "catboost_literal":
            # CatBoost 1.2.10's unit-mismatched conditional mean (TStochasticRankError in its
            # catboost/private/libs/algo_helpers/error_functions.cpp sums the *unit* normals):
            # (sum of unit normals - sigma * e_i) / (n - 1); equal to "translation" at sigma=1.
            mean = a[i] + (noise.sum(axis=1, keepdims=True) - sigma * noise[:, i:i + 1]) / (n - 1)
            sd = sigma * math.sqrt(n / (n - 1.0))
        else:
            mean = a[i] + sigma * noise[:, others].mean(axis=1, keepdims=True)
            sd = sigma * math.sqrt(n / (n - 1.0))
        grad[i] = np.mean(np.sum(jumps * _normal_pdf(y_sorted, mean, sd), axis=1))
    return grad


def filtered_ccs_raw_query(z, r, noise, *, top=None, sigma=1.0, mu=0.0, gain="exp2"):
    """Brute-force CCS for FilteredDCG: the others are the real documents at their noisy scores
    plus a virtual document (label NaN) at the fixed score 0; document i is re-inserted at every
    slot of that list, each list scored from scratch; coordinate conditioning N(a_i, sigma^2)
    (the loss is not translation invariant). Works for one document too."""
    n = z.shape[0]
    grad = np.zeros(n)
    a = z - sigma * mu * r
    y = a[None, :] + sigma * noise
    for i in range(n):
        others = [k for k in range(n) if k != i]
        for row in range(y.shape[0]):
            y_o = np.concatenate([y[row, others], [0.0]])
            r_o = np.concatenate([r[others], [np.nan]])
            order = np.argsort(-y_o, kind="stable")
            y_sorted, r_sorted = y_o[order], r_o[order]
            lists = np.array([np.concatenate([r_sorted[:slot], [r[i]], r_sorted[slot:]])
                              for slot in range(n + 1)])
            loss = -metric_batch("FILTEREDDCG", lists, top, gain=gain)
            jumps = loss[:-1] - loss[1:]
            grad[i] += np.sum(jumps * _normal_pdf(y_sorted, a[i], sigma)) / y.shape[0]
    return grad


def reinforce_raw_query(z, labels, noise, *, metric, top=None, sigma=1.0, mu=0.0, gain="exp2",
                        grade_max=None, threshold=0.0):
    """mean_k (L(a + sigma e_k) - L(a)) e_k / sigma, L(a) with worst ties."""
    z = np.asarray(z, dtype=np.float64)
    r = np.asarray(labels, dtype=np.float64)
    noise = np.atleast_2d(np.asarray(noise, dtype=np.float64))
    n = z.shape[0]
    if n < 2:
        return np.zeros(n)
    ideal = query_ideal(metric, r, top, gain)
    if metric == "NDCG" and ideal == 0.0:
        return np.zeros(n)
    opts = dict(gain=gain, grade_max=grade_max, threshold=threshold, ideal=ideal)
    a = z - sigma * mu * r
    base = -metric_batch(metric, r[order_with_ties(a, r, "worst")], top, **opts)
    y = a[None, :] + sigma * noise
    order = np.argsort(-y, axis=1, kind="stable")
    loss = -metric_batch(metric, r[order], top, **opts)
    return ((loss - base)[:, None] * noise).mean(axis=0) / sigma


def center_sfa_query(g, z, *, center=True, sfa=1.0, nu=0.01, translation_invariant=True):
    g = np.array(g, dtype=np.float64)
    n = g.shape[0]
    if not translation_invariant:  # FilteredDCG: no centring, radial direction z itself
        z = np.asarray(z, dtype=np.float64)
        if sfa > 0 and n > 0:
            g = g - sfa * np.dot(g, z) / (np.linalg.norm(z) + nu) ** 2 * z
        return g
    if n < 2:
        return np.zeros(n)
    if center:
        g = g - g.mean()
    if sfa > 0 and n > 2:
        c = np.asarray(z, dtype=np.float64) - np.mean(z)
        g = g - sfa * np.dot(g, c) / (np.linalg.norm(c) + nu) ** 2 * c
    return g


def brute_gradient(scores, labels, offs, noise, *, estimator="ccs", center=True, sfa=1.0,
                   nu=0.01, **kw):
    """Full grouped brute-force gradient (loss convention) with centring and SFA."""
    out = np.zeros(len(scores))
    noise = np.atleast_2d(noise)
    filtered = kw.get("metric") == "FILTEREDDCG"
    for lo, hi in zip(offs[:-1], offs[1:]):
        if hi - lo < (1 if filtered else 2):
            continue
        args = (scores[lo:hi], labels[lo:hi], noise[:, lo:hi])
        if estimator == "ccs":
            raw = ccs_raw_query(*args, **kw)
        else:
            kw2 = {k: v for k, v in kw.items() if k != "conditioning"}
            raw = reinforce_raw_query(*args, **kw2)
        out[lo:hi] = center_sfa_query(raw, scores[lo:hi], center=center, sfa=sfa, nu=nu,
                                      translation_invariant=not filtered)
    return out


# ----------------------------------------------------------------------------------------
# Vectorised Monte Carlo of the smoothed loss (statistical tests)
# ----------------------------------------------------------------------------------------


def smoothed_loss_samples(a, labels, eps, sigma, metric, top=None, **opts):
    """L(a + sigma * eps) for each row of eps (-metric of the noisy order)."""
    r = np.asarray(labels, dtype=np.float64)
    ideal = query_ideal(metric, r, top, opts.get("gain", "exp2"))
    order = np.argsort(-(a[None, :] + sigma * eps), axis=1, kind="stable")
    return -metric_batch(metric, r[order], top, ideal=ideal, **opts)


def score_function_gradient(a, labels, sigma, metric, top=None, n=1_000_000, seed=0,
                            chunk=250_000, **opts):
    """Stein / score-function estimate of d/da E L(a + sigma e), with a control-variate baseline.

    Returns (mean, standard error) per coordinate. The baseline is the loss of an independent
    pilot batch's mean, so the estimate stays unbiased.
    """
    a = np.asarray(a, dtype=np.float64)
    d = a.shape[0]
    rng = np.random.default_rng(seed)
    pilot = smoothed_loss_samples(a, labels, rng.standard_normal((20_000, d)), sigma, metric,
                                  top, **opts)
    base = pilot.mean()
    s1 = np.zeros(d)
    s2 = np.zeros(d)
    done = 0
    while done < n:
        m = min(chunk, n - done)
        e = rng.standard_normal((m, d))
        loss = smoothed_loss_samples(a, labels, e, sigma, metric, top, **opts)
        x = (loss - base)[:, None] * e / sigma
        s1 += x.sum(axis=0)
        s2 += (x * x).sum(axis=0)
        done += m
    mean = s1 / n
    var = s2 / n - mean ** 2
    return mean, np.sqrt(var / n)


# ----------------------------------------------------------------------------------------
# Data generators
# ----------------------------------------------------------------------------------------


def random_labels(rng, n, metric, *, grade_max=None, max_grade=4):
    """Labels valid for ``metric``: grades, or ERR probabilities including exact 0 and 1."""
    if metric in ("ERR", "PFOUND") and grade_max is None:
        choices = np.array([0.0, 0.0, 0.25, 0.5, 0.75, 1.0, 0.1, 0.9])
        return rng.choice(choices, n)
    top = max_grade if grade_max is None else int(grade_max)
    return rng.integers(0, top + 1, n).astype(np.float64)


def tied_scores(rng, n, levels=3):
    """Scores drawn from a few integer values (heavy ties)."""
    return rng.integers(0, levels, n).astype(np.float64)


def random_query_set(rng, sizes, metric, *, tie_levels=3, **kw):
    sizes = np.asarray(sizes, dtype=np.int64)
    offs = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    n = int(offs[-1])
    scores = tied_scores(rng, n, tie_levels) if tie_levels else rng.normal(size=n)
    labels = random_labels(rng, n, metric, **kw)
    return scores, labels, offs


# ----------------------------------------------------------------------------------------
# Shared by the baseline and adapter tests
# ----------------------------------------------------------------------------------------


def separated_queries(seed, sizes=(2, 5, 9, 14), max_label=3):
    """Random grouped data with well separated scores (no near-ties: FD never crosses a swap)."""
    rng = np.random.default_rng(seed)
    offs = np.concatenate(([0], np.cumsum(sizes))).astype(np.int64)
    n = offs[-1]
    while True:
        scores = rng.normal(scale=1.5, size=n)
        gaps = [np.diff(np.sort(scores[a:b])) for a, b in zip(offs[:-1], offs[1:]) if b - a > 1]
        if min(g.min() for g in gaps) > 1e-3:
            break
    labels = rng.integers(0, max_label + 1, size=n).astype(float)
    labels[offs[0]] = max_label  # at least one relevant document in the first query
    return scores, labels, offs


def central_differences(f, x, h, component=False):
    """``(f(x + h e_i) - f(x - h e_i)) / 2h`` for every coordinate ``i``; ``component``: of
    the ``i``-th output of a vector-valued ``f`` (the diagonal of its Jacobian)."""
    out = np.empty_like(x)
    for i in range(x.size):
        xp, xm = x.copy(), x.copy()
        xp[i] += h
        xm[i] -= h
        fp, fm = f(xp), f(xm)
        out[i] = ((fp[i] - fm[i]) if component else (fp - fm)) / (2 * h)
    return out


def fd_grad(f, x, h=1e-6):
    return central_differences(f, x, h)


def fd_hess_diag(grad_fn, x, h=1e-5):
    return central_differences(grad_fn, x, h, component=True)


class Recorder:
    """Protocol objective that records the iterations it is asked for."""

    def __init__(self, inner):
        self.inner = inner
        self.iterations = []

    def grad_hess(self, scores, labels, query_offsets, iteration=0):
        self.iterations.append(iteration)
        return self.inner.grad_hess(scores, labels, query_offsets, iteration=iteration)


def assert_matches_brute_force(scores, labels, offs, noise, tol=1e-10, **kw):
    """The fast estimator equals :func:`brute_gradient` with the same noise to ``tol``;
    returns both gradients ``(fast, brute)``."""
    from stochrank_objectives import stochastic_rank_gradient

    fast = stochastic_rank_gradient(scores, labels, offs, noise=noise, **kw)
    ref = brute_gradient(scores, labels, offs, noise, **kw)
    assert fast.shape == ref.shape
    assert np.all(np.isfinite(fast))
    err = np.max(np.abs(fast - ref), initial=0.0)
    scale = np.max(np.abs(ref), initial=0.0)
    assert err <= tol, f"max |fast - brute| = {err:.3g} (scale {scale:.3g}) for {kw}"
    return fast, ref


def on_one_and_two_threads(fn):
    """``(fn() on 1 numba thread, fn() on 2)``, restoring the thread count."""
    import numba

    old = numba.get_num_threads()
    try:
        numba.set_num_threads(1)
        one = fn()
        numba.set_num_threads(min(2, numba.config.NUMBA_NUM_THREADS))
        two = fn()
    finally:
        numba.set_num_threads(old)
    return one, two


def predict_without_the_package(tmp_path, X, load_and_predict):
    """Predictions of a saved model in a fresh interpreter that never imports this package.

    ``load_and_predict``: Python lines that read the model from ``tmp_path`` and set ``pred``
    from ``X`` (already loaded); ``X`` is passed through ``X.npy``.
    """
    import subprocess
    import sys

    np.save(tmp_path / "X.npy", X)
    code = ("import sys, numpy as np\nX = np.load('X.npy')\n" + load_and_predict
            + "np.save('pred.npy', pred)\n"
            "assert not any(m.startswith('stochrank_objectives') for m in sys.modules)\n")
    subprocess.run([sys.executable, "-c", code], cwd=tmp_path, check=True, timeout=120)
    return np.load(tmp_path / "pred.npy")


def train_and_vali_arrays(train_vali, groups):
    """``(X, y, g, X_val, y_val, g_val)`` of two RankingData splits, ``groups`` naming the group
    field: ``"query_offsets"`` or ``"qid"``."""
    train, vali = train_vali
    return train.X, train.y, getattr(train, groups), vali.X, vali.y, getattr(vali, groups)
