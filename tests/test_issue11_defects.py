"""Defects listed in issue 11 (tried as a new user would); each test failed before its fix."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from stochrank_objectives import SGLB, StochasticRank

RNG = np.random.default_rng(11)
X = RNG.normal(size=(120, 4))
Y = RNG.integers(0, 3, 120).astype(float)
QID = np.repeat(np.arange(6), 20)
GROUP = [20] * 6


# -- 1. LightGBM: finalize() must not scale a reloaded (already final) model again -------------
def _lgb_sglb_booster(**train_kwargs):
    lgb = pytest.importorskip("lightgbm")
    from stochrank_objectives.adapters.lightgbm import LGBMObjective

    obj = LGBMObjective(StochasticRank(top=5, seed=1), sglb=SGLB(0.3, 0.6, 300.0, seed=5))
    params = dict(objective=obj, num_leaves=7, min_data_in_leaf=5, verbose=-1, num_threads=1,
                  learning_rate=0.3, deterministic=True, force_row_wise=True)
    ds = lgb.Dataset(X, Y, group=GROUP, free_raw_data=False)
    booster = lgb.train(params, ds, 5, callbacks=[obj.callback()], **train_kwargs)
    return obj, booster


@pytest.mark.parametrize("how", ["model_file", "model_str"])
def test_lightgbm_finalize_refuses_a_reloaded_model(how, tmp_path):
    lgb = pytest.importorskip("lightgbm")
    obj, booster = _lgb_sglb_booster()
    obj.finalize(booster)
    final = booster.predict(X)
    if how == "model_file":
        booster.save_model(str(tmp_path / "model.txt"))
        reloaded = lgb.Booster(model_file=str(tmp_path / "model.txt"))
    else:
        reloaded = lgb.Booster(model_str=booster.model_to_string())
    with pytest.raises(RuntimeError, match="already final"):
        obj.finalize(reloaded)
    np.testing.assert_array_equal(reloaded.predict(X), final)  # not scaled a second time


def test_lightgbm_finalize_refuses_a_booster_of_another_adapter():
    from stochrank_objectives.adapters.lightgbm import LGBMObjective

    _, booster = _lgb_sglb_booster()
    other = LGBMObjective(StochasticRank(top=5, seed=1), sglb=SGLB(0.3, 0.6, 300.0, seed=5))
    with pytest.raises(RuntimeError, match="not trained by this adapter"):
        other.finalize(booster)


def test_lightgbm_finalize_of_a_kept_booster_truncated_in_place():
    obj, kept = _lgb_sglb_booster(keep_training_booster=True)
    kept.best_iteration = 3  # as lgb.early_stopping leaves it with keep_training_booster=True
    with pytest.raises(ValueError, match="model_from_string"):
        obj.finalize(kept)
    raw = kept.predict(X, raw_score=True, num_iteration=3)
    kept.model_from_string(kept.model_to_string(num_iteration=kept.best_iteration))  # suggested
    obj.finalize(kept)
    np.testing.assert_allclose(kept.predict(X, raw_score=True),
                               obj.sglb.final_scale(3) * raw, rtol=1e-12, atol=1e-15)

