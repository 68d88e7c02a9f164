"""examples/exercises.ipynb runs top to bottom: as handed out (every check says "not written
yet", no traceback) and with the reference solutions put into its stub cells."""

from __future__ import annotations

import inspect
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

from tests.encoder import exercise_solutions

NOTEBOOK = Path(__file__).resolve().parents[2] / "examples" / "exercises.ipynb"
ROOT = NOTEBOOK.parent.parent


def stub_cells(notebook) -> list:
    return [cell for cell in notebook.cells if "solution" in cell.metadata.get("tags", [])]


def results_of(notebook) -> list[str]:
    """The HTML of every check result the notebook displayed, in order."""
    return [
        output["data"]["text/html"]
        for cell in notebook.cells
        if cell.cell_type == "code"
        for output in cell.get("outputs", [])
        if "text/html" in output.get("data", {})
    ]


def run(notebook) -> None:
    NotebookClient(notebook, timeout=240, kernel_name="python3",
                   resources={"metadata": {"path": str(ROOT)}}).execute()  # fmt: skip


def test_the_file_keeps_its_stubs() -> None:
    cells = stub_cells(nbformat.read(NOTEBOOK, as_version=4))
    assert len(cells) == 10
    for cell in cells:
        assert "raise NotImplementedError" in cell.source
        assert f"def {cell.metadata['exercise']}(" in cell.source


@pytest.mark.timeout(300)
@pytest.mark.parametrize("solved", [False, True], ids=["as handed out", "solved"])
def test_the_notebook_runs_top_to_bottom(solved: bool) -> None:
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    if solved:
        for cell in stub_cells(notebook):
            cell.source = inspect.getsource(getattr(exercise_solutions, cell.metadata["exercise"]))
        notebook.cells.insert(1, nbformat.v4.new_code_cell(
            "from tests.encoder.exercise_solutions import *  # helpers the solutions call"
        ))  # fmt: skip
    run(notebook)
    results = results_of(notebook)
    assert len(results) == 13  # 12 checks of the 10 exercises, then the Bessel example
    *checks, bessel = results
    expected = "true" if solved else "false"
    assert all(f'data-passed="{expected}"' in page for page in checks), checks
    if not solved:
        assert all("not written yet" in page for page in checks)
    assert 'data-passed="false"' in bessel and "Bessel" in bessel and "first difference" in bessel
