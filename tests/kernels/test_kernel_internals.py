"""Internals of the kernels: the vectorisable Gaussian kernel, the counter-based noise streams and
the unit-mean hessian's in-place rescaling, the per-query noise scale."""

import math

import numba
import numpy as np
import pytest
from numba import njit

from stochrank_objectives import draw_noise
from stochrank_objectives.kernels.ccs import gaussian_kernel
from stochrank_objectives.kernels.noise_scale import (query_noise_scale, region_floor,
                                                       scale_in_place)
from stochrank_objectives.kernels.rng import draw_grouped_normals


@njit(cache=True)
def _kernel_on_grid(xs):
    out = np.empty_like(xs)
    for i in range(xs.shape[0]):
        out[i] = gaussian_kernel(xs[i])
    return out


def test_gaussian_kernel_matches_exp_to_3e14_relative_inside_the_window():
    xs = np.linspace(-11.3, 11.3, 400_001)  # |x| <= sqrt(128): above the -64 clamp
    exact = np.exp(-0.5 * xs * xs)
    rel = np.abs(_kernel_on_grid(xs) - exact) / exact
    assert rel.max() < 3e-14


def test_gaussian_kernel_is_tiny_and_finite_far_outside():
    xs = np.array([12.0, 50.0, 1e3, 1e150, -1e150])
    vals = _kernel_on_grid(xs)
    assert np.all(np.isfinite(vals)) and np.all(vals >= 0) and np.all(vals < 2e-28)


def test_noise_streams_are_standard_normal():
    offsets = np.arange(0, 200_001, 100)  # 2000 queries of 100 documents
    z = draw_noise(offsets, n_samples=2, seed=3)
    # mean, variance, skewness, kurtosis of 400k draws: 6-sigma bands around N(0, 1) values
    n = z.size
    assert abs(z.mean()) < 6 / math.sqrt(n)
    assert abs(z.var() - 1) < 6 * math.sqrt(2 / n)
    assert abs(np.mean(z ** 3)) < 6 * math.sqrt(15 / n)
    assert abs(np.mean(z ** 4) - 3) < 6 * math.sqrt(96 / n)
    # tail probability P(|z| > 3) = 0.0027
    tail = np.mean(np.abs(z) > 3)
    assert abs(tail - 0.0026998) < 6 * math.sqrt(0.0027 / n)


def test_noise_streams_are_uncorrelated_across_queries_samples_and_iterations():
    offsets = np.arange(0, 50_001, 50)
    a = draw_noise(offsets, n_samples=2, seed=1, iteration=0)
    b = draw_noise(offsets, n_samples=1, seed=1, iteration=1)
    c = draw_noise(offsets, n_samples=1, seed=2, iteration=0)
    limit = 6 / math.sqrt(a.shape[1])
    for x, y in [(a[0], a[1]), (a[0], b[0]), (a[0], c[0]), (a[0, :-50], a[0, 50:])]:
        assert abs(np.corrcoef(x, y)[0, 1]) < limit


def test_noise_is_bit_identical_for_any_thread_count_and_keyed_by_query():
    offsets = np.array([0, 3, 3, 10, 11, 40])
    before = numba.get_num_threads()
    try:
        numba.set_num_threads(1)
        one = draw_grouped_normals(offsets, 3, 7, 5)
        numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)
        many = draw_grouped_normals(offsets, 3, 7, 5)
    finally:
        numba.set_num_threads(before)
    assert np.array_equal(one, many)
    # a query's noise depends on its index, not on the other queries' sizes
    other = draw_grouped_normals(np.array([0, 5, 5, 12]), 3, 7, 5)
    assert np.array_equal(one[:, 3:10], other[:, 5:12])
    assert np.array_equal(one[:, 0:3], other[:, 0:3])  # query 0: same stream, prefix of it
    assert not np.array_equal(one, draw_grouped_normals(offsets, 3, 7, 6))


@pytest.mark.parametrize("bad", [dict(n_samples=0), dict(seed=-1), dict(iteration=1.5)])
def test_draw_noise_rejects_bad_arguments(bad):
    with pytest.raises((ValueError, TypeError)):
        draw_noise(np.array([0, 3]), **bad)


@pytest.mark.parametrize("n", [0, 1, 7, 5000])
@pytest.mark.parametrize("threads", [1, 2])
def test_scale_in_place_gives_numpys_products_bit_for_bit(n, threads):
    rng = np.random.default_rng(n)
    grad, hess = rng.normal(size=n), rng.uniform(0.0, 3.0, size=n)
    scale = 1.0 / 0.7310585786300049
    want_grad, want_hess = grad * scale, hess * scale
    before = numba.get_num_threads()
    numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))
    try:
        scale_in_place(grad, hess, scale)
    finally:
        numba.set_num_threads(before)
    assert np.array_equal(grad, want_grad) and np.array_equal(hess, want_hess)


@pytest.mark.parametrize("offset", [-1, 0])
def test_unit_mean_hessian_is_the_same_on_both_sides_of_its_parallel_threshold(offset):
    # below PARALLEL_SCALE_FROM NumPy multiplies in place, from it the parallel pass does: the
    # products (and so every model) must not depend on the side
    from stochrank_objectives.objectives._estimator import PARALLEL_SCALE_FROM, unit_mean_hessian

    n = PARALLEL_SCALE_FROM + offset
    rng = np.random.default_rng(n)
    grad, hess = rng.normal(size=n), rng.uniform(0.0, 3.0, size=n)
    scale = 1.0 / hess.mean()
    want_grad, want_hess = grad * scale, hess * scale
    got_grad, got_hess = unit_mean_hessian(grad, hess)
    assert got_grad is grad and got_hess is hess  # in place
    assert np.array_equal(got_grad, want_grad) and np.array_equal(got_hess, want_hess)


def test_region_floor_is_the_sorted_lists_value_with_ties_infinities_and_nan():
    # region_floor selects instead of sorting: the order statistic must be np.sort's exactly,
    # NaN sorting last as NumPy sorts it
    rng = np.random.default_rng(3)
    for trial in range(400):
        n = int(rng.integers(1, 40))
        z = rng.integers(0, 4, n).astype(float) if trial % 3 == 0 else rng.normal(size=n)
        if trial % 5 == 0:
            z[rng.integers(0, n, 2)] = np.nan
        if trial % 7 == 0:
            z[rng.integers(0, n, 2)] = np.inf if trial % 2 else -np.inf
        before = z.copy()
        for region in range(n + 2):
            want = -np.inf if region <= 0 or region >= n else np.sort(z)[n - region]
            got = region_floor(z, 0, n, region)
            assert got == want or (np.isnan(got) and np.isnan(want)), (z, region)
        np.testing.assert_array_equal(z, before)  # the scores are not reordered


def _sequential_scale(z, sigma, nu):
    """``sigma sqrt(ss / n + nu^2)`` of one whole list, every sum in document order."""
    if len(z) == 0:
        return sigma * math.sqrt(0.0 + nu * nu)
    total = 0.0
    for v in z:
        total += float(v)
    mean = total / len(z)
    ss = 0.0
    for v in z:
        ss += (float(v) - mean) * (float(v) - mean)
    return sigma * math.sqrt(ss / len(z) + nu * nu)


@pytest.mark.parametrize("threads", [1, 2])
def test_whole_list_noise_scale_is_the_sequential_sums_bit_for_bit(threads):
    """Relative smoothing over whole lists runs two queries side by side: each query's sums
    must still be those taken in document order (odd and even query counts, empty, one- and
    two-document queries, either of a pair the longer)."""
    rng = np.random.default_rng(11)
    for sizes in ([5, 0, 1, 2, 130, 7, 3], [40, 129, 129, 40], [17]):
        offs = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        scores = rng.standard_normal(offs[-1]) * 2.5 - 0.3
        previous = numba.get_num_threads()
        numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))
        try:
            got = query_noise_scale(scores, offs, 0.3, 0.05, True, 0)
        finally:
            numba.set_num_threads(previous)
        expected = [_sequential_scale(scores[lo:hi], 0.3, 0.05)
                    for lo, hi in zip(offs[:-1], offs[1:])]
        assert got.tolist() == expected
