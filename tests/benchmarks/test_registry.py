"""The registry of benchmark methods (benchmarks/_registry.py): every study reads its methods
from it, every entry builds what it trains in each of its boosters, the committed results' method
names are its names, and cached trials keep their keys (the hashes and the drawn settings of the
committed rows are recomputed bit for bit)."""

import csv
import itertools
import json
import re
from pathlib import Path

import numpy as np
import pytest

from benchmarks import _boosters, _registry, _search, _trials
from benchmarks._registry import DEFAULTS, METHODS, TUNED_METHODS, study
from benchmarks._targets import TARGETS, parse_target

RESULTS = Path(__file__).resolve().parents[2] / "benchmarks" / "results"
STUDIES = sorted({m.study for m in METHODS})


def _method_names(path):
    """The ``method`` of every row of a committed JSONL file (read without parsing the rows)."""
    pattern = re.compile(r'"method": "([^"]+)"')
    return {pattern.search(line).group(1) for line in path.read_text().splitlines() if line}


@pytest.mark.parametrize("name", STUDIES)
def test_a_study_has_each_name_once_and_every_entry_trains_in_its_boosters(name):
    methods = study(name)
    assert methods and all(m.study == name for m in methods.values())
    for m in methods.values():
        assert set(m.boosters) <= set(_boosters.BOOSTERS)
        if m.is_native:
            assert m.objective is None and set(m.native) >= set(m.boosters), m.name
            assert all(callable(m.native[booster]) for booster in m.boosters), m.name
        else:
            assert callable(m.objective) or m.role is _registry.Role.LOGGING, m.name


@pytest.mark.parametrize("method", list(TUNED_METHODS))
def test_every_tuned_method_builds_its_objective_or_native_loss_for_each_target(method):
    m = TUNED_METHODS[method]
    rng = np.random.default_rng(0)
    p = _search.sample_params(method, _search.Space(), rng)
    for booster, target in itertools.product(_boosters.BOOSTERS, TARGETS):
        if not m.applies(booster, target):
            continue
        if m.is_native:
            loss = m.native[booster](target, p)
            assert ("loss_function" in loss) == (booster == "catboost"), (method, booster)
            assert ("objective" in loss) == (booster != "catboost"), (method, booster)
        else:
            assert callable(m.make(target, p, seed=0).grad_hess)


def test_the_search_space_draws_what_the_flags_say():
    for name, m in TUNED_METHODS.items():
        p = _search.sample_params(name, _search.Space(), np.random.default_rng(1))
        assert ("beta" in p) == m.noise and ("mu" in p) == m.mu
        assert ("model_shrink_rate" in p) == m.sglb and ("sigma" in p) == m.smoothing
        assert (p["l2"] == 0.0) == m.stochastic_rank


def test_every_script_offers_its_registry_methods():
    from benchmarks import (_clicks_report, clicks, compare, defaults, global_optimum, scale,
                            synthetic, training_speed)

    assert list(clicks.METHODS) == list(_clicks_report.METHODS) == list(study("clicks"))
    assert list(defaults.METHODS) == list(DEFAULTS)
    assert set(_registry.COMPARE_METHODS) <= set(TUNED_METHODS)
    assert list(_registry.ABLATION_METHODS) == [m for m in TUNED_METHODS
                                                if TUNED_METHODS[m].ablation]
    assert compare.METHODS is TUNED_METHODS
    for booster in _boosters.BOOSTERS:
        every = global_optimum.methods_for(booster, selected=list(study("global_optimum")))
        assert every == [m for m, e in study("global_optimum").items() if booster in e.boosters]
        table = synthetic.methods_for(_boosters.DISPLAY_NAMES[booster])
        assert table == [m for m, e in study("synthetic").items() if booster in e.boosters]
    assert scale.OBJECTIVES == tuple(_registry.speed_methods("scale"))
    assert training_speed.OBJECTIVES == tuple(_registry.speed_methods("training_speed"))


def test_the_main_job_objectives_are_the_defaults_study_ones():
    """``python -m stochrank_objectives`` runs without the benchmarks (they are not installed
    with the package), so it keeps its five objectives: the same as the defaults study's at
    NDCG@5, with the same leaf settings and rankers (which the benchmarks take from it)."""
    from stochrank_objectives import __main__ as main_job

    ours = [name for name, m in DEFAULTS.items() if not m.is_native]
    assert list(main_job.METHODS) == ours
    for name in ours:
        m = DEFAULTS[name]
        settings = {k: v for k, v in m.defaults.settings.items() if k != "leaves"}
        expected = main_job.METHODS[name](3)
        got = m.make(TARGETS[0], settings, seed=3)
        assert type(got) is type(expected) and repr(got) == repr(expected), name
        trees = {booster: {k: v for k, v in _boosters.tree_params(
            booster, {"depth": 4, "l2": 1.0, **m.defaults.settings}).items()
            if k in ("lambda_l2", "min_sum_hessian_in_leaf", "reg_lambda", "min_child_weight",
                     "l2_leaf_reg")} for booster in _boosters.BOOSTERS}
        for booster in _boosters.BOOSTERS:
            leaves = main_job.SETTINGS.get(name, {}).get(booster, {})
            assert {k: trees[booster][k] for k in leaves} == leaves, (name, booster)
    assert _boosters.RANKERS is main_job.RANKERS and _boosters.SMALL_HESSIAN is \
        main_job.SMALL_HESSIAN


# -- the committed results: names and cache keys ------------------------------------------------
def test_committed_rows_name_registry_methods():
    for path in RESULTS.glob("*/*runs.jsonl"):
        if path.parent.name.startswith("clicks"):
            assert _method_names(path) <= set(study("clicks")), path
        else:
            assert _method_names(path) <= set(TUNED_METHODS), path
    for path in RESULTS.glob("*_defaults/defaults_*.jsonl"):
        assert _method_names(path) <= set(DEFAULTS), path
    from benchmarks import sr_levers

    assert _method_names(RESULTS / "sr_levers" / "levers.jsonl") <= {sr_levers.NATIVE,
                                                                    *sr_levers.VARIANTS}
    for path in (RESULTS / "global_optimum").glob("results_*.csv"):
        with open(path) as f:
            pairs = {(r["booster"], r["method"]) for r in csv.DictReader(f)}
        methods = study("global_optimum")
        assert all(b in methods[m].boosters for b, m in pairs), path
    from benchmarks import synthetic

    table = [line[2:].split(" | ") for line in
             (RESULTS / "synthetic_table1.md").read_text().splitlines()
             if line.startswith("| ") and "---" not in line][1:]   # after the header
    assert table and all(synthetic.BOOSTERS[booster] in synthetic.METHODS[method].boosters
                         for booster, method, *_ in table)


CACHED = sorted(RESULTS.glob("mq2008_realbudget*/runs.jsonl"))


@pytest.mark.parametrize("path", CACHED, ids=lambda p: p.parent.name)
def test_cached_trials_keep_their_keys_and_settings(path):
    """Each method's first rows of a committed cache: the trial's hash from its configuration
    (what the cache is keyed by) and the settings drawn from it are the committed ones."""
    seen = {}
    with open(path) as f:
        for line in f:
            row = json.loads(line)
            key = (row["booster"], row["method"], row["target"])
            if "error" in row or seen.get(key, 0) >= 2:
                continue
            seen[key] = seen.get(key, 0) + 1
            job = _trials.Job(row["dataset"], row["booster"], row["method"],
                              parse_target(row["target"]), row["fold"], row["seed"],
                              row["trial"])
            space = _search.Space()
            cfg = _trials.TrainConfig(max_trees=row["max_trees"], patience=row["patience"])
            h = _trials.stable_hash(job.key_dict(space, cfg))
            assert h == row["hash"], row["method"]
            rng = np.random.default_rng(int(h, 16) % (2 ** 63))
            assert _search.sample_params(row["method"], space, rng) == row["params"]
    methods = {m for _, m, _ in seen}
    assert {"sr_r1", "native_lambdamart", "lambdamart"} <= methods
    assert {t for *_, t in seen} == set(TARGETS)
