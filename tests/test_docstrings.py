"""Every public name follows the docstring template: summary line, example, (formula, source),
Args, Returns -- checked loosely: a summary first, an example marker, then Args:/Returns:."""

import importlib
import inspect

import pytest

PUBLIC_MODULES = [
    "stochrank_objectives",
    "stochrank_objectives.metrics",
    "stochrank_objectives.sglb",
    "stochrank_objectives.adapters.lightgbm",
    "stochrank_objectives.adapters.xgboost",
    "stochrank_objectives.adapters.catboost",
    "stochrank_objectives.adapters.dask",
    "stochrank_objectives.export",
    "stochrank_objectives.clicks",
    "stochrank_objectives.click_em",
]


def public_callables():
    seen = {}
    for module_name in PUBLIC_MODULES:
        module = importlib.import_module(module_name)
        for name in module.__all__:
            obj = getattr(module, name)
            if callable(obj) and id(obj) not in seen:  # constants carry no docstring
                seen[id(obj)] = (f"{module_name}.{name}", obj)
    return sorted(seen.values(), key=lambda item: item[0])


@pytest.mark.parametrize("qualname, obj", public_callables(), ids=lambda v: v if isinstance(v, str) else "")
def test_public_docstring_follows_the_template(qualname, obj):
    doc = inspect.getdoc(obj)
    assert doc, f"{qualname} has no docstring"
    summary = doc.split("\n", 1)[0]
    assert summary.strip() and not summary.startswith((">>>", "Args:", "Example")), qualname
    markers = [doc.find(m) for m in (">>>", "::") if m in doc]
    assert markers, f"{qualname}: no example (a '>>>' doctest or a '::' literal block)"
    sections = [doc.find(s) for s in ("Args:", "Returns:") if s in doc]
    assert sections, f"{qualname}: no Args: or Returns: section"
    assert min(markers) < min(sections), f"{qualname}: the example comes before Args/Returns"
    if "Args:" in doc and "Returns:" in doc:
        assert doc.find("Args:") < doc.find("Returns:"), f"{qualname}: Args before Returns"


def test_the_check_can_fail():
    def undocumented(x):
        """Only a summary."""

    with pytest.raises(AssertionError):
        test_public_docstring_follows_the_template("undocumented", undocumented)
