"""The integration pages (docs/guide/integrations/): each page's Python blocks run, in order, as
one script in a fresh interpreter -- as a user copies them -- where the tools it needs are
installed; a page whose tools are missing is skipped and says which. Ray and Spark are not in
the ``test`` extra: ``python3 -m pip install -e ".[test,ray,spark]"`` (and Java 17+) runs them."""

import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from test_docs import NOT_PYTHON, fenced_blocks

ROOT = Path(__file__).resolve().parents[1]
GUIDE = ROOT / "docs" / "guide"
PAGES = GUIDE / "integrations"

# what each page imports beyond the package and the boosters (module names)
NEEDS = {
    "optuna.md": ["optuna", "optuna_integration"],
    "mlflow.md": ["mlflow", "skops"],
    "shap.md": ["shap"],
    "ray.md": ["ray.train"],
    "spark.md": ["pyspark"],
    "serving_clients.md": ["onnxmltools", "onnxruntime", "treelite"],
    "metric_conventions.md": ["pytrec_eval", "ranx"],
}
# a page that starts a cluster gets more time; the others are small (60 queries, 20-30 trees)
TIMEOUT_S = {"ray.md": 420, "spark.md": 300}


def integration_pages():
    return sorted(PAGES.glob("*.md"))


def missing(page):
    """What the page needs and this environment lacks (modules, or Java for Spark)."""
    def installed(name):
        if name in sys.modules:  # imported already (optuna_integration's lazy module has no
            return True          # __spec__, and find_spec raises ValueError on it)
        try:
            return importlib.util.find_spec(name) is not None
        except ModuleNotFoundError:  # a parent package is missing
            return False

    lacks = [name for name in NEEDS[page.name] if not installed(name)]
    if page.name == "spark.md" and shutil.which("java") is None:
        lacks.append("java (17 or newer)")
    return lacks


def script_of(page):
    """The page's Python blocks, in order, as one script (a comment marks each block's line)."""
    text = page.read_text()
    parts = []
    for lang, code in fenced_blocks(page):
        if lang == "python":
            line = text[:text.index(code)].count("\n") + 1
            parts.append(f"# --- {page.name}, line {line}\n{code}")
    return "\n".join(parts)


def test_every_page_is_listed_with_its_needs_and_in_the_toctree():
    overview = (GUIDE / "integrations.md").read_text()
    names = {page.name for page in integration_pages()}
    assert names == set(NEEDS)
    for name in names:
        assert f"integrations/{name[:-3]}\n" in overview, name
    assert "guide/integrations\n" in (ROOT / "docs" / "index.md").read_text()


@pytest.mark.parametrize("page", integration_pages(), ids=lambda p: p.name)
def test_every_code_block_is_python_or_labelled(page):
    blocks = fenced_blocks(page)
    assert any(lang == "python" for lang, _ in blocks), page.name
    for lang, code in blocks:
        assert lang == "python" or lang in NOT_PYTHON, (page.name, lang, code[:60])


def test_script_of_keeps_the_blocks_in_order(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("text\n```python\na = 1\n```\n```text\nnot run\n```\n"
                    "```python\nb = a + 1\n```\n")
    script = script_of(page)
    assert "not run" not in script
    assert script.index("a = 1") < script.index("b = a + 1")
    namespace = {}
    exec(script, namespace)
    assert namespace["b"] == 2


@pytest.mark.slow
@pytest.mark.parametrize("page", integration_pages(), ids=lambda p: p.name)
def test_recipe_runs(page, tmp_path):
    lacks = missing(page)
    if lacks:
        pytest.skip(f"{page.name} needs {', '.join(lacks)}: python3 -m pip install -e "
                    f"'.[test,ray,spark]' runs it")
    script = tmp_path / f"{page.stem}_recipe.py"
    script.write_text(script_of(page))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]))
    # the recipe runs in a folder of its own: whatever it writes stays there
    run = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=env,
                         capture_output=True, text=True, timeout=TIMEOUT_S.get(page.name, 240))
    assert run.returncode == 0, (run.stdout[-3000:], run.stderr[-6000:])


def test_readme_says_what_onnxmltools_does_with_an_xgboost_ranker():
    """The README once said onnxmltools reads an XGBoost ranker as a regressor thanks to a unit
    hessian; the default hessian is the curvature one, and the serving-clients recipe shows the
    classifier it builds: the README points at ``export.to_onnx`` instead."""
    readme = " ".join((ROOT / "README.md").read_text().split())
    assert "unit hessian is" not in readme
    assert "`convert_xgboost` reads a default XGBoost ranker as a classifier" in readme
    assert "`export.to_onnx` is exact" in readme
    recipe = (PAGES / "serving_clients.md").read_text()
    assert '== ["TreeEnsembleClassifier"]' in recipe
