"""Write the page of committed benchmark results (run by conf.py at every build).

Every table (``*.md``), text report (``*.txt``) and figure (``*.png``) under
``benchmarks/results/`` is shown, grouped by folder, so a result committed later appears without
editing the docs; raw runs (``*.csv``, ``*.jsonl``, ``*.json``) stay in the repository. Each file
and folder gets a target ``results-<path>`` (``/`` and ``.`` become ``-``), which the guide's
pages cite with ``{ref}``; a target that no longer exists fails the ``-W`` build.
"""

from __future__ import annotations

import os
from pathlib import Path

SHOWN = (".md", ".txt", ".png")


def target(relative: str) -> str:
    """The cross-reference target of a file or folder of ``benchmarks/results``."""
    slug = relative.strip("/").replace("/", "-").replace(".", "-").lower()
    return f"results-{slug}" if slug else "results"


def _file_block(path: Path, results: Path, page_dir: Path) -> list[str]:
    relative = path.relative_to(results).as_posix()
    source = Path(os.path.relpath(path, page_dir)).as_posix()
    lines = [f"({target(relative)})=", f"### `{relative}`", ""]
    if path.suffix == ".md":
        lines += ["```{include} " + source, ":heading-offset: 3", "```"]
    elif path.suffix == ".txt":
        lines += ["```{literalinclude} " + source, ":language: text", "```"]
    else:
        lines += ["```{image} " + source, f":alt: {relative}", ":width: 100%", "```"]
    return lines + [""]


def write_results_page(results: Path, page: Path) -> None:
    """Write ``page`` (Markdown) showing every shown file under ``results``."""
    page.parent.mkdir(parents=True, exist_ok=True)
    lines = ["# Benchmark results", "",
             "The committed outputs of `python -m benchmarks.NAME` (folder "
             "`benchmarks/results/` of the repository), shown as committed; the "
             "[benchmarks page](guide/benchmarks.md) says what each one measures.", ""]
    folders = sorted({p.parent for p in results.rglob("*") if p.suffix in SHOWN})
    for folder in folders:
        relative = folder.relative_to(results).as_posix()
        name = "top level" if relative == "." else f"{relative}/"
        lines += [f"({target('' if relative == '.' else relative)})=", f"## {name}", ""]
        for path in sorted(p for p in folder.iterdir() if p.suffix in SHOWN):
            lines += _file_block(path, results, page.parent)
    page.write_text("\n".join(lines))
