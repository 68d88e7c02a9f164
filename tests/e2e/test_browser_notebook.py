"""The example notebook in a real JupyterLab: served on loopback, opened in headless Chromium, its
cells run up to the first explorer; the explorer renders in its cell (anywidget, no network) and
answers a click. (tests/encoder/test_example_notebooks.py runs every cell, headless.)"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.harness import PageProblems, free_port, stop_process, wait_serving

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOK = ROOT / "examples" / "attention.ipynb"
KERNEL_CONNECTED = """() => {
  const kernel = window.jupyterapp.shell.currentWidget.sessionContext.session?.kernel;
  return kernel?.connectionStatus === "connected" && kernel.status === "idle";
}"""
FIRST_EXPLORER = "explore(text)"  # the source of the cell that draws the first explorer
# JupyterLab's own news and update checks would reach the network and add pop-ups
QUIET = {"disabledExtensions": {"@jupyterlab/apputils-extension:announcements": True}}


@pytest.fixture
def jupyter_lab(tmp_path) -> Iterator[str]:
    """A JupyterLab serving a copy of the example notebook; yields the notebook's URL."""
    pytest.importorskip("jupyterlab")
    root = tmp_path / "root"
    root.mkdir()
    shutil.copy(NOTEBOOK, root / NOTEBOOK.name)
    config = tmp_path / "config"
    (config / "labconfig").mkdir(parents=True)
    (config / "labconfig" / "page_config.json").write_text(json.dumps(QUIET))
    port, token = free_port(), secrets.token_hex(16)
    env = {
        **os.environ,
        "JUPYTER_CONFIG_DIR": str(config),
        "JUPYTER_RUNTIME_DIR": str(tmp_path / "runtime"),
        "HF_HUB_OFFLINE": "1",
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
    }
    log = tmp_path / "jupyter.log"
    with log.open("w") as out:
        process = subprocess.Popen(
            [
                sys.executable, "-m", "jupyter", "lab", "--no-browser",
                f"--port={port}", "--ServerApp.port_retries=0", "--ServerApp.ip=127.0.0.1",
                f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={root}",
                "--allow-root",  # CI containers run as root; the server listens on loopback
                "--LabApp.expose_app_in_browser=True",
                "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
            ],
            env=env, stdout=out, stderr=subprocess.STDOUT,
        )  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    try:
        wait_serving(process, f"{base}/api/status?token={token}", 90, "jupyter lab", log.read_text)
        yield f"{base}/lab/tree/{NOTEBOOK.name}?token={token}"
    finally:
        stop_process(process)


def cells_to_run() -> int:
    """How many cells run: every cell up to and including the first explorer's."""
    cells = json.loads(NOTEBOOK.read_text(encoding="utf-8"))["cells"]
    sources = ["".join(cell["source"]).strip() for cell in cells]
    return sources.index(FIRST_EXPLORER) + 1


def test_the_example_notebook_draws_the_explorer_in_jupyterlab(browser, jupyter_lab, tmp_path):
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    page = context.new_page()
    problems = PageProblems(page)
    page.goto(jupyter_lab)
    page.wait_for_function("() => window.jupyterapp?.shell.currentWidget?.content?.widgets?.length")
    # the kernel shows idle (JupyterLab's execution indicator), unless it asks which kernel first
    idle = page.locator(".jp-Notebook-ExecutionIndicator[data-status=idle]")
    choose_kernel = page.locator(".jp-Dialog .jp-mod-accept")  # "Select Kernel": Python 3
    idle.or_(choose_kernel).first.wait_for(timeout=90_000)
    if choose_kernel.is_visible():
        choose_kernel.click()
    # idle is shown before the kernel's websocket connects; cells sent before it are lost
    page.wait_for_function(KERNEL_CONNECTED, timeout=90_000)
    # run the cells above the one after the explorer's; not awaited (it settles when they ran)
    page.evaluate(
        """(count) => {
          const app = window.jupyterapp;
          app.shell.currentWidget.content.activeCellIndex = count;
          app.commands.execute("notebook:run-all-above");
        }""",
        cells_to_run(),
    )
    explorer = page.locator("[data-testid=attention-explorer]")
    explorer.wait_for(timeout=120_000)
    assert explorer.count() == 1
    # the output also carries a still picture (text/html, image/svg+xml): JupyterLab's widget
    # manager ranks the widget view first, so the still picture is not drawn beside it
    assert page.locator(".encoder-explorer-still, .jp-RenderedSVG").count() == 0

    explorer.scroll_into_view_if_needed()
    explorer.locator("[data-role=mode][data-mode=heads]").click()
    explorer.locator("[data-role=tile][data-layer='2'][data-head='5']").click()
    assert (explorer.get_attribute("data-layer"), explorer.get_attribute("data-head")) == ("2", "5")
    readout = explorer.locator("[data-role=readout]")
    assert readout.text_content().startswith("layer 2, head 5")
    explorer.locator("[data-role=mode][data-mode=lines]").click()
    explorer.locator("[data-side=query][data-index='10']").hover()  # "it"
    assert explorer.get_attribute("data-query") == "10"
    assert readout.text_content().startswith('layer 2, head 5: "it" attends most to')
    shots = Path(os.environ.get("ENCODER_SHOTS_DIR", tmp_path))
    page.screenshot(path=str(shots / "notebook_jupyterlab.png"))
    context.close()
    assert problems.errors == [] and problems.dialogs == []
