"""The documentation site: every public name has an API page, every guide page is reachable,
every README section has a home, the pages' Python blocks run, and Sphinx builds with -W."""

import importlib
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
sys.path.insert(0, str(DOCS))
from _api_pages import PUBLIC_MODULES, page_name, public_names, write_api_pages  # noqa: E402

# the README's `## ` headings at commit d9c4170, before its content moved to docs/
README_HEADINGS_D9C4170 = [
    "Quick start", "The estimator, directly", "Choosing the parameters",
    "In your booster: one scikit-learn ranker each", "Model selection with scikit-learn", "SGLB",
    "Objectives", "Metrics and conventions", "Data", "Benchmarks",
    "Distributed training with Dask", "Notebooks", "Public names", "Layout",
    "License and citation",
]
# the shell blocks are install and benchmark commands; diagrams and formulas are text
NOT_PYTHON = {"bash", "text"}
# pages whose recipe starts a cluster: run as a user copies it, in a fresh interpreter, by
# tests/adapters/test_adapter_dask.py::test_docs_dask_recipe_runs_quietly_as_written
RUN_ELSEWHERE = {"dask.md"}


def guide_pages():
    return sorted([DOCS / "index.md", *(DOCS / "guide").glob("*.md")])


def fenced_blocks(path):
    """``[(language, code), ...]`` of a Markdown page's fenced blocks (directives excluded)."""
    blocks = re.findall(r"^```([^\n]*)\n(.*?)^```", path.read_text(), flags=re.S | re.M)
    return [(lang.strip(), code) for lang, code in blocks if not lang.startswith("{")]


def test_api_pages_cover_every_public_name(tmp_path):
    stems = write_api_pages(tmp_path)
    index = (tmp_path / "index.rst").read_text()
    for module_name in PUBLIC_MODULES:
        for name in importlib.import_module(module_name).__all__:
            stem = page_name(module_name, name)
            assert stem in stems and f"   {stem}\n" in index, stem
            page = (tmp_path / f"{stem}.rst").read_text()
            # described here, or a re-export pointing at the one description
            assert re.search(rf"^\.\. auto\w+:: {re.escape(name)}$", page, flags=re.M) or \
                "The same object as" in page, stem
    described = [p for p in tmp_path.glob("*.rst") if ".. auto" in p.read_text()]
    assert len(described) == len({id(obj) for _, _, obj in public_names()})


def test_api_pages_follow_all_not_a_fixed_list(tmp_path, monkeypatch):
    module = importlib.import_module("stochrank_objectives.adapters.xgboost")
    monkeypatch.setattr(module, "__all__", [n for n in module.__all__ if n != "XGBMetric"])
    stems = write_api_pages(tmp_path)
    assert page_name(module.__name__, "XGBMetric") not in stems
    assert not (tmp_path / f"{page_name(module.__name__, 'XGBMetric')}.rst").exists()


def test_every_guide_page_is_in_the_index_toctree():
    index = (DOCS / "index.md").read_text()
    listed = set(re.findall(r"^(guide/\w+)$", index, flags=re.M))
    assert listed == {f"guide/{p.stem}" for p in (DOCS / "guide").glob("*.md")}
    assert re.search(r"^api/index$", index, flags=re.M)


def test_every_readme_section_has_a_docs_page_that_keeps_its_text():
    table = (DOCS / "README_SECTIONS.md").read_text()
    rows = re.findall(r"^\| ([^|]+?) \| ([^|]+?) \| ([^|]+?) \|$", table, flags=re.M)
    mapping = {section: (pages, kept) for section, pages, kept in rows[2:]}
    assert set(README_HEADINGS_D9C4170) <= set(mapping)
    for section, (pages, kept) in mapping.items():
        paths = re.findall(r"`([^`]+)`", pages)
        assert paths, section
        if paths[0] == "api/index.rst":  # generated at build time from __all__
            assert "API reference" in (DOCS / "_api_pages.py").read_text()
            continue
        texts = [" ".join((DOCS / p).read_text().split()) for p in paths]  # lines re-wrap
        assert any(kept.strip() in t for t in texts), (section, kept)


@pytest.mark.parametrize("page", guide_pages(), ids=lambda p: p.name)
def test_every_code_block_is_python_or_labelled(page):
    for lang, code in fenced_blocks(page):
        assert lang == "python" or lang in NOT_PYTHON, (page.name, lang, code[:60])


@pytest.mark.slow
@pytest.mark.parametrize("page", [p for p in guide_pages() if p.name not in RUN_ELSEWHERE
                                  and any(lang == "python" for lang, _ in fenced_blocks(p))],
                         ids=lambda p: p.name)
def test_python_blocks_run(page):
    import sklearn

    namespace = {"__name__": f"docs_{page.stem}"}
    with sklearn.config_context():  # a page may turn metadata routing on
        for lang, code in fenced_blocks(page):
            if lang == "python":
                exec(compile(code, str(page), "exec"), namespace)


@pytest.mark.slow
def test_sphinx_builds_with_warnings_as_errors(tmp_path):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]))
    out = tmp_path / "html"
    run = subprocess.run(
        [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-E", "-q", "-b", "html",
         "-d", str(tmp_path / "doctrees"), str(DOCS), str(out)],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-6000:]
    for module_name, name, _ in public_names():
        assert (out / "api" / f"{page_name(module_name, name)}.html").exists(), name
    for page in (DOCS / "guide").glob("*.md"):
        assert (out / "guide" / f"{page.stem}.html").exists(), page.name
    assert list((out / "_images").glob("*.png")), "the benchmark figures were not copied"
    assert (out / "notebooks" / "quickstart.html").exists()


def test_notebooks_are_committed_with_their_outputs():
    """The site renders the notebooks as committed (execution off): each must hold its outputs,
    figures included, and no error (re-run with full budgets before committing a change)."""
    import nbformat

    for path in sorted((ROOT / "notebooks").glob("*.ipynb")):
        notebook = nbformat.read(path, as_version=4)
        code = [cell for cell in notebook.cells if cell.cell_type == "code"]
        outputs = [out for cell in code for out in cell.outputs]
        assert all(cell.execution_count for cell in code), f"{path.name}: a cell was not run"
        assert not [o for o in outputs if o.output_type == "error"], path.name
        assert any("image/png" in o.get("data", {}) for o in outputs), f"{path.name}: no figure"
