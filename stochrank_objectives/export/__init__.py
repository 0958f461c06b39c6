"""Serve a fitted ranker where the native ranker serves: ONNX, Vespa, Elasticsearch/OpenSearch
LTR and Solr LTR, with parity checks. No training here.

Every export goes the same way: a reader per booster turns the trained model into one
tree-ensemble form (:mod:`._trees`: ``x < threshold`` left, a NaN by each split's own missing
direction, float32 thresholds), and a writer per target turns that form into the target's
artefact (registered in :mod:`._registry`)::

    from stochrank_objectives.export import to_onnx, to_elasticsearch, check_export
    onnx_model = to_onnx(ranker)                      # onnx.ModelProto, for onnxruntime
    body = to_elasticsearch(ranker, name="my_model")  # POST _ltr/_featureset/<set>/_createmodel
    print(check_export(ranker, "elasticsearch", X_test, qid=qid_test))

Feature names come from the training DataFrame (``feature_names_in_``; ``f0, f1, ...`` for an
array) or from ``feature_names=``: a list (one name per feature, in order) or a mapping from the
model's names to the engine's (the feature set's feature names, Vespa rank features, Solr
feature-store names). A model a target cannot represent (a categorical split, a linear tree, a
multi-output model, ...) is refused with an :class:`ExportError` naming the target and the
feature. The exports reproduce the booster's decisions for float32 feature values; scores are
the booster's raw scores (for this package's rankers, ``predict``).
"""

from __future__ import annotations

from ._registry import READERS, TARGETS, export  # noqa: F401  (the registry, importable)
from ._trees import Ensemble, ExportError, ExportWarning
from ._vespa import VespaModel
from .check import ParityReport, check_export

__all__ = ["to_onnx", "to_vespa", "to_elasticsearch", "to_opensearch", "to_solr", "read_trees",
           "check_export", "ParityReport", "VespaModel", "Ensemble", "ExportError",
           "ExportWarning"]  # the registry (TARGETS, READERS) is importable, not listed here


def read_trees(model, *, feature_names=None) -> Ensemble:
    """The model's trees in the exports' one form (what every writer reads).

    Example::

        ensemble = read_trees(ranker)
        ensemble.predict(X_test)  # the booster's raw scores, by the form's own rule

    Args:
      model: a fitted ranker of this package, a booster or a booster's scikit-learn model.
      feature_names: a list of names or a mapping from the model's names (see the module).

    Returns:
      An :class:`Ensemble` named with the export's feature names.
    """
    from ._registry import resolve

    _, _, ensemble, names = resolve(model, "onnx", feature_names)
    return Ensemble(ensemble.trees, ensemble.base_score, tuple(names), ensemble.source)


def to_onnx(model, *, feature_names=None, opset: int = 17):
    """An ``onnx.ModelProto`` (one ``TreeEnsembleRegressor``), for onnxruntime and the like.

    Example::

        import onnxruntime as ort
        session = ort.InferenceSession(to_onnx(ranker).SerializeToString())
        scores = session.run(None, {"X": X.astype("float32")})[0][:, 0]

    Input ``X``: float32 ``(n, n_features)`` in the model's feature order (NaN: missing);
    output ``score``: ``(n, 1)``. The names are in the model's metadata ``feature_names``.
    Needs the ``onnx`` package (the ``export`` extra).

    Args:
      model: a fitted ranker of this package, a booster or a booster's scikit-learn model.
      feature_names: the names kept in the metadata (a list, or a mapping from the model's).
      opset: the default-domain opset (the node itself is ``ai.onnx.ml`` opset 3).

    Returns:
      An ``onnx.ModelProto``.
    """
    return export(model, "onnx", feature_names=feature_names, opset=opset)


def to_vespa(model, *, name: str = "stochrank", profile: str | None = None,
             feature_names=None) -> VespaModel:
    """A :class:`VespaModel`: the tree dump for ``models/<name>.json`` and a rank profile.

    Example::

        vespa = to_vespa(ranker, feature_names={"bm25_title": "bm25(title)"})
        vespa.save("my-app")          # my-app/models/stochrank.json
        print(vespa.rank_profile)     # paste into the schema

    Vespa pastes each split name into the ranking expression (``if (<name> < ...)``), so each
    must be one rank-feature reference of Vespa's grammar -- ``name``, ``name(args)``,
    ``name(args).output`` or ``$name``, names made of ASCII letters, digits, ``_``, ``@`` --
    that is a rank feature (``attribute(letor_1)``, ``bm25(title)``) or a function of the
    profile; any other name (``'title bm25 38'``, ``'a+b'``, ``'0'``, ``'max(a, b)'``) is
    refused with an :class:`ExportError` naming it: map the names with ``feature_names=``.
    The profile's name is a letter or ``_``, then letters, digits, ``_`` or ``-`` (Vespa's
    schema grammar); another one is refused with a ``ValueError``. :meth:`VespaModel.save`
    writes the file atomically: a failed write leaves no partial file and raises an
    ``OSError`` naming the path.

    Args:
      model: a fitted ranker of this package, a booster or a booster's scikit-learn model.
      name: the model file's name (``models/<name>.json``) and the default profile name.
      profile: the rank profile's name (default: ``name``).
      feature_names: the split names, which must be rank features or functions of the
        profile (a list, or a mapping from the model's names).

    Returns:
      A :class:`VespaModel`.
    """
    return export(model, "vespa", feature_names=feature_names, name=name, profile=profile)


def to_elasticsearch(model, *, name: str = "stochrank", feature_names=None) -> dict:
    """The body of ``POST _ltr/_featureset/<feature set>/_createmodel``: a
    ``model/xgboost+json`` model whose split names are the feature set's feature names.

    Example::

        body = to_elasticsearch(ranker, name="my_model",
                                feature_names={"f0": "title_bm25", "f1": "body_bm25"})
        requests.post(f"{es}/_ltr/_featureset/my_features/_createmodel", json=body)

    The same body serves OpenSearch's LTR plugin (:func:`to_opensearch`).

    Args:
      model: a fitted ranker of this package, a booster or a booster's scikit-learn model.
      name: the model's name in the LTR store.
      feature_names: the feature set's feature names (a list, or a mapping from the model's).

    Returns:
      The request body (a dict; the definition is a JSON string).
    """
    return export(model, "elasticsearch", feature_names=feature_names, name=name)


to_opensearch = to_elasticsearch


def to_solr(model, *, name: str = "stochrank", store: str = "_DEFAULT_",
            missing_value: float | None = None, feature_names=None) -> dict:
    """A Solr LTR ``MultipleAdditiveTreesModel`` for ``PUT <collection>/schema/model-store``.

    Example::

        model = to_solr(ranker, name="my_model", store="my_features", missing_value=-1e30)
        requests.put(f"{solr}/my_collection/schema/model-store", json=model)

    Solr has no missing branch: a document without a feature takes the feature's
    ``defaultValue`` (0.0 unless set). With ``missing_value=None`` an :class:`ExportWarning`
    names the splits where the booster routes a missing value elsewhere than 0.0; with a
    ``missing_value`` below every feature value, set as every feature's ``defaultValue``, guard
    nodes route absent features exactly as the booster routes NaN.

    The rule for ``missing_value`` (``v``, rounded to float32): at a split ``x < c`` whose
    missing direction is not the way ``v`` goes, a guard ``x <= v`` sends ``v`` -- and every
    value below it -- the missing way. So ``v`` is refused with an :class:`ExportError`, naming
    the feature, its threshold and a value that works (``-1e30``), when a feature with such a
    split has a threshold ``c <= v``: that feature takes values at or below ``v`` (the
    booster's thresholds lie between its training values; not so CatBoost's threshold at the
    bottom of float32's range for a missing value read as the minimum, which is left out),
    which would be routed unlike the booster. NaN and infinities are refused (a
    ``defaultValue`` is a finite number). ``v`` must also be below every value your data
    takes, which :func:`check_export` on your rows shows.

    Args:
      model: a fitted ranker of this package, a booster or a booster's scikit-learn model.
      name: the model's name; store: the feature store holding its features.
      missing_value: None, or the features' ``defaultValue`` to route as missing (see above).
      feature_names: the feature-store names (a list, or a mapping from the model's).

    Returns:
      The model JSON (a dict).
    """
    return export(model, "solr", feature_names=feature_names, name=name, store=store,
                  missing_value=missing_value)
