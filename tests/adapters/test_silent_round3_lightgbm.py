"""Issue 44 ("no silent answers"), LightGBM ranker: a user callback changing the booster's
learning rate under SGLB through ``env.model.reset_parameter`` (case 3), a truncated model file
as ``init_model`` (case 7: LightGBM aborted the process), a file that is no LightGBM model as
``init_model`` (case 9: LightGBM's internal error), and the package's own SGLB callback passed
beside (or instead of) ``sglb=`` (case 10). Each gives the right answer or a clear error naming
the argument and the fix."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

lgb = pytest.importorskip("lightgbm")

from stochrank_objectives import SGLB, StochasticLGBMRanker, StochasticRank  # noqa: E402
from stochrank_objectives.adapters.lightgbm import LGBMObjective  # noqa: E402
from _rankers import graded_queries  # noqa: E402

X, Y, QID = graded_queries(40, seed=0)
SHRINK = dict(learning_rate=0.3, model_shrink_rate=0.1, diffusion_temperature=1e3, seed=3)
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def lightgbm_model_file_damage(data):
    from stochrank_objectives.adapters.lightgbm._model_file import model_file_damage

    return model_file_damage(data)


def ranker(objective=None, **kwargs):
    params = dict(n_estimators=6, n_jobs=1, num_leaves=7, min_data_in_leaf=5,
                  learning_rate=0.3, random_state=0, metric="None", verbose=-1)
    params.update(kwargs)
    return StochasticLGBMRanker(StochasticRank(top=5, seed=1) if objective is None
                                else objective, **params)


# -- case 3: env.model.reset_parameter(learning_rate) under SGLB -----------------------------
def _resetting(name, value, before):
    def reset(env):
        env.model.reset_parameter({name: value})

    if before:
        reset.before_iteration = True
    return reset


@pytest.mark.parametrize("name", ["learning_rate", "eta"])
@pytest.mark.parametrize("before", [True, False], ids=["before", "after"])
def test_a_callback_resetting_the_boosters_learning_rate_under_sglb_is_refused(name, before):
    quiet = lambda env: None  # noqa: E731  # the culprit is named by its position
    with pytest.raises(ValueError, match=(
            rf"callbacks\[1\] \(reset\) changed the learning rate.*{name}.*0\.05.*"
            r"SGLB's schedule fixes.*sglb=SGLB\(learning_rate=")):
        ranker(sglb=SGLB(**SHRINK)).fit(X, Y, qid=QID,
                                        callbacks=[quiet, _resetting(name, 0.05, before)])


def test_without_sglb_the_callbacks_learning_rate_is_lightgbms():
    slow = ranker().fit(X, Y, qid=QID, callbacks=[_resetting("learning_rate", 1e-9, True)])
    assert np.ptp(slow.predict(X)) < 1e-6  # LightGBM's meaning: tiny steps


def test_callbacks_that_keep_sglbs_rates_are_accepted():
    sglb = SGLB(**SHRINK)
    same = lgb.reset_parameter(learning_rate=sglb.learning_rate_at)  # SGLB's own rates

    def reader(env):  # reads, changes nothing
        assert env.model.params["learning_rate"] == sglb.learning_rate_at(env.iteration)

    reader.before_iteration = True
    reference = ranker(sglb=sglb).fit(X, Y, qid=QID).predict(X)
    with_callbacks = ranker(sglb=sglb).fit(X, Y, qid=QID, callbacks=[same, reader,
                                                                     lambda env: None])
    np.testing.assert_allclose(with_callbacks.predict(X), reference, rtol=0, atol=1e-12)


# -- case 10: the package's own SGLB callback in callbacks= ----------------------------------
def test_the_packages_sglb_callback_beside_sglb_is_refused():
    sglb = SGLB(**SHRINK)
    own = LGBMObjective(StochasticRank(top=5, seed=1), sglb=sglb).callback()
    with pytest.raises(ValueError, match=(
            r"callbacks\[0\] is LGBMObjective\.callback\(\) of an adapter with an SGLB "
            r"schedule.*already applies sglb=.*drop it")):
        ranker(sglb=sglb).fit(X, Y, qid=QID, callbacks=[own])


@pytest.mark.parametrize("objective", [None, "lambdarank"], ids=["package", "lightgbm"])
def test_the_packages_sglb_callback_without_sglb_is_refused(objective):
    # it would set SGLB's learning rates on trees fitted without SGLB's shrinkage and never
    # finalised (no c^T): neither the SGLB model nor the plain one
    own = LGBMObjective(StochasticRank(top=5, seed=1), sglb=SGLB(**SHRINK)).callback()
    model = ranker() if objective is None else ranker(objective)
    with pytest.raises(ValueError, match=(
            r"callbacks\[1\] is LGBMObjective\.callback\(\) of an adapter with an SGLB "
            r"schedule.*no sglb=.*sglb=SGLB\(\.\.\.\).*drop the callback")):
        model.fit(X, Y, qid=QID, callbacks=[lambda env: None, own])


def test_the_packages_callback_without_sglb_is_harmless_and_accepted():
    own = LGBMObjective(StochasticRank(top=5, seed=1)).callback()  # another adapter's counter
    reference = ranker().fit(X, Y, qid=QID).predict(X)
    np.testing.assert_array_equal(ranker().fit(X, Y, qid=QID, callbacks=[own]).predict(X),
                                  reference)


# -- cases 7 and 9: init_model= a file that is not a whole LightGBM model --------------------
@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """``(path, bytes)`` of a ranker's saved 6-tree model."""
    path = tmp_path_factory.mktemp("models") / "model.txt"
    ranker().fit(X, Y, qid=QID).save_model(path)
    return path, path.read_bytes()


def test_a_truncated_model_file_is_refused_before_lightgbm_reads_it(saved, tmp_path):
    # LightGBM aborts the whole process on it ("terminate called without an active
    # exception"): run it in a child, so that a regression fails this test, not the session
    _, data = saved
    cut = tmp_path / "cut.txt"
    cut.write_bytes(data[:int(len(data) * 0.6)])
    script = textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {os.path.join(ROOT, "tests")!r})
        from _rankers import graded_queries
        from stochrank_objectives import StochasticLGBMRanker, StochasticRank
        X, Y, QID = graded_queries(40, seed=0)
        ranker = StochasticLGBMRanker(StochasticRank(top=5, seed=1), n_estimators=2, n_jobs=1,
                                      verbose=-1)
        try:
            ranker.fit(X, Y, qid=QID, init_model={str(cut)!r})
        except ValueError as exc:
            print("REFUSED:", exc)
        else:
            print("ACCEPTED")
        """)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [ROOT] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]))
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          env=env, timeout=300)
    assert done.returncode == 0, (done.returncode, done.stderr[-2000:])
    assert "REFUSED: init_model=" in done.stdout, done.stdout + done.stderr[-2000:]
    message = done.stdout
    assert str(cut) in message and "truncated" in message and "save_model" in message


def test_every_cut_of_a_model_file_is_refused_or_keeps_all_trees(saved):
    # the check itself, on cuts anywhere: one that passes must hold every tree whole (LightGBM
    # then loads the same model); no LightGBM here, which could abort on a missed cut
    _, data = saved
    assert lightgbm_model_file_damage(data) is None
    trees_end = data.index(b"end of trees\n") + len(b"end of trees")
    passed = [n for n in range(len(data)) if lightgbm_model_file_damage(data[:n]) is None]
    assert passed and min(passed) >= trees_end
    # the parameters section cut: refused; cut inside the pandas_categorical line: refused
    assert lightgbm_model_file_damage(data[:data.index(b"end of parameters")]) is not None
    assert lightgbm_model_file_damage(data[:-3]) is not None


def test_a_refused_cut_does_not_reach_lightgbm(saved, tmp_path, monkeypatch):
    _, data = saved

    def must_not_load(*args, **kwargs):
        raise AssertionError("LightGBM read the damaged file")

    monkeypatch.setattr(lgb.basic._InnerPredictor, "from_model_file", must_not_load)
    for fraction in (0.05, 0.3, 0.6, 0.9, 0.99):
        cut = tmp_path / f"cut{fraction}.txt"
        cut.write_bytes(data[:int(len(data) * fraction)])
        with pytest.raises(ValueError, match=rf"init_model={str(cut)!r} is a damaged or "
                                              r"truncated LightGBM model file"):
            ranker(n_estimators=2).fit(X, Y, qid=QID, init_model=cut)


@pytest.mark.parametrize("content,what", [
    (b"", "the file is empty"),
    (b"\n\n  \n", "the file is empty"),
    (json.dumps({"learner": {"gradient_booster": {}}, "version": [3, 0, 0]}).encode(),
     "JSON"),
    (b"CBM1\x00\x01binary", "not LightGBM's model text"),
    (b"some notes\nnot a model\n", "not LightGBM's model text"),
], ids=["empty", "blank", "json", "binary", "text"])
def test_a_file_that_is_no_lightgbm_model_is_refused_naming_it(tmp_path, content, what):
    path = tmp_path / "model.bin"
    path.write_bytes(content)
    with pytest.raises(ValueError, match=rf"init_model={str(path)!r} is not a LightGBM model "
                                          rf"file: .*{what}.*save_model"):
        ranker(n_estimators=2).fit(X, Y, qid=QID, init_model=path)


def test_an_xgboost_model_file_is_refused_naming_it(tmp_path):
    xgb = pytest.importorskip("xgboost")
    path = tmp_path / "model.json"
    xgb.train({"objective": "rank:ndcg", "max_depth": 2}, xgb.DMatrix(X, Y, qid=QID),
              2).save_model(str(path))
    with pytest.raises(ValueError, match=rf"init_model={str(path)!r} is not a LightGBM model "
                                          r"file: .*JSON.*XGBoost"):
        ranker(n_estimators=2).fit(X, Y, qid=QID, init_model=str(path))


def test_whole_model_files_still_continue(saved, tmp_path):
    path, _ = saved
    assert ranker(n_estimators=2).fit(X, Y, qid=QID, init_model=path).booster_.num_trees() == 8
    # the low-level booster's own file, a prefix of it, and LightGBM's native ranker's file
    booster = lgb.Booster(model_file=str(path))
    prefix = tmp_path / "prefix.txt"
    booster.save_model(prefix, num_iteration=3)
    native = tmp_path / "native.txt"
    lgb.LGBMRanker(n_estimators=3, num_leaves=7, min_child_samples=5, verbose=-1).fit(
        X, Y, group=np.unique(QID, return_counts=True)[1]).booster_.save_model(native)
    for form, trees in ((prefix, 5), (native, 5)):
        assert lightgbm_model_file_damage(form.read_bytes()) is None
        assert ranker(n_estimators=2).fit(X, Y, qid=QID,
                                          init_model=form).booster_.num_trees() == trees


def test_a_model_file_with_pandas_categories_is_accepted(tmp_path):
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame(X, columns=list("abcde"))
    frame["e"] = pd.Categorical(np.arange(Y.size) % 3)
    path = tmp_path / "model.txt"
    ranker().fit(frame, Y, qid=QID).save_model(path)
    data = path.read_bytes()
    assert b"pandas_categorical:[" in data and lightgbm_model_file_damage(data) is None
    assert ranker(n_estimators=2).fit(frame, Y, qid=QID,
                                      init_model=path).booster_.num_trees() == 8


def test_a_missing_init_model_file_is_still_lightgbms_error(tmp_path):
    with pytest.raises(lgb.basic.LightGBMError, match="Could not open"):
        ranker().fit(X, Y, qid=QID, init_model=tmp_path / "missing.txt")
