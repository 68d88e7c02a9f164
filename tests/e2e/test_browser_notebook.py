"""The example notebook in a real JupyterLab: served on loopback, opened in headless Chromium,
every cell run; the explorer renders in its cell (anywidget, no network) and answers a click."""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeout

from tests.e2e.harness import PageProblems, free_port, stop_process, wait_serving

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOK = ROOT / "examples" / "attention.ipynb"
SHOTS = Path(os.environ.get("ENCODER_SHOTS", "/work/shots"))
EXPLORERS = 4  # explore, compare, head_view, and the one read back
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


def test_the_example_notebook_draws_the_explorer_in_jupyterlab(browser, jupyter_lab):
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    page = context.new_page()
    problems = PageProblems(page)
    page.goto(jupyter_lab)
    page.locator(".jp-Notebook").wait_for(timeout=90_000)
    page.wait_for_function("() => window.jupyterapp && window.jupyterapp.commands")
    choose_kernel = page.locator(".jp-Dialog .jp-mod-accept")  # "Select Kernel": Python 3
    with contextlib.suppress(PlaywrightTimeout):
        choose_kernel.click(timeout=20_000)
    page.get_by_text("Python 3 (ipykernel) | Idle").wait_for(timeout=60_000)
    # run every cell; the command's promise is not awaited (it settles when the kernel is done)
    page.evaluate("() => { window.jupyterapp.commands.execute('notebook:run-all-cells'); }")
    explorers = page.locator("[data-testid=attention-explorer]")
    explorers.nth(EXPLORERS - 1).wait_for(timeout=240_000)
    assert explorers.count() == EXPLORERS

    first = explorers.first
    first.scroll_into_view_if_needed()
    first.locator("[data-role=mode][data-mode=heads]").click()
    first.locator("[data-role=tile][data-layer='2'][data-head='5']").click()
    assert (first.get_attribute("data-layer"), first.get_attribute("data-head")) == ("2", "5")
    readout = first.locator("[data-role=readout]")
    assert readout.text_content().startswith("layer 2 head 5")
    first.locator("[data-role=mode][data-mode=lines]").click()
    first.locator("[data-side=query][data-index='10']").hover()  # "it"
    assert first.get_attribute("data-query") == "10"
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / "notebook_jupyterlab.png"))
    context.close()
    assert problems.errors == [] and problems.dialogs == []
