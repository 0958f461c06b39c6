"""Issue 44 ("no silent answers"), XGBoost ranker: early stopping through a user's
``EarlyStopping`` callback (case 2), a user callback changing the learning rate under SGLB
(case 3), and the package's own SGLB callback passed beside (or instead of) ``sglb=``
(case 10). Each gives the native answer or a clear error naming the argument and the fix."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

xgb = pytest.importorskip("xgboost")

from stochrank_objectives import StochasticRank, StochasticXGBRanker  # noqa: E402
from stochrank_objectives.adapters.xgboost import XGBObjective  # noqa: E402
from stochrank_objectives.sglb import SGLB  # noqa: E402


def _queries(n_queries, seed):
    rng = np.random.default_rng(seed)
    n = 10 * n_queries
    X = rng.normal(size=(n, 5))
    y = np.clip(np.round(X[:, 0] + 0.5 * X[:, 1] + 0.8 * rng.normal(size=n)), 0, 4)
    return X, y, np.repeat(np.arange(n_queries), 10)


X, Y, QID = _queries(60, 0)
XV, YV, QV = _queries(30, 0 + 100)
SMALL = dict(n_estimators=9, max_depth=3, learning_rate=0.3, n_jobs=1, random_state=0)


def _fit(ranker):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return ranker.fit(X, Y, qid=QID, eval_set=[(XV, YV)], eval_qid=[QV])


def _stopping(ranker):
    """``(trees, best_iteration, best_score, booster attributes)`` of a fitted ranker."""
    booster = ranker.get_booster()
    return (booster.num_boosted_rounds(), ranker.best_iteration, ranker.best_score,
            {k: v for k, v in booster.attributes().items() if k.startswith("best_")})


# -- case 2: a user's EarlyStopping callback ------------------------------------------------
@pytest.mark.parametrize("save_best", [True, False])
@pytest.mark.parametrize("rounds", [2, 50], ids=["stops", "runs-out"])
def test_early_stopping_callback_gives_the_native_attributes(save_best, rounds):
    def callback():
        return xgb.callback.EarlyStopping(rounds=rounds, save_best=save_best,
                                          metric_name="ndcg@5", maximize=True)

    common = dict(objective="rank:ndcg", eval_metric="ndcg@5", **SMALL)
    native = _fit(xgb.XGBRanker(callbacks=[callback()], **common))
    ours = _fit(StochasticXGBRanker(callbacks=[callback()], **common))
    assert _stopping(ours) == _stopping(native)
    assert not hasattr(native, "best_iteration_")  # the package's extra: the same number
    assert ours.best_iteration_ == native.best_iteration
    np.testing.assert_array_equal(ours.predict(XV), native.predict(XV))


@pytest.mark.parametrize("sglb", [None, SGLB(0.3)], ids=["plain", "sglb"])
@pytest.mark.parametrize("save_best", [True, False])
def test_early_stopping_callback_with_the_package_objective(sglb, save_best):
    # the case: 9 trees, the best at round 5, save_best cuts the booster to 6
    callback = xgb.callback.EarlyStopping(rounds=3, save_best=save_best, maximize=True)
    ranker = _fit(StochasticXGBRanker(StochasticRank(seed=0), sglb=sglb,
                                      callbacks=[callback], **SMALL))
    booster = ranker.get_booster()
    best = int(booster.attr("best_iteration"))
    assert ranker.best_iteration_ == ranker.best_iteration == booster.best_iteration == best
    assert ranker.best_score == booster.best_score == float(booster.attr("best_score"))
    history = list(ranker.evals_result()["validation_0"].values())[-1]  # the metric it watched
    assert ranker.best_score == pytest.approx(max(history), abs=1e-6)
    assert history.index(max(history)) == best
    if save_best or sglb is not None:  # sliced: by save_best, or SGLB's cut to the best round
        assert booster.num_boosted_rounds() == best + 1
    else:
        assert booster.num_boosted_rounds() == len(history)


def test_early_stopping_rounds_on_the_constructor_is_native():
    common = dict(objective="rank:ndcg", eval_metric="ndcg@5", early_stopping_rounds=2,
                  **SMALL)
    native = _fit(xgb.XGBRanker(**common))
    ours = _fit(StochasticXGBRanker(**common))
    assert _stopping(ours) == _stopping(native)
    assert ours.best_iteration_ == native.best_iteration


# -- case 3: a callback changing the learning rate under SGLB --------------------------------
class _SetBefore(xgb.callback.TrainingCallback):
    def __init__(self, name, rate):
        super().__init__()
        self.name, self.rate = name, rate

    def before_iteration(self, model, epoch, evals_log):
        if epoch == 2:
            model.set_param(self.name, self.rate)
        return False


class _SetAfter(_SetBefore):
    def before_iteration(self, model, epoch, evals_log):
        return False

    def after_iteration(self, model, epoch, evals_log):
        if epoch == 1:
            model.set_param({self.name: self.rate})
        return False


@pytest.mark.parametrize("callback", [
    _SetBefore("learning_rate", 0.05), _SetBefore("eta", 0.05), _SetAfter("eta", 0.05),
    xgb.callback.LearningRateScheduler(lambda epoch: 0.05)],
    ids=["before-learning_rate", "before-eta", "after-eta", "LearningRateScheduler"])
def test_sglb_refuses_a_callback_changing_the_learning_rate(callback):
    ranker = StochasticXGBRanker(StochasticRank(seed=0), sglb=SGLB(0.3), callbacks=[callback],
                                 **SMALL)
    with pytest.raises(ValueError, match=r"callbacks=.*changed the learning rate.*SGLB.*"
                                         r"drop the callback's"):
        ranker.fit(X, Y, qid=QID)
    assert not hasattr(ranker, "_Booster")  # no half-fitted model left


def test_sglb_keeps_callbacks_that_leave_the_learning_rate():
    plain = StochasticXGBRanker(StochasticRank(seed=0), sglb=SGLB(0.3), **SMALL).fit(X, Y, qid=QID)
    ranker = StochasticXGBRanker(StochasticRank(seed=0), sglb=SGLB(0.3),
                                 callbacks=[_SetBefore("max_depth", 3)], **SMALL)
    ranker.fit(X, Y, qid=QID)
    np.testing.assert_array_equal(ranker.predict(X), plain.predict(X))
    same = xgb.callback.LearningRateScheduler(SGLB(0.3).learning_rate_at)  # SGLB's own rates
    ranker = StochasticXGBRanker(StochasticRank(seed=0), sglb=SGLB(0.3), callbacks=[same],
                                 **SMALL)
    np.testing.assert_array_equal(ranker.fit(X, Y, qid=QID).predict(X), plain.predict(X))


def test_without_sglb_a_callback_changes_the_learning_rate_as_in_xgboost():
    common = dict(objective="rank:ndcg", **SMALL)
    native = xgb.XGBRanker(callbacks=[_SetBefore("eta", 0.05)], **common).fit(X, Y, qid=QID)
    ours = StochasticXGBRanker(callbacks=[_SetBefore("eta", 0.05)], **common).fit(X, Y, qid=QID)
    np.testing.assert_array_equal(ours.predict(X), native.predict(X))


# -- case 10: the package's SGLB callback in callbacks= ---------------------------------------
class _Counted(xgb.callback.TrainingCallback):
    def __init__(self):
        super().__init__()
        self.started = 0

    def before_training(self, model):
        self.started += 1
        return model


@pytest.mark.parametrize("sglb", [SGLB(0.3), None], ids=["beside-sglb", "instead-of-sglb"])
def test_the_package_sglb_callback_in_callbacks_is_refused(sglb):
    adapter = XGBObjective(StochasticRank(seed=0), sglb=SGLB(0.3))
    counted = _Counted()
    ranker = StochasticXGBRanker(StochasticRank(seed=0), sglb=sglb,
                                 callbacks=[counted, adapter.callback()], **SMALL)
    with pytest.raises(ValueError, match=r"callbacks=\[1\] is XGBObjective\.callback\(\).*SGLB"
                                         r".*drop it.*sglb=SGLB"):
        ranker.fit(X, Y, qid=QID)
    assert counted.started == 0  # refused before training
    assert not hasattr(ranker, "_Booster")


def test_the_package_sglb_callback_is_refused_through_fit_callbacks_too():
    adapter = XGBObjective(StochasticRank(seed=0), sglb=SGLB(0.3))
    ranker = StochasticXGBRanker(StochasticRank(seed=0), sglb=SGLB(0.3), **SMALL)
    with pytest.warns(DeprecationWarning), pytest.raises(ValueError, match="drop it"):
        ranker.fit(X, Y, qid=QID, callbacks=[adapter.callback()])


def test_a_users_early_stopping_maximises_the_package_metric():
    # XGBoost guesses the direction from lower-case metric names and minimised "NDCG@5",
    # keeping round 0; the package's metrics are all maximised
    ranker = _fit(StochasticXGBRanker(StochasticRank(top=5, seed=0), eval_metric="NDCG@5",
                                      callbacks=[xgb.callback.EarlyStopping(rounds=50)],
                                      **SMALL))
    history = ranker.evals_result()["validation_0"]["NDCG@5"]
    assert ranker.best_iteration == int(np.argmax(history))
    assert ranker.best_score == pytest.approx(max(history))
