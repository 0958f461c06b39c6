"""Issue 24, items 5, 6 and 9c: exports the engine cannot use are refused by name (Vespa feature
and profile names, Solr missing values), the parity check compares every row it is given and
refuses inputs it would misread (DataFrame columns, qid), and exported files are written
atomically (no truncated file; the error names the path)."""

import errno
import json
import os
import warnings

import numpy as np
import pandas as pd
import pytest
from _export_rows import mq2008_rows_with_nan

import stochrank_objectives as so
from stochrank_objectives.export import (ExportError, check_export, to_elasticsearch, to_solr,
                                         to_vespa)
from stochrank_objectives.export._registry import TARGETS, Target

pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")
pytest.importorskip("lightgbm")
pytest.importorskip("xgboost")
pytest.importorskip("catboost")

KINDS = {"lightgbm": so.StochasticLGBMRanker, "xgboost": so.StochasticXGBRanker,
         "catboost": so.StochasticCatBoostRanker}


@pytest.fixture(scope="module")
def data():
    """``(X, X_with_nan, y, qid)``: 30 MQ2008 queries as float32."""
    return mq2008_rows_with_nan(30, 3)[:4]


@pytest.fixture(scope="module")
def rankers(data):
    X, _, y, qid = data
    return {kind: cls(n_estimators=8).fit(X, y, qid=qid) for kind, cls in KINDS.items()}


@pytest.fixture(scope="module")
def frame_ranker(data):
    X, _, y, qid = data
    columns = [f"feat_{i}" for i in range(X.shape[1])]
    return so.StochasticLGBMRanker(n_estimators=8).fit(pd.DataFrame(X, columns=columns), y,
                                                         qid=qid)


# -- item 5: Vespa names ---------------------------------------------------------------------
@pytest.mark.parametrize("bad", ["title bm25 38", "a+b", "bm25(title", "bm25(title))", "1.5",
                                 "", "fieldMatch(title).", "x y", "attribute(a b)", "é",
                                 "max(a, b)", "sum(x)", "if(a, 1, 2)", "exp(x)", "a-b", "-x",
                                 "attribute(a[1])", "12"])
def test_vespa_refuses_split_names_that_are_not_rank_features(rankers, bad):
    names = [f"f{i}" for i in range(46)]
    names[7] = bad
    with pytest.raises(ExportError, match=r"Vespa.*feature_names") as caught:
        to_vespa(rankers["lightgbm"], feature_names=names)
    assert repr(bad) in str(caught.value)


def test_vespa_takes_rank_features_and_function_names(rankers, data):
    X, _, _, qid = data
    good = ["bm25(title)", "attribute(letor_1)", "fieldMatch(title).completeness", "f0",
            "query(w)", "nativeRank(title, body)", "attribute(\"a b\")", "freshness(timestamp)",
            "@x", "rankingExpression(foo)", "elementSimilarity(tags).output.x", "term(0).weight",
            "bm25 (title)", "random(seed)", "$w", "f1e5x", "dotProduct(tags, vec)",
            "term(-1).significance"]
    names = good + [f"letor_{i}" for i in range(len(good), 46)]
    vespa = to_vespa(rankers["xgboost"], feature_names=names)
    assert vespa.features == tuple(names)
    report = check_export(rankers["xgboost"], "vespa", X, qid=qid, feature_names=names)
    assert report.max_abs_diff < 1e-5 and report.same_ranking


@pytest.mark.parametrize("bad", ["ranking v2 {", "2nd", "-x", "a.b", "rank}", "", "é"])
def test_vespa_refuses_a_profile_name_vespa_cannot_parse(rankers, bad):
    with pytest.raises(ValueError, match=r"profile=") as caught:
        to_vespa(rankers["catboost"], profile=bad)
    assert repr(bad) in str(caught.value)


@pytest.mark.parametrize("good", ["ranking-v2", "_r2", "Stochrank_2", "a"])
def test_vespa_takes_profile_names_with_dashes(rankers, good):
    vespa = to_vespa(rankers["catboost"], profile=good)
    assert vespa.rank_profile.startswith(f"rank-profile {good} inherits default {{")


# -- item 5: Solr missing values -------------------------------------------------------------
@pytest.mark.parametrize("kind", list(KINDS))
def test_solr_refuses_a_missing_value_inside_a_split_range(rankers, data, kind):
    X, _, _, qid = data
    with pytest.raises(ExportError, match=r"Solr.*missing_value=0\.5.*feature '.+'.*threshold "
                                          r".*missing_value=-1e\+?30") as caught:
        to_solr(rankers[kind], missing_value=0.5)
    assert "defaultValue" in str(caught.value)
    with pytest.raises(ExportError, match="missing_value=0.5"):
        check_export(rankers[kind], "solr", X, qid=qid, missing_value=0.5)


@pytest.mark.parametrize("kind", list(KINDS))
def test_solr_missing_value_below_every_threshold_is_exact(rankers, data, kind):
    X, Xn, _, qid = data
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        model = to_solr(rankers[kind], missing_value=-1e30)
    for rows in (X, Xn):
        report = check_export(rankers[kind], "solr", rows, qid=qid, exported=model,
                              missing_value=-1e30)
        assert report.max_abs_diff < 1e-5 and report.same_ranking, report


def test_solr_takes_a_missing_value_that_needs_no_guard(rankers, data):
    """LightGBM trained without NaN reads a NaN as 0.0: 0.0 is routed the missing way at every
    split, so it needs no guard and is accepted (and exact)."""
    X, Xn, _, qid = data
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        model = to_solr(rankers["lightgbm"], missing_value=0.0)
    for rows in (X, Xn):
        report = check_export(rankers["lightgbm"], "solr", rows, qid=qid, exported=model,
                              missing_value=0.0)
        assert report.max_abs_diff < 1e-5 and report.same_ranking, report


def test_solr_rule_on_a_hand_made_tree():
    """A guard is needed where ``v`` goes the other way than the missing value; ``v`` is
    refused at or above a threshold of such a feature, except CatBoost's bottom-of-range one."""
    from stochrank_objectives.export._solr import write_solr
    from stochrank_objectives.export._trees import Ensemble, TreeBuilder

    b = TreeBuilder()
    bottom = b.split(0, -3.4028232635611926e38, True)  # CatBoost: NaN (as Min) left
    inner = b.split(0, 0.25, False)  # missing right: -1e30 (left) needs a guard
    b.children(bottom, b.leaf(5.0), inner)
    b.children(inner, b.leaf(-1.0), b.leaf(2.0))
    ensemble = Ensemble((b.tree(),), 0.0, ("x",), "hand-made")
    X = np.array([[np.nan], [0.0], [0.2], [0.25], [0.7]], dtype=np.float32)
    expected = ensemble.predict(X)
    from stochrank_objectives.export._evaluate import score_solr

    for v in (-1e30, -1.0, 0.0, 0.2):  # below 0.25, and above the bottom threshold
        np.testing.assert_array_equal(
            score_solr(write_solr(ensemble, ["x"], missing_value=v), X, ["x"],
                       missing_value=v)[[0, 3, 4]], expected[[0, 3, 4]])
    for v in (0.25, 0.5, 1e30):
        with pytest.raises(ExportError, match=rf"feature 'x''s threshold 0\.25.*-1e\+30"):
            write_solr(ensemble, ["x"], missing_value=v)


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -float("inf"), -1e39])
def test_solr_refuses_a_missing_value_solr_cannot_carry(rankers, bad):
    with pytest.raises(ValueError, match=r"missing_value=.*finite.*-1e\+?30"):
        to_solr(rankers["xgboost"], missing_value=bad)


def test_elasticsearch_takes_no_missing_value(rankers):
    """The LTR plugin has a missing branch (NaN goes to ``missing``): nothing to choose."""
    with pytest.raises(TypeError, match="missing_value"):
        to_elasticsearch(rankers["xgboost"], missing_value=-1e30)


# -- item 6: what check_export compares -------------------------------------------------------
def test_check_export_refuses_a_frame_with_reordered_columns(frame_ranker, data):
    X, _, _, qid = data
    columns = [str(c) for c in frame_ranker.feature_names_in_]
    frame = pd.DataFrame(X, columns=columns)
    with pytest.raises(ValueError, match="feature_names mismatch"):
        frame_ranker.predict(frame[columns[::-1]])  # what predict does
    with pytest.raises(ValueError, match=r"X's columns.*order.*'feat_45'.*'feat_0'"):
        check_export(frame_ranker, "onnx", frame[columns[::-1]], qid=qid)
    renamed = frame.rename(columns={"feat_3": "other"})
    with pytest.raises(ValueError, match=r"missing \['feat_3'\].*not the model's \['other'\]"):
        check_export(frame_ranker, "onnx", renamed, qid=qid)
    report = check_export(frame_ranker, "onnx", frame, qid=qid)
    assert report.n_rows == X.shape[0] and report.same_ranking
    # the exported names are the model's too: a frame may carry them
    mapping = {c: f"es_{c}" for c in columns}
    engine = frame.rename(columns=mapping)
    report = check_export(frame_ranker, "elasticsearch", engine, qid=qid, feature_names=mapping)
    assert report.max_abs_diff < 1e-5 and report.same_ranking


def test_check_export_reads_a_frame_by_position_for_a_model_without_names(rankers, data):
    X, _, _, qid = data
    frame = pd.DataFrame(X, columns=[f"c{i}" for i in range(X.shape[1])])
    rankers["lightgbm"].predict(frame)  # predict takes it
    report = check_export(rankers["lightgbm"], "onnx", frame, qid=qid)
    assert report.n_rows == X.shape[0] and report.same_ranking


def test_check_export_refuses_a_qid_of_another_length(rankers, data):
    X, _, _, qid = data
    n = X.shape[0]
    with pytest.raises(ValueError, match=rf"qid has {n - 30} ids.*X has {n} rows"):
        check_export(rankers["lightgbm"], "onnx", X, qid=qid[:-30])
    with pytest.raises(ValueError, match=rf"qid has {n + 1} ids.*X has {n} rows"):
        check_export(rankers["lightgbm"], "onnx", X, qid=np.append(qid, qid[-1]))


@pytest.mark.parametrize("target", sorted(TARGETS))
def test_every_target_compares_every_row(rankers, data, target, monkeypatch):
    """Through the registry: each target's evaluator gives one score per row, and a score
    changed in any single row shows in the report; an evaluator that returns another shape is
    refused rather than broadcast."""
    X, _, _, qid = data
    rows = int(np.flatnonzero(np.diff(qid))[5]) + 1  # the first six queries
    X, qid = X[:rows], qid[:rows]
    ranker = rankers["lightgbm"]
    options = {"missing_value": -1e30} if target == "solr" else {}
    spec = TARGETS[target]
    exported = spec.write(*_ensemble_and_names(ranker), **options)
    names = _ensemble_and_names(ranker)[1]
    true = np.asarray(spec.score(exported, X, names, **options))
    assert true.shape == (rows,)
    for row in range(rows):
        bumped = true.copy()
        bumped[row] += 100.0
        monkeypatch.setitem(TARGETS, target, Target(spec.title, spec.write,
                                                    lambda *_, b=bumped, **__: b))
        report = check_export(ranker, target, X, qid=qid, exported=exported, **options)
        assert report.n_rows == rows and report.max_abs_diff >= 99.0, (target, row, report)
    for wrong in (true[:-1], true[:, None], np.concatenate([true, true[:1]])):
        monkeypatch.setitem(TARGETS, target, Target(spec.title, spec.write,
                                                    lambda *_, w=wrong, **__: w))
        with pytest.raises(ValueError, match=rf"{spec.title}.*{rows} rows"):
            check_export(ranker, target, X, qid=qid, exported=exported, **options)


def _ensemble_and_names(ranker):
    from stochrank_objectives.export._registry import resolve

    _, _, ensemble, names = resolve(ranker, "onnx")
    return ensemble, names


# -- item 9c: atomic files -------------------------------------------------------------------
def _full_disk_after(monkeypatch, n_bytes: int):
    """``os.write`` that writes ``n_bytes`` in all, then fails as a full disk does."""
    real = os.write
    left = [n_bytes]

    def write(fd, data):
        if left[0] <= 0:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        done = real(fd, bytes(data[:left[0]]))
        left[0] -= done
        return done

    monkeypatch.setattr(os, "write", write)


def test_vespa_save_leaves_no_partial_file_on_a_full_disk(rankers, tmp_path, monkeypatch):
    vespa = to_vespa(rankers["xgboost"], name="ranker")
    path = vespa.save(tmp_path)  # a good file from before
    before = path.read_bytes()
    assert json.loads(before) == vespa.model
    other = to_vespa(rankers["catboost"], name="ranker")
    assert len(json.dumps(other.model)) > 1000
    _full_disk_after(monkeypatch, 500)
    with pytest.raises(OSError) as caught:
        other.save(tmp_path)
    monkeypatch.undo()
    assert str(path) in str(caught.value)
    assert isinstance(caught.value.__cause__, OSError)
    assert caught.value.__cause__.errno == errno.ENOSPC and caught.value.errno == errno.ENOSPC
    assert path.read_bytes() == before  # the old file, whole
    assert sorted(p.name for p in path.parent.iterdir()) == ["ranker.json"]  # no temporary file
    fresh = tmp_path / "fresh"
    _full_disk_after(monkeypatch, 500)
    with pytest.raises(OSError, match="fresh"):
        other.save(fresh)
    monkeypatch.undo()
    assert list((fresh / "models").iterdir()) == []


def test_every_file_an_export_writes_goes_through_the_atomic_writer(rankers, tmp_path,
                                                                    monkeypatch):
    from stochrank_objectives.export import _files

    written = []
    real = _files.write_atomic

    def spy(path, data):
        written.append(path)
        return real(path, data)

    monkeypatch.setattr(_files, "write_atomic", spy)
    path = to_vespa(rankers["lightgbm"]).save(tmp_path)
    assert written == [path] and json.loads(path.read_text())
