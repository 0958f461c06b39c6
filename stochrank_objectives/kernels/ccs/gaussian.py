"""Numba kernels: the Gaussian pieces of a CCS sample -- the density of a moving document's
score at a breakpoint, and its conditional law given the other documents (the formulas are in
:mod:`stochrank_objectives.kernels.ccs`). The lowest layer of the estimator, with
:mod:`.noisy_order`: it imports no other module of it.
"""

import math

import numpy as np
from numba import njit

INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)
DEFAULT_WINDOW = 9.0
FASTMATH = {"reassoc", "contract", "nsz"}  # lets LLVM vectorise the density sums
# Taylor coefficients 1/15!, 1/14!, ..., 1/1!, 1/0! of exp, highest first (Horner's rule).
_EXP_TAYLOR = (1.0 / 1307674368000.0, 1.0 / 87178291200.0, 1.0 / 6227020800.0,
               1.0 / 479001600.0, 1.0 / 39916800.0, 1.0 / 3628800.0, 1.0 / 362880.0,
               1.0 / 40320.0, 1.0 / 5040.0, 1.0 / 720.0, 1.0 / 120.0, 1.0 / 24.0, 1.0 / 6.0,
               0.5, 1.0, 1.0)


@njit(cache=True, inline="always", fastmath=FASTMATH)
def gaussian_kernel(x):
    """``exp(-x^2 / 2)``, branch-free so that loops over breakpoints vectorise.

    ``exp(v) = (exp(-1/2) exp(v/64 + 1/2))^64`` with a degree-15 Taylor polynomial on
    ``|v/64 + 1/2| <= 1/2`` (truncation < 1e-18); six squarings leave a relative error below
    3e-14 (checked against ``math.exp`` in the tests). Arguments below -64 are clamped: the
    result, < 1.7e-28, only occurs outside the breakpoint window anyway.
    """
    v = max(-0.5 * x * x, -64.0)
    h = v * 0.015625 + 0.5
    p = _EXP_TAYLOR[0]
    for c in _EXP_TAYLOR[1:]:  # Horner's rule
        p = p * h + c
    e = p * 0.6065306597126334  # exp(-1/2)
    for _ in range(6):
        e = e * e
    return e


@njit(cache=True, inline="always")
def conditional_law(noise, sigma, translation):
    """``(s, noise_sum)``: the conditional standard deviation of a moving document's score and
    the query's noise sum (for its conditional mean, :func:`conditional_mean`)."""
    n = noise.shape[0]
    noise_sum = 0.0
    if not translation:
        return sigma, noise_sum
    for i in range(n):
        noise_sum += noise[i]
    return sigma * math.sqrt(n / (n - 1.0)), noise_sum


@njit(cache=True, inline="always")
def conditional_mean(shifted_doc, noise_doc, noise_sum, n, sigma, translation):
    """Mean of the moving document's score given the others (``translation``: the mean of the
    translation law, else the coordinate law's ``a_i``; formulas: :mod:`..ccs`)."""
    if translation:
        return shifted_doc + sigma * (noise_sum - noise_doc) / (n - 1.0)
    return shifted_doc


@njit(cache=True)
def conditional_means(shifted, noise, noise_sum, sigma, translation, order):
    """The conditional mean of the document at each position of ``order`` (the fast sums'
    targets; a separate function without fast-math, so that the values do not depend on the
    caller)."""
    n = order.shape[0]
    means = np.empty(n)
    for p in range(n):
        doc = order[p]
        means[p] = conditional_mean(shifted[doc], noise[doc], noise_sum, n, sigma, translation)
    return means


@njit(cache=True, inline="always", fastmath=FASTMATH)
def in_window(term, y, mean, half_width):
    """``term`` when the breakpoint ``y`` lies within ``half_width`` of ``mean``, else 0 (a
    select rather than a branch, so that loops over documents vectorise)."""
    inside_window = (y <= mean + half_width) and (y >= mean - half_width)
    return term if inside_window else 0.0


@njit(cache=True, inline="always")
def outside_buffers(shifted, noise, noise_sum, sigma, translation, scratch):
    """``(means, acc)``: every document's conditional mean and a zeroed accumulator, in the
    first ``2 n`` floats of ``scratch`` (no allocation per query)."""
    n = shifted.shape[0]
    means = scratch[:n]
    acc = scratch[n:2 * n]
    for i in range(n):
        means[i] = conditional_mean(shifted[i], noise[i], noise_sum, n, sigma, translation)
        acc[i] = 0.0
    return means, acc


@njit(cache=True, inline="always")
def subtract_outside(order, coef, acc, out):
    """``out -= coef * acc`` for the documents outside ``order`` (theirs are done)."""
    for p in range(order.shape[0]):
        acc[order[p]] = 0.0
    for i in range(out.shape[0]):
        out[i] -= coef * acc[i]
