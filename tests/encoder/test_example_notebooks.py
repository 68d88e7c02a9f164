"""examples/*.ipynb run top to bottom in a fresh kernel (nbclient, headless), and the explorer
cells leave a widget behind, with its still picture."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
STILL = re.compile(r"Attention explorer\. Layer \d+, head \d+")


@pytest.mark.timeout(300)
def test_the_attention_example_runs_top_to_bottom(monkeypatch):
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # transformers reads the bundled checkpoint only
    # the kernel imports this checkout's library, whatever the environment has installed
    monkeypatch.setenv(
        "PYTHONPATH", os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    )
    notebook = nbformat.read(EXAMPLES / "attention.ipynb", as_version=4)
    nbclient.NotebookClient(notebook, timeout=240, kernel_name="python3").execute(cwd=str(EXAMPLES))
    outputs = [output for cell in notebook.cells for output in cell.get("outputs", [])]
    assert not [output for output in outputs if output["output_type"] == "error"]
    widgets = [output["data"] for output in outputs if WIDGET_VIEW in output.get("data", {})]
    # explore, compare, head_view and the one read back; nothing else (no loading bars); each
    # with its still picture and sentence for where no kernel runs (encoder.notebook.widget)
    stills = [
        STILL.match(widget["text/plain"]) and "<svg" in widget["text/html"] for widget in widgets
    ]
    assert stills == [True] * 4
    assert {"name": "stdout", "output_type": "stream", "text": "layer 0 head 0\n"} in outputs
