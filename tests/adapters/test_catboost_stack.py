"""StochasticCatBoostRanker in the user's stack: CatBoost callbacks (Optuna's pruning one
among them), initial scores (CatBoost's ``baseline``), continued training (``init_model``)
under SGLB and early stopping, and ``LossFunctionChange`` importances of ``booster_``."""

import json
import warnings

import numpy as np
import pytest

catboost = pytest.importorskip("catboost")
from catboost import CatBoost, CatBoostRanker, Pool  # noqa: E402

from stochrank_objectives import (  # noqa: E402
    SGLB,
    LambdaMART,
    StochasticCatBoostRanker,
    StochasticRank,
    metrics,
    query_offsets_from_qid,
)
from _reference import Recorder  # noqa: E402
from _rankers import graded_queries  # noqa: E402


X, Y, QID = graded_queries(60, seed=0)
XV, YV, QV = graded_queries(30, seed=1)
EVAL = [(XV, YV, QV)]
NDCG5 = "NDCG@5"
CB_NDCG5 = "NDCG:top=5;type=Exp"  # CatBoost's name of the same metric (what callbacks see)
# one CatBoost fit and the one-tree-per-fit route agree bit for bit without random streams
EXACT = dict(bootstrap_type="No", random_strength=0)
# SGLB with a visible shrink (c = 0.97) and noise
SHRINK = dict(learning_rate=0.3, model_shrink_rate=0.1, diffusion_temperature=1e3, seed=3)


def ranker(objective=None, **kwargs):
    params = dict(n_estimators=6, n_jobs=1, depth=3, learning_rate=0.3, random_state=0)
    params.update(kwargs)
    return StochasticCatBoostRanker(StochasticRank(top=5, seed=1) if objective is None
                                    else objective, **params)


def _ndcg5(scores, y=YV, qid=QV):
    return metrics.ndcg_at_k(scores, y, query_offsets_from_qid(qid), 5)


def _f32(a):
    return np.asarray(a, dtype=np.float32).astype(np.float64)


class Recording:
    """A CatBoost callback recording what it is shown; stops training at round ``stop``."""

    def __init__(self, stop=None):
        self.seen, self.stop = [], stop

    def after_iteration(self, info):
        self.seen.append((info.iteration, {name: {m: list(v) for m, v in values.items()}
                                           for name, values in info.metrics.items()}))
        return self.stop is None or info.iteration < self.stop


# -- callbacks= --------------------------------------------------------------------------------
@pytest.mark.parametrize("route", ["pointer", "per_tree"])
def test_a_recording_callback_sees_every_round(route):
    rec = Recording()
    model = ranker(route=route).fit(X, Y, qid=QID, eval_set=EVAL, callbacks=[rec])
    assert [t for t, _ in rec.seen] == list(range(1, 7))
    history = model.evals_result_["validation"][CB_NDCG5]
    for t, shown in rec.seen:  # CatBoost's names: "validation" for a single eval set
        assert shown["validation"] == {CB_NDCG5: pytest.approx(history[:t], abs=1e-12)}


@pytest.mark.parametrize("route", ["pointer", "per_tree"])
def test_a_callback_returning_false_stops_training(route):
    rec = Recording(stop=3)
    model = ranker(route=route, n_estimators=20).fit(X, Y, qid=QID, eval_set=EVAL,
                                                     callbacks=[rec])
    assert len(rec.seen) == 3 and model.booster_.tree_count_ == 3
    assert model.n_iterations_ == 3 and len(model.evals_result_["validation"][CB_NDCG5]) == 3


@pytest.mark.parametrize("route", ["pointer", "per_tree"])
def test_callbacks_with_early_stopping(route):
    rec = Recording()
    model = ranker(route=route, n_estimators=60, early_stopping_rounds=2).fit(
        X, Y, qid=QID, eval_set=EVAL, callbacks=[rec])
    history = model.evals_result_["validation"][CB_NDCG5]
    assert len(rec.seen) == len(history) < 60
    assert model.booster_.tree_count_ == model.best_iteration_ + 1


@pytest.mark.parametrize("route", ["pointer", "per_tree"])
def test_an_error_in_a_user_callback_is_raised_as_itself(route):
    class Failing:
        def after_iteration(self, info):
            if info.iteration == 2:
                raise ValueError("from the callback")
            return True

    model = ranker(route=route)
    with pytest.raises(ValueError, match="from the callback"):
        model.fit(X, Y, qid=QID, callbacks=[Failing()])
    assert not hasattr(model, "booster_")


def test_callbacks_must_be_catboost_callbacks():
    with pytest.raises(TypeError, match=r"callbacks\[1\].*after_iteration"):
        ranker().fit(X, Y, qid=QID, callbacks=[Recording(), lambda info: True])
    with pytest.raises(TypeError, match="callbacks must be a list"):
        ranker().fit(X, Y, qid=QID, callbacks=Recording())


def test_the_callbacks_parameter_is_deprecated_for_fits_callbacks():
    rec = Recording()
    with pytest.warns(DeprecationWarning, match=r"fit\(\.\.\., callbacks="):
        ranker(callbacks=[rec]).fit(X, Y, qid=QID)
    assert len(rec.seen) == 6
    with pytest.raises(ValueError, match="callbacks.*both"):
        ranker(callbacks=[Recording()]).fit(X, Y, qid=QID, callbacks=[Recording()])


@pytest.mark.parametrize("route", ["pointer", "per_tree"])
def test_optuna_catboost_pruning_callback(route):
    optuna = pytest.importorskip("optuna")
    try:
        from optuna_integration import CatBoostPruningCallback
    except ImportError:
        CatBoostPruningCallback = pytest.importorskip(
            "optuna.integration").CatBoostPruningCallback
    optuna.logging.set_verbosity(optuna.logging.WARNING)

    def objective(trial):
        pruning = CatBoostPruningCallback(trial, CB_NDCG5)
        model = ranker(route=route, n_estimators=5)
        model.fit(X, Y, qid=QID, eval_set=EVAL, callbacks=[pruning])
        pruning.check_pruned()
        return model.score(XV, YV, qid=QV)

    kept = optuna.create_study(direction="maximize")
    kept.optimize(objective, n_trials=1)
    assert kept.trials[0].state == optuna.trial.TrialState.COMPLETE
    assert sorted(kept.trials[0].intermediate_values) == list(range(5))
    # a pruner that prunes every trial at its first report: NDCG@5 <= 1 < 2
    pruned = optuna.create_study(direction="maximize",
                                 pruner=optuna.pruners.ThresholdPruner(lower=2.0))
    pruned.optimize(objective, n_trials=1)
    assert pruned.trials[0].state == optuna.trial.TrialState.PRUNED
    assert sorted(pruned.trials[0].intermediate_values) == [0]


# -- init_model= ------------------------------------------------------------------------------
@pytest.mark.parametrize("route", ["pointer", "per_tree"])
def test_init_model_forms_and_the_noise_iteration_continue(route, tmp_path):
    # CatBoost's own continued training draws its bootstrap and split noise anew; the per-tree
    # route seeds tree t by its index in the whole model
    kw = dict(route=route, **(EXACT if route == "pointer" else {}))
    first = ranker(n_estimators=4, **kw).fit(X, Y, qid=QID)
    path = tmp_path / "first.cbm"
    first.save_model(path)
    recorder = Recorder(StochasticRank(top=5, seed=1))
    cont = ranker(recorder, n_estimators=4, eval_metric=NDCG5, **kw).fit(
        X, Y, qid=QID, init_model=first)
    assert set(recorder.iterations) == set(range(4, 8))  # the noise keys continue from 4 trees
    assert cont.booster_.tree_count_ == 8 and cont.n_iterations_ == 4
    pred = cont.predict(XV)
    for form in (first.booster_, str(path), path):
        again = ranker(n_estimators=4, **kw).fit(X, Y, qid=QID, init_model=form)
        np.testing.assert_allclose(again.predict(XV), pred, rtol=0, atol=1e-12)
    # 4 trees, then 4 more, is the model of 8 trees at once (the same noise and seeds)
    whole = ranker(n_estimators=8, **kw).fit(X, Y, qid=QID)
    np.testing.assert_allclose(pred, whole.predict(XV), rtol=0, atol=1e-10)
    # CatBoost's own ranker is accepted as well
    native = CatBoostRanker(loss_function="YetiRank", iterations=3, depth=3, verbose=False,
                            allow_writing_files=False)
    native.fit(X, Y, group_id=QID)
    from_native = ranker(route=route, n_estimators=2).fit(X, Y, qid=QID, init_model=native)
    assert from_native.booster_.tree_count_ == 5


def test_continued_training_on_the_pointer_route_warns_when_catboost_draws_noise():
    """At CatBoost's defaults (a bootstrap, random_strength=1) the pointer route's continued
    fit draws its noise again: 4 + 4 trees are not the 8-tree model, and it says so (issue 44,
    case 1); without CatBoost's noise, or on the per-tree route, they are, and it is silent."""
    first = ranker(n_estimators=4).fit(X, Y, qid=QID)
    with pytest.warns(RuntimeWarning, match=r"init_model on route 'pointer': CatBoost draws "
                                            r".*route='per_tree'.*bootstrap_type='No' and "
                                            r"random_strength=0"):
        cont = ranker(n_estimators=4).fit(X, Y, qid=QID, init_model=first)
    whole = ranker(n_estimators=8).fit(X, Y, qid=QID)
    assert np.abs(cont.predict(XV) - whole.predict(XV)).max() > 1e-6  # what it warns of
    for kw in (EXACT, dict(route="per_tree")):
        first = ranker(n_estimators=4, **kw).fit(X, Y, qid=QID)
        with warnings.catch_warnings():
            warnings.simplefilter("error", RuntimeWarning)
            cont = ranker(n_estimators=4, **kw).fit(X, Y, qid=QID, init_model=first)
        whole = ranker(n_estimators=8, **kw).fit(X, Y, qid=QID)
        np.testing.assert_allclose(cont.predict(XV), whole.predict(XV), rtol=0, atol=1e-10)


def test_init_model_errors(tmp_path):
    with pytest.raises(ValueError, match="init_model.*not fitted"):
        ranker().fit(X, Y, qid=QID, init_model=ranker())
    with pytest.raises(ValueError, match="init_model.*not fitted"):
        ranker().fit(X, Y, qid=QID, init_model=CatBoost())
    with pytest.raises(FileNotFoundError, match="init_model"):
        ranker().fit(X, Y, qid=QID, init_model=tmp_path / "missing.cbm")
    (tmp_path / "junk.cbm").write_text("not a model")
    with pytest.raises(ValueError, match="init_model.*junk.cbm"):
        ranker().fit(X, Y, qid=QID, init_model=tmp_path / "junk.cbm")
    with pytest.raises(TypeError, match="init_model must be"):
        ranker().fit(X, Y, qid=QID, init_model=object())
    first = ranker(n_estimators=2).fit(X[:, :4], Y, qid=QID)
    with pytest.raises(ValueError, match="init_model has 4 features, X has 5"):
        ranker().fit(X, Y, qid=QID, init_model=first)


@pytest.mark.parametrize("sglb", [None, SGLB(**SHRINK)], ids=["plain", "sglb"])
def test_early_stopping_with_init_model(sglb):
    first = ranker(n_estimators=4, sglb=sglb, route="per_tree").fit(X, Y, qid=QID)
    cont = ranker(n_estimators=40, early_stopping_rounds=3, sglb=sglb, route="per_tree").fit(
        X, Y, qid=QID, eval_set=EVAL, init_model=first)
    history = cont.evals_result_["validation"][CB_NDCG5]
    best = int(np.argmax(history))
    # best_iteration_ counts this fit's trees, as CatBoost's own get_best_iteration() does
    assert cont.best_iteration_ == best
    assert cont.booster_.tree_count_ == 4 + best + 1
    assert _ndcg5(cont.predict(XV)) == pytest.approx(history[best], abs=1e-12)


def test_early_stopping_with_init_model_on_the_pointer_route():
    first = ranker(n_estimators=4, **EXACT).fit(X, Y, qid=QID)
    cont = ranker(n_estimators=40, early_stopping_rounds=3, route="pointer", **EXACT).fit(
        X, Y, qid=QID, eval_set=EVAL, init_model=first)
    history = cont.evals_result_["validation"][CB_NDCG5]
    best = int(np.argmax(history))
    assert cont.route_ == "pointer" and len(history) < 40
    assert cont.best_iteration_ == best and cont.booster_.tree_count_ == 4 + best + 1
    assert _ndcg5(cont.predict(XV)) == pytest.approx(history[best], abs=1e-12)


# -- SGLB with init_model / init_score --------------------------------------------------------
def test_sglb_continued_training_is_one_sglb_run():
    """6 SGLB trees, then 6 more from that model, is the 12-tree SGLB model (same noise keys,
    seeds and shrinkage: F_12 = c^6 F_6 + ...). CatBoost's own continued training would drop
    model_shrink_rate, so route "auto" trains one tree per fit, with a warning."""
    sglb = SGLB(**SHRINK)
    first = ranker(n_estimators=6, sglb=sglb, route="per_tree").fit(X, Y, qid=QID)
    with pytest.warns(RuntimeWarning, match="model_shrink_rate.*init_model"):
        cont = ranker(n_estimators=6, sglb=sglb).fit(X, Y, qid=QID, init_model=first)
    whole = ranker(n_estimators=12, sglb=sglb, route="per_tree").fit(X, Y, qid=QID)
    assert cont.route_ == "per_tree" and cont.booster_.tree_count_ == 12
    np.testing.assert_allclose(cont.predict(XV), whole.predict(XV), rtol=0, atol=1e-9)


def test_sglb_continued_training_equals_the_init_score_reference():
    """Continuing T SGLB trees from F_0 (the first model) = c^T F_0 + the T-tree model trained
    on init_score = F_0 (an iteration-free objective and no noise). Tolerance 1e-6 (2e-8
    measured): the
    init-score run sees F_0 rounded to float32 (CatBoost's baseline), the continued run the
    float64 predictions of the init model."""
    sglb = SGLB(learning_rate=0.3, model_shrink_rate=0.1, diffusion_temperature=None)
    kw = dict(n_estimators=6, sglb=sglb, route="per_tree", **EXACT)
    first = ranker(LambdaMART(top=5), **kw).fit(X, Y, qid=QID)
    cont = ranker(LambdaMART(top=5), **kw).fit(X, Y, qid=QID, init_model=first)
    ref = ranker(LambdaMART(top=5), **kw).fit(X, Y, qid=QID, init_score=first.predict(X))
    c_T = sglb.shrink ** 6
    np.testing.assert_allclose(cont.predict(XV), c_T * first.predict(XV) + ref.predict(XV),
                               rtol=0, atol=1e-6)
    assert np.abs(cont.predict(XV) - first.predict(XV) - ref.predict(XV)).max() > 1e-3


def test_the_objective_sees_the_shrunk_init_score_plus_the_model():
    """Under SGLB the initial score is F_0 and is shrunk with the model: the scores of tree t
    are c (float32(init) + F_t), F_t the model's own trees, and the final model is
    F_T = c^T init + predict(X)."""
    sglb = SGLB(learning_rate=0.3, model_shrink_rate=0.1, diffusion_temperature=None)
    recorder = RecordingScores(StochasticRank(top=5, seed=1))
    init = np.random.default_rng(5).normal(size=Y.size)
    with pytest.warns(RuntimeWarning, match="model_shrink_rate.*init_score"):
        model = ranker(recorder, n_estimators=3, sglb=sglb, eval_metric=NDCG5).fit(
            X, Y, qid=QID, init_score=init)
    c = sglb.shrink
    assert model.route_ == "per_tree"
    booster = model.booster_
    for t, scores in recorder.calls:
        own = booster.predict(X, prediction_type="RawFormulaVal", ntree_end=t) if t else 0.0
        # the final model holds tree u < t multiplied by the factors after tree t as well
        later = c ** (3 - t)
        np.testing.assert_allclose(scores, c ** (t + 1) * _f32(init) + own / later * c,
                                   rtol=0, atol=1e-6)


class RecordingScores:
    """An objective that records the scores of each iteration."""

    def __init__(self, inner):
        self.inner, self.calls = inner, []

    def grad_hess(self, scores, labels, query_offsets, iteration=0):
        self.calls.append((iteration, np.array(scores, copy=True)))
        return self.inner.grad_hess(scores, labels, query_offsets, iteration=iteration)


def test_shrinkage_with_init_scores_on_the_pointer_route_is_refused():
    sglb = SGLB(**SHRINK)
    init = np.zeros(Y.size)
    with pytest.raises(ValueError, match="route='pointer'.*model_shrink_rate.*init_score"):
        ranker(sglb=sglb, route="pointer").fit(X, Y, qid=QID, init_score=init)
    first = ranker(n_estimators=2).fit(X, Y, qid=QID)
    with pytest.raises(ValueError, match="route='pointer'.*model_shrink_rate.*init_model"):
        ranker(sglb=sglb, route="pointer").fit(X, Y, qid=QID, init_model=first)
    with pytest.raises(ValueError, match="route='pointer'.*init_model.*init_score"):
        ranker(route="pointer").fit(X, Y, qid=QID, init_model=first, init_score=init)
    # Decreasing shrinkage has no factor before tree 0 (1 - gamma / 0) to shrink F_0 with
    with pytest.raises(ValueError, match="Decreasing.*init_score"):
        ranker(model_shrink_rate=0.1, model_shrink_mode="Decreasing", route="per_tree").fit(
            X, Y, qid=QID, init_score=init)


def test_zero_init_scores_under_sglb_equal_no_init_scores():
    """With init_score = 0 the per-tree route (which shrinkage with a baseline needs) trains the
    model of the pointer route without init scores (shrinkage kept, to 1e-12)."""
    sglb = SGLB(**SHRINK)
    plain = ranker(sglb=sglb, route="pointer", **EXACT).fit(X, Y, qid=QID, eval_set=EVAL)
    zero = ranker(sglb=sglb, route="per_tree", **EXACT).fit(
        X, Y, qid=QID, init_score=np.zeros(Y.size), eval_set=EVAL,
        eval_init_score=[np.zeros(YV.size)])
    np.testing.assert_allclose(zero.predict(XV), plain.predict(XV), rtol=0, atol=1e-12)
    np.testing.assert_allclose(zero.evals_result_["validation"][CB_NDCG5],
                               plain.evals_result_["validation"][CB_NDCG5], rtol=0, atol=1e-12)


# -- init_score= / eval_init_score= --------------------------------------------------------
def test_baseline_equals_continued_training():
    """init_score = a first ranker's predictions trains like continuing that ranker:
    first + on_scores == cont. Tolerance 1e-6 (2e-8 measured): CatBoost keeps a baseline in
    float32 (relative rounding 6e-8 of the scores), while the continued run starts from the
    init model's float64 predictions; the difference reaches the leaves through the
    derivatives."""
    kw = dict(n_estimators=6, **EXACT)
    first = ranker(LambdaMART(top=5), **kw).fit(X, Y, qid=QID)
    cont = ranker(LambdaMART(top=5), **kw).fit(X, Y, qid=QID, init_model=first)
    on_scores = ranker(LambdaMART(top=5), **kw).fit(X, Y, qid=QID, baseline=first.predict(X))
    assert on_scores.route_ == "pointer" and on_scores.booster_.tree_count_ == 6
    np.testing.assert_allclose(first.predict(XV) + on_scores.predict(XV), cont.predict(XV),
                               rtol=0, atol=1e-6)


def test_init_scores_train_the_same_model_on_both_routes():
    init = np.random.default_rng(2).normal(size=Y.size)
    eval_init = np.random.default_rng(3).normal(size=YV.size)
    fits = {route: ranker(route=route, **EXACT).fit(X, Y, qid=QID, init_score=init,
                                                    eval_set=EVAL, eval_init_score=[eval_init])
            for route in ("pointer", "per_tree")}
    np.testing.assert_allclose(fits["pointer"].predict(XV), fits["per_tree"].predict(XV),
                               rtol=0, atol=1e-12)
    np.testing.assert_allclose(fits["pointer"].evals_result_["validation"][CB_NDCG5],
                               fits["per_tree"].evals_result_["validation"][CB_NDCG5],
                               rtol=0, atol=1e-12)


@pytest.mark.parametrize("route", ["pointer", "per_tree"])
def test_eval_init_score_reaches_the_eval_set_and_early_stopping(route):
    first = ranker(n_estimators=6).fit(X, Y, qid=QID)
    init, eval_init = first.predict(X), first.predict(XV)
    model = ranker(route=route, n_estimators=40, early_stopping_rounds=3).fit(
        X, Y, qid=QID, init_score=init, eval_set=EVAL, eval_init_score=[eval_init])
    history = model.evals_result_["validation"][CB_NDCG5]
    best = int(np.argmax(history))
    assert model.best_iteration_ == best and model.booster_.tree_count_ == best + 1
    assert _ndcg5(_f32(eval_init) + model.predict(XV)) == pytest.approx(history[best],
                                                                        abs=1e-12)
    without = ranker(route=route, n_estimators=1).fit(X, Y, qid=QID, init_score=init,
                                                      eval_set=EVAL)
    assert without.evals_result_["validation"][CB_NDCG5][0] != pytest.approx(history[0])


def test_init_model_and_init_score_together_train_one_tree_per_fit():
    first = ranker(n_estimators=3).fit(X, Y, qid=QID)
    init = np.random.default_rng(4).normal(size=Y.size)
    recorder = RecordingScores(StochasticRank(top=5, seed=1))
    with pytest.warns(RuntimeWarning, match="init_model.*init_score"):
        model = ranker(recorder, n_estimators=2, eval_metric=NDCG5).fit(
            X, Y, qid=QID, init_model=first, init_score=init)
    assert model.route_ == "per_tree" and model.booster_.tree_count_ == 5
    t, scores = recorder.calls[0]
    assert t == 3
    np.testing.assert_allclose(scores, _f32(init) + first.predict(X), rtol=0, atol=1e-12)


# -- LossFunctionChange ----------------------------------------------------------------------
@pytest.mark.parametrize("route", ["pointer", "per_tree"])
def test_loss_function_change_importances_of_the_booster(route, tmp_path):
    rng = np.random.default_rng(7)
    qid = np.repeat(np.arange(50), 12)
    Xs = rng.normal(size=(qid.size, 5))
    ys = np.clip(np.round(1.5 * Xs[:, 2] + 2), 0, 4)  # feature 2 decides the labels
    model = ranker(route=route, n_estimators=20).fit(Xs, ys, qid=qid)
    pool = Pool(Xs, label=ys, group_id=qid)
    importances = model.booster_.get_feature_importance(type="LossFunctionChange", data=pool)
    assert int(np.argmax(importances)) == 2 and importances[2] > 0.1
    assert np.all(np.abs(np.delete(importances, 2)) < 0.2 * importances[2])
    # the metric is the ranker's eval metric (CatBoost's NDCG:top=5;type=Exp here), saved too
    params = json.loads(model.booster_.get_metadata()["params"])
    assert params["metrics"]["objective_metric"] == {"type": "NDCG",
                                                     "params": {"top": "5", "type": "Exp"}}
    path = tmp_path / "m.cbm"
    model.save_model(path)
    loaded = CatBoost().load_model(str(path))
    np.testing.assert_allclose(
        loaded.get_feature_importance(type="LossFunctionChange", data=pool), importances)
    # and the predictions are untouched
    np.testing.assert_array_equal(loaded.predict(Xs, prediction_type="RawFormulaVal"),
                                  model.predict(Xs))
