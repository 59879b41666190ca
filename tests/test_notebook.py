"""examples/quickstart.ipynb runs from top to bottom on the embedded model, as a newcomer runs it: executed by
nbclient in a real Jupyter kernel, so that it can never rot."""

from __future__ import annotations

from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")

NOTEBOOK = Path(__file__).resolve().parent.parent / "examples" / "quickstart.ipynb"
CELL_S = 900  # a cap on one cell against a hang (the embedded model's calls), not a timing


def test_the_quickstart_notebook_runs_and_shows_what_it_promises(home, tmp_path, monkeypatch):
    monkeypatch.setenv("CRITIQUE_QUICKSTART_OUT", str(tmp_path))
    monkeypatch.setenv("CRITIQUE_QUICKSTART_ITEMS", "4")  # a small limit: 4 train and 6 test items
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    nbclient.NotebookClient(notebook, timeout=CELL_S, kernel_name="python3",
                            resources={"metadata": {"path": str(tmp_path)}}).execute()
    errors = [o for cell in notebook.cells if cell.cell_type == "code" for o in cell.get("outputs", [])
              if o.get("output_type") == "error"]
    assert not errors
    text = "\n".join(str(o.get("text", "")) + str((o.get("data") or {}).get("text/plain", ""))
                     for cell in notebook.cells if cell.cell_type == "code" for o in cell.get("outputs", []))
    assert "critiques in memory" in text and "zero_shot" in text and "EP+SEM_CRIT" in text
    images = [o for cell in notebook.cells if cell.cell_type == "code" for o in cell.get("outputs", [])
              if "image/png" in (o.get("data") or {})]
    assert len(images) == 1  # the plot is shown in the notebook, not only saved
    assert (tmp_path / "learner" / "accuracy.png").stat().st_size > 0
    assert (tmp_path / "learner" / "memory" / "episodic.jsonl").exists()
