"""StochasticRank for PFound, FilteredDCG, Precision@k and MAP@k against the explicit brute force.

The brute force (tests/_reference.py) re-inserts every document at every slot of the others'
noisy order (FilteredDCG: plus a virtual document at the fixed score 0), scores every list from
scratch and weights the jumps with the conditional density; the same unit normals are passed to
both, so agreement must be to rounding (1e-10). Also: the seeded streams equal the explicit
noise for every new metric (FilteredDCG's virtual document takes no noise), FilteredDCG ignores
``conditioning`` and ``center`` as documented, and the estimator is thread-count invariant.
"""

from __future__ import annotations

import zlib

import numpy as np
import pytest
from _reference import assert_matches_brute_force, on_one_and_two_threads, random_query_set

from stochrank_objectives import StochasticRank, draw_noise, stochastic_rank_gradient

TOL = 1e-10
SIZES = [2, 3, 5, 20, 0, 1, 3]  # includes an empty and a one-document query

CONFIGS = [
    pytest.param("PFOUND", {}, id="PFound"),
    pytest.param("PFOUND", {"decay": 0.5}, id="PFound-decay0.5"),
    pytest.param("PFOUND", {"decay": 0.0}, id="PFound-decay0"),
    pytest.param("PFOUND", {"decay": 1.0}, id="PFound-decay1"),
    pytest.param("FILTEREDDCG", {"gain": "linear"}, id="FilteredDCG-linear"),
    pytest.param("FILTEREDDCG", {"gain": "exp2"}, id="FilteredDCG-exp2"),
    pytest.param("PRECISION", {"threshold": 0.0}, id="Precision-t0"),
    pytest.param("PRECISION", {"threshold": 1.0}, id="Precision-t1"),
    pytest.param("MAP", {"threshold": 0.0}, id="MAP-t0"),
    pytest.param("MAP", {"threshold": 1.0}, id="MAP-t1"),
]


def _compare(scores, labels, offs, noise, **kw):
    return assert_matches_brute_force(scores, labels, offs, noise, TOL, **kw)[0]


@pytest.mark.parametrize("conditioning", ["translation", "coordinate"])
@pytest.mark.parametrize("top", [1, 3, 10, None])
@pytest.mark.parametrize("metric,opts", CONFIGS)
def test_ccs_matches_bruteforce(metric, opts, top, conditioning):
    if metric == "PRECISION" and top is None:
        pytest.skip("Precision needs top")
    rng = np.random.default_rng(zlib.crc32(repr((metric, opts, top, conditioning)).encode()))
    nonzero = 0
    for sigma in (0.3, 1.0, 3.0):
        for mu in (0.0, 1.0):
            scores, labels, offs = random_query_set(rng, SIZES, metric)
            if metric == "FILTEREDDCG":  # scores around the filter at 0
                scores = scores - 1.0
            noise = rng.standard_normal((2, scores.size))
            for center, sfa in ((False, 0.0), (True, 0.0), (True, 1.0)):
                fast = _compare(scores, labels, offs, noise, metric=metric, top=top, sigma=sigma,
                                mu=mu, conditioning=conditioning, center=center, sfa=sfa,
                                nu=0.01, **opts)
                nonzero += int(np.any(fast != 0))
                if metric != "FILTEREDDCG":  # one-document queries have no order to change
                    assert np.all(fast[offs[5]:offs[6]] == 0.0)
    assert nonzero > 0


@pytest.mark.parametrize("metric,top,opts", [
    ("PFOUND", 10, {}),
    ("PFOUND", None, {"decay": 0.9}),
    ("FILTEREDDCG", None, {"gain": "linear"}),
    ("PRECISION", 10, {}),
    ("MAP", None, {}),
    ("MAP", 10, {"threshold": 1.0}),
])
def test_ccs_matches_bruteforce_200_docs(metric, top, opts):
    rng = np.random.default_rng(200)
    scores, labels, offs = random_query_set(rng, [200], metric, tie_levels=5)
    scores = scores - 2.0
    noise = rng.standard_normal((1, 200))
    fast = _compare(scores, labels, offs, noise, metric=metric, top=top, sigma=1.0, mu=1.0,
                    **opts)
    assert np.count_nonzero(fast) > 10


def test_map_and_precision_jumps_by_hand():
    """Two documents, coordinate conditioning, no noise: the gradient of the relevant document
    is -J * phi(gap) with J the metric jump of passing the other one."""
    scores = np.array([0.0, 0.5])  # relevant doc 0 below irrelevant doc 1
    labels = np.array([1.0, 0.0])
    offs = np.array([0, 2])
    kw = dict(sigma=1.0, noise=np.zeros((1, 2)), conditioning="coordinate", center=False,
              sfa=0.0)
    density = np.exp(-0.125) / np.sqrt(2 * np.pi)
    # AP: 1 (on top) - 1/2 (second)
    g = stochastic_rank_gradient(scores, labels, offs, metric="MAP", **kw)
    assert g[0] == pytest.approx(-0.5 * density, rel=1e-12)
    # Precision@1: 1 - 0
    g = stochastic_rank_gradient(scores, labels, offs, metric="Precision", top=1, **kw)
    assert g[0] == pytest.approx(-1.0 * density, rel=1e-12)


def test_filtered_dcg_single_document_crosses_zero():
    """One document: its only breakpoint is the virtual one at 0; jump = its gain / 1."""
    g = stochastic_rank_gradient(np.array([0.3]), np.array([2.0]), np.array([0, 1]),
                                 metric="FilteredDCG", gain="linear", sigma=1.0, sfa=0.0,
                                 noise=np.zeros((1, 1)))
    assert g[0] == pytest.approx(-2.0 * np.exp(-0.045) / np.sqrt(2 * np.pi), rel=1e-12)


def test_filtered_dcg_ignores_conditioning_and_center():
    rng = np.random.default_rng(5)
    scores, labels, offs = random_query_set(rng, [4, 6, 1], "FILTEREDDCG", tie_levels=0)
    noise = rng.standard_normal((3, scores.size))
    kw = dict(metric="FilteredDCG", sigma=0.7, noise=noise, sfa=0.0)
    base = stochastic_rank_gradient(scores, labels, offs, conditioning="coordinate",
                                    center=False, **kw)
    other = stochastic_rank_gradient(scores, labels, offs, conditioning="translation",
                                     center=True, **kw)
    assert np.array_equal(base, other)
    assert abs(base.sum()) > 1e-6  # not centred: the loss is not translation invariant


@pytest.mark.parametrize("metric,top", [("PFound", 3), ("FilteredDCG", None), ("Precision", 3),
                                        ("MAP", 5)])
@pytest.mark.parametrize("iteration", [0, 4])
def test_seeded_equals_explicit_noise(metric, top, iteration):
    rng = np.random.default_rng(0)
    scores, labels, offs = random_query_set(rng, [5, 1, 0, 12, 3, 40, 2, 7], metric.upper(),
                                            tie_levels=4)
    scores = scores - 1.5
    kw = dict(metric=metric, top=top, sigma=0.7, mu=0.5)
    seeded = stochastic_rank_gradient(scores, labels, offs, n_samples=3, seed=11,
                                      iteration=iteration, **kw)
    explicit = stochastic_rank_gradient(scores, labels, offs,
                                        noise=draw_noise(offs, 3, 11, iteration), **kw)
    assert np.array_equal(seeded, explicit)
    assert np.any(seeded != 0)
    obj = StochasticRank.paper(metric=metric, top=top, n_samples=3, seed=11, mu=0.5, sigma=0.7)
    assert np.array_equal(obj.grad_hess(scores, labels, offs, iteration=iteration)[0], seeded)


@pytest.mark.parametrize("metric,top", [("PFound", 5), ("FilteredDCG", None), ("MAP", None)])
def test_thread_count_does_not_change_output(metric, top):
    rng = np.random.default_rng(9)
    sizes = rng.integers(0, 30, 300)
    scores, labels, offs = random_query_set(rng, sizes, metric.upper(), tie_levels=4)
    kw = dict(metric=metric, top=top, n_samples=2, seed=3, iteration=2)
    one, two = on_one_and_two_threads(lambda: stochastic_rank_gradient(scores, labels, offs, **kw))
    assert np.array_equal(one, two)


# ----------------------------------------------------------------------------------------
# Bad input names the bad field
# ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("kwargs,error,field", [
    (dict(metric="PFound", decay=1.5), ValueError, "decay"),
    (dict(metric="PFound", decay=-0.1), ValueError, "decay"),
    (dict(metric="PFound", decay="0.5"), TypeError, "decay"),
    (dict(metric="PFound", decay=float("nan")), ValueError, "decay"),
    (dict(metric="Precision"), ValueError, "top"),
    (dict(metric="Precision", top=0), ValueError, "top"),
    (dict(metric="MAP", top=2.5), TypeError, "top"),
    (dict(metric="MAP", estimator="reinforce"), ValueError, "reinforce"),
    (dict(metric="FilteredDCG", estimator="reinforce"), ValueError, "reinforce"),
    (dict(metric="FilteredDCG", gain="log"), ValueError, "gain"),
    (dict(metric="pfund"), ValueError, "metric"),
])
def test_bad_parameters_name_the_field(kwargs, error, field):
    with pytest.raises(error, match=field):  # checked at first use: __init__ only stores
        StochasticRank(**kwargs).sigma_at(0)
    obj = StochasticRank(metric="NDCG")
    with pytest.raises(error, match=field):
        obj.set_params(**kwargs)
    assert obj.metric == "NDCG"  # left untouched


def test_pfound_labels_must_be_probabilities():
    obj = StochasticRank(metric="PFound")
    with pytest.raises(ValueError, match="PFound.*probabilities"):
        obj.grad_hess(np.zeros(2), np.array([0.5, 2.0]), np.array([0, 2]))
    with pytest.raises(ValueError, match="labels"):
        obj.grad_hess(np.zeros(2), np.array([-0.5, 0.5]), np.array([0, 2]))


@pytest.mark.parametrize("top", [None, 1, 3])
def test_eval_metrics_match_the_reference_with_worst_ties(top):
    """pfound / filtered_dcg (score order) against loops from the definitions, ties resolved
    by enumerating every ordering of the tied blocks and taking the worst."""
    from _reference import all_tie_orderings, filtered_dcg_list, pfound_list

    from stochrank_objectives import metrics

    rng = np.random.default_rng(top or 0)
    for _ in range(30):
        n = int(rng.integers(1, 7))
        scores = rng.integers(-1, 2, n).astype(float)
        probs = rng.choice([0.0, 0.1, 0.5, 1.0], n)
        grades = rng.integers(0, 3, n).astype(float)
        orders = [list(o) for o in all_tie_orderings(scores)]
        offs = np.array([0, n])
        worst_pf = min(pfound_list(probs[o], top, 0.7) for o in orders)
        assert metrics.pfound(scores, probs, offs, top, decay=0.7) == pytest.approx(worst_pf,
                                                                                    abs=1e-12)
        # the virtual document ties with documents scored exactly 0: worst = they fall below
        worst_f = min(filtered_dcg_list(scores[o], grades[o], top) for o in orders)
        ours = metrics.filtered_dcg(scores, grades, offs, top)
        assert ours == pytest.approx(worst_f, abs=1e-12)


def test_loss_is_the_worst_tie_eval_metric():
    from stochrank_objectives import metrics

    scores = np.array([1.0, 1.0, 0.0, -1.0, 0.0, 2.0])
    probs = np.array([0.2, 0.9, 0.5, 1.0, 0.0, 0.3])
    grades = np.array([2.0, 0.0, 1.0, 3.0, 1.0, 2.0])
    offs = np.array([0, 4, 6])
    cases = [
        (StochasticRank(metric="PFound", decay=0.6), probs,
         metrics.pfound(scores, probs, offs, decay=0.6)),
        (StochasticRank(metric="FilteredDCG", gain="linear", top=2), grades,
         metrics.filtered_dcg(scores, grades, offs, 2, gain="linear")),
        (StochasticRank(metric="Precision", top=2, threshold=1.0), grades,
         metrics.precision_at_k(scores, grades, offs, 2, threshold=1.0)),
        (StochasticRank(metric="MAP", top=3), grades,
         metrics.average_precision(scores, grades, offs, 3)),
    ]
    for obj, labels, value in cases:
        assert obj.loss(scores, labels, offs) == pytest.approx(-value, abs=1e-15)
