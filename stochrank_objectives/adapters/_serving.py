"""Name a trained model's objective as a ranking one, in the booster's own saved form.

A booster trained with a Python objective does not say what it is: LightGBM writes no
``objective=`` line (``dump_model()`` has no ``"objective"`` key) and XGBoost's config keeps
``reg:squarederror``. The ecosystem's converters read that field to decide how to score
(onnxmltools, treelite, Vespa's importers, Elastic's ``eland``, the Elasticsearch/OpenSearch LTR
plugin), so after training the adapters name the booster's objective as a ranking objective
with the identity link, the same link as the custom objective's raw scores: predictions, raw
scores and saved files score exactly as before (the tests check it).

LightGBM: ``lambdarank``. XGBoost: ``rank:pairwise``, the ranking objective that the LTR plugin's
``xgboost+json`` loader, eland's XGBoost ranker and Vespa all accept. No booster is imported here.
"""

from __future__ import annotations

#: the objective a LightGBM model trained by this package names in its model text
LIGHTGBM_RANKING_OBJECTIVE = "lambdarank"
#: the objective an XGBoost model trained by this package names in its config
XGBOOST_RANKING_OBJECTIVE = "rank:pairwise"


def lightgbm_model_text_as_ranker(text: str) -> str:
    """LightGBM model text with ``objective=lambdarank`` (in the header and the parameters).

    A custom-objective model has no ``objective=`` header line and ``[objective: custom]`` in
    its parameters; any other objective line is left as it is (the model says what it is).
    """
    lines = text.split("\n")
    header_end = lines.index("") if "" in lines else len(lines)
    if any(line.startswith("objective=") for line in lines[:header_end]):
        return text
    anchor = next((i for i, line in enumerate(lines[:header_end])
                   if line.startswith("max_feature_idx=")), None)
    if anchor is None:
        raise ValueError("not a LightGBM model text: no max_feature_idx= line in its header")
    lines.insert(anchor + 1, f"objective={LIGHTGBM_RANKING_OBJECTIVE}")
    return "\n".join(lines).replace("[objective: custom]",
                                    f"[objective: {LIGHTGBM_RANKING_OBJECTIVE}]")


def lightgbm_as_ranker(booster):
    """Name ``booster``'s objective ``lambdarank`` in place (``model_from_string``); returns it.

    The trees, and so every prediction, are unchanged; Python attributes set on the booster
    (SGLB's marks) stay.
    """
    text = booster.model_to_string(num_iteration=-1)
    marked = lightgbm_model_text_as_ranker(text)
    if marked != text:
        booster.model_from_string(marked)
    return booster


def xgboost_as_ranker(booster):
    """Name ``booster``'s objective ``rank:pairwise`` (``set_param``); returns it.

    Only a model that still calls itself ``reg:squarederror`` (what training with a Python
    objective leaves) is renamed. Both objectives have the identity link and the base score is
    kept as stored, so margins and predictions are unchanged.
    """
    import json

    config = json.loads(booster.save_config())
    if config["learner"]["objective"]["name"] == "reg:squarederror":
        booster.set_param({"objective": XGBOOST_RANKING_OBJECTIVE})
    return booster
