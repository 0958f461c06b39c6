"""StochasticLGBMRanker in the user's stack: LightGBM callbacks (early stopping, logging,
Optuna-style pruning), continued training (init_model) and initial scores under SGLB and early
stopping, and the booster that ``lgb.train`` returns (what MLflow's autolog logs) being the
ranker's final model."""

import numpy as np
import pytest

lgb = pytest.importorskip("lightgbm")

from stochrank_objectives import (  # noqa: E402
    SGLB,
    LambdaMART,
    StochasticLGBMRanker,
    StochasticRank,
    metrics,
    query_offsets_from_qid,
)
from stochrank_objectives.adapters.lightgbm import LGBMObjective  # noqa: E402
from _reference import Recorder  # noqa: E402
from _rankers import graded_queries  # noqa: E402


X, Y, QID = graded_queries(40, seed=0)
XV, YV, QV = graded_queries(20, seed=1)
EVAL = [(XV, YV, QV)]
NDCG5 = "NDCG@5"
# SGLB with a visible shrink (c = 0.97) and noise
SHRINK = dict(learning_rate=0.3, model_shrink_rate=0.1, diffusion_temperature=1e3, seed=3)


def ranker(objective=None, **kwargs):
    # metric="None": the eval sets log the package's NDCG@5 only (fit(eval_metric=NDCG5))
    params = dict(n_estimators=8, n_jobs=1, num_leaves=7, min_data_in_leaf=5,
                  learning_rate=0.3, random_state=0, metric="None", verbose=-1)
    params.update(kwargs)
    return StochasticLGBMRanker(StochasticRank(top=5, seed=1) if objective is None
                                else objective, **params)


def _ndcg5(scores, y=YV, qid=QV):
    return metrics.ndcg_at_k(scores, y, query_offsets_from_qid(qid), 5)


class Pruned(Exception):
    """What an Optuna-style pruning callback raises (optuna.TrialPruned stands in)."""


# -- callbacks= ------------------------------------------------------------------------------
def test_user_callbacks_see_every_round_after_the_rankers_own():
    seen, rates = [], []

    def after(env):
        seen.append((env.iteration, [(r[0], r[1]) for r in env.evaluation_result_list]))

    def before(env):  # the ranker's SGLB rate for this tree is already set
        rates.append(env.params["learning_rate"])

    before.before_iteration = True
    before.order = -1000  # an order below LightGBM's own still runs after the ranker's
    sglb = SGLB(**SHRINK)
    model = ranker(sglb=sglb).fit(X, Y, qid=QID, eval_set=EVAL, eval_metric=NDCG5, callbacks=[after, before])
    assert [t for t, _ in seen] == list(range(8))
    assert all(names == [("validation_0", NDCG5)] for _, names in seen)
    np.testing.assert_allclose(rates, [sglb.learning_rate_at(t) for t in range(8)], rtol=1e-15)
    assert len(model.evals_result_["validation_0"][NDCG5]) == 8
    # with the ranker's early stopping the user's callback sees the stopping round too
    seen.clear()
    model = ranker(n_estimators=40, early_stopping_rounds=2).fit(
        X, Y, qid=QID, eval_set=EVAL, eval_metric=NDCG5, callbacks=[after])
    assert len(seen) == len(model.evals_result_["validation_0"][NDCG5]) < 40


@pytest.mark.parametrize("sglb", [None, SGLB(**SHRINK)], ids=["plain", "sglb"])
def test_lightgbm_early_stopping_and_log_evaluation(capsys, sglb):
    model = ranker(n_estimators=40, sglb=sglb).fit(
        X, Y, qid=QID, eval_set=EVAL, eval_metric=NDCG5,
        callbacks=[lgb.early_stopping(2, verbose=False), lgb.log_evaluation(1)])
    history = model.evals_result_["validation_0"][NDCG5]
    assert len(history) < 40
    best = int(np.argmax(history))
    # LightGBM's best_iteration_ counts from 1: the number of trees kept
    assert model.best_iteration_ == best + 1 and model.booster_.num_trees() == best + 1
    assert _ndcg5(model.predict(XV)) == pytest.approx(history[best], abs=1e-12)
    out = capsys.readouterr().out
    assert out.count("validation_0's NDCG@5") == len(history)
    # the kept trees are the model of best + 1 rounds (under SGLB: c^(best + 1) baked in)
    short = ranker(n_estimators=best + 1, sglb=sglb).fit(X, Y, qid=QID, eval_set=EVAL, eval_metric=NDCG5)
    np.testing.assert_allclose(model.predict(XV), short.predict(XV), rtol=0, atol=1e-12)


def test_a_pruning_callback_stops_the_fit_with_its_exception():
    reported = []

    def prune(env):  # as optuna's LightGBMPruningCallback: read the metric, report, raise
        value = next(r[2] for r in env.evaluation_result_list
                     if r[0] == "validation_0" and r[1] == NDCG5)
        reported.append(value)
        if env.iteration == 3:
            raise Pruned(f"trial pruned at iteration {env.iteration}")

    model = ranker(n_estimators=20)
    with pytest.raises(Pruned, match="iteration 3"):
        model.fit(X, Y, qid=QID, eval_set=EVAL, eval_metric=NDCG5, callbacks=[prune])
    assert len(reported) == 4 and not hasattr(model, "booster_")


def test_a_callback_that_changes_the_sglb_learning_rate_is_refused():
    halve = lgb.reset_parameter(learning_rate=lambda t: 0.15)
    with pytest.raises(ValueError, match="changed the learning rate.*SGLB"):
        ranker(sglb=SGLB(**SHRINK)).fit(X, Y, qid=QID, callbacks=[halve])
    # without SGLB the user's schedule is LightGBM's: the trees follow it
    slow = ranker(learning_rate=0.3).fit(X, Y, qid=QID, callbacks=[halve])
    assert np.abs(slow.predict(XV) - ranker().fit(X, Y, qid=QID).predict(XV)).max() > 1e-3


def test_callbacks_must_be_callables():
    with pytest.raises(TypeError, match=r"callbacks\[1\].*int"):
        ranker().fit(X, Y, qid=QID, callbacks=[lambda env: None, 3])
    with pytest.raises(TypeError, match="callbacks must be a list"):
        ranker().fit(X, Y, qid=QID, callbacks=lambda env: None)


def test_optuna_lightgbm_pruning_callback():
    optuna = pytest.importorskip("optuna")
    try:
        from optuna_integration import LightGBMPruningCallback
    except ImportError:
        LightGBMPruningCallback = pytest.importorskip(
            "optuna.integration").LightGBMPruningCallback
    optuna.logging.set_verbosity(optuna.logging.WARNING)

    fitted = []

    def objective(trial):
        model = ranker(n_estimators=10)
        fitted.append(model)
        model.fit(X, Y, qid=QID, eval_set=EVAL, eval_metric=NDCG5, callbacks=[
            LightGBMPruningCallback(trial, NDCG5, valid_name="validation_0")])
        return model.score(XV, YV, qid=QV)

    kept = optuna.create_study(direction="maximize")
    kept.optimize(objective, n_trials=1)
    trial = kept.trials[0]
    assert trial.state == optuna.trial.TrialState.COMPLETE
    # the metric the ranker logs, reported every round (keyed by LightGBM's 0-based iteration)
    history = fitted[0].evals_result_["validation_0"][NDCG5]
    assert [trial.intermediate_values[t] for t in range(10)] == history
    # a pruner that prunes every trial at its first report: NDCG@5 <= 1 < 2
    pruned = optuna.create_study(direction="maximize",
                                 pruner=optuna.pruners.ThresholdPruner(lower=2.0))
    pruned.optimize(objective, n_trials=1)
    assert pruned.trials[0].state == optuna.trial.TrialState.PRUNED


# -- init_model= -----------------------------------------------------------------------------
def test_init_model_forms_and_the_noise_iteration_continue(tmp_path):
    first = ranker(n_estimators=5).fit(X, Y, qid=QID)
    path = tmp_path / "first.txt"
    first.save_model(path)
    recorder = Recorder(StochasticRank(top=5, seed=1))
    cont = ranker(recorder, n_estimators=5, eval_metric=NDCG5).fit(X, Y, qid=QID,
                                                                  init_model=first)
    assert recorder.iterations == list(range(5, 10))  # the noise keys continue from 5 trees
    assert cont.booster_.num_trees() == 10
    pred = cont.predict(XV)
    for form in (first.booster_, str(path), path):
        again = ranker(n_estimators=5).fit(X, Y, qid=QID, init_model=form)
        np.testing.assert_array_equal(again.predict(XV), pred)
    # 5 trees, then 5 more, is the model of 10 trees at once
    whole = ranker(n_estimators=10).fit(X, Y, qid=QID)
    np.testing.assert_allclose(pred, whole.predict(XV), rtol=0, atol=1e-10)
    # LightGBM's own sklearn model is accepted as well
    native = lgb.LGBMRanker(n_estimators=3, num_leaves=7, min_child_samples=5, verbose=-1)
    native.fit(X, Y, group=np.diff(query_offsets_from_qid(QID)))
    from_native = ranker(n_estimators=2).fit(X, Y, qid=QID, init_model=native)
    assert from_native.booster_.num_trees() == 5


def test_init_model_errors(tmp_path):
    # LightGBM's own errors (LGBMRanker.fit's): an unfitted model, a missing file, features
    with pytest.raises(AttributeError, match="No booster found"):
        ranker().fit(X, Y, qid=QID, init_model=ranker())
    with pytest.raises(AttributeError, match="No booster found"):
        ranker().fit(X, Y, qid=QID, init_model=lgb.LGBMRanker())
    with pytest.raises(lgb.basic.LightGBMError, match="Could not open"):
        ranker().fit(X, Y, qid=QID, init_model=tmp_path / "missing.txt")
    first = ranker(n_estimators=2).fit(X[:, :4], Y, qid=QID)
    with pytest.raises(lgb.basic.LightGBMError, match=r"number of features in data \(5\)"):
        ranker().fit(X, Y, qid=QID, init_model=first)
    # another type: lgb.train would ignore it silently, the ranker refuses it
    from stochrank_objectives import StochasticXGBRanker

    with pytest.raises(TypeError, match="init_model must be .*got StochasticXGBRanker"):
        ranker().fit(X, Y, qid=QID, init_model=StochasticXGBRanker())
    with pytest.raises(TypeError, match="init_model must be"):
        ranker().fit(X, Y, qid=QID, init_model=object())
    # LightGBM replaces a Dataset's init_score by the init model's predictions: refused
    first = ranker(n_estimators=2).fit(X, Y, qid=QID)
    with pytest.raises(ValueError, match="init_score.*init_model"):
        ranker().fit(X, Y, qid=QID, init_model=first, init_score=np.zeros(Y.size))
    with pytest.raises(ValueError, match="init_score.*init_model"):
        ranker().fit(X, Y, qid=QID, init_model=first, eval_set=EVAL, eval_metric=NDCG5,
                     eval_init_score=[np.zeros(YV.size)])


def test_sglb_continued_training_is_one_sglb_run():
    """10 SGLB trees, then 10 more from that model, is the 20-tree SGLB model (same noise
    keys, F_20 = c^10 F_10 + ...)."""
    sglb = SGLB(**SHRINK)
    first = ranker(n_estimators=10, sglb=sglb).fit(X, Y, qid=QID)
    cont = ranker(n_estimators=10, sglb=sglb).fit(X, Y, qid=QID, init_model=first)
    whole = ranker(n_estimators=20, sglb=sglb).fit(X, Y, qid=QID)
    assert cont.booster_.num_trees() == 20
    np.testing.assert_allclose(cont.predict(XV), whole.predict(XV), rtol=0, atol=1e-9)


def test_sglb_continued_training_equals_the_init_score_reference():
    """Continuing T SGLB trees from F_0 (the first model) = c^T F_0 + the T-tree model trained
    on init_score = F_0 (an iteration-free objective and no noise, so that both runs draw the
    same gradients whatever the iteration keys)."""
    sglb = SGLB(learning_rate=0.3, model_shrink_rate=0.1, diffusion_temperature=None)
    first = ranker(LambdaMART(top=5), n_estimators=10, sglb=sglb).fit(X, Y, qid=QID)
    cont = ranker(LambdaMART(top=5), n_estimators=10, sglb=sglb).fit(X, Y, qid=QID,
                                                                     init_model=first)
    ref = ranker(LambdaMART(top=5), n_estimators=10, sglb=sglb).fit(
        X, Y, qid=QID, init_score=first.predict(X))
    c_T = sglb.shrink ** 10
    np.testing.assert_allclose(cont.predict(XV), c_T * first.predict(XV) + ref.predict(XV),
                               rtol=0, atol=1e-10)
    assert np.abs(cont.predict(XV) - first.predict(XV) - ref.predict(XV)).max() > 1e-3


@pytest.mark.parametrize("sglb", [None, SGLB(**SHRINK)], ids=["plain", "sglb"])
def test_early_stopping_with_init_model(sglb):
    first = ranker(n_estimators=4, sglb=sglb).fit(X, Y, qid=QID)
    cont = ranker(n_estimators=30, early_stopping_rounds=3, sglb=sglb).fit(
        X, Y, qid=QID, eval_set=EVAL, eval_metric=NDCG5, init_model=first)
    history = cont.evals_result_["validation_0"][NDCG5]
    best = int(np.argmax(history))
    # best_iteration_ counts the init model's trees (as LightGBM's best_iteration does)
    assert cont.best_iteration_ == 4 + best + 1
    assert cont.booster_.num_trees() == 4 + best + 1
    assert _ndcg5(cont.predict(XV)) == pytest.approx(history[best], abs=1e-12)


# -- init_score= / eval_init_score= --------------------------------------------------------
def test_init_score_equals_continued_training():
    first = ranker(LambdaMART(top=5), n_estimators=6).fit(X, Y, qid=QID)
    cont = ranker(LambdaMART(top=5), n_estimators=6).fit(X, Y, qid=QID, init_model=first)
    on_scores = ranker(LambdaMART(top=5), n_estimators=6).fit(X, Y, qid=QID,
                                                              init_score=first.predict(X))
    assert on_scores.booster_.num_trees() == 6  # only the new trees
    np.testing.assert_allclose(first.predict(XV) + on_scores.predict(XV), cont.predict(XV),
                               rtol=0, atol=1e-10)


@pytest.mark.parametrize("sglb", [None, SGLB(**SHRINK)], ids=["plain", "sglb"])
def test_eval_init_score_reaches_the_eval_set_and_early_stopping(sglb):
    first = ranker(n_estimators=6).fit(X, Y, qid=QID)
    init, eval_init = first.predict(X), first.predict(XV)
    model = ranker(n_estimators=30, early_stopping_rounds=3, sglb=sglb).fit(
        X, Y, qid=QID, init_score=init, eval_set=EVAL, eval_metric=NDCG5, eval_init_score=[eval_init])
    history = model.evals_result_["validation_0"][NDCG5]
    best = int(np.argmax(history))
    assert model.best_iteration_ == best + 1 and model.booster_.num_trees() == best + 1
    c_T = 1.0 if sglb is None else sglb.shrink ** (best + 1)  # F_T = c^T init + model
    assert _ndcg5(c_T * eval_init + model.predict(XV)) == pytest.approx(history[best],
                                                                       abs=1e-12)
    without = ranker(n_estimators=1, sglb=sglb).fit(X, Y, qid=QID, init_score=init,
                                                    eval_set=EVAL, eval_metric=NDCG5)
    assert without.evals_result_["validation_0"][NDCG5][0] != pytest.approx(history[0])


# -- what lgb.train returns is the final model (MLflow autolog, other patchers) ------------
@pytest.mark.parametrize("sglb", [None, SGLB(**SHRINK)], ids=["plain", "sglb"])
@pytest.mark.parametrize("stopping", [None, 2], ids=["all_rounds", "early_stopping"])
@pytest.mark.parametrize("continued", [False, True], ids=["new", "init_model"])
def test_lgb_train_returns_the_final_model(monkeypatch, sglb, stopping, continued):
    returned = []
    import lightgbm.sklearn

    train = lightgbm.sklearn.train  # what LGBMRanker.fit calls (lightgbm 4.7.0)

    def patched(*args, **kwargs):  # as mlflow.lightgbm.autolog() wraps it: saved at once
        booster = train(*args, **kwargs)
        returned.append(lgb.Booster(model_str=booster.model_to_string()))
        return booster

    init = ranker(n_estimators=3, sglb=sglb).fit(X, Y, qid=QID) if continued else None
    monkeypatch.setattr(lightgbm.sklearn, "train", patched)
    model = ranker(n_estimators=25, sglb=sglb, early_stopping_rounds=stopping).fit(
        X, Y, qid=QID, eval_set=EVAL, eval_metric=NDCG5, init_model=init)
    (booster,) = returned
    assert booster.num_trees() == model.booster_.num_trees()
    np.testing.assert_array_equal(booster.predict(XV, raw_score=True), model.predict(XV))
    assert "objective=lambdarank" in booster.model_to_string()


@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # sqlalchemy's, inside MLflow
@pytest.mark.filterwarnings("ignore::FutureWarning")
def test_mlflow_autolog_logs_the_rankers_params_and_metrics(tmp_path, monkeypatch):
    """mlflow.lightgbm.autolog() around ranker.fit logs the ranker's parameters and eval
    history; the model it logs is the ranker (MLflow 3.17 logs sklearn models with skops, whose
    trusted types lack LGBMRanker: the native's model fails to log alike, see the conformance
    suite); the booster LGBMRanker.fit's lgb.train returns is final (tested above)."""
    mlflow = pytest.importorskip("mlflow")
    pytest.importorskip("mlflow.lightgbm")
    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")
    mlflow.set_tracking_uri(f"file:{tmp_path / 'mlruns'}")
    mlflow.lightgbm.autolog(log_input_examples=False, log_model_signatures=False,
                            log_datasets=False, silent=True)
    try:
        with mlflow.start_run() as run:
            model = ranker(n_estimators=6, sglb=SGLB(**SHRINK)).fit(
                X, Y, qid=QID, eval_set=EVAL, eval_metric=NDCG5)
    finally:
        mlflow.lightgbm.autolog(disable=True)
        mlflow.set_tracking_uri(None)
    data = mlflow.MlflowClient(f"file:{tmp_path / 'mlruns'}").get_run(run.info.run_id).data
    assert data.params["num_leaves"] == "7" and data.params["metric"] == "['None']"
    assert data.metrics["validation_0-NDCG_at_5"] == pytest.approx(
        model.evals_result_["validation_0"][NDCG5][-1])


# -- the low-level objective: lgb.train(init_model=...) under SGLB --------------------------
def test_lgb_train_sglb_continuation_with_finalize():
    params = dict(num_leaves=7, min_data_in_leaf=5, verbose=-1, num_threads=1, seed=0,
                  deterministic=True, force_row_wise=True)
    sglb = SGLB(**SHRINK)
    sizes = np.diff(query_offsets_from_qid(QID))

    def train(n, init_model=None):
        obj = LGBMObjective(StochasticRank(top=5, seed=1), sglb=sglb)
        booster = lgb.train({**params, "objective": obj}, lgb.Dataset(X, Y, group=sizes), n,
                            init_model=init_model, callbacks=[obj.callback()])
        return obj.finalize(booster)

    cont = train(10, init_model=train(10))
    np.testing.assert_allclose(cont.predict(XV), train(20).predict(XV), rtol=0, atol=1e-9)
