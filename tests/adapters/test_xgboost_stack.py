"""StochasticXGBRanker with the rest of the XGBoost stack: user callbacks (Optuna's pruning
callback among them), initial scores (``base_margin``), continued training (``init_model`` /
``xgb_model``) with SGLB and early stopping, and loggers that patch ``xgb.train`` (MLflow's
autolog) seeing the ranker's own model."""

import json

import numpy as np
import pytest

xgb = pytest.importorskip("xgboost")

from stochrank_objectives import StochasticRank, metrics, query_offsets_from_qid  # noqa: E402
from stochrank_objectives.adapters.xgboost import (  # noqa: E402
    DEFAULT_PARAMS,
    StochasticXGBRanker,
    XGBObjective,
)
from stochrank_objectives.sglb import SGLB  # noqa: E402

SGLB_CASE = dict(learning_rate=0.3, model_shrink_rate=0.6, diffusion_temperature=300.0, seed=5)
TREES = dict(max_depth=3, learning_rate=0.3, n_jobs=1, tree_method="hist")
PARAMS = {**DEFAULT_PARAMS, "max_depth": 3, "learning_rate": 0.3, "nthread": 1,
          "tree_method": "hist"}
_FINAL = "stochrank_sglb_final_scale"


@pytest.fixture(scope="module")
def data(mq2008_first_queries, mq2008_train_vali):
    """80 training queries, 40 validation queries of MQ2008 fold 1."""
    X, y, _, qid = mq2008_first_queries
    vali = mq2008_train_vali[1]
    n = int(vali.query_offsets[40])
    return X, y, qid, vali.X[:n], vali.y[:n], vali.qid[:n]


@pytest.fixture(scope="module")
def margins(data):
    """A first stage's scores: one per training row and one per validation row."""
    X, y, _, Xv, yv, _ = data
    rng = np.random.default_rng(3)
    return 0.3 * y + rng.normal(size=y.size), 0.3 * yv + rng.normal(size=yv.size)


def _ranker(objective=None, **kwargs):
    objective = StochasticRank(metric="NDCG", top=5, seed=1) if objective is None else objective
    return StochasticXGBRanker(objective, eval_metric="NDCG@5", **{**TREES, **kwargs})


def _margin(booster, X, trees=None):
    """The booster's own output (no base margin), float64; ``trees``: the first ones only."""
    if trees == 0:
        return np.zeros(X.shape[0])
    rng = (0, 0) if trees is None else (0, trees)
    return booster.predict(xgb.DMatrix(X), output_margin=True,
                           iteration_range=rng).astype(np.float64)


def _ndcg5(scores, y, qid):
    return metrics.ndcg_at_k(scores, y, query_offsets_from_qid(qid), 5, ties="worst")


class ScoreRecorder:
    """Protocol objective recording the iteration and the scores of every call."""

    def __init__(self, inner):
        self.inner = inner
        self.calls = []

    def grad_hess(self, scores, labels, query_offsets, iteration=0):
        self.calls.append((iteration, np.array(scores, dtype=np.float64)))
        return self.inner.grad_hess(scores, labels, query_offsets, iteration=iteration)

    @property
    def iterations(self):
        return [t for t, _ in self.calls]


class Recording(xgb.callback.TrainingCallback):
    """Records the rounds, the evaluation log and the model ``after_training`` receives."""

    def __init__(self):
        super().__init__()
        self.rounds, self.log, self.trained, self.started = [], None, None, 0

    def before_training(self, model):
        self.started += 1
        return model

    def after_iteration(self, model, epoch, evals_log):
        self.rounds.append(epoch)
        self.log = {data: {name: list(values) for name, values in log.items()}
                    for data, log in evals_log.items()}
        return False

    def after_training(self, model):
        self.trained = model
        return model


class StopAfter(xgb.callback.TrainingCallback):
    """Stops training after ``n`` rounds (as a pruning callback does)."""

    def __init__(self, n):
        super().__init__()
        self.n = n

    def after_iteration(self, model, epoch, evals_log):
        return epoch + 1 >= self.n


def _sglb_reference(X, y, qid, objective, sglb, n_trees, F0):
    """Explicit shrink-and-refit from ``F_0 = F0`` (one value per row): F carried in
    base_margin, one tree per xgb.train call. Returns ``F_T``."""
    offs = query_offsets_from_qid(qid)
    F = np.asarray(F0, dtype=np.float64)
    for t in range(n_trees):
        dmat = xgb.DMatrix(X, y, qid=qid, base_margin=sglb.shrink * F)

        def fixed(predt, dtrain, t=t):
            grad, hess = objective.grad_hess(predt.astype(np.float64), y, offs, iteration=t)
            return grad + np.sqrt(hess) * sglb.noise(y.size, t), hess

        booster = xgb.train({**PARAMS, "learning_rate": sglb.learning_rate}, dmat, 1, obj=fixed)
        F = booster.predict(dmat, output_margin=True).astype(np.float64)
    return F


def _close(actual, expected, rel=1e-5):
    np.testing.assert_allclose(actual, expected, rtol=0,
                               atol=rel * max(np.abs(expected).max(), 1.0))


# -- 1. callbacks ---------------------------------------------------------------------------
@pytest.mark.parametrize("early_stopping", [None, 2])
def test_callbacks_see_every_round_and_the_ranker_metric(data, early_stopping):
    X, y, qid, Xv, yv, qv = data
    rec = Recording()
    ranker = _ranker(n_estimators=30 if early_stopping else 5,
                     early_stopping_rounds=early_stopping)
    ranker.fit(X, y, qid=qid, eval_set=[(Xv, yv, qv)], callbacks=[rec])
    history = ranker.evals_result_["validation_0"]["NDCG@5"]
    if early_stopping:
        assert len(history) < 30  # it stopped early, and the callback saw that round too
    assert rec.started == 1
    assert rec.rounds == list(range(len(history)))
    assert rec.log == {"validation_0": {"NDCG@5": history}}
    # after_training gets the ranker's final model (cut to the best round)
    assert rec.trained.num_boosted_rounds() == ranker.booster_.num_boosted_rounds()


@pytest.mark.parametrize("sglb", [None, SGLB(**SGLB_CASE)], ids=["plain", "sglb"])
def test_a_callback_returning_true_stops_training(data, sglb):
    X, y, qid, *_ = data
    ranker = _ranker(n_estimators=10, sglb=sglb).fit(X, y, qid=qid, callbacks=[StopAfter(3)])
    assert ranker.booster_.num_boosted_rounds() == 3
    if sglb is not None:  # the finalisation scaled by c^3, the trees actually there
        assert float(ranker.booster_.attr(_FINAL)) == sglb.final_scale(3)


def test_callbacks_must_be_training_callbacks(data):
    X, y, qid, *_ = data
    # XGBoost's own check, for the constructor's callbacks (XGBRanker's form) and fit's
    with pytest.raises(TypeError, match="callback must be an instance of `TrainingCallback`"):
        _ranker(n_estimators=2, callbacks=[Recording(), lambda env: None]).fit(X, y, qid=qid)
    with pytest.raises(TypeError, match="callback must be an instance of `TrainingCallback`"), \
            pytest.warns(DeprecationWarning, match="constructor"):
        _ranker(n_estimators=2).fit(X, y, qid=qid, callbacks=[Recording(), lambda env: None])


def test_optuna_pruning_callback(data):
    optuna = pytest.importorskip("optuna")
    integration = pytest.importorskip("optuna_integration")
    X, y, qid, Xv, yv, qv = data
    optuna.logging.set_verbosity(optuna.logging.WARNING)

    def objective(trial):
        ranker = _ranker(n_estimators=4, max_depth=trial.suggest_int("max_depth", 2, 3))
        ranker.fit(X, y, qid=qid, eval_set=[(Xv, yv, qv)], callbacks=[
            integration.XGBoostPruningCallback(trial, "validation_0-NDCG@5")])
        return ranker.score(Xv, yv, qid=qv)

    study = optuna.create_study(direction="maximize", pruner=optuna.pruners.NopPruner())
    study.optimize(objective, n_trials=1)
    trial = study.trials[0]
    assert trial.state == optuna.trial.TrialState.COMPLETE
    assert len(trial.intermediate_values) == 4
    # a pruner that prunes at the first report: the trial stops inside fit
    study = optuna.create_study(direction="maximize",
                                pruner=optuna.pruners.ThresholdPruner(lower=2.0))
    study.optimize(objective, n_trials=1)
    assert study.trials[0].state == optuna.trial.TrialState.PRUNED
    assert len(study.trials[0].intermediate_values) == 1


# -- 2. initial scores (base_margin) ----------------------------------------------------------
def test_objective_sees_base_margin_plus_model(data, margins):
    X, y, qid, *_ = data
    b, _ = margins
    rec = ScoreRecorder(StochasticRank(top=5, seed=1))
    ranker = _ranker(rec, n_estimators=3).fit(X, y, qid=qid, base_margin=b)
    assert rec.iterations == [0, 1, 2]
    for t, scores in rec.calls:  # tree t was fitted at base_margin + the first t trees
        _close(scores, b + _margin(ranker.booster_, X, t))
    # the model holds only the new trees: predict is its own output
    np.testing.assert_array_equal(ranker.predict(X), _margin(ranker.booster_, X))
    with pytest.raises(TypeError, match="not both"):
        _ranker(n_estimators=1).fit(X, y, qid=qid, base_margin=b, init_score=b)


def test_eval_base_margins_reach_the_eval_matrices(data, margins):
    X, y, qid, Xv, yv, qv = data
    b, bv = margins
    ranker = _ranker(n_estimators=3).fit(X, y, qid=qid, base_margin=b,
                                         eval_set=[(Xv, yv, qv)], base_margin_eval_set=[bv])
    history = ranker.evals_result_["validation_0"]["NDCG@5"]
    for t, value in enumerate(history):
        scores = bv + _margin(ranker.booster_, Xv, t + 1)
        assert value == pytest.approx(_ndcg5(scores, yv, qv), abs=1e-6)
    assert history[0] != pytest.approx(_ndcg5(_margin(ranker.booster_, Xv, 1), yv, qv),
                                       abs=1e-6)


def test_sglb_shrinks_the_base_margin_as_f0(data, margins):
    X, y, qid, *_ = data
    b, _ = margins
    sglb = SGLB(**SGLB_CASE)
    ranker = _ranker(n_estimators=6, sglb=sglb).fit(X, y, qid=qid, base_margin=b)
    F = _sglb_reference(X, y, qid, StochasticRank(metric="NDCG", top=5, seed=1), sglb, 6, b)
    scale = float(ranker.booster_.attr(_FINAL))
    assert scale == sglb.final_scale(6)
    # F_T = c^T F_0 + the model: the base margin is the SGLB model's F_0, shrunk by c^T
    _close(scale * b + ranker.predict(X), F)


@pytest.mark.parametrize("sglb", [None, SGLB(**SGLB_CASE)], ids=["plain", "sglb"])
def test_early_stopping_with_base_margins(data, margins, sglb):
    X, y, qid, Xv, yv, qv = data
    b, bv = margins
    ranker = _ranker(n_estimators=30, sglb=sglb, early_stopping_rounds=2)
    ranker.fit(X, y, qid=qid, base_margin=b, eval_set=[(Xv, yv, qv)],
               base_margin_eval_set=[bv])
    best = ranker.best_iteration_
    history = ranker.evals_result_["validation_0"]["NDCG@5"]
    assert best is not None and len(history) < 30
    # XGBRanker keeps the rounds after the best one (predict uses the best ones); SGLB's
    # model is cut to the best round (an SGLB model is not a prefix of a longer one)
    assert ranker.booster_.num_boosted_rounds() == best + 1 + (2 if sglb is None else 0)
    scale = 1.0 if sglb is None else float(ranker.booster_.attr(_FINAL))
    # the best round's value is the kept model's, on the base margin plus the model
    assert history[best] == max(history)
    assert history[best] == pytest.approx(_ndcg5(scale * bv + ranker.predict(Xv), yv, qv),
                                          abs=1e-6)


# -- 2. continued training (init_model / xgb_model) --------------------------------------------
@pytest.mark.parametrize("form", ["ranker", "booster", "path", "xgb_model"])
def test_init_model_continues_the_trees_and_the_iteration(data, tmp_path, form):
    X, y, qid, *_ = data
    first = _ranker(n_estimators=4).fit(X, y, qid=qid)
    before = first.predict(X)
    path = tmp_path / "first.json"
    first.save_model(path)
    init = {"ranker": first, "booster": first.booster_, "path": str(path)}
    rec = ScoreRecorder(StochasticRank(metric="NDCG", top=5, seed=1))
    second = _ranker(rec, n_estimators=3)
    if form == "xgb_model":
        second.fit(X, y, qid=qid, xgb_model=first.booster_)
    else:
        second.fit(X, y, qid=qid, init_model=init[form])
    assert rec.iterations == [4, 5, 6]  # the noise's key continues from the init model
    _close(rec.calls[0][1], before)  # the first new tree sees the init model's scores
    assert second.booster_.num_boosted_rounds() == 7
    whole = _ranker(n_estimators=7).fit(X, y, qid=qid)
    _close(second.predict(X), whole.predict(X))
    np.testing.assert_array_equal(first.predict(X), before)  # the init model is unchanged


@pytest.mark.parametrize("with_margin", [False, True], ids=["F0=0", "base_margin"])
def test_sglb_continued_training_equals_one_longer_run(data, margins, with_margin):
    X, y, qid, *_ = data
    b = margins[0] if with_margin else None
    sglb = SGLB(**SGLB_CASE)
    first = _ranker(n_estimators=4, sglb=sglb).fit(X, y, qid=qid, init_score=b)
    second = _ranker(n_estimators=3, sglb=sglb).fit(X, y, qid=qid, init_score=b,
                                                   init_model=first)
    whole = _ranker(n_estimators=7, sglb=sglb).fit(X, y, qid=qid, init_score=b)
    assert second.booster_.num_boosted_rounds() == 7
    assert float(second.booster_.attr(_FINAL)) == sglb.final_scale(7)
    _close(second.predict(X), whole.predict(X))
    # the init model from a plain (non-SGLB) ranker: its output is F_4, shrunk from there on
    plain = _ranker(n_estimators=4).fit(X, y, qid=qid)
    rec = ScoreRecorder(StochasticRank(metric="NDCG", top=5, seed=1))
    _ranker(rec, n_estimators=1, sglb=sglb).fit(X, y, qid=qid, init_score=b, init_model=plain)
    # S_4 = c F_4, with F_4 = c^4 b + the init model (the base margin is F_0, shrunk 4 times)
    start = plain.predict(X) + (sglb.final_scale(4) * b if with_margin else 0.0)
    _close(rec.calls[0][1], sglb.shrink * start)


def test_sglb_continuation_counts_every_tree_against_float32(data):
    X, y, qid, *_ = data
    steep = SGLB(1.0, 0.9, None)  # c = 0.1: 34 trees at most in float32 margins
    first = _ranker(n_estimators=30, sglb=steep, learning_rate=1.0).fit(X, y, qid=qid)
    with pytest.raises(ValueError, match="float32"):
        _ranker(n_estimators=5, sglb=steep, learning_rate=1.0).fit(X, y, qid=qid,
                                                                   init_model=first)


@pytest.mark.parametrize("sglb", [None, SGLB(**SGLB_CASE)], ids=["plain", "sglb"])
def test_init_model_with_early_stopping(data, sglb):
    X, y, qid, Xv, yv, qv = data
    first = _ranker(n_estimators=30, early_stopping_rounds=2).fit(
        X, y, qid=qid, eval_set=[(Xv, yv, qv)])
    n_first = first.booster_.num_boosted_rounds()
    assert first.booster_.attr("best_iteration") is not None
    # no early stopping now: the init model's best_iteration is not this fit's
    second = _ranker(n_estimators=3, sglb=sglb).fit(X, y, qid=qid, init_model=first)
    assert second.best_iteration_ is None
    assert second.booster_.attr("best_iteration") is None
    assert second.booster_.num_boosted_rounds() == n_first + 3
    third = _ranker(n_estimators=30, sglb=sglb, early_stopping_rounds=2).fit(
        X, y, qid=qid, eval_set=[(Xv, yv, qv)], init_model=first)
    best = third.best_iteration_  # 0-based index among all the trees, as XGBoost's own
    assert n_first <= best  # XGBRanker keeps the rounds after the best one, SGLB cuts them
    assert third.booster_.num_boosted_rounds() == best + 1 + (2 if sglb is None else 0)
    assert third.booster_.best_iteration == best
    if sglb is not None:
        assert float(third.booster_.attr(_FINAL)) == sglb.final_scale(best + 1)


def test_init_model_keeps_its_base_score(data):
    X, y, qid, *_ = data
    raw = xgb.train({**PARAMS, "base_score": 0.5}, xgb.DMatrix(X, y, qid=qid), 2,
                    obj=XGBObjective(StochasticRank(top=5)))
    rec = ScoreRecorder(StochasticRank(top=5))
    ranker = _ranker(rec, n_estimators=1).fit(X, y, qid=qid, init_model=raw)
    _close(rec.calls[0][1], _margin(raw, X))
    assert json.loads(ranker.booster_.save_config())["learner"]["learner_model_param"][
        "base_score"] in ("5E-1", "[5E-1]")
    with pytest.raises(ValueError, match="base_score.*xgb_model"):
        _ranker(n_estimators=1, base_score=0.0).fit(X, y, qid=qid, init_model=raw)


def test_init_model_errors(data, tmp_path):
    """A bad model to continue from gets XGBRanker's own error (the same as the native's),
    under xgb_model= or the deprecated init_model=."""
    X, y, qid, *_ = data
    first = _ranker(n_estimators=2).fit(X, y, qid=qid)
    fit = _ranker(n_estimators=1).fit
    with pytest.raises(TypeError, match="Unknown type"):
        fit(X, y, qid=qid, xgb_model=3)
    with pytest.raises(AttributeError, match="need to call fit"):
        fit(X, y, qid=qid, xgb_model=_ranker())
    with pytest.raises(xgb.core.XGBoostError, match="missing.json failed"):
        fit(X, y, qid=qid, xgb_model=str(tmp_path / "missing.json"))
    (tmp_path / "bad.json").write_text("not a model")
    with pytest.raises(xgb.core.XGBoostError, match="Invalid model format"):
        fit(X, y, qid=qid, xgb_model=str(tmp_path / "bad.json"))
    with pytest.raises(xgb.core.XGBoostError, match="Number of columns does not match"):
        fit(X[:, :5], y, qid=qid, xgb_model=first)
    pd = pytest.importorskip("pandas")
    df = pd.DataFrame(X, columns=[f"c{i}" for i in range(X.shape[1])])
    named = _ranker(n_estimators=1).fit(df, y, qid=qid)
    with pytest.raises(ValueError, match="data did not contain feature names"):
        fit(X, y, qid=qid, xgb_model=named)
    with pytest.raises(ValueError, match="feature_names mismatch"):
        fit(df.rename(columns={"c3": "x"}), y, qid=qid, xgb_model=named)
    with pytest.raises(TypeError, match="not both"):
        fit(X, y, qid=qid, init_model=first, xgb_model=first.booster_)
    with pytest.warns(DeprecationWarning, match="pass XGBRanker's xgb_model="):
        fit(X, y, qid=qid, init_model=first)
    with pytest.raises(TypeError, match="unexpected keyword argument 'init_booster'"):
        fit(X, y, qid=qid, init_booster=first)


def test_low_level_continuation(data):
    X, y, qid, *_ = data
    dtrain = xgb.DMatrix(X, y, qid=qid)
    inner = StochasticRank(metric="NDCG", top=5, seed=1)
    # without SGLB: the callback continues the iteration from xgb_model's trees
    rec = ScoreRecorder(inner)
    obj = XGBObjective(rec)
    first = xgb.train(PARAMS, dtrain, 2, obj=obj, callbacks=[obj.callback()])
    xgb.train(PARAMS, dtrain, 2, obj=obj, xgb_model=first, callbacks=[obj.callback()])
    assert rec.iterations == [0, 1, 2, 3]
    # SGLB: the finalised model must be brought back to G = F / c^t first
    obj = XGBObjective(inner, sglb=SGLB(**SGLB_CASE))
    first = xgb.train(PARAMS, dtrain, 4, obj=obj, callbacks=[obj.callback()])
    with pytest.raises(ValueError, match=r"xgb_model.*continue_from"):
        xgb.train(PARAMS, dtrain, 3, obj=obj, xgb_model=first, callbacks=[obj.callback()])
    second = xgb.train(PARAMS, dtrain, 3, obj=obj, xgb_model=obj.continue_from(first),
                       callbacks=[obj.callback()])
    whole = xgb.train(PARAMS, dtrain, 7, obj=obj, callbacks=[obj.callback()])
    _close(_margin(second, X), _margin(whole, X))
    assert second.attributes() == whole.attributes()
    # prepared for another schedule: refused
    other = XGBObjective(inner, sglb=SGLB(0.3, 0.1, None))
    with pytest.raises(ValueError, match="continue_from"):
        xgb.train(PARAMS, dtrain, 1, obj=other, xgb_model=obj.continue_from(first),
                  callbacks=[other.callback()])


# -- 3. loggers that patch xgb.train see the ranker's model -----------------------------------
@pytest.fixture
def train_calls(monkeypatch):
    """Every model ``xgboost.sklearn.train`` (what XGBRanker.fit calls) returns, as an
    autologger that patches it sees them."""
    returned = []
    train = xgb.training.train

    def patched(*args, **kwargs):
        model = train(*args, **kwargs)
        returned.append(model)
        return model

    monkeypatch.setattr(xgb.sklearn, "train", patched)
    return returned


@pytest.mark.parametrize("early_stopping, sglb", [(2, None), (None, SGLB(**SGLB_CASE)),
                                                  (2, SGLB(**SGLB_CASE))],
                         ids=["early_stopping", "sglb", "both"])
def test_xgb_train_returns_the_ranker_model(data, train_calls, early_stopping, sglb):
    X, y, qid, Xv, yv, qv = data
    ranker = _ranker(n_estimators=30 if early_stopping else 5, sglb=sglb,
                     early_stopping_rounds=early_stopping)
    ranker.fit(X, y, qid=qid, eval_set=[(Xv, yv, qv)])
    assert len(train_calls) == 1
    (model,) = train_calls
    if early_stopping:
        assert ranker.best_iteration_ + 1 < 30
    assert model.num_boosted_rounds() == ranker.booster_.num_boosted_rounds()
    # predict uses the best rounds (XGBRanker); under SGLB the model is cut to them
    np.testing.assert_array_equal(_margin(model, Xv, None if early_stopping is None else
                                          ranker.best_iteration_ + 1), ranker.predict(Xv))
    assert model.attributes() == ranker.booster_.attributes()


def test_mlflow_autolog_logs_the_ranker_model(data, tmp_path, monkeypatch):
    mlflow = pytest.importorskip("mlflow")
    pytest.importorskip("mlflow.xgboost")
    X, y, qid, Xv, yv, qv = data
    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{tmp_path / 'mlflow.db'}")
    previous = mlflow.get_tracking_uri()
    mlflow.set_tracking_uri(f"sqlite:///{tmp_path / 'mlflow.db'}")
    mlflow.xgboost.autolog(log_models=True, log_input_examples=False, silent=True)
    try:
        ranker = _ranker(n_estimators=30, sglb=SGLB(**SGLB_CASE), early_stopping_rounds=2)
        ranker.fit(X, y, qid=qid, eval_set=[(Xv, yv, qv)])
        runs = mlflow.search_runs(search_all_experiments=True, output_format="list")
        models = mlflow.search_logged_models(output_format="list")
        logged = mlflow.xgboost.load_model(models[0].model_uri) if len(models) == 1 else None
    finally:
        mlflow.xgboost.autolog(disable=True)
        mlflow.set_tracking_uri(previous)
    assert len(runs) == 1 and len(models) == 1
    # the logged model is the ranker (as for an XGBRanker), its SGLB booster cut to the best
    assert isinstance(logged, StochasticXGBRanker)
    assert logged.get_booster().num_boosted_rounds() == ranker.best_iteration_ + 1 < 30
    np.testing.assert_array_equal(logged.predict(Xv), ranker.predict(Xv))
