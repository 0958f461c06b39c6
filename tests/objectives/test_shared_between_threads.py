"""One objective instance shared by many threads computes each thread's own answer (issue 21).

``StochasticRank`` cached the per-query constants of the last ``(labels, offsets)`` in two
attributes (value, then key) with no lock: a thread could return another thread's arrays, and
the kernels then read past their own (23-30 of 6,000 gradients were wrong). Every objective is
run here from several threads at once, on data sets of different sizes, with Python's thread
switch interval at its minimum so that the threads interleave inside ``grad_hess``; each result
must equal, bit for bit, the one computed alone.
"""

import sys
import threading

import numpy as np
import pytest

import stochrank_objectives as sro
from stochrank_objectives.objectives import OBJECTIVES as REGISTRY

#: registry name -> objectives shared beside the class's examples() (case id -> a factory of
#: fresh instances): the metrics, cutoffs and estimators whose per-data caches no example reaches
VARIANTS = {
    "StochasticRank": {
        "StochasticRank": lambda: sro.StochasticRank(metric="NDCG", top=5, seed=0),
        "StochasticRank-MRR": lambda: sro.StochasticRank(metric="MRR", mu=0.1, seed=3),
        "StochasticRank-ERR-paper": lambda: sro.StochasticRank.paper("ERR", top=10,
                                                                     grade_max=2),
        "StochasticRank-FilteredDCG": lambda: sro.StochasticRank(metric="FilteredDCG", top=5)},
    "SoftRank": {"SoftRank": lambda: sro.SoftRank(top=5, seed=0)},
    "StochasticRankDCGRR": {
        "StochasticRankDCGRR": lambda: sro.StochasticRankDCGRR(n_samples=2, seed=1)},
    "LambdaMART": {"LambdaMART": lambda: sro.LambdaMART(top=5)},
    "Gumbel": {"Gumbel(LambdaMART)": lambda: sro.Gumbel(sro.LambdaMART(top=5), n_samples=2,
                                                        seed=1)},
    "YetiRank": {"YetiRank": lambda: sro.YetiRank(seed=2),
                 "YetiRank-NDCG": lambda: sro.YetiRank(mode="NDCG", top=5, permutations=3)},
}


def _cases():
    """``{case id: factory}``: every registered objective's examples() and its VARIANTS (an
    instance met twice is shared once); each factory call makes a fresh instance."""
    cases, seen = {}, set()
    for name, cls in REGISTRY.items():
        examples = ((f"{name}-{i}", lambda cls=cls, i=i: cls.examples()[i])
                    for i in range(len(cls.examples())))
        for case, make in [*VARIANTS.get(name, {}).items(), *examples]:
            if repr(make()) not in seen:
                seen.add(repr(make()))
                cases[case] = make
    return cases


OBJECTIVES = _cases()

N_THREADS = 6
ROUNDS = 25


@pytest.fixture(scope="module")
def data_sets(mq2008_train_vali):
    """Three grouped data sets of different sizes, with scores: threads alternate between them."""
    train, vali = mq2008_train_vali
    rng = np.random.default_rng(21)
    sets = []
    for part in (train.subset_queries(60), vali.subset_queries(30), train.subset_queries(7)):
        sets.append((rng.normal(size=part.y.size), part.y, part.query_offsets))
    return sets


@pytest.fixture
def fast_switching():
    previous = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # interleave the threads as often as Python allows
    yield
    sys.setswitchinterval(previous)


def _run_concurrently(work, n_threads):
    errors = []

    def guarded(i):
        try:
            work(i)
        except BaseException as exc:  # noqa: BLE001 -- reported by the main thread
            errors.append(exc)

    threads = [threading.Thread(target=guarded, args=(i,)) for i in range(n_threads)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if errors:
        raise errors[0]


@pytest.mark.parametrize("name", OBJECTIVES)
def test_one_objective_shared_by_threads_gives_each_its_own_result(name, data_sets,
                                                                   fast_switching):
    objective = OBJECTIVES[name]()
    # the references, computed alone (a fresh instance: no state carried in)
    reference = {(s, t): OBJECTIVES[name]().grad_hess(*data_sets[s], iteration=t)
                 for s in range(len(data_sets)) for t in range(3)}
    wrong = []

    def work(i):
        for r in range(ROUNDS):
            s, t = (i + r) % len(data_sets), r % 3
            grad, hess = objective.grad_hess(*data_sets[s], iteration=t)
            ref_grad, ref_hess = reference[(s, t)]
            if not (np.array_equal(grad, ref_grad) and np.array_equal(hess, ref_hess)):
                wrong.append((i, r, s, t))

    _run_concurrently(work, N_THREADS)
    assert wrong == [], f"{len(wrong)} of {N_THREADS * ROUNDS} results differ, e.g. {wrong[:3]}"


def test_the_cache_does_not_travel_with_a_pickle(data_sets):
    # the per-data cache holds a copy of the labels: it is rebuilt where the objective is
    # used, not shipped to every process (e.g. Dask workers) with the objective
    import pickle

    objective = sro.StochasticRank(top=5)
    objective.grad_hess(*data_sets[0])
    size_used = len(pickle.dumps(objective))
    assert size_used == len(pickle.dumps(sro.StochasticRank(top=5)))
    restored = pickle.loads(pickle.dumps(objective))
    np.testing.assert_array_equal(restored.grad_hess(*data_sets[1])[0],
                                  sro.StochasticRank(top=5).grad_hess(*data_sets[1])[0])


def test_the_variants_name_registered_objectives():
    # a key that is not (or no longer) a registry name would be a silently unused variant
    assert set(VARIANTS) <= set(REGISTRY), set(VARIANTS) - set(REGISTRY)
    for name, variants in VARIANTS.items():
        assert all(type(make()) is REGISTRY[name] for make in variants.values()), name


def test_every_registered_objective_is_shared_here():
    assert set(REGISTRY) <= {type(make()).__name__ for make in OBJECTIVES.values()}
