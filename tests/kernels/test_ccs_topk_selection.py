"""The CCS kernels' selection path (order only the breakpoints that can jump) against their
full-sort path with the same noise.

For a top-k loss only the ``m = min(k, n - 1) + 1`` best noisy scores can be breakpoints with a
jump (fewer when continuations are 0: none below the second zero); ``ccs_query`` and
``ccs_counting_query`` then select those ``m`` instead of sorting the query. Forced selection
(``PATH_SELECT``, whenever possible) and the automatic rule (``PATH_AUTO``) must give the full
sort's sample (``PATH_SORT``, the kernel as it was) to 1e-10 on random queries of 2 to 500
documents with tied scores, equal scores (iteration 0: the clustered means' Taylor series) and
scores a thousandth of a deviation apart, for every metric and both conditionings; through the public
function, the seeded estimator must equal the per-query full-sort kernel on the same streams,
on one and two threads.
"""

from __future__ import annotations

import math
import zlib

import numpy as np
import pytest
from _reference import on_one_and_two_threads, random_query_set

from stochrank_objectives import draw_noise, query_offsets_from_sizes, stochastic_rank_gradient
from stochrank_objectives.metric_table import METRIC_TABLE, PROBABILITY_GAIN, metric_row
from stochrank_objectives.objectives import MetricSpec
from stochrank_objectives.kernels.ccs import (
    PATH_AUTO,
    PATH_SELECT,
    PATH_SORT,
    CCSOptions,
    QueryMetric,
    ccs_counting_query,
    ccs_query,
)
from stochrank_objectives.kernels.ccs.gradient import QUERY_WORK
from stochrank_objectives.kernels.ccs.noisy_order import (INSERTION_SELECT_MAX,
                                                         _select_noisy_scores)

TOL = 1e-10

#: metric -> {case id: options} it is checked under (a metric not named here: its defaults,
#: under its display name)
OPTIONS = {
    "NDCG": {"NDCG": {"gain": "exp2"}},
    "DCG": {"DCG": {"gain": "linear"}},
    "ERR": {"ERR-prob": {},  # probabilities 0 and 1: zero continuations
            "ERR-grades": {"grade_max": 4.0}},
    "MRR": {"MRR-t0": {"threshold": 0.0}, "MRR-t2": {"threshold": 2.0}},
    "FILTEREDDCG": {"FilteredDCG": {"gain": "linear"}},
    "PRECISION": {"Precision": {}},
    "MAP": {"MAP": {"threshold": 1.0}},
}
METRICS = [pytest.param(name, opts, id=case) for name, row in METRIC_TABLE.items()
           for case, opts in OPTIONS.get(name, {row.display: {}}).items()]
#: metric -> the cutoff of the one-label check (a metric not named here: 10)
ONE_LABEL_TOP = {"PRECISION": 3}
#: metric -> ``(top, options)`` of the seeded-estimator check (a metric not named here:
#: ``(10, {})``)
ESTIMATOR_CASES = {"ERR": (10, {"grade_max": 4.0}), "MRR": (None, {}),
                   "FILTEREDDCG": (3, {})}
#: metric -> the cutoffs of the worst-case-order check (a metric not named here: 10 and 60),
#: and the options of a metric whose defaults do not take grades 0 .. 4
WORST_CASE_TOPS = {"MRR": (None,), "MAP": (5, 60)}
WORST_CASE_OPTIONS = {"ERR": {"grade_max": 4.0}}


def test_the_tables_name_metrics_and_their_options():
    # a key that is not (or no longer) a metric, or an option it does not take, would be a
    # silently unused exception
    assert set(OPTIONS) | set(ONE_LABEL_TOP) | set(ESTIMATOR_CASES) | set(WORST_CASE_TOPS) \
        | set(WORST_CASE_OPTIONS) <= set(METRIC_TABLE)
    options = [(name, opts) for name, cases in OPTIONS.items() for opts in cases.values()]
    options += [(name, opts) for name, (_, opts) in ESTIMATOR_CASES.items()]
    options += list(WORST_CASE_OPTIONS.items())
    for name, opts in options:
        assert set(opts) <= set(METRIC_TABLE[name].options), (name, opts)


SIZES = list(range(2, 41)) + [57, 64, 99, 128, 200, 333, 500]


def _query_args(metric, opts, top, scores, labels, noise):
    """The kernel arguments of one query as the objective builds them (FilteredDCG: with its
    virtual document at the fixed score 0 appended)."""
    spec = MetricSpec.make(metric, top, **opts)
    offs = np.array([0, scores.size])
    args = spec.kernel_args(labels, offs)
    gain, cont, pos_weight, t = args.gain, args.continuation, args.position_weights, args.cutoff
    if spec.needs_virtual_document:
        scores = np.append(scores, 0.0)
        gain = np.append(gain, 0.0)
        cont = np.append(cont, 0.0)
        noise = np.append(noise, 0.0)
    return spec, scores, gain, cont, noise, pos_weight, t, float(args.scale[0])


def _sample(spec, path, shifted, gain, cont, noise, pos_weight, t, scale, sigma, translation):
    n = shifted.size
    out = np.zeros(n)
    work = np.full(QUERY_WORK * n + 2, np.nan)  # stale scratch must not leak into the result
    index_work = np.full(2 * n, -1, dtype=np.int64)
    query = QueryMetric(gain, cont, pos_weight, t, scale)
    options = CCSOptions(translation=translation, window=9.0, path=path,
                         average=spec.row.average)
    if spec.is_counting:
        ccs_counting_query(shifted, noise, sigma, query, options, 1.0, out, work, index_work)
    else:
        ccs_query(shifted, noise, sigma, query, options, 1.0, out, work, index_work)
    return out


def random_kernel_args(rng, metric, opts, top, n, levels, translation):
    """``(spec, args)`` of one random query of ``n`` documents (``levels`` tied score levels,
    0 = distinct, 1 = all equal, -1 = within 1e-3 of 0), a random sigma and noise, for
    :func:`_sample`."""
    scores, labels, _ = random_query_set(rng, [n], metric, tie_levels=max(levels, 0))
    if levels == 1:  # every score equal, as at iteration 0
        scores = np.full(n, scores[0])
    elif levels < 0:  # nearly equal: within a thousandth of the noise
        scores = 1e-3 * rng.standard_normal(n)
    if metric_row(metric).virtual_document:  # scores about the virtual document's 0
        scores = scores - 1.0
    sigma = float(rng.choice([0.3, 1.0, 3.0]))
    noise = rng.standard_normal(n)
    spec, shifted, gain, cont, noise, pos_weight, t, scale = _query_args(
        metric, opts, top, scores, labels, noise)
    return spec, (shifted, gain, cont, noise, pos_weight, t, scale, sigma, translation)


@pytest.mark.parametrize("conditioning", ["translation", "coordinate"])
@pytest.mark.parametrize("top", [1, 3, 10, 40, None])  # 40: beyond BREAKPOINT_MAJOR_MAX
@pytest.mark.parametrize("metric,opts", METRICS)
def test_selection_equals_full_sort(metric, opts, top, conditioning):
    row = metric_row(metric)
    if row.needs_top and top is None:
        pytest.skip(f"{row.display} needs top: {row.needs_top}")
    rng = np.random.default_rng(zlib.crc32(repr((metric, opts, top, conditioning)).encode()))
    translation = conditioning == "translation" and not row.virtual_document
    compared = 0
    for n in SIZES:
        for levels in (3, 0, 1, -1):  # tied, distinct, equal, nearly equal scores
            spec, args = random_kernel_args(rng, metric, opts, top, n, levels, translation)
            full = _sample(spec, PATH_SORT, *args)
            for path in (PATH_SELECT, PATH_AUTO):
                fast = _sample(spec, path, *args)
                err = np.max(np.abs(fast - full))
                assert err <= TOL, f"n={n} path={path}: max |select - sort| = {err:.3g}"
            compared += int(np.any(full != 0.0))
    assert compared >= 10  # not vacuous (Precision@40 is flat on lists of <= 40)


@pytest.mark.parametrize("conditioning", ["translation", "coordinate"])
@pytest.mark.parametrize("metric,opts", [m for m in METRICS
                                         if not metric_row(m.values[0]).virtual_document])
def test_a_query_of_one_label_keeps_exact_zeros_at_equal_scores(metric, opts, conditioning):
    """At equal scores (the clustered means' Taylor series) a query of one label gets exactly
    the full sort's zeros: a rounding residue there would be scaled up to a unit gradient by
    the hessian's normalisation of a call where every query is flat. (FilteredDCG's virtual
    document is of another label: its jumps are not 0, and the residues of the others stay
    within TOL, :func:`test_selection_equals_full_sort`.)"""
    rng = np.random.default_rng(zlib.crc32(repr((metric, opts, conditioning)).encode()))
    translation = conditioning == "translation" and not metric_row(metric).virtual_document
    top = ONE_LABEL_TOP.get(metric, 10)
    for n in (40, 200):
        for label in (0.0, 0.5, 1.0):
            spec, shifted, gain, cont, noise, pos_weight, t, scale = _query_args(
                metric, opts, top, np.zeros(n), np.full(n, label), rng.standard_normal(n))
            args = (shifted, gain, cont, noise, pos_weight, t, scale, 0.3, translation)
            full = _sample(spec, PATH_SORT, *args)
            fast = _sample(spec, PATH_SELECT, *args)
            assert np.all(fast[full == 0.0] == 0.0), (n, label)
            assert np.max(np.abs(fast - full)) <= TOL


@pytest.mark.parametrize("metric,top,opts", [
    pytest.param(name, *ESTIMATOR_CASES.get(name, (10, {})), id=row.display)
    for name, row in METRIC_TABLE.items()])
def test_seeded_estimator_equals_full_sort_kernel_on_any_thread_count(metric, top, opts):
    """The public seeded estimator (automatic path) = the full-sort kernel summed per query
    over the same noise streams, bit-for-bit identical on one and two threads."""
    rng = np.random.default_rng(12)
    sizes = rng.integers(0, 300, 60)
    scores, labels, offs = random_query_set(rng, sizes, metric, tie_levels=4)
    scores = scores - 1.5
    kw = dict(metric=metric, top=top, sigma=0.7, mu=0.5, center=False, sfa=0.0, **opts)
    one, two = on_one_and_two_threads(lambda: stochastic_rank_gradient(
        scores, labels, offs, n_samples=2, seed=4, iteration=3, **kw))
    assert np.array_equal(one, two)
    noise = draw_noise(offs, 2, 4, 3)
    spec = MetricSpec.make(metric, top, **opts)
    shifted = scores - 0.5 * 0.7 * labels
    translation = not spec.needs_virtual_document
    ref = np.zeros(scores.size)
    for q in range(sizes.size):
        lo, hi = offs[q], offs[q + 1]
        if hi - lo < (1 if spec.needs_virtual_document else 2):
            continue
        for k in range(2):
            _, sh, gain, cont, nz, pos_weight, t, scale = _query_args(
                metric, opts, top, shifted[lo:hi], labels[lo:hi], noise[k, lo:hi])
            ref[lo:hi] += 0.5 * _sample(spec, PATH_SORT, sh, gain, cont, nz, pos_weight, t,
                                        scale, 0.7, translation)[:hi - lo]
    assert np.max(np.abs(one - ref)) <= TOL
    assert np.count_nonzero(one) > 100


def test_worst_case_order_still_selects_correctly():
    """Documents in ascending score order (every noisy score replaces the heap's minimum)."""
    n = 400
    offs = query_offsets_from_sizes([n])
    scores = np.linspace(-20.0, 20.0, n)
    labels = np.random.default_rng(3).integers(0, 5, n).astype(float)
    noise = np.random.default_rng(4).standard_normal(n)
    for metric, row in METRIC_TABLE.items():
        # probability labels (PFound): the grades / 4
        rows = labels / 4.0 if row.gain_kind == PROBABILITY_GAIN else labels
        for top in WORST_CASE_TOPS.get(metric, (10, 60)):
            spec, sh, gain, cont, nz, pos_weight, t, scale = _query_args(
                metric, WORST_CASE_OPTIONS.get(metric, {}), top, scores, rows, noise)
            args = (sh, gain, cont, nz, pos_weight, t, scale, 1.0, not row.virtual_document)
            full = _sample(spec, PATH_SORT, *args)
            err = np.max(np.abs(_sample(spec, PATH_SELECT, *args) - full))
            assert err <= TOL, (metric, top, err)
            assert np.count_nonzero(full) > 0, (metric, top)
    assert offs[-1] == n


def _assert_noisy_scores(got, expected):
    """The selected noisy scores ``a + sigma e``, to the rounding of one multiply-add: the
    kernel's machine code may fuse it (an FMA) where a fast-math caller holds the copy that
    a call binds to, NumPy never does."""
    np.testing.assert_allclose(got, expected, rtol=4e-16, atol=1e-300)


@pytest.mark.parametrize("m", [1, 2, 11, INSERTION_SELECT_MAX, INSERTION_SELECT_MAX + 1, 61])
@pytest.mark.parametrize("arrangement", ["random", "ascending", "descending"])
def test_selection_is_the_sorted_prefix_exactly(m, arrangement):
    """Both selections (insertion up to INSERTION_SELECT_MAX, the heap beyond) return the
    first ``m`` documents of the descending noisy order and their noisy scores, exactly, in
    any arrangement of the documents (ascending: every score enters the selection)."""
    n = 200
    rng = np.random.default_rng(m)
    shifted = rng.standard_normal(n) * 3.0
    if arrangement != "random":
        shifted = np.sort(shifted)[::-1 if arrangement == "descending" else 1].copy()
    noise = rng.standard_normal(n)
    sigma = 0.01 if arrangement != "random" else 0.7
    ys = np.empty(n)
    order = _select_noisy_scores(shifted, noise, sigma, m, ys, np.empty(m, dtype=np.int64))
    noisy = shifted + sigma * noise
    expected = np.argsort(-noisy, kind="stable")[:m]
    assert order.tolist() == expected.tolist()
    _assert_noisy_scores(ys[:m], noisy[expected])


def test_selection_matches_the_sort_on_many_random_queries():
    """NDCG@10's grown cutoffs (m = max(10, n / 10) + 1) on random lists of 33 to 600: the
    insertion's switch to the heap happens at any document, the last one included."""
    rng = np.random.default_rng(5)
    switched_late = 0
    for n in rng.integers(33, 600, 400):
        m = min(max(10, -(-int(n) // 10)), n - 1) + 1
        shifted = rng.standard_normal(n) + 0.5 * rng.integers(0, 5, n)
        if n % 3 == 0:  # ascending, then a few random: the switch comes late
            shifted = np.concatenate([np.sort(shifted[:-3]), shifted[-3:]])
            switched_late += 1
        noise = rng.standard_normal(n)
        ys = np.empty(n)
        order = _select_noisy_scores(shifted, noise, 0.2, m, ys, np.empty(m, dtype=np.int64))
        noisy = shifted + 0.2 * noise
        expected = np.argsort(-noisy, kind="stable")[:m]
        assert order.tolist() == expected.tolist(), n
        _assert_noisy_scores(ys[:m], noisy[expected])
    assert switched_late > 50


def _switch_at_last_document(m):
    """The list length at which ascending documents exhaust the insertion's budget (``n + m^2
    (1/2 + ln(n / m))`` moves) exactly at the last document."""
    for n in range(m + 1, 1000):
        budget = n + m * m * (0.5 + math.log(n / m))
        moved = 0
        for i in range(n):
            moved += min(i, m - 1)  # ascending: each document goes to the top
            if budget < moved and i >= m:
                break
        if i == n - 1 and budget < moved:
            return n
    raise AssertionError(m)


@pytest.mark.parametrize("m", [4, 11, INSERTION_SELECT_MAX])
def test_selection_switching_to_the_heap_at_the_last_document(m):
    n = _switch_at_last_document(m)
    shifted = np.linspace(0.0, 10.0, n)
    noise = np.zeros(n)
    ys = np.empty(n)
    order = _select_noisy_scores(shifted, noise, 1.0, m, ys, np.empty(m, dtype=np.int64))
    assert order.tolist() == list(range(n - 1, n - 1 - m, -1))
    _assert_noisy_scores(ys[:m], shifted[::-1][:m])
