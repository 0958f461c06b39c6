"""SGLB in CatBoost's own terms: its parameter names, defaults and float32 storage.

CatBoost shrinks the model itself (``model_shrink_rate``, ``model_shrink_mode``); this package
adds only the Langevin gradient noise (:meth:`stochrank_objectives.sglb.SGLB.perturb`). The
formulas (the shrink factor, the weights that bake it into trees fitted one at a time) are in
:mod:`stochrank_objectives.sglb`; this module only maps names, defaults and units.
"""

from __future__ import annotations

import numpy as np

from ...sglb import SGLB, shrink_factor

__all__ = ["CATBOOST_TEMPERATURE", "CATBOOST_SHRINK_RATE", "catboost_shrink_factor",
           "catboost_langevin"]

# CatBoost's defaults once ``langevin=True``: T = 1e4, gamma = 0.001 (Constant) / 0.01 (Decreasing).
CATBOOST_TEMPERATURE = 10000.0
CATBOOST_SHRINK_RATE = {"Constant": 0.001, "Decreasing": 0.01}


def catboost_shrink_factor(rate: float, learning_rate: float, mode: str, iteration: int) -> float:
    """CatBoost's model-shrink factor applied before tree ``t`` (0-based).

    Example:

    >>> f32 = lambda x: float(np.float32(x))
    >>> catboost_shrink_factor(0.5, 0.2, "Constant", 3) == 1 - f32(0.5) * f32(0.2)
    True

    :func:`stochrank_objectives.sglb.shrink_factor` with CatBoost's units: CatBoost stores the
    rate and the learning rate as float32 and computes the factor in double, so both are
    rounded the same way here.

    Args:
      rate: ``model_shrink_rate`` (gamma).
      learning_rate: the booster's learning rate.
      mode: ``"Constant"`` or ``"Decreasing"`` (``model_shrink_mode``).
      iteration: the tree ``t`` about to be fitted (0-based).

    Returns:
      the factor the model is multiplied by before tree ``t``.
    """
    return shrink_factor(float(np.float32(rate)), float(np.float32(learning_rate)), iteration,
                         mode)


def catboost_langevin(params: dict, n_rows: int, learning_rate: float, seed: int,
                      sglb: SGLB | None = None):
    """Resolve CatBoost's SGLB parameters into native shrinkage plus this package's noise.

    Example::

        params = {"langevin": True, "learning_rate": 0.1}
        noise = catboost_langevin(params, n_rows, 0.1, seed=0)  # params now hold the shrinkage

    Pops ``langevin``, ``diffusion_temperature`` and ``posterior_sampling`` from ``params`` (a
    dict of CatBoost parameters, changed in place) and sets ``model_shrink_rate`` /
    ``model_shrink_mode`` there; returns the SGLB whose :meth:`SGLB.perturb` adds the gradient
    noise (``None`` = no noise). CatBoost's defaults apply once ``langevin=True``:
    ``diffusion_temperature=1e4``, ``model_shrink_rate=0.001`` (Constant) or ``0.01``
    (Decreasing); ``posterior_sampling=True`` means :meth:`SGLB.posterior_sampling` ``(n_rows)``.
    A given ``sglb`` maps onto ``model_shrink_rate=sglb.model_shrink_rate`` (Constant mode) and
    its own noise; it cannot be combined with the native names.

    Args:
      params: CatBoost parameters (changed in place).
      n_rows: learn rows (for ``posterior_sampling``).
      learning_rate: the booster's learning rate.
      seed: seed of the noise.
      sglb: an explicit schedule instead of CatBoost's names.

    Returns:
      the noise source (an SGLB with ``model_shrink_rate=0``: CatBoost shrinks) or ``None``.
    """
    native = [k for k in ("langevin", "diffusion_temperature", "posterior_sampling",
                          "model_shrink_rate", "model_shrink_mode") if k in params]
    if sglb is not None:
        if native:
            raise ValueError(f"sglb= and CatBoost's {native} both set SGLB: pass only "
                             "sglb=SGLB(learning_rate, model_shrink_rate, diffusion_temperature, "
                             "seed)")
        sglb.check_learning_rate(learning_rate)
        schedule = sglb.validate()
        if schedule["model_shrink_rate"]:
            params["model_shrink_rate"] = schedule["model_shrink_rate"]
            params["model_shrink_mode"] = "Constant"
        if schedule["diffusion_temperature"] is None:
            return None
        return SGLB(schedule["learning_rate"], 0.0, schedule["diffusion_temperature"],
                    schedule["seed"])
    langevin = params.pop("langevin", None)
    temperature = params.pop("diffusion_temperature", None)
    mode = params.get("model_shrink_mode", "Constant")
    if params.pop("posterior_sampling", False):
        if mode != "Constant":
            raise ValueError("posterior_sampling requires model_shrink_mode='Constant'")
        posterior = SGLB.posterior_sampling(n_rows, learning_rate, seed).validate()
        langevin, temperature = True, posterior["diffusion_temperature"]
        params["model_shrink_rate"] = posterior["model_shrink_rate"]
    if langevin is None and temperature is not None and temperature > 0:
        langevin = True
    if not langevin:
        return None
    if temperature is None:
        temperature = CATBOOST_TEMPERATURE
    if "model_shrink_rate" not in params:
        params["model_shrink_rate"] = CATBOOST_SHRINK_RATE.get(mode, 0.001)
    return SGLB(learning_rate=learning_rate, model_shrink_rate=0.0,
                diffusion_temperature=temperature, seed=seed)
