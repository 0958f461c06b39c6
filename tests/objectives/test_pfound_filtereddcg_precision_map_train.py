"""StochasticRank for PFound, FilteredDCG, Precision@5 and MAP trains through all three boosters
(LightGBM, XGBoost, CatBoost) on MQ2008 Fold 1 and beats a constant model on its own validation
metric (worst ties, as the objective's loss). Small on purpose, like
tests/test_objectives_all_boosters.py: a subset of the training queries, a few shallow trees.

PFound's labels are probabilities: MQ2008's grades 0/1/2 are mapped to 0, 0.5, 1.
"""

import numpy as np
import pytest
from test_objectives_all_boosters import TRAIN

from stochrank_objectives import metrics
from stochrank_objectives.data import RankingData
from stochrank_objectives.objectives import StochasticRank

# metric name -> (objective, label transform, validation metric of the scores)
CASES = {
    "PFound": (StochasticRank(metric="PFound", top=10, seed=0), lambda y: y / 2.0,
               lambda s, y, o: metrics.pfound(s, y, o, 10)),
    "FilteredDCG": (StochasticRank(metric="FilteredDCG", top=10, gain="linear", seed=0),
                    lambda y: y,
                    lambda s, y, o: metrics.filtered_dcg(s, y, o, 10, gain="linear")),
    "Precision": (StochasticRank(metric="Precision", top=5, seed=0), lambda y: y,
                  lambda s, y, o: metrics.precision_at_k(s, y, o, 5)),
    "MAP": (StochasticRank(metric="MAP", seed=0), lambda y: y,
            lambda s, y, o: metrics.average_precision(s, y, o)),
}


@pytest.fixture(scope="module")
def data(mq2008_train_vali):
    tr, va = mq2008_train_vali
    return tr.subset_queries(250), va


@pytest.mark.slow
@pytest.mark.parametrize("booster", list(TRAIN))
@pytest.mark.parametrize("name", list(CASES))
def test_new_metric_trains_and_beats_constant(data, name, booster):
    tr, va = data
    obj, transform, score = CASES[name]
    train = RankingData(tr.X, transform(tr.y), tr.qid, tr.query_offsets)
    y_va = transform(va.y)
    predict = TRAIN[booster](obj, 1.0, train)
    scores = np.asarray(predict(va.X), dtype=np.float64)
    assert np.all(np.isfinite(scores))
    trained = score(scores, y_va, va.query_offsets)
    # constant models: every document tied (worst order), at 0 and above 0 (FilteredDCG)
    constant = max(score(np.full(y_va.size, c), y_va, va.query_offsets) for c in (0.0, 1.0))
    # measured margins: 0.33 (MAP) to 1.05 (FilteredDCG) over the constant
    assert trained > constant + 0.2, (trained, constant)


def test_catboost_default_eval_metric_for_the_new_metrics():
    pytest.importorskip("catboost")
    from stochrank_objectives.adapters.catboost import default_eval_metric

    assert default_eval_metric(StochasticRank(metric="PFound")) == "PFound:decay=0.85"
    assert default_eval_metric(StochasticRank(metric="PFound", top=3, decay=0.5)) == \
        "PFound:top=3;decay=0.5"
    # no CatBoost metric with the same definition: the user must choose one
    for metric, top in (("FilteredDCG", None), ("Precision", 5), ("MAP", None)):
        with pytest.raises(ValueError, match="eval_metric"):
            default_eval_metric(StochasticRank(metric=metric, top=top))
