"""Vespa writer: an XGBoost JSON tree dump for the application's ``models/`` folder and a
rank-profile snippet that evaluates it with ``xgboost(...)``.

Vespa turns each split into ``if (x < split_condition, yes, no)``, or ``if (!(x >= split_condition),
yes, no)`` when ``missing`` is ``yes``, comparing with ``split_condition`` rounded to float32
(Vespa's documentation, "Ranking with XGBoost Models", and its XGBoost importer). The importer
pastes each split name into that expression, so a split name must be one rank-feature reference
of Vespa's ranking-expression grammar -- ``name``, ``name(args)``, ``name(args).output`` or
``$name``, a name being ASCII letters, digits, ``_``, ``@`` (and ``$`` after the first
character), an argument a number, a quoted string or such a reference -- resolving to a rank
feature or to a function of the rank profile; anything else (``'title bm25 38'``, ``'a+b'``,
``'max(a, b)'``) is refused, naming the feature: name them so with ``feature_names=`` (for
example ``{"bm25_title": "bm25(title)"}``). The rank profile's name follows the schema grammar:
a letter or ``_``, then letters, digits, ``_`` or ``-``. The base score, which a tree dump does
not hold, is added in the profile's expression. :meth:`VespaModel.save` writes the model file
atomically (:mod:`._files`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from . import _files
from ._trees import Ensemble, ExportError
from ._xgbdump import xgboost_dump

__all__ = ["VespaModel", "write_vespa", "rank_feature_error", "PROFILE_NAME"]

#: a rank profile's name in Vespa's schema grammar (``identifierWithDash``)
PROFILE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*\Z")

# Vespa's ranking-expression tokens (RankingExpressionParser): an identifier, a number (the
# longest match wins; a number wins a tie), a quoted string, punctuation; blanks are skipped.
_IDENTIFIER = re.compile(r"[A-Za-z0-9_@][A-Za-z0-9_@$]*")
_NUMBER = re.compile(r"0[xX][0-9a-fA-F]+[lL]?|[0-9]+[lL]|[0-9]+(?:\.[0-9]*)?(?:[eE][+-]?[0-9]+)?"
                     r"[fFdD]?")
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'')
# words that, followed by "(", are the expression language's own functions, not rank features
_BUILT_IN_CALLS = frozenset(
    "if map reduce join rename concat l1_normalize l2_normalize matmul softmax xw_plus_b argmax "
    "argmin avg count prod sum max min abs acos asin atan ceil cos cosh elu exp fabs floor isNan "
    "log log10 relu round sigmoid sign sin sinh square sqrt tan tanh atan2 fmod ldexp pow erf "
    "hamming bit cell_cast expand merge map_subspaces filter_subspaces unpack_bits".split())


class _NotAFeature(Exception):
    pass


def _tokens(text: str) -> list[tuple[str, str]]:
    out, i = [], 0
    while i < len(text):
        if text[i] in " \t\r\n":
            i += 1
            continue
        string = _STRING.match(text, i)
        if string:
            out.append(("string", string.group()))
            i = string.end()
            continue
        ident, number = _IDENTIFIER.match(text, i), _NUMBER.match(text, i)
        if number and (ident is None or number.end() >= ident.end()):
            out.append(("number", number.group()))
            i = number.end()
        elif ident:
            out.append(("name", ident.group()))
            i = ident.end()
        elif text[i] in "(),.$-":
            out.append((text[i], text[i]))
            i += 1
        else:
            raise _NotAFeature(f"{text[i]!r} cannot appear in a rank-feature reference")
    return out


class _Reference:
    """A recursive-descent reader of one rank-feature reference (``feature()`` and
    ``queryFeature()`` of Vespa's grammar), refusing the rest of the expression language."""

    def __init__(self, text: str):
        self.tokens = _tokens(text)
        self.at = 0

    def peek(self) -> str:
        return self.tokens[self.at][0] if self.at < len(self.tokens) else "end"

    def take(self, kind: str, what: str) -> str:
        if self.peek() != kind:
            found = (repr(self.tokens[self.at][1]) if self.at < len(self.tokens) else "the end")
            raise _NotAFeature(f"expected {what}, found {found}")
        self.at += 1
        return self.tokens[self.at - 1][1]

    def whole(self) -> None:
        if self.peek() == "$":  # $name: query(name)
            self.at += 1
            self.take("name", "a name after '$'")
        else:
            self.feature()
        if self.peek() != "end":
            raise _NotAFeature(f"{self.tokens[self.at][1]!r} after a complete reference (one "
                               "rank feature is expected, not an expression)")

    def feature(self) -> None:
        name = self.take("name", "a rank feature's name")
        if self.peek() == "(":
            if name in _BUILT_IN_CALLS:
                raise _NotAFeature(f"{name}(...) is a function of the expression language, "
                                   "not a rank feature")
            self.at += 1
            self.argument()
            while self.peek() == ",":
                self.at += 1
                self.argument()
            self.take(")", "',' or ')'")
        if self.peek() == ".":
            self.at += 1
            self.output()
            while self.peek() == ".":
                self.at += 1
                self.output()

    def argument(self) -> None:
        if self.peek() == "-":
            self.at += 1
            self.take("number", "a number after '-'")
        elif self.peek() in ("number", "string"):
            self.at += 1
        else:
            self.feature()

    def output(self) -> None:
        if self.peek() in ("number", "name"):
            self.at += 1
        else:
            self.take("name", "an output name after '.'")


def rank_feature_error(name: str) -> str | None:
    """Why ``name`` is not one rank-feature reference of Vespa's ranking-expression grammar,
    or None when it is.

    Example::

        rank_feature_error("bm25(title)")    # None
        rank_feature_error("title bm25 38")  # "expected ..., found 'bm25' ..."

    The grammar (Vespa's ``RankingExpressionParser``): a reference is ``name``,
    ``name(arg, ...)``, either followed by ``.output`` parts, or ``$name``; a name is ASCII
    letters, digits, ``_``, ``@`` and (after the first) ``$``, and is not a number; an argument
    is a number, a quoted string or a reference; a built-in function (``max(...)``,
    ``sum(...)``, ``if(...)``, ...) is not a reference.

    Args:
      name: a split name.

    Returns:
      The reason (a phrase), or None.
    """
    try:
        _Reference(name).whole()
    except _NotAFeature as reason:
        return str(reason)
    return None


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
        """Write the model file under ``application_dir/models/``, atomically (a failed write
        leaves no partial file and raises an ``OSError`` naming the path); returns its path."""
        import json

        return _files.write_atomic(Path(application_dir) / self.model_path,
                                   json.dumps(self.model))


def write_vespa(ensemble: Ensemble, names: list[str], *, name: str = "stochrank",
                profile: str | None = None) -> VespaModel:
    """The tree dump and a rank profile named ``profile`` (default: ``name``)."""
    if not name.replace("_", "").isalnum():
        raise ValueError(f"a Vespa model name is letters, digits and '_', got {name!r}")
    rank_profile_name = name if profile is None else profile
    if not isinstance(rank_profile_name, str) or not PROFILE_NAME.match(rank_profile_name):
        given = (f"profile={profile!r}" if profile is not None
                 else f"profile=None takes name={name!r}, which")
        raise ValueError(f"{given} is not a Vespa rank-profile name: a letter or '_', then "
                         "letters, digits, '_' or '-' (Vespa's schema grammar); pass a name such "
                         "as profile='stochrank_v2'")
    for i, feature in enumerate(names):
        reason = rank_feature_error(feature)
        if reason is not None:
            fix = re.sub(r"[^A-Za-z0-9_]+", "_", feature).strip("_") or f"f{i}"
            raise ExportError(
                f"the split name {feature!r} (feature {i}) is not a Vespa rank feature: {reason}. "
                "Vespa pastes each split name into the ranking expression (if (<name> < ...)), "
                "so it must be one rank-feature reference such as 'attribute(my_field)' or "
                "'bm25(title)', or the name of a function of the profile (ASCII letters, digits, "
                "'_'): pass feature_names= to name the features for Vespa (a list, one name per "
                f"feature, or a mapping from the model's names), e.g. 'attribute({fix})'")
    trees = [xgboost_dump(tree, names) for tree in ensemble.trees]
    expression = f'xgboost("{name}.json")'
    if ensemble.base_score != 0.0:
        expression += f" + {float(ensemble.base_score)!r}"
    rank_profile = (f"rank-profile {rank_profile_name} inherits default {{\n"
                    f"    first-phase {{\n        expression: {expression}\n    }}\n}}\n")
    return VespaModel(name, trees, rank_profile, float(ensemble.base_score), tuple(names))
