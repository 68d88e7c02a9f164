"""examples/exercises.ipynb runs top to bottom: as handed out (every check says "not written
yet", no traceback) and with the reference solutions put into its stub cells; in a Jupyter
kernel an error names the student's cell line and a loop that never ends is stopped."""

from __future__ import annotations

import inspect
import re
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
@pytest.mark.parametrize(  # a second kernel over the notebook, in the slow lane
    "solved", [pytest.param(False, marks=pytest.mark.slow), True], ids=["as handed out", "solved"]
)
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


STUDENT_CELLS = [
    "import time\n"
    "import numpy as np\n"
    "from encoder import EncoderConfig, exercises\n"
    "cfg = EncoderConfig(d_model=16, num_heads=4, num_layers=1, d_ff=32)\n"
    "lab = exercises.setup(cfg, ['The cat sat on the mat.', 'Dogs bark.'], time_limit=1)",
    "def softmax(scores):\n    return np.softmax(scores)\n\n\n"
    "exercises.check_softmax(softmax, lab)",
    "def softmax(scores):\n    while True:\n        scores = scores + 0\n\n\n"
    "start = time.monotonic()\nresult = exercises.check_softmax(softmax, lab)\n"
    "print(time.monotonic() - start)\nresult",
    inspect.getsource(exercise_solutions.softmax) + "\n\nexercises.check_softmax(softmax, lab)",
]


@pytest.mark.timeout(120)
def test_in_a_kernel_an_error_names_the_cells_line_and_a_loop_is_stopped() -> None:
    notebook = nbformat.v4.new_notebook(
        cells=[nbformat.v4.new_code_cell(source) for source in STUDENT_CELLS]
    )
    run(notebook)
    raised, stopped, solved = results_of(notebook)
    assert "in softmax, line 2: return np.softmax(scores) (raised inside numpy)" in raised
    assert "stopped after 1 s, the time limit of a check" in stopped
    assert re.search(r"in softmax, line (2: while True:|3: scores = scores \+ 0)<", stopped)
    took = float(notebook.cells[2].outputs[0]["text"])
    assert 1 <= took < 2.0
    assert 'data-passed="true"' in solved
