"""The random-search space (StochasticRank paper, supplement section F, adapted per booster)
and the sampling of one trial's hyper-parameters."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ._registry import TUNED_METHODS

SPACE_VERSION = 2  # 2: package StochasticRank defaults, relative sigma and half-life tuned


@dataclass
class Space:
    """Random-search ranges (supplement F; ``lr_min`` and ``depths`` are adapted, see compare)."""
    lr_min: float = 1e-2
    lr_max: float = 1.0
    l2: tuple = (1e-1, 1e1)
    depths: tuple = (6, 7, 8, 9, 10)
    noise: tuple = (0.0, 1.0)
    shrink: tuple = (1e-5, 1e-2)
    temperature: tuple = (1e8, 1e11)
    mu: tuple = (1e-2, 1.0)  # the supplement's [1e-2, 10] capped: mu * label range <= MAX_SHIFT
    sigma: tuple = (0.1, 1.0)         # relative smoothing (package StochasticRank)
    half_life: tuple = (30.0, 300.0)  # trees over which sigma halves

    def as_dict(self):
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


def _loguniform(rng, lo, hi):
    return float(math.exp(rng.uniform(math.log(lo), math.log(hi))))


def sample_params(method: str, space: Space, rng: np.random.Generator) -> dict:
    m = TUNED_METHODS[method]
    p = {"learning_rate": _loguniform(rng, space.lr_min, space.lr_max),
         "depth": int(rng.choice(space.depths))}
    p["l2"] = 0.0 if m.stochastic_rank else _loguniform(rng, *space.l2)
    if m.noise:
        p["beta"] = max(float(rng.uniform(*space.noise)), 1e-3)  # Gumbel needs beta > 0
    if m.sglb:
        p["model_shrink_rate"] = _loguniform(rng, *space.shrink)
        p["diffusion_temperature"] = _loguniform(rng, *space.temperature)
    if m.mu:
        p["mu"] = _loguniform(rng, *space.mu)
    if m.smoothing:
        p["sigma"] = _loguniform(rng, *space.sigma)
        p["anneal_half_life"] = _loguniform(rng, *space.half_life)
    return p
