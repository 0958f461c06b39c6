"""stochrank_objectives: optimise NDCG@k, ERR@k and MRR directly inside CatBoost, LightGBM
and XGBoost with StochasticRank (Ustimenko & Prokhorenkova, ICML 2020) and its baselines.
"""

from .groups import query_offsets_from_qid, query_offsets_from_sizes
from .objectives import StochasticRank, draw_noise, stochastic_rank_gradient
from .sglb import SGLB

__version__ = "0.1.0"

__all__ = [
    "StochasticRank",
    "SGLB",
    "stochastic_rank_gradient",
    "draw_noise",
    "query_offsets_from_sizes",
    "query_offsets_from_qid",
    "__version__",
]
