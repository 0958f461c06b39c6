"""Every registered objective returns derivatives in arrays NumPy allocated.

An array a Numba kernel allocates and returns is mapped from the system again on every call once
it is large (glibc gives a freed large block back; each 4 KiB page then faults on first write:
about 2 ms per million documents and array, measured), while a NumPy array of the same size is
reused. So the kernels write into outputs their Python callers allocate. Checked here through
the array's owner: a Numba-allocated array's base is Numba's memory-info object.
"""

import numpy as np
import pytest

from stochrank_objectives.groups import query_offsets_from_sizes
from stochrank_objectives.objectives import OBJECTIVES

EXAMPLES = [pytest.param(obj, id=f"{name}-{i}") for name, cls in OBJECTIVES.items()
            for i, obj in enumerate(cls.examples())]


def _numba_allocated(array) -> bool:
    base = array
    while isinstance(base, np.ndarray) and base.base is not None:
        base = base.base
    return type(base).__name__ == "_MemInfo"


def test_the_check_tells_numba_arrays_apart():
    from numba import njit

    @njit
    def zeros(n):
        return np.zeros(n)

    assert _numba_allocated(zeros(3)) and not _numba_allocated(np.zeros(3))


@pytest.mark.parametrize("obj", EXAMPLES)
def test_derivatives_are_numpy_arrays(obj):
    rng = np.random.default_rng(0)
    offs = query_offsets_from_sizes([5, 7, 3])
    labels = rng.integers(0, 3, size=offs[-1]).astype(np.float64)
    labels[offs[:-1]] = 1.0
    if getattr(obj, "mode", None) == "ERR":
        labels = labels / 3.0
    grad, hess = obj.grad_hess(rng.normal(size=offs[-1]), labels, offs)
    assert not _numba_allocated(np.asarray(grad)), "grad"
    assert not _numba_allocated(np.asarray(hess)), "hess"
