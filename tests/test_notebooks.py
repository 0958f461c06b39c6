"""The user notebooks in notebooks/ run end to end, with the small budgets they use when
STOCHRANK_NOTEBOOK_FAST=1, and reach their headline results.

Each notebook is executed with nbclient in a fresh ``python3`` kernel (this interpreter), from
the repository root, with the non-interactive matplotlib backend; a probe cell appended here
(never saved) reports the key values as JSON.
"""

import json
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"
NAMES = ["quickstart.ipynb", "global_optimum.ipynb", "sglb.ipynb"]
CELL_TIMEOUT = 300
MARK = "NOTEBOOK_PROBE "

PROBES = {
    "quickstart.ipynb": """
import json
constant = test_metrics(np.zeros(test.y.size))
print("NOTEBOOK_PROBE " + json.dumps({
    "results": [{k: (float(v) if isinstance(v, (float, np.floating)) else v)
                 for k, v in r.items()} for r in results],
    "constant": {k: float(v) for k, v in constant.items()},
    "curve_lengths": {f"{b}/{m}": int(c.size) for (b, m), c in curves.items()},
    "iterations": ITERATIONS}))
""",
    "global_optimum.ipynb": """
import json
print("NOTEBOOK_PROBE " + json.dumps({
    "table": {f"{b}/{m}": [float(v) for c, v in row.items() if c.startswith("seed ")]
              for (b, m), row in table1.iterrows()},
    "paths": {k: float(ndcg_of_features(p[-1])[0]) for k, p in paths.items()},
    "landscape_max": float(landscape.max())}))
""",
    "sglb.ipynb": """
import json
print("NOTEBOOK_PROBE " + json.dumps({
    "temperature": {str(T): [float(v) for _, v in runs] for T, runs in by_temperature.items()},
    "shrink_norms": {str(g): float(np.mean([np.linalg.norm(a[-1] - a[-1].mean())
                                            for a, _ in runs]))
                     for g, runs in by_shrink.items()}}))
""",
}


def _kernel_name() -> str:
    """``python3``; installs ipykernel's spec for the user if no such kernel is known."""
    from jupyter_client.kernelspec import KernelSpecManager, NoSuchKernel

    try:
        KernelSpecManager().get_kernel_spec("python3")
    except NoSuchKernel:  # pragma: no cover - depends on the environment
        from ipykernel.kernelspec import install

        install(user=True)
    return "python3"


def run_notebook(name: str, monkeypatch) -> dict:
    monkeypatch.setenv("STOCHRANK_NOTEBOOK_FAST", "1")
    monkeypatch.setenv("MPLBACKEND", "Agg")
    monkeypatch.delenv("STOCHRANK_NOTEBOOK_FIGURES", raising=False)
    nb = nbformat.read(NOTEBOOKS / name, as_version=4)
    nb.cells.append(nbformat.v4.new_code_cell(PROBES[name].strip()))
    client = nbclient.NotebookClient(nb, timeout=CELL_TIMEOUT, kernel_name=_kernel_name(),
                                     resources={"metadata": {"path": str(ROOT)}})
    client.execute()  # raises CellExecutionError on the first failing cell
    for cell in nb.cells:
        assert not any(o.get("output_type") == "error" for o in cell.get("outputs", []))
    text = "".join(o.get("text", "") for o in nb.cells[-1].outputs
                   if o.get("output_type") == "stream")
    line = next(line for line in text.splitlines() if line.startswith(MARK))
    return json.loads(line[len(MARK):])


@pytest.mark.parametrize("name", NAMES)
def test_notebooks_are_valid_and_keep_their_fast_switch(name):
    # committed with their full-budget outputs, which the docs render (tests/test_docs.py)
    nb = nbformat.read(NOTEBOOKS / name, as_version=4)
    nbformat.validate(nb)
    assert nb.metadata["kernelspec"]["name"] == "python3"
    assert any("STOCHRANK_NOTEBOOK_FAST" in cell.source for cell in nb.cells)


@pytest.mark.slow
def test_quickstart(monkeypatch):
    probe = run_notebook("quickstart.ipynb", monkeypatch)
    rows = {(r["booster"], r["method"]): r for r in probe["results"]}
    assert {b for b, _ in rows} == {"LightGBM", "XGBoost", "CatBoost"}
    assert len(rows) == 6
    for length in probe["curve_lengths"].values():
        assert length == probe["iterations"]
    for (booster, method), row in rows.items():
        # every model, SR-R1 and native LambdaMART alike, ranks far better than a constant
        assert row["NDCG@5"] > probe["constant"]["NDCG@5"] + 0.1, (booster, method, row)
        assert row["MRR"] > probe["constant"]["MRR"] + 0.1, (booster, method, row)


@pytest.mark.slow
def test_global_optimum(monkeypatch):
    probe = run_notebook("global_optimum.ipynb", monkeypatch)
    table = probe["table"]
    sr = table["LightGBM/SR-R1soft (defaults)"]
    lambdamart = table["LightGBM/LambdaMART (lambdarank)"]
    assert len(sr) >= 2 and all(round(v, 3) == 0.917 for v in sr)
    assert all(round(v, 3) == 0.903 for v in lambdamart)
    assert round(probe["paths"]["SR-R1soft (defaults)"], 3) == 0.917
    assert round(probe["paths"]["LambdaMART (lambdarank)"], 3) == 0.903
    assert round(probe["landscape_max"], 3) == 0.917


@pytest.mark.slow
def test_sglb(monkeypatch):
    probe = run_notebook("sglb.ipynb", monkeypatch)
    assert all(round(v, 3) == 0.917 for v in probe["temperature"]["None"])
    norms = probe["shrink_norms"]
    # shrinkage keeps the noisy model small: the strongest shrink rate has the smallest norm
    assert norms["1.0"] < 0.5 * norms["0.0"]
