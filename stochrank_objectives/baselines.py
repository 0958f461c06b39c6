"""The baseline objectives, importable from here as before (a documented import path; the
package itself imports them from :mod:`stochrank_objectives.objectives`).

They live in :mod:`stochrank_objectives.objectives` by family: :mod:`~.objectives.lambda_family`
(LambdaMART, LambdaLoss, Gumbel, e_lambda_mart), :mod:`~.objectives.smooth` (ApproxNDCG,
ListNet, SmoothNDCG), :mod:`~.objectives.stochastic_rank` (SoftRank), :mod:`~.objectives.dcgrr`
(StochasticRankDCGRR) and :mod:`~.objectives.yetirank` (YetiRank).

Example:

>>> from stochrank_objectives.baselines import LambdaMART
>>> LambdaMART.lightgbm().compat
'lightgbm'
"""

from .objectives.lambda_family import Gumbel, LambdaLoss, LambdaMART, e_lambda_mart
from .objectives.smooth import ApproxNDCG, ListNet, SmoothNDCG
from .objectives.dcgrr import StochasticRankDCGRR
from .objectives.stochastic_rank import SoftRank
from .objectives.yetirank import YetiRank

__all__ = ["LambdaMART", "LambdaLoss", "ApproxNDCG", "ListNet", "Gumbel", "e_lambda_mart",
           "SoftRank", "SmoothNDCG", "StochasticRankDCGRR", "YetiRank"]
