"""The LightGBM callback of :class:`~.LGBMObjective`: it tells every copy of the adapter the
iteration LightGBM is at (counted over the whole model, so continued training from an
``init_model`` of ``n`` trees starts at ``n``) and, under SGLB, sets each tree's learning rate."""

from __future__ import annotations

import uuid
import weakref

import lightgbm as lgb
import numpy as np

from ...sglb import SGLB
from .._booster_params import LEARNING_RATE_NAMES

# Set by the SGLB callback on the Booster it trains: the token of the adapter (hub) that trained
# it. A Python attribute, so a model loaded from a file or string never has it (kept by pickle).
TRAINED_ATTR = "_stochrank_sglb_trained_by"
# Set beside it: the number of trees of the init model the training continued (0 for none).
BEGIN_ATTR = "_stochrank_sglb_begin"


class Hub:
    """Shared by an adapter and all its copies (weakly held), so the callback reaches the copy
    LightGBM calls: LightGBM and its scikit-learn wrapper deep-copy the parameters (and so the
    adapter) several times per run, and only one of the copies is the training objective."""

    __slots__ = ("_members", "token")

    def __init__(self, token: str | None = None):
        self._members: weakref.WeakSet = weakref.WeakSet()
        self.token = uuid.uuid4().hex if token is None else token  # marks the boosters trained

    def add(self, adapter):
        self._members.add(adapter)

    def sync(self, iteration, begin=0):
        for adapter in list(self._members):
            adapter.sync_iteration(iteration)
            adapter.sync_begin(begin)


def _check_learning_rate(params, sglb: SGLB) -> None:
    """Under SGLB the callback sets the per-tree learning rate from ``sglb.learning_rate``; a
    different rate set on the booster would otherwise be replaced without a word."""
    for name in LEARNING_RATE_NAMES:
        if name in params and float(params[name]) != sglb.learning_rate:
            raise ValueError(f"the booster's {name}={params[name]} differs from "
                             f"sglb.learning_rate={sglb.learning_rate}: set the same value in "
                             "both, or leave the booster's unset")


def is_sglb_callback(callback) -> bool:
    """Whether ``callback`` is :meth:`LGBMObjective.callback` of an adapter with an SGLB
    schedule (one that sets SGLB's learning rates): the ranker refuses it among the user's
    callbacks, as it runs its own."""
    return isinstance(callback, LGBMCallback) and callback.sglb is not None


class LGBMCallback:
    """Before-iteration callback: iteration index and SGLB learning rate.

    The objective's iteration is LightGBM's own, ``env.iteration``: with ``init_model`` it
    continues from the init model's number of trees. The SGLB schedule counts the trees of
    this run, ``t = env.iteration - env.begin_iteration``: the booster holds ``G_t = F_t / c^t``
    with the init model's trees (``F_0``) as they are, tree ``t`` gets the rate
    ``lr * c^-(t+1)``, and the finalised model is ``c^T`` times every tree, old ones included:
    ``F_T = c^T F_0 + ...`` (the adapter evaluates the objective at ``c^(t+1) G_t``).
    """

    def __init__(self, hub: Hub, sglb: SGLB | None):
        self.order = 10
        self.before_iteration = True
        self._hub = hub
        self._sglb = sglb
        self._rate = None if sglb is None else lgb.reset_parameter(
            learning_rate=sglb.learning_rate_at)

    @property
    def sglb(self) -> SGLB | None:
        """The SGLB schedule whose learning rates this callback sets (None: none)."""
        return self._sglb

    def __call__(self, env) -> None:
        t = env.iteration - env.begin_iteration
        if self._sglb is not None:
            params = env.params or {}
            kind = next((params[k] for k in ("boosting", "boosting_type", "boost") if k in params),
                        "gbdt")
            if kind not in ("gbdt", "goss") or params.get("linear_tree"):
                raise ValueError("SGLB needs plain gradient-boosted trees (boosting='gbdt', no "
                                 f"linear_tree); got boosting={kind!r}")
            if t == 0:
                _check_learning_rate(params, self._sglb)
            self._sglb.check_iterations(t + 1, np.float64)
            # reset_parameter's rate function takes env.iteration - env.begin_iteration: t
            self._rate(env)  # type: ignore[misc]  # set whenever _sglb is
            if env.model is not None:  # finalize() accepts only the boosters marked here
                setattr(env.model, TRAINED_ATTR, self._hub.token)
                setattr(env.model, BEGIN_ATTR, env.begin_iteration)
        self._hub.sync(env.iteration, env.begin_iteration)
