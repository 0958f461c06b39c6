"""The exports' tree form: exact float32 thresholds, and each engine's split rule on a
hand-made tree (equal values, NaN), evaluated by the independent evaluators."""

import numpy as np
import pytest

from stochrank_objectives.export._registry import TARGETS as REGISTRY
from stochrank_objectives.export._solr import SLACK, solr_threshold
from stochrank_objectives.export._trees import Ensemble, TreeBuilder, lt_threshold

#: the registry's targets, each once (an alias such as "opensearch" names the same target)
TARGETS = [name for name, spec in REGISTRY.items()
           if next(n for n, s in REGISTRY.items() if s is spec) == name]
#: target -> the options it is written and evaluated with here (a target not named here: none)
OPTIONS = {"solr": {"missing_value": -1e30}}
#: target -> the modules its writer or evaluator needs beyond the package's own dependencies
REQUIRES = {"onnx": ("onnx", "onnxruntime")}


def test_lt_threshold_makes_less_or_equal_a_strict_float32_comparison():
    rng = np.random.default_rng(0)
    for t in np.concatenate([rng.normal(size=200), rng.random(200) * 1e-3, [0.0, 1e-35, 1.0]]):
        c = lt_threshold(float(t))
        assert float(np.float32(c)) == c
        x = np.float32(t) + np.arange(-3, 4, dtype=np.float32) * np.spacing(np.float32(t))
        x = np.concatenate([x, np.nextafter(np.float32(t), np.float32([-1, 1]) * np.inf)])
        np.testing.assert_array_equal(x.astype(np.float64) <= t, x < np.float32(c))
    assert lt_threshold(1.7976931348623157e308) == float(np.finfo(np.float32).max)


def test_solr_threshold_undoes_solrs_slack():
    rng = np.random.default_rng(1)
    for p in np.float32(np.concatenate([rng.normal(size=300), rng.random(100) * 1e4,
                                        [0.0, 0.5, 1.0, -1e30, 9.999999e-07, 3e38]])):
        t = solr_threshold(float(p))
        assert np.float32(t + SLACK) == p
    # within ~1e-13 of 0 Solr cannot resolve: the nearest split point below is used
    assert np.float32(solr_threshold(1e-35) + SLACK) == 0.0


def _stump_tree(missing_left: bool) -> Ensemble:
    b = TreeBuilder()
    root = b.split(0, 0.5, missing_left)
    b.children(root, b.leaf(-1.0), b.leaf(2.0))
    return Ensemble((b.tree(),), 0.25, ("x",), "hand-made")


def test_the_tables_name_registered_targets():
    # a key that is not (or no longer) a target would be a silently unused exception
    assert set(OPTIONS) | set(REQUIRES) <= set(TARGETS)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("missing_left", [True, False])
def test_each_engine_rule_on_a_hand_made_tree(missing_left, target):
    for module in REQUIRES.get(target, ()):
        pytest.importorskip(module)
    ensemble = _stump_tree(missing_left)
    X = np.array([[0.25], [np.nextafter(np.float32(0.5), np.float32(0))], [0.5], [0.75],
                  [np.nan]], dtype=np.float32)
    nan = -1.0 if missing_left else 2.0
    expected = np.array([-1.0, -1.0, 2.0, 2.0, nan]) + 0.25  # x < 0.5 left, as the form says
    np.testing.assert_array_equal(ensemble.predict(X), expected)
    names, spec, options = ["x"], REGISTRY[target], OPTIONS.get(target, {})
    np.testing.assert_array_equal(
        spec.score(spec.write(ensemble, names, **options), X, names, **options), expected)
