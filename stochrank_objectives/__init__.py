"""stochrank_objectives: optimise NDCG@k, ERR@k and MRR directly inside CatBoost, LightGBM
and XGBoost with StochasticRank (Ustimenko & Prokhorenkova, ICML 2020) and its baselines.

The objectives, the baselines and the metric functions are importable from here; the booster
adapters live in :mod:`stochrank_objectives.adapters`. The scikit-learn rankers
(``StochasticLGBMRanker``, ``StochasticXGBRanker``, ``StochasticCatBoostRanker``) and
``ranking_scorer`` are importable from here too, lazily: importing this package imports no
booster, and a ranker imports only its own booster when first accessed.
"""

from . import metrics as _metrics
from .groups import query_offsets_from_qid, query_offsets_from_sizes
# every metric function of the metric table (metrics.__all__): a new metric is not listed here
from .metrics import *  # noqa: F401,F403
from .objectives import (
    ApproxNDCG,
    Gumbel,
    LambdaLoss,
    LambdaMART,
    ListNet,
    SmoothNDCG,
    SoftRank,
    StochasticRank,
    StochasticRankDCGRR,
    YetiRank,
    draw_noise,
    e_lambda_mart,
    stochastic_rank_gradient,
)
from .sglb import SGLB

__version__ = "0.1.0"

# name -> module; resolved on first access (PEP 562), so that no booster is imported here
_LAZY = {
    "StochasticLGBMRanker": ".adapters.lightgbm",
    "StochasticXGBRanker": ".adapters.xgboost",
    "StochasticCatBoostRanker": ".adapters.catboost",
    "ranking_scorer": ".scoring",
}


def __getattr__(name):
    if name in _LAZY:
        import importlib

        value = getattr(importlib.import_module(_LAZY[name], __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_LAZY))

__all__ = [
    "StochasticRank",
    "SGLB",
    "stochastic_rank_gradient",
    "draw_noise",
    "query_offsets_from_sizes",
    "query_offsets_from_qid",
    # baselines
    "LambdaMART",
    "LambdaLoss",
    "SoftRank",
    "Gumbel",
    "e_lambda_mart",
    "ApproxNDCG",
    "SmoothNDCG",
    "ListNet",
    "StochasticRankDCGRR",
    "YetiRank",
    # scikit-learn rankers and model selection (lazy)
    "StochasticLGBMRanker",
    "StochasticXGBRanker",
    "StochasticCatBoostRanker",
    "ranking_scorer",
    "__version__",
]
__all__ += [name for name in _metrics.__all__ if name not in ("TIE_POLICIES",
                                                               "NO_RELEVANT_POLICIES", "evaluate")]
# every registered objective is importable from here, a new one included (its module is
# imported by the objectives package)
from .objectives import OBJECTIVES as _OBJECTIVES  # noqa: E402

for _name, _cls in _OBJECTIVES.items():
    globals().setdefault(_name, _cls)
    if _name not in __all__:
        __all__.append(_name)
del _name, _cls
