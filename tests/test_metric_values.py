"""evaluate_spec: the one evaluation of a MetricSpec behind the metric functions and the
objectives' discrete losses."""

import numpy as np
import pytest

from stochrank_objectives import StochasticRank, metrics
from stochrank_objectives.metric_spec import MetricSpec
from stochrank_objectives.metric_values import evaluate_spec

RNG = np.random.default_rng(3)
OFFS = np.array([0, 0, 1, 5, 9, 14], dtype=np.int64)
SCORES = np.round(RNG.normal(size=14), 1)
LABELS = np.array([1.0, 0, 0, 0, 0, 2, 0, 1, 3, 1, 0, 2, 0, 1])
PROBS = LABELS / 3.0

SPECS = [
    (dict(metric="NDCG", top=3, gain="linear"), LABELS),
    (dict(metric="DCG", top=None), LABELS),
    (dict(metric="ERR", top=4, grade_max=3), LABELS),
    (dict(metric="MRR", threshold=1.0), LABELS),
    (dict(metric="PFound", top=3, decay=0.5), PROBS),
    (dict(metric="FilteredDCG", top=2), LABELS),
    (dict(metric="Precision", top=2, threshold=0.5), LABELS),
    (dict(metric="MAP", top=3), LABELS),
]


@pytest.mark.parametrize("options, labels", SPECS, ids=[o["metric"] for o, _ in SPECS])
def test_the_loss_the_metric_functions_and_evaluate_spec_agree(options, labels):
    objective = StochasticRank(**options)
    spec = objective.metric_spec
    value = evaluate_spec(spec, SCORES, labels, OFFS)
    named = metrics.evaluate(spec.metric, SCORES, labels, OFFS, spec.top,
                             **metrics.metric_options(spec))
    assert objective.loss(SCORES, labels, OFFS) == -value
    assert named == value
    per_query = evaluate_spec(spec, SCORES, labels, OFFS, no_relevant="skip", per_query=True)
    assert per_query.shape == (5,) and np.isnan(per_query[[0, 2]]).all()  # empty; no relevant


def test_precision_of_the_whole_list_is_the_fraction_of_relevant_documents():
    spec = MetricSpec("PRECISION", None, threshold=0.5)  # make() refuses it for the objective
    values = evaluate_spec(spec, SCORES, LABELS, OFFS, per_query=True)
    np.testing.assert_array_equal(values[1:], [1.0, 0.0, 0.75, 0.6])
    assert np.isnan(values[0])


def test_bad_policies_are_named():
    spec = MetricSpec.make("MAP")
    with pytest.raises(ValueError, match="ties='expected'.*not MAP"):
        evaluate_spec(spec, SCORES, LABELS, OFFS, ties="expected")
    with pytest.raises(ValueError, match="no_relevant must be one of"):
        evaluate_spec(spec, SCORES, LABELS, OFFS, no_relevant="none")
    with pytest.raises(ValueError, match="order must be one of"):
        evaluate_spec(MetricSpec.make("FilteredDCG"), SCORES, LABELS, OFFS, order="rank")


def test_an_eval_metric_is_checked_without_running_a_kernel(monkeypatch):
    # the check of a new EvalMetric (which every ranker makes for its objective) evaluated the
    # metric on a one-document query, so a process's first fit compiled the metric's kernels
    # (about 6 s) even with nothing to evaluate; on no query every option is still checked
    from stochrank_objectives import metric_values
    from stochrank_objectives.eval_metric import EvalMetric

    def no_kernel(*args, **kwargs):
        raise AssertionError("a metric kernel ran")

    for name in ("cascade_metric_per_query", "average_precision_per_query"):
        monkeypatch.setattr(metric_values, name, no_kernel)
    for name in ("NDCG", "ERR", "MRR", "MAP", "precision", "Recall", "PFound", "FilteredDCG"):
        EvalMetric(name, 5)
    with pytest.raises(ValueError, match="ties must be one of"):
        EvalMetric("NDCG", 5, ties="random")
    with pytest.raises(ValueError, match="no_relevant must be one of"):
        EvalMetric("NDCG", 5, no_relevant="maybe")
    assert np.isnan(metrics.evaluate("NDCG", np.zeros(0), np.zeros(0), np.array([0]), 5))
    assert metrics.evaluate("ERR", np.zeros(0), np.zeros(0), np.array([0]), 5,
                            per_query=True).shape == (0,)
