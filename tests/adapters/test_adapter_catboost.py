"""CatBoost adapter: routes agree, guards fire, SGLB is reproducible, models are portable."""

from __future__ import annotations

import copy
import pickle
import re
import subprocess
import sys
import warnings

import numpy as np
import pytest

catboost = pytest.importorskip("catboost")
from catboost import CatBoost, CatBoostError, Pool  # noqa: E402
from catboost.utils import eval_metric  # noqa: E402

from stochrank_objectives import StochasticRank, metrics, query_offsets_from_qid  # noqa: E402
from stochrank_objectives.adapters.catboost import (  # noqa: E402
    MAX_ROWS,
    CatBoostObjective,
    StochasticCatBoostRanker,
    catboost_fit,
    decode_row_index,
    default_eval_metric,
    encode_row_index,
)
from stochrank_objectives.sglb import SGLB  # noqa: E402
from stochrank_objectives.data import load_mq2008  # noqa: E402

NDCG5 = "NDCG:top=5;type=Exp"
# Settings under which one CatBoost fit and the one-tree-per-fit reference can agree bit for
# bit: no bootstrap and no split-score noise (their random streams differ between the routes).
EXACT = dict(bootstrap_type="No", random_strength=0, n_jobs=2)


def make_ranking(n_queries=90, seed=0, min_size=2, max_size=140, n_features=8):
    """Variable-size queries (so CatBoost's 1000-row chunks end inside queries), labels 0..4."""
    rng = np.random.default_rng(seed)
    sizes = rng.integers(min_size, max_size, n_queries)
    n = int(sizes.sum())
    X = rng.normal(size=(n, n_features))
    w = np.linspace(1.0, -0.5, n_features)
    y = np.clip(np.round(X @ w / 2 + rng.normal(size=n)), 0, 4).astype(np.int64)
    qid = np.repeat(np.arange(n_queries) * 7 + 3, sizes)  # arbitrary, contiguous ids
    return X, y, qid


class Recording:
    """A protocol-only objective (no metric_spec) that records the scores it is called with."""

    def __init__(self, inner):
        self.inner = inner
        self.calls = []

    def grad_hess(self, scores, labels, query_offsets, iteration=0):
        self.calls.append((iteration, np.array(scores, copy=True)))
        return self.inner.grad_hess(scores, labels, query_offsets, iteration=iteration)


@pytest.fixture(scope="module")
def ranking():
    X, y, qid = make_ranking()
    offs = query_offsets_from_qid(qid)
    edges = np.arange(1000, offs[-1], 1000)
    inside = [(offs[:-1] < e) & (e < offs[1:]) for e in edges]
    assert len(edges) >= 4 and all(m.any() for m in inside)  # chunk edges cut queries
    return X, y, qid


# -- eval metric: CatBoost's own metrics are ours with worst-permutation ties -----------------


def test_catboost_metrics_equal_ours_with_worst_ties():
    rng = np.random.default_rng(1)
    sizes = rng.integers(1, 12, 300)
    offs = np.concatenate(([0], np.cumsum(sizes)))
    gid = np.repeat(np.arange(sizes.size), sizes)
    y = rng.integers(0, 5, offs[-1]).astype(float)
    s = rng.integers(0, 3, offs[-1]).astype(float)  # heavy ties; some queries lack relevance
    for k in (None, 3):
        top = "" if k is None else f"top={k};"
        cases = [
            (f"NDCG:{top}type=Exp", metrics.ndcg_at_k(s, y, offs, k), y),
            (f"NDCG:{top}type=Base", metrics.ndcg_at_k(s, y, offs, k, gain="linear"), y),
            (f"DCG:{top}type=Exp", metrics.dcg_at_k(s, y, offs, k), y),
            (f"ERR:{top}".rstrip(":;") or "ERR", metrics.err_at_k(s, y / 4, offs, k), y / 4),
            (f"MRR:{top}border=0", metrics.mrr(s, y, offs, k), y),
            (f"MRR:{top}border=2.5", metrics.mrr(s, y, offs, k, threshold=2.5), y),
        ]
        for name, ours, labels in cases:
            assert eval_metric(labels, s, name, group_id=gid)[0] == pytest.approx(ours, abs=1e-12)


def test_default_eval_metric_strings():
    assert default_eval_metric(StochasticRank(metric="NDCG", top=5)) == "NDCG:top=5;type=Exp"
    assert default_eval_metric(StochasticRank(metric="NDCG", gain="linear")) == "NDCG:type=Base"
    assert default_eval_metric(StochasticRank(metric="ERR", top=3)) == "ERR:top=3"
    assert default_eval_metric(StochasticRank(metric="MRR", threshold=1)) == "MRR:border=1"
    with pytest.raises(ValueError, match="eval_metric"):
        default_eval_metric(Recording(StochasticRank()))


# -- training on real data -------------------------------------------------------------------


@pytest.fixture(scope="module")
def mq2008():
    train, vali = load_mq2008("train"), load_mq2008("vali")  # bundled with the package
    return (train.X, train.y.astype(np.int64), train.qid, vali.X, vali.y.astype(np.int64),
            vali.qid)

def test_mq2008_stochastic_rank_beats_constant(mq2008):
    X, y, q, Xv, yv, qv = mq2008
    ranker = StochasticCatBoostRanker(StochasticRank(metric="NDCG", top=5, seed=0),
                                      n_estimators=100, learning_rate=0.1, depth=6,
                                      n_jobs=2, random_state=0)
    # use_best_model=False: every tree kept (CatBoost's default with an eval set is the best)
    ranker.fit(X, y, qid=q, eval_set=[(Xv, yv, qv)], use_best_model=False)
    assert ranker.route_ == "pointer" and ranker.booster_.tree_count_ == 100
    offs = query_offsets_from_qid(qv)
    ours = metrics.ndcg_at_k(ranker.predict(Xv), yv, offs, 5)  # exp2 gain, worst ties
    constant = metrics.ndcg_at_k(np.zeros(len(yv)), yv, offs, 5)
    assert ours > constant + 0.3, (ours, constant)
    # the eval metric CatBoost reported during training is our metric on the final model
    assert ranker.evals_result_["validation"][NDCG5][-1] == pytest.approx(ours, abs=1e-12)


# -- the pointer route computes every gradient on the right query ------------------------------


@pytest.mark.parametrize("sglb", [{}, dict(langevin=True, diffusion_temperature=300.0,
                                           model_shrink_rate=0.3)], ids=["plain", "sglb"])
def test_pointer_route_equals_one_tree_per_fit_reference(ranking, sglb):
    X, y, qid = ranking
    params = dict(n_estimators=25, depth=4, learning_rate=0.2, **EXACT, **sglb)
    fits = {}
    for route in ("pointer", "per_tree"):
        ranker = StochasticCatBoostRanker(StochasticRank(metric="NDCG", top=5, seed=11),
                                          route=route, **params)
        ranker.fit(X, y, qid=qid, eval_set=[(X[::2], y[::2], qid[::2])])
        assert ranker.route_ == route and ranker.n_iterations_ == 25
        fits[route] = ranker
    # one gradient evaluation per tree: the leaf pass reuses the tree-search derivatives
    assert fits["pointer"].n_gradient_evaluations_ == 25
    a, b = (fits[r].predict(X) for r in ("pointer", "per_tree"))
    assert np.max(np.abs(a - b)) <= 1e-12
    hist_a, hist_b = (fits[r].evals_result_["validation"][NDCG5] for r in ("pointer", "per_tree"))
    np.testing.assert_allclose(hist_a, hist_b, rtol=0, atol=1e-12)
    assert fits["pointer"].best_iteration_ == fits["per_tree"].best_iteration_
    offs = query_offsets_from_qid(qid)  # and a real model, not a constant one
    assert metrics.ndcg_at_k(a, y, offs, 5) > metrics.ndcg_at_k(0 * a, y, offs, 5) + 0.2


def test_precomputed_derivatives_are_checked_against_the_passed_approx(ranking, monkeypatch):
    """Between trees the adapter guesses the next approx from the tree-search buffer and
    computes its derivatives early; the first chunk of the next pass compares the guess with
    what CatBoost passes. Right guesses save the evaluation (one per tree, all but the first
    precomputed); a wrong guess is recomputed and the model does not change."""
    from stochrank_objectives.adapters.catboost import _objective

    X, y, qid = ranking
    params = dict(n_estimators=12, depth=4, learning_rate=0.2, **EXACT)
    original = _objective.CatBoostObjective._precompute
    guesses = []

    def counting(self):
        before = self.n_evaluations
        original(self)
        guesses.append(self.n_evaluations - before)

    monkeypatch.setattr(_objective.CatBoostObjective, "_precompute", counting)
    right = StochasticCatBoostRanker(StochasticRank(metric="NDCG", top=5, seed=3), **params)
    right.fit(X, y, qid=qid)
    assert right.n_gradient_evaluations_ == 12 and sum(guesses) == 11

    def wrong(self):
        original(self)
        if self._pass_scores is not None and self._pass_iteration == self.iteration:
            self._pass_scores = self._pass_scores + 1e-3  # a stale guess (and its cache key)
            self._cache_scores = self._pass_scores

    monkeypatch.setattr(_objective.CatBoostObjective, "_precompute", wrong)
    guarded = StochasticCatBoostRanker(StochasticRank(metric="NDCG", top=5, seed=3), **params)
    guarded.fit(X, y, qid=qid)
    assert guarded.n_gradient_evaluations_ == 12 + 11  # every guess recomputed
    assert np.array_equal(guarded.predict(X), right.predict(X))


def test_objective_sees_the_current_model_scores(ranking):
    """The whole-buffer view is F_t, the model after t trees, for every tree t."""
    X, y, qid = ranking
    recording = Recording(StochasticRank(metric="NDCG", top=5, seed=2))
    ranker = StochasticCatBoostRanker(recording, eval_metric=NDCG5, n_estimators=12, depth=4,
                                      learning_rate=0.3, n_jobs=2)
    ranker.fit(X, y, qid=qid)
    assert [t for t, _ in recording.calls] == list(range(12))  # once per tree, in order
    for t, scores in recording.calls:
        expected = np.zeros(len(y)) if t == 0 else ranker.booster_.predict(
            X, prediction_type="RawFormulaVal", ntree_end=t)
        np.testing.assert_allclose(scores, expected, rtol=0, atol=1e-12)


# -- guards ----------------------------------------------------------------------------------


def _with_category(X, seed=0):
    import pandas as pd

    df = pd.DataFrame(X, columns=[f"f{i}" for i in range(X.shape[1])])
    df["cat"] = np.random.default_rng(seed).integers(0, 6, len(df)).astype(str)
    return df


def test_ordered_boosting_is_refused(ranking):
    X, y, qid = ranking
    for route in ("auto", "per_tree"):
        ranker = StochasticCatBoostRanker(StochasticRank(top=5), route=route,
                                          boosting_type="Ordered", n_estimators=3)
        with pytest.raises(ValueError, match="boosting_type='Plain'"):
            ranker.fit(X, y, qid=qid)


def test_categorical_features_without_has_time_fall_back(ranking):
    X, y, qid = ranking
    df = _with_category(X)
    kw = dict(n_estimators=4, depth=3, n_jobs=2)
    with pytest.warns(RuntimeWarning, match="has_time"):
        ranker = StochasticCatBoostRanker(StochasticRank(top=5), cat_features=["cat"], **kw)
        ranker.fit(df, y, qid=qid)
    assert ranker.route_ == "per_tree" and ranker.booster_.tree_count_ == 4
    assert np.isfinite(ranker.predict(df)).all()
    with pytest.raises(ValueError, match="has_time=True"):
        StochasticCatBoostRanker(StochasticRank(top=5), route="pointer", cat_features=["cat"],
                                 **kw).fit(df, y, qid=qid)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        ranker = StochasticCatBoostRanker(StochasticRank(top=5), has_time=True,
                                          cat_features=["cat"], **kw)
        ranker.fit(df, y, qid=qid)
    assert ranker.route_ == "pointer"
    # only target-free CTRs: the learn labels are row indices
    with pytest.raises(ValueError, match="target statistics"):
        StochasticCatBoostRanker(StochasticRank(top=5), has_time=True, simple_ctr=["Borders"],
                                 cat_features=["cat"], **kw).fit(df, y, qid=qid)


def test_layout_guard_stops_a_permuted_pointer_fit(ranking):
    X, y, qid = ranking
    df = _with_category(X)
    offs = query_offsets_from_qid(qid)
    adapter = CatBoostObjective(StochasticRank(top=5), y, offs)
    model = CatBoost(dict(loss_function=adapter, eval_metric=NDCG5, n_estimators=2, depth=3,
                          simple_ctr=["Counter"], combinations_ctr=["Counter"],
                          allow_writing_files=False, verbose=False))
    pool = Pool(df, label=encode_row_index(len(y)), group_id=np.repeat(
        np.arange(len(offs) - 1), np.diff(offs)), cat_features=["cat"])
    with pytest.raises(CatBoostError, match="LayoutError"):
        model.fit(pool, callbacks=[adapter])
    assert "contiguous" in adapter.layout_error


def test_layout_guard_failure_retrains_on_the_per_tree_route(ranking, monkeypatch):
    X, y, qid = ranking
    df = _with_category(X)
    from stochrank_objectives.adapters.catboost import _ranker as catboost_ranker

    def unguarded(*args):  # skips the static has_time check
        params, _, noise = resolve(*args)
        return params, "pointer", noise

    resolve = catboost_ranker.resolve
    monkeypatch.setattr(catboost_ranker, "resolve", unguarded)
    ranker = StochasticCatBoostRanker(StochasticRank(top=5), n_estimators=3, depth=3, n_jobs=2,
                                      cat_features=["cat"])
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "categorical features without has_time")
        with pytest.warns(RuntimeWarning, match="layout guard"):
            ranker.fit(df, y, qid=qid)
    assert ranker.route_ == "per_tree" and ranker.booster_.tree_count_ == 3


def test_row_index_channel():
    n = MAX_ROWS
    tail = encode_row_index(n)[-3:]
    assert tail.dtype == np.float32 and tail.max() < 1.0
    assert decode_row_index(tail).tolist() == [n - 3, n - 2, n - 1]
    with pytest.raises(ValueError, match="2\\*\\*24|16777216"):
        encode_row_index(n + 1)


# -- SGLB --------------------------------------------------------------------------------------


def test_sglb_noise_scale():
    offs = np.array([0, 4000])
    zero = Recording(type("Zero", (), {"grad_hess": lambda self, s, l, o, iteration=0: (
        np.zeros_like(s), np.ones_like(s))})())
    sglb = SGLB(learning_rate=0.1, model_shrink_rate=0.0, diffusion_temperature=500.0, seed=3)
    adapter = CatBoostObjective(zero, np.zeros(4000), offs, sglb=sglb)
    der = adapter.derivatives(np.zeros(4000))
    assert sglb.noise_std == pytest.approx(0.2)  # sqrt(2 / (lr T))
    assert np.array_equal(der[:, 0], -sglb.noise(4000, 0))  # der1 = -(grad + noise)
    assert np.std(der[:, 0]) == pytest.approx(0.2, rel=0.05)
    assert np.all(der[:, 1] == -1.0)
    adapter.iteration = 1
    assert not np.array_equal(adapter.derivatives(np.zeros(4000))[:, 0], der[:, 0])


def test_sglb_is_reproducible(ranking):
    X, y, qid = ranking
    # default bootstrap (Bernoulli) and random_strength: only the seeds make it reproducible
    params = dict(n_estimators=20, depth=4, learning_rate=0.2, n_jobs=2, langevin=True,
                  diffusion_temperature=200.0, model_shrink_rate=0.5)

    def fit(random_seed, **extra):
        ranker = StochasticCatBoostRanker(StochasticRank(top=5, seed=1),
                                          random_state=random_seed, **{**params, **extra})
        return ranker.fit(X, y, qid=qid).predict(X)

    first, second = fit(5), fit(5)
    assert np.array_equal(first, second)  # bit-identical
    assert not np.allclose(first, fit(6))
    assert not np.allclose(first, fit(5, langevin=False))  # the noise does act


# -- portability, inputs, defaults --------------------------------------------------------------


def test_saved_model_predicts_identically_without_the_package(ranking, tmp_path):
    X, y, qid = ranking
    ranker = StochasticCatBoostRanker(StochasticRank(top=5), n_estimators=10, depth=4,
                                      n_jobs=2).fit(X, y, qid=qid)
    pickle.loads(pickle.dumps(ranker.booster_))  # the trained model holds no Python objective
    ranker.save_model(tmp_path / "model.cbm")
    np.save(tmp_path / "X.npy", X)
    script = (
        "import sys, numpy as np, catboost\n"
        "m = catboost.CatBoost(); m.load_model(sys.argv[1] + '/model.cbm')\n"
        "p = m.predict(np.load(sys.argv[1] + '/X.npy'), prediction_type='RawFormulaVal')\n"
        "assert not any(k.startswith('stochrank_objectives') for k in sys.modules)\n"
        "np.save(sys.argv[1] + '/p.npy', p)\n"
    )
    subprocess.run([sys.executable, "-c", script, str(tmp_path)], check=True,
                   cwd=tmp_path, timeout=120)
    assert np.array_equal(np.load(tmp_path / "p.npy"), ranker.predict(X))


def test_all_zero_derivatives_train_with_the_default_bootstrap(ranking):
    X, _, qid = ranking
    flat = np.ones(len(qid))  # no query has two labels: every gradient is exactly 0
    ranker = StochasticCatBoostRanker(StochasticRank(top=5), n_estimators=3, n_jobs=2)
    assert np.all(ranker.fit(X, flat, qid=qid).predict(X) == 0.0)
    with pytest.raises(CatBoostError, match="sampling units"):  # why MVS is not the default
        StochasticCatBoostRanker(StochasticRank(top=5), bootstrap_type="MVS", n_estimators=3,
                                 n_jobs=2).fit(X, flat, qid=qid)


def test_err_objective_eval_labels_and_native_eval_metric(ranking):
    X, y, qid = ranking
    offs = query_offsets_from_qid(qid)
    obj = StochasticRank(metric="ERR", top=5, grade_max=4)
    ranker = StochasticCatBoostRanker(obj, n_estimators=8, depth=3, n_jobs=2)
    ranker.fit(X, y, qid=qid, eval_set=[(X, y, qid)], use_best_model=False)
    assert ranker.eval_metric_.startswith("ERR:top=5")  # learn labels in [0, 1): accepted
    reported = ranker.evals_result_["validation"]["ERR:top=5"][-1]
    assert reported == pytest.approx(
        metrics.err_at_k(ranker.predict(X), y, offs, 5, grade_max=4), abs=1e-12)
    # integer labels and an explicit CatBoost metric string
    for route in ("pointer", "per_tree"):
        ranker = StochasticCatBoostRanker(StochasticRank(top=5), eval_metric="NDCG:top=3",
                                          n_estimators=8, depth=3, n_jobs=2, route=route,
                                          early_stopping_rounds=50)
        ranker.fit(X, y.astype(np.int32), qid=qid, eval_set=[(X, y, qid)])
        history = ranker.evals_result_["validation"]["NDCG:top=3;type=Base"]  # CatBoost's
        assert len(history) == 8 and history[ranker.best_iteration_] == max(history)
        assert ranker.booster_.tree_count_ == ranker.best_iteration_ + 1  # use_best_model


def test_adapter_survives_deepcopy_and_pickle(ranking):
    _, y, qid = ranking
    adapter = CatBoostObjective(StochasticRank(), y, query_offsets_from_qid(qid))
    assert copy.deepcopy(adapter) is adapter
    clone = pickle.loads(pickle.dumps(adapter))
    assert clone.n_rows == adapter.n_rows and clone.iteration == 0


def test_bad_inputs_are_named(ranking):
    X, y, qid = ranking
    with pytest.raises(ValueError, match="loss_function"):
        StochasticCatBoostRanker(StochasticRank(), loss_function="RMSE").fit(X, y, qid=qid)
    with pytest.raises(ValueError, match="exactly one"):
        StochasticCatBoostRanker(StochasticRank()).fit(X, y)
    with pytest.raises(ValueError, match="contiguous"):
        StochasticCatBoostRanker(StochasticRank()).fit(X, y, qid=qid[::-1].copy()[
            np.random.default_rng(0).permutation(len(qid))])
    with pytest.raises(TypeError, match="grad_hess"):
        CatBoostObjective(object(), y, query_offsets_from_qid(qid))


# -- the per-chunk guard, called directly on buffers laid out as CatBoost's ------------------


class _Counting:
    """A protocol-only objective with cheap, score-dependent derivatives (counts its calls)."""

    def __init__(self):
        self.calls = 0

    def grad_hess(self, scores, labels, query_offsets, iteration=0):
        self.calls += 1
        return scores - labels + iteration, np.ones_like(scores)


def _direct_adapter(n=2500, seed=0):
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 3, n).astype(float)
    offs = np.arange(0, n + 1, 50)
    inner = _Counting()
    adapter = CatBoostObjective(inner, labels, offs)
    approx = rng.normal(size=n)  # stands for CatBoost's whole approx and target buffers
    return adapter, inner, labels, approx, encode_row_index(n)


def _serve(adapter, approx, targets, chunks):
    out = np.empty((approx.size, 2))
    start = 0
    for size in chunks:
        stop = start + size
        out[start:stop] = adapter.calc_ders_range(approx[start:stop], targets[start:stop], None)
        start = stop
    return out


def test_direct_passes_serve_every_chunk_and_reuse_the_pass():
    adapter, inner, labels, approx, targets = _direct_adapter()
    expected = -np.column_stack([approx - labels, np.ones_like(approx)])
    assert np.array_equal(_serve(adapter, approx, targets, [1000, 1000, 500]), expected)
    # a second pass (leaf estimation) at the same approx, other chunk sizes: no recomputation
    assert np.array_equal(_serve(adapter, approx, targets, [500, 439] * 2 + [622]), expected)
    assert (inner.calls, adapter.n_passes, adapter.n_evaluations) == (1, 2, 1)
    # same iteration, changed approx (leaf_estimation_iterations > 1): recomputed
    approx += 0.5
    assert np.array_equal(_serve(adapter, approx, targets, [1000] * 2 + [500])[:, 0],
                          labels - approx)
    assert inner.calls == 2
    adapter.after_iteration(None)  # next tree, same approx: recomputed for the new iteration
    assert np.array_equal(_serve(adapter, approx, targets, [2500])[:, 0], labels - approx - 1)
    assert (inner.calls, adapter.n_passes, adapter.layout_error) == (3, 4, None)


@pytest.mark.parametrize("case", ["permuted_chunk", "not_encoded", "out_of_range", "row_twice",
                                  "approx_changed", "first_chunk_permuted", "target_buffer"])
def test_direct_chunk_guards_raise_layout_error(case):
    from stochrank_objectives.adapters.catboost import LayoutError

    adapter, _, _, approx, targets = _direct_adapter()
    message = "contiguous"
    if case == "first_chunk_permuted":  # caught before the whole-buffer views are built
        targets[:1000] = targets[:1000][::-1]
    elif case == "target_buffer":  # the first chunk is fine, the rest of the buffer is not
        targets[2400] = targets[2401]
        message = "target buffer"
    else:  # later chunks: the first chunk of the pass is served from intact buffers
        _serve(adapter, approx, targets, [1000])
        approx, targets = approx[1000:], targets[1000:]  # the pass goes on with rows 1000..
        if case == "permuted_chunk":  # a chunk whose rows are not start..stop-1
            targets[200], targets[300] = targets[300], targets[200]
        elif case == "not_encoded":
            targets[0] = np.float32(np.nan)
            message = "contiguous|encoded"
        elif case == "out_of_range":  # a chunk claiming rows past the end
            targets[:1000] = encode_row_index(3000)[2000:3000]
        elif case == "row_twice":  # rows 0..999 again in the same pass
            targets[:1000] = encode_row_index(1000)
            approx[:1000] = adapter._pass_scores[:1000]
            message = "twice"
        elif case == "approx_changed":  # the buffer moved after the pass's first chunk
            approx[500] += 1e-9
            message = "changed"
    with pytest.raises(LayoutError, match=message):
        _serve(adapter, approx, targets, [1000, 500])
    assert re.search(message, adapter.layout_error)
    with pytest.raises(LayoutError, match=message):  # latched: every later call raises
        adapter.calc_ders_range(approx[:10], targets[:10], None)


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
@pytest.mark.parametrize("where", ["grad", "hess"])
def test_non_finite_derivatives_stop_training(where, bad):
    n = 300

    class Bad:
        def grad_hess(self, scores, labels, query_offsets, iteration=0):
            grad, hess = np.zeros(n), np.ones(n)
            (grad if where == "grad" else hess)[n - 1] = bad
            return grad, hess

    adapter = CatBoostObjective(Bad(), np.zeros(n), np.array([0, n]))
    with pytest.raises(ValueError, match="non-finite derivative for 1 document"):
        adapter.derivatives(np.zeros(n))


def test_derivatives_accept_a_scalar_hessian():
    n = 300

    class ConstantHessian:
        def grad_hess(self, scores, labels, query_offsets, iteration=0):
            return scores - 1.0, 2.0

    adapter = CatBoostObjective(ConstantHessian(), np.zeros(n), np.array([0, n]))
    scores = np.linspace(-1, 1, n)
    np.testing.assert_array_equal(adapter.derivatives(scores),
                                  np.column_stack([1.0 - scores, np.full(n, -2.0)]))


def test_catboost_shrink_factor_rounds_like_catboost_and_uses_the_sglb_formula():
    # CatBoost-only SGLB code lives in the adapter; the formula itself in sglb.py
    from stochrank_objectives.adapters.catboost._sglb import catboost_shrink_factor
    from stochrank_objectives.sglb import shrink_factor

    rate32, lr32 = float(np.float32(0.3)), float(np.float32(0.2))
    assert catboost_shrink_factor(0.3, 0.2, "Constant", 2) == 1.0 - rate32 * lr32
    assert catboost_shrink_factor(0.3, 0.2, "Constant", 2) != shrink_factor(0.3, 0.2, 2)
    assert catboost_shrink_factor(0.3, 0.2, "Decreasing", 4) == 1.0 - rate32 / 4
    assert catboost_shrink_factor(0.3, 0.2, "Constant", 0) == 1.0


# -- errors raised as themselves: Ctrl-C, the objective's errors, weights, no leftover state -----


class _RaisesAt:
    """StochasticRank that raises ``exc`` when asked for the derivatives of tree ``at``."""

    def __init__(self, at, exc=KeyboardInterrupt):
        self.inner = StochasticRank(metric="NDCG", top=5, seed=0)
        self.metric_spec = self.inner.metric_spec
        self.at, self.exc, self.armed = at, exc, True

    def grad_hess(self, scores, labels, query_offsets, iteration=0):
        if self.armed and iteration == self.at:
            raise self.exc(f"raised at tree {iteration}")
        return self.inner.grad_hess(scores, labels, query_offsets, iteration=iteration)


@pytest.fixture(scope="module")
def small():
    d = load_mq2008("train").subset_queries(30)
    return d.X, d.y, d.qid


# tree 0: inside calc_ders_range; tree 5: between trees (after_iteration's precomputation)
@pytest.mark.parametrize("at", [0, 5])
@pytest.mark.parametrize("route", ["pointer", "per_tree"])
def test_keyboard_interrupt_in_the_objective_is_raised_as_such(small, at, route):
    X, y, qid = small
    ranker = StochasticCatBoostRanker(_RaisesAt(at), n_estimators=8, depth=3, n_jobs=2,
                                      route=route)
    with pytest.raises(KeyboardInterrupt, match=f"tree {at}"):
        ranker.fit(X, y, qid=qid)
    assert not hasattr(ranker, "booster_")


def test_keyboard_interrupt_in_a_user_callback_is_raised_as_such(small):
    X, y, qid = small

    class Interrupting:
        def after_iteration(self, info):
            if info.iteration == 3:
                raise KeyboardInterrupt("callback")
            return True

    ranker = StochasticCatBoostRanker(StochasticRank(top=5), n_estimators=8, depth=3,
                                      callbacks=[Interrupting()])
    with pytest.raises(KeyboardInterrupt, match="callback"):
        ranker.fit(X, y, qid=qid)


def test_an_interrupt_catboost_ignores_does_not_return_a_partial_model(small, monkeypatch):
    # Ctrl-C landing in CatBoost's Cython glue while it builds the callbacks' argument: CatBoost
    # prints "Exception ignored" and stops training as if asked to. Simulated deterministically
    # by a KeyboardInterrupt from a helper that glue calls (catboost 1.2.10).
    import catboost._catboost as glue

    if not callable(getattr(glue, "iteritems", None)):
        pytest.skip("this CatBoost builds the callback argument differently")
    X, y, qid = small
    calls = []
    original = glue.iteritems

    def interrupted(*args, **kwargs):
        calls.append(1)
        if len(calls) == 4:
            raise KeyboardInterrupt
        return original(*args, **kwargs)

    monkeypatch.setattr(glue, "iteritems", interrupted)
    ranker = StochasticCatBoostRanker(StochasticRank(top=5), n_estimators=20, depth=3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pytest.PytestUnraisableExceptionWarning)
        with pytest.raises(KeyboardInterrupt, match="stopped training after"):
            ranker.fit(X, y, qid=qid)
    assert len(calls) >= 4 and not hasattr(ranker, "booster_")


@pytest.mark.slow
def test_sigint_during_a_fit_raises_keyboard_interrupt(default_sigint_handler):
    # the real signal, at delays that land in CatBoost's C++, in the objective and in between
    import os
    import signal
    import threading

    d = load_mq2008("train").subset_queries(60)
    v = load_mq2008("vali").subset_queries(30)
    for i in range(10):
        ranker = StochasticCatBoostRanker(StochasticRank(metric="NDCG", top=5, seed=0),
                                          n_estimators=3000, depth=3, n_jobs=1 + i % 2,
                                          verbose=1)
        timer = threading.Timer(0.2 + 0.03 * i, os.kill, (os.getpid(), signal.SIGINT))
        timer.start()
        try:
            with pytest.raises(KeyboardInterrupt):
                ranker.fit(d.X, d.y, qid=d.qid, eval_set=[(v.X, v.y, v.qid)])
        finally:
            timer.join()
        assert not hasattr(ranker, "booster_")


def test_a_failed_fit_leaves_nothing_behind(small):
    # CatBoost leaves a Python error as the thread's handled exception after fit: it resurfaced
    # as the context of later errors, and in the text of the next CatBoostError
    import sys

    X, y, qid = small
    before = sys.exc_info()[1]  # None, unless an earlier test's own CatBoost fit left one
    objective = _RaisesAt(2, ValueError)
    ranker = StochasticCatBoostRanker(objective, n_estimators=6, depth=3, n_jobs=2)
    for _ in range(3):
        objective.armed = True
        with pytest.raises(ValueError, match="raised at tree 2") as info:
            ranker.fit(X, y, qid=qid)
        assert not isinstance(info.value, CatBoostError)
        assert sys.exc_info()[1] is before
        objective.armed = False
        assert ranker.fit(X, y, qid=qid).booster_.tree_count_ == 6
        assert sys.exc_info()[1] is before


def test_low_level_fit_raises_the_objectives_errors(small):
    X, y, qid = small
    offs = query_offsets_from_qid(qid)
    groups = np.repeat(np.arange(len(offs) - 1), np.diff(offs))

    def model(adapter):
        return CatBoost(dict(loss_function=adapter, eval_metric=NDCG5, iterations=5, depth=3,
                             bootstrap_type="Bernoulli", allow_writing_files=False,
                             verbose=False))

    adapter = CatBoostObjective(_RaisesAt(-1), y, offs)
    weighted = Pool(X, label=encode_row_index(len(y)), group_id=groups,
                    weight=np.linspace(1, 2, len(y)))
    with pytest.raises(ValueError, match="learn Pool has weights.*weights=w") as info:
        catboost_fit(model(adapter), weighted, adapter)
    assert "Traceback" not in str(info.value)
    pool = Pool(X, label=encode_row_index(len(y)), group_id=groups)
    assert catboost_fit(model(adapter), pool, adapter).tree_count_ == 5  # reset in between
    assert adapter.iteration == 5
    failing = CatBoostObjective(_RaisesAt(3, KeyboardInterrupt), y, offs)
    with pytest.raises(KeyboardInterrupt):
        catboost_fit(model(failing), pool, failing)


def test_a_pickle_of_the_previous_ranker_still_loads(small):
    # before it was a CatBoostRanker the ranker pickled its attributes, the booster among them
    X, y, qid = small
    ranker = StochasticCatBoostRanker(StochasticRank(top=5), n_estimators=3, depth=3, n_jobs=1)
    ranker.fit(X, y, qid=qid)
    old = {"objective": ranker.objective, "sglb": None, "n_estimators": 3,
           "learning_rate": 0.1, "random_state": None, "eval_metric": None,
           "early_stopping_rounds": None, "n_jobs": 1, "verbose": False,
           "_other_params": {"depth": 3}, "booster_": ranker.booster_,
           "objective_": ranker.objective_, "route_": "pointer", "n_features_in_": 46,
           "evals_result_": {}, "best_iteration_": None}
    blank = StochasticCatBoostRanker.__new__(StochasticCatBoostRanker)
    blank.__setstate__(pickle.loads(pickle.dumps(old)))
    np.testing.assert_array_equal(blank.predict(X), ranker.predict(X))
    assert blank.get_params()["depth"] == 3 and blank.route_ == "pointer"
    assert blank.score(X, y, qid=qid) == ranker.score(X, y, qid=qid)

