"""PFound and FilteredDCG against CatBoost 1.2.10's native ``StochasticRank`` derivative (sigma = 1).

Same one-query harness as tests/test_catboost_native.py (every document in its own leaf, so the
raw prediction is CatBoost's Der1 averaged over ``num_estimations`` draws); our side is
``StochasticRank.paper(...)`` (absolute sigma = 1, nu = 0.01, CatBoost's parametrisation) over
many copies of the query. CatBoost's defaults mapped to ours: PFound ``decay=0.85``; FilteredDCG
``type=Base`` (``gain="linear"``), ``denominator=Position`` (ours, fixed), ``lambda=0``
(``sfa=0``), no centring, the conditional law ``N(a_i, 1)`` (ours: coordinate, forced).
Also: the eval metrics ``pfound`` and ``filtered_dcg(order="input")`` equal CatBoost's.

Found here: with ``top`` set, CatBoost's PFound derivative is off for a document of label exactly
1 (a certain click; CatBoost special-cases it): ~8% on that document in the case below, while
our estimator agrees with a Stein (score-function) estimate of the true smoothed gradient, and
CatBoost agrees with us again once the label is 0.99. That deviation is pinned down below.
"""

from __future__ import annotations

import numpy as np
import pytest
from _reference import center_sfa_query, score_function_gradient
from test_catboost_native import K_CATBOOST, N_COPIES, assert_agrees_with_catboost, catboost_der1

from stochrank_objectives import StochasticRank, metrics

catboost = pytest.importorskip("catboost")

pytestmark = pytest.mark.slow

Z6 = np.array([1.0, 0.2, 0.2, 0.2, -0.5, 0.0])
PROBS6 = np.array([0.5, 0.0, 1.0, 0.25, 0.75, 0.1])
PROBS6_UNCERTAIN = np.array([0.5, 0.0, 0.99, 0.25, 0.75, 0.1])  # no label exactly 1
# FilteredDCG is not translation invariant: scores on both sides of the filter at 0
ZF = np.array([0.6, -0.2, 0.1, -0.8, 0.3, -0.05])
GRADESF = np.array([2.0, 1.0, 0.0, 3.0, 1.0, 2.0])

CASES = [
    ("PFound", Z6, PROBS6, "StochasticRank:metric=PFound", dict(metric="PFound")),
    ("PFound-top3-decay0.7", Z6, PROBS6_UNCERTAIN,
     "StochasticRank:metric=PFound;top=3;decay=0.7",
     dict(metric="PFound", top=3, decay=0.7)),
    ("PFound-mu-nu-lambda0.5", Z6, PROBS6,
     "StochasticRank:metric=PFound;mu=0.5;nu=0.1;lambda=0.5",
     dict(metric="PFound", mu=0.5, nu=0.1, sfa=0.5)),
    ("FilteredDCG", ZF, GRADESF, "StochasticRank:metric=FilteredDCG",
     dict(metric="FilteredDCG", gain="linear", sfa=0.0)),
    ("FilteredDCG-top3-exp-mu", ZF, GRADESF, "StochasticRank:metric=FilteredDCG;top=3;type=Exp;mu=0.3",
     dict(metric="FilteredDCG", top=3, gain="exp2", mu=0.3, sfa=0.0)),
]


def our_draws(z, labels, copies=N_COPIES, **kw):
    n = len(z)
    offs = np.arange(copies + 1, dtype=np.int64) * n
    obj = StochasticRank.paper(n_samples=1, seed=12, **kw)
    g = obj.grad_hess(np.tile(z, copies), np.tile(labels, copies), offs)[0].reshape(copies, n)
    return g.mean(axis=0), g.std(axis=0, ddof=1) / np.sqrt(copies)


@pytest.mark.parametrize("name,z,labels,loss,kw", CASES, ids=[c[0] for c in CASES])
def test_matches_catboost_at_sigma_one(name, z, labels, loss, kw):
    der1 = catboost_der1(z, labels, loss + ";sigma=1")
    ours, se = our_draws(z, labels, **kw)
    assert_agrees_with_catboost(der1, ours, se)


def test_pfound_top_certain_document_catboost_deviates_ours_is_exact():
    """Label 1 with top=3: CatBoost's derivative of that document differs from ours by many
    standard errors; ours matches the Stein estimate of the true smoothed gradient."""
    loss = "StochasticRank:metric=PFound;top=3;decay=0.7;lambda=0;sigma=1"
    der1 = catboost_der1(Z6, PROBS6, loss)
    ours, se = our_draws(Z6, PROBS6, metric="PFound", top=3, decay=0.7, sfa=0.0)
    se_cb = se * np.sqrt(N_COPIES / K_CATBOOST)
    assert abs(der1[2] + ours[2]) > 10 * np.sqrt(se[2] ** 2 + se_cb[2] ** 2)
    stein, stein_se = score_function_gradient(Z6, PROBS6, 1.0, "PFOUND", top=3, n=2_000_000,
                                              decay=0.7)
    stein = center_sfa_query(stein, Z6, center=True, sfa=0.0)  # centring is exact here
    assert np.all(np.abs(ours - stein) <= 5 * np.sqrt(se ** 2 + stein_se ** 2) + 1e-6)


def _catboost_metric(labels, preds, offs, name):
    from catboost.utils import eval_metric

    group = np.repeat(np.arange(len(offs) - 1), np.diff(offs))
    return eval_metric(labels, preds, name, group_id=group)[0]


def test_eval_metrics_equal_catboost():
    rng = np.random.default_rng(3)
    sizes = [5, 1, 8, 3, 12]
    offs = np.concatenate(([0], np.cumsum(sizes)))
    n = offs[-1]
    preds = rng.integers(-2, 3, n).astype(float)  # ties and scores exactly 0
    # CatBoost stores targets as float32: compare on float32-representable labels
    probs = rng.choice([0.0, 0.1, 0.5, 0.9, 1.0], n).astype(np.float32).astype(np.float64)
    grades = rng.integers(0, 4, n).astype(float)
    for top, decay in ((None, 0.85), (3, 0.85), (None, 0.6)):
        name = "PFound" + ("" if top is None else f":top={top}") + \
            ("" if decay == 0.85 else f"{';' if top else ':'}decay={decay}")
        ours = metrics.pfound(preds, probs, offs, top, decay=decay)
        assert ours == pytest.approx(_catboost_metric(probs, preds, offs, name), abs=1e-12)
    for gain, cb_type in (("linear", "Base"), ("exp2", "Exp")):
        ours = metrics.filtered_dcg(preds, grades, offs, gain=gain, order="input")
        cb = _catboost_metric(grades, preds, offs, f"FilteredDCG:type={cb_type}")
        assert ours == pytest.approx(cb, abs=1e-12)
