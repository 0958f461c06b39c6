"""Vespa writer: an XGBoost JSON tree dump for the application's ``models/`` folder and a
rank-profile snippet that evaluates it with ``xgboost(...)``.

Vespa turns each split into ``if (x < split_condition, yes, no)``, or ``if (!(x >= split_condition),
yes, no)`` when ``missing`` is ``yes``, comparing with ``split_condition`` rounded to float32
(Vespa's documentation, "Ranking with XGBoost Models", and its XGBoost importer). The split names
must resolve to rank features or to functions of the rank profile: name them so with
``feature_names=`` (for example ``{"bm25_title": "bm25(title)"}``). The base score, which a tree
dump does not hold, is added in the profile's expression.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ._trees import Ensemble
from ._xgbdump import xgboost_dump

__all__ = ["VespaModel", "write_vespa"]


@dataclass(frozen=True)
class VespaModel:
    """What to put in a Vespa application package.

    ``model``: the tree dump (a list), for ``model_path`` (``models/<name>.json``);
    ``rank_profile``: the rank profile to add to the schema; ``base_score``: the constant its
    expression adds; ``features``: the split names in the booster's feature order.

    Example::

        vespa = to_vespa(ranker)
        vespa.save("my-app")  # my-app/models/stochrank.json; vespa.rank_profile for the schema

    Args:
      name, model, rank_profile, base_score, features: as above.
    """

    name: str
    model: list
    rank_profile: str
    base_score: float
    features: tuple[str, ...] = field(default=())

    @property
    def model_path(self) -> str:
        return f"models/{self.name}.json"

    def save(self, application_dir) -> Path:
        """Write the model file under ``application_dir/models/``; returns its path."""
        import json

        path = Path(application_dir) / self.model_path
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(self.model))
        return path


def write_vespa(ensemble: Ensemble, names: list[str], *, name: str = "stochrank",
                profile: str | None = None) -> VespaModel:
    """The tree dump and a rank profile named ``profile`` (default: ``name``)."""
    if not name.replace("_", "").isalnum():
        raise ValueError(f"a Vespa model name is letters, digits and '_', got {name!r}")
    trees = [xgboost_dump(tree, names) for tree in ensemble.trees]
    expression = f'xgboost("{name}.json")'
    if ensemble.base_score != 0.0:
        expression += f" + {float(ensemble.base_score)!r}"
    rank_profile = (f"rank-profile {profile or name} inherits default {{\n"
                    f"    first-phase {{\n        expression: {expression}\n    }}\n}}\n")
    return VespaModel(name, trees, rank_profile, float(ensemble.base_score), tuple(names))
