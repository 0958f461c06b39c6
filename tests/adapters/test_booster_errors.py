"""Errors that come from inside a booster are reported in the package's own words: the argument,
the path or the pickle at fault and the fix, with the booster's own exception as ``__cause__``.

* ``save_model`` to a path that cannot be written (a folder, a folder that does not exist, a
  "folder" that is a file) raises the matching ``OSError`` subclass naming the path, instead of
  LightGBM's ``LightGBMError``, XGBoost's C++ check with its stack trace or CatBoost's
  ``util/system/file.cpp`` message.
* A pickled ranker whose booster bytes were damaged (one bit flipped) is refused with
  ``pickle.UnpicklingError`` naming the ranker and the booster: before, LightGBM and XGBoost
  loaded a silently different model, CatBoost raised "Key not found in hashtable", and XGBoost
  could crash the interpreter (a segmentation fault for a flip at 30% of its bytes).
* ``xgb.train`` with one weight per row: XGBoost itself refuses it, before the objective runs;
  the adapter's documentation says so and gives the fix (one weight per query).
"""

import os
import pickle

import numpy as np
import pytest

from _rankers import RANKERS

import stochrank_objectives as so

_X = np.random.default_rng(0).normal(size=(60, 3))
_Y = np.random.default_rng(1).integers(0, 3, 60).astype(float)
_QID = np.repeat(np.arange(6), 10)


@pytest.fixture(scope="module", params=sorted(RANKERS))
def fitted(request):
    pytest.importorskip(request.param)
    ranker = getattr(so, RANKERS[request.param])(n_estimators=3, n_jobs=1)
    return ranker.fit(_X, _Y, qid=_QID)


# -- save_model -------------------------------------------------------------------------------

def _save_error(ranker, path, expected):
    with pytest.raises(expected) as caught:
        ranker.save_model(path)
    exc = caught.value
    text = str(exc)
    assert str(path) in text and "could not save" in text
    assert "Stack trace" not in text and "[bt]" not in text  # the C++ trace stays in the cause
    assert exc.__cause__ is not None  # the booster's own error
    return text


def test_save_model_into_a_file_instead_of_a_folder(fitted, tmp_path):
    (tmp_path / "a_file").write_text("not a folder")
    text = _save_error(fitted, tmp_path / "a_file" / "model", NotADirectoryError)
    assert "is a file, not a folder" in text
    text = _save_error(fitted, str(tmp_path / "a_file" / "deeper" / "model"), NotADirectoryError)
    assert str(tmp_path / "a_file") in text


def test_save_model_to_a_folder_path(fitted, tmp_path):
    text = _save_error(fitted, tmp_path, IsADirectoryError)
    assert "is a folder" in text and "os.path.join" in text


def test_save_model_into_a_missing_folder(fitted, tmp_path):
    text = _save_error(fitted, tmp_path / "missing" / "model", FileNotFoundError)
    assert "does not exist" in text and "os.makedirs" in text


def test_save_model_into_a_read_only_folder(fitted, tmp_path):
    folder = tmp_path / "read_only"
    folder.mkdir()
    folder.chmod(0o555)
    try:
        if os.access(folder, os.W_OK):  # root writes anyway
            pytest.skip("this user can write into a 0o555 folder (root)")
        text = _save_error(fitted, folder / "model", PermissionError)
        assert "not writable" in text
    finally:
        folder.chmod(0o755)


def test_save_model_still_saves(fitted, tmp_path):
    fitted.save_model(tmp_path / "model")
    assert (tmp_path / "model").stat().st_size > 0


# -- pickles ----------------------------------------------------------------------------------

def _booster_bytes(booster) -> bytes:
    """The bytes (or text) a booster pickles its model as: the largest value of its state."""
    state = booster.__getstate__()
    values = [v for v in state.values() if isinstance(v, (bytes, bytearray, str))]
    largest = max(values, key=len)
    return largest.encode() if isinstance(largest, str) else bytes(largest)


def _flip_one_bit(data: bytes, inner: bytes, where: float) -> bytes:
    at = data.find(inner)
    assert at >= 0 and data.find(inner, at + 1) < 0, "the booster bytes are not in the pickle"
    damaged = bytearray(data)
    damaged[at + int(len(inner) * where)] ^= 0x01  # a digit stays a digit, ASCII stays ASCII
    return bytes(damaged)


@pytest.mark.parametrize("where", [0.5, 0.9])
def test_a_damaged_pickled_ranker_is_refused(fitted, where):
    data = pickle.dumps(fitted)
    damaged = _flip_one_bit(data, _booster_bytes(fitted.booster_), where)
    with pytest.raises(pickle.UnpicklingError) as caught:
        pickle.loads(damaged)  # before: a silently different model, or the booster's error
    text = str(caught.value)
    assert "damaged or truncated" in text
    assert type(fitted).__name__ in text and fitted._booster_name in text
    np.testing.assert_array_equal(pickle.loads(data).predict(_X), fitted.predict(_X))


def test_a_booster_that_cannot_load_its_pickle_is_the_cause(fitted):
    state = fitted.__getstate__()
    name, data, _ = state["_booster_pickle"]
    cut = data[: len(data) // 2]  # the booster's own unpickling fails; the checksum matches
    import hashlib

    state["_booster_pickle"] = (name, cut, hashlib.sha256(cut).hexdigest())
    blank = type(fitted).__new__(type(fitted))
    with pytest.raises(pickle.UnpicklingError, match=f"{name} could not restore") as caught:
        blank.__setstate__(state)
    assert caught.value.__cause__ is not None



def test_a_pickle_of_the_previous_format_still_loads(fitted):
    if type(fitted).__name__ == "StochasticCatBoostRanker":
        pytest.skip("a CatBoostRanker: its state is CatBoost's own (its _object is not "
                    "picklable); the previous ranker's pickles: test_adapter_catboost.py")
    # before the checksum, the booster object itself was in the ranker's state
    old_state = dict(vars(fitted))
    blank = type(fitted).__new__(type(fitted))
    blank.__setstate__(pickle.loads(pickle.dumps(old_state)))
    np.testing.assert_array_equal(blank.predict(_X), fitted.predict(_X))

# -- xgb.train with one weight per row --------------------------------------------------------

def test_xgb_train_weights_are_one_per_query_as_documented():
    xgb = pytest.importorskip("xgboost")
    from stochrank_objectives.adapters import xgboost as adapter
    from stochrank_objectives.groups import query_offsets_from_qid, query_weights

    offsets = query_offsets_from_qid(_QID)
    per_query = np.linspace(0.5, 2.0, offsets.size - 1)
    per_row = np.repeat(per_query, np.diff(offsets))
    params = dict(adapter.DEFAULT_PARAMS, max_depth=2, nthread=1)
    rows = xgb.DMatrix(_X, _Y, qid=_QID, weight=per_row)
    # XGBoost refuses per-row weights on a ranking matrix itself, before the objective runs
    with pytest.raises(xgb.core.XGBoostError, match="number of query groups"):
        xgb.train(params, rows, 2, obj=adapter.XGBObjective(so.StochasticRank()))
    # the documented fix: one weight per query, from per-row weights by query_weights
    fixed = xgb.DMatrix(_X, _Y, qid=_QID, weight=query_weights(per_row, offsets))
    direct = xgb.DMatrix(_X, _Y, qid=_QID, weight=per_query)
    a = xgb.train(params, fixed, 2, obj=adapter.XGBObjective(so.StochasticRank()))
    b = xgb.train(params, direct, 2, obj=adapter.XGBObjective(so.StochasticRank()))
    np.testing.assert_array_equal(a.predict(direct), b.predict(direct))
    # and the documentation promises no more than that
    for doc in (adapter.__doc__, adapter.XGBObjective.__doc__, adapter.XGBMetric.__doc__):
        assert "or one per row" not in doc  # the old promise XGBoost does not keep
    for doc in (adapter.__doc__, adapter.XGBObjective.__doc__):
        assert "query_weights(" in doc and "number of query groups" in doc
