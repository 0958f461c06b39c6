"""Framework-neutral ranking objectives: validated parameters + (grad, hess) over grouped arrays.

Every objective follows one protocol (:class:`~._protocol.Objective`)::

    obj.grad_hess(scores, labels, query_offsets, iteration=0, weights=None) -> (grad, hess)
    obj.loss(scores, labels, query_offsets, iteration=0) -> float
    obj.gradient_hessian(scores, data, iteration=0) -> (grad, hess)   # a validated GroupedData

``grad`` is the gradient of the **loss** (descent is ``-grad``), per document; ``hess`` a
per-document (diagonal) second derivative. The modules, by family:

* :mod:`._protocol` -- the protocol and the objectives' base (:class:`ObjectiveParams`: written-out
  constructors, one constraints table per class);
* :mod:`stochrank_objectives.metric_spec` -- :class:`MetricSpec`, the metric definitions the
  kernels, the objectives and the metric functions share (re-exported here);
* :mod:`._estimator` -- the StochasticRank gradient estimator (:func:`stochastic_rank_gradient`,
  :func:`draw_noise`, :func:`check_shift`);
* :mod:`.stochastic_rank` -- :class:`StochasticRank` and its variant :class:`SoftRank`;
  :mod:`.dcgrr` -- :class:`StochasticRankDCGRR` (an LSO loss);
* :mod:`.lambda_family` -- :class:`LambdaMART`, :class:`LambdaLoss`, :class:`Gumbel`,
  :func:`e_lambda_mart`; :mod:`.booster_compat` -- LightGBM / XGBoost LambdaMART emulation;
* :mod:`.smooth` -- :class:`ApproxNDCG`, :class:`ListNet`, :class:`SmoothNDCG`;
* :mod:`.yetirank` -- :class:`YetiRank` (YetiRank and the YetiLoss modes).

Example:

>>> import numpy as np
>>> scores, labels, offs = np.array([1.0, 0.0]), np.array([0.0, 1.0]), [0, 2]
>>> objs = [StochasticRank(), LambdaMART(), ApproxNDCG(), ListNet(), YetiRank()]
>>> all(o.grad_hess(scores, labels, offs)[0][1] < 0 for o in objs)  # all lift the relevant one
True
"""

from ._estimator import (CONDITIONINGS, ESTIMATORS, HESSIANS, MAX_SHIFT, SMOOTHINGS, check_shift,
                         draw_noise, stochastic_rank_gradient)
from ._protocol import (OBJECTIVES, Objective, ObjectiveParams, accepts_weights,
                        grouped_grad_hess, weighted_grad_hess, weighted_mean)
from .lambda_family import Gumbel, LambdaLoss, LambdaMART, e_lambda_mart
from ..metric_spec import KernelArgs, MetricSpec
from .smooth import ApproxNDCG, ListNet, SmoothNDCG
from .dcgrr import StochasticRankDCGRR
from .stochastic_rank import SoftRank, StochasticRank
from .yetirank import YetiRank

__all__ = ["OBJECTIVES", "Objective", "ObjectiveParams", "weighted_grad_hess", "grouped_grad_hess",
           "weighted_mean", "accepts_weights",
           "MetricSpec", "KernelArgs",
           "StochasticRank", "SoftRank", "StochasticRankDCGRR", "stochastic_rank_gradient",
           "draw_noise", "check_shift", "MAX_SHIFT", "ESTIMATORS", "CONDITIONINGS",
           "SMOOTHINGS", "HESSIANS", "LambdaMART", "LambdaLoss", "Gumbel", "e_lambda_mart",
           "ApproxNDCG", "ListNet", "SmoothNDCG", "YetiRank"]


def _register_every_module() -> None:
    # A new objective is one module of this package: importing every module registers its
    # classes (OBJECTIVES) and each registered class is exported here (and from the package),
    # with no list to extend. The names above are also imported by name, for type checkers.
    import importlib
    import pkgutil

    for module in pkgutil.iter_modules(__path__):
        importlib.import_module(f"{__name__}.{module.name}")
    for name, cls in OBJECTIVES.items():
        globals().setdefault(name, cls)
        if name not in __all__:
            __all__.append(name)


_register_every_module()
