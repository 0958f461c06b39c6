"""Sphinx configuration: Markdown pages (MyST), the notebooks (MyST-NB, not executed), and an
API reference generated from the public modules' ``__all__`` at every build."""

import shutil
import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
sys.path.insert(0, str(ROOT))  # document this checkout, whatever is installed
sys.path.insert(0, str(DOCS))

from _api_pages import write_api_pages  # noqa: E402
from _results_pages import write_results_page  # noqa: E402

import stochrank_objectives  # noqa: E402

project = "stochrank_objectives"
author = "stochrank_objectives developers"
copyright = "the stochrank_objectives developers (MIT)"
release = version = stochrank_objectives.__version__

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
    "sphinx.ext.mathjax",
    "myst_nb",  # Markdown pages (it includes myst_parser) and notebooks
]
source_suffix = {".rst": "restructuredtext", ".md": "myst-nb", ".ipynb": "myst-nb"}
exclude_patterns = ["_build", "README_SECTIONS.md", "Thumbs.db", ".DS_Store"]
html_theme = "furo"
html_title = f"stochrank_objectives {release}"

# Google-style docstrings, as the package writes them
napoleon_google_docstring = True
napoleon_numpy_docstring = False
autodoc_member_order = "bysource"
autodoc_typehints = "description"
# NumPy's aliases by name, not as the unions they expand to
autodoc_type_aliases = {"ArrayLike": "numpy.typing.ArrayLike", "DTypeLike": "numpy.typing.DTypeLike"}
autodoc_default_options = {"undoc-members": False}

myst_enable_extensions = ["dollarmath", "colon_fence"]
myst_heading_anchors = 3
# the notebooks are rendered as committed (their outputs, if any); the test suite runs them
nb_execution_mode = "off"
suppress_warnings = ["mystnb.unknown_mime_type"]

# generated at every build (and ignored by git): the API pages, the results page and the
# notebooks' copies,
# since Sphinx reads sources only from inside docs/
write_api_pages(DOCS / "api")
write_results_page(ROOT / "benchmarks" / "results", DOCS / "results.md")
_notebooks = DOCS / "notebooks"
for _notebook in sorted((ROOT / "notebooks").glob("*.ipynb")):
    _notebooks.mkdir(exist_ok=True)
    shutil.copyfile(_notebook, _notebooks / _notebook.name)


def _skip_foreign_member(app, what, name, obj, skip, options):
    """Leave out members this package does not define (scikit-learn's generated
    ``set_fit_request``/``set_score_request``, whose docstrings cite scikit-learn's own docs)."""
    module = getattr(obj, "__module__", None) or ""
    if what == "class" and callable(obj) and not module.startswith("stochrank_objectives"):
        return True
    return None


def setup(app):
    app.connect("autodoc-skip-member", _skip_foreign_member)
