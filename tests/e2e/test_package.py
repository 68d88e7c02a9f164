"""`pip install .` (not editable) installs the page: `app` with every subpackage, its assets and
Streamlit settings, and the `encoder-explorer` command, which serves it from any directory.

How, and why so: a fresh virtual environment (`python -m venv --without-pip`) whose one link to
the test's environment is a .pth file listing the site-packages directories on the test
interpreter's sys.path (not the checkout). From there come torch, streamlit, setuptools and pip:
nothing is downloaded and no second torch is installed, so the test takes seconds. A path line
in a .pth file only appends that directory to sys.path, after the new environment's own
site-packages, and the .pth files inside it are not processed: the editable install of this
checkout (a .pth there) stays off, and `app` and `encoder` can only come from what pip installed.
The new environment's Python then runs `pip install --no-deps --no-build-isolation --no-index
--no-compile <copy of the checkout>`: the real non-editable install, setuptools building the
wheel from pyproject.toml. The copy leaves out build outputs (a stale build/ could add files the
package does not declare). `--no-compile` leaves the installed package without bytecode, so the
`__pycache__` files that appear there later prove that the server imported those modules from
the installed location. The server runs in a directory outside the checkout with no
.streamlit/ of its own, and a dark-mode browser shows the page light only if the packaged
settings were read.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from tests.e2e.harness import (
    EXPLORER,
    IDLE,
    REPO,
    StreamlitServer,
    explorer_tokens,
    wait_settled,
)

pytestmark = [pytest.mark.package, pytest.mark.timeout(300)]

LEFT_OUT = shutil.ignore_patterns(
    ".git", ".venv", "build", "dist", "*.egg-info", "__pycache__", ".*_cache", "artifacts"
)


class Installed:
    """A fresh virtual environment holding `pip install .` of a copy of this checkout."""

    def __init__(self, root: Path) -> None:
        self.venv = root / "venv"
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", self.venv], check=True)
        self.python = self.venv / "bin" / "python"
        self.site = Path(self._ask("import sysconfig; print(sysconfig.get_paths()['purelib'])"))
        outer = [path for path in sys.path if Path(path).name in ("site-packages", "dist-packages")]
        (self.site / "outer.pth").write_text("".join(f"{path}\n" for path in outer))
        source = root / "source"
        shutil.copytree(REPO, source, ignore=LEFT_OUT)
        pip = [self.python, "-m", "pip", "install", "--no-deps", "--no-build-isolation"]
        subprocess.run([*pip, "--no-index", "--no-compile", "-q", source], check=True)
        self.cwd = root / "elsewhere"  # outside the checkout, with no .streamlit of its own
        self.cwd.mkdir()
        self.command = self.venv / "bin" / "encoder-explorer"

    def env(self) -> dict[str, str]:
        """This environment, without anything that could put the checkout on sys.path."""
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        return {**env, "PATH": f"{self.venv / 'bin'}:{env.get('PATH', '')}"}

    def _ask(self, code: str) -> str:
        done = subprocess.run(
            [self.python, "-c", code],
            cwd=self.venv,
            env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"},
            capture_output=True,
            text=True,
            check=True,
        )
        return done.stdout.strip()

    def module_files(self, *modules: str) -> list[Path]:
        """Where this environment's Python, started from outside the checkout, imports these."""
        code = f"import importlib; print(*(importlib.import_module(m).__file__ for m in {modules}))"
        return [Path(path) for path in self._ask(code).split()]


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Installed:
    return Installed(tmp_path_factory.mktemp("package"))


def package_files(root: Path) -> set[str]:
    """The modules and data files of `app` and `encoder` under root, relative to it."""
    return {
        str(path.relative_to(root))
        for package in ("app", "encoder")
        for path in (root / package).rglob("*")
        if path.is_file() and "__pycache__" not in path.parts
    }


def test_pip_install_puts_every_module_asset_and_the_command_in_a_fresh_venv(installed):
    wanted = package_files(REPO)
    assert {"app/assets/examples.json", "app/assets/presets.json"} <= wanted
    assert {"app/.streamlit/config.toml", "app/charts/attention.py", "app/launcher.py"} <= wanted
    assert package_files(installed.site) == wanted  # every subpackage and data file, no other
    assert installed.command.read_text().startswith(f"#!{installed.python}\n")
    app, encoder = installed.module_files("app", "encoder")
    assert app == installed.site / "app" / "__init__.py"
    assert encoder == installed.site / "encoder" / "__init__.py"


@pytest.mark.browser
def test_encoder_explorer_serves_the_page_from_outside_the_checkout(installed, browser):
    server = StreamlitServer(
        launcher=[str(installed.command)], cwd=installed.cwd, env=installed.env(), timeout=90
    )
    try:
        with urllib.request.urlopen(f"{server.url}/_stcore/health", timeout=5) as reply:
            assert reply.read() == b"ok"
        # a dark-mode browser: only the packaged config's `theme.base = "light"` keeps it light
        context = browser.new_context(color_scheme="dark", viewport={"width": 1400, "height": 900})
        try:
            page = context.new_page()
            page.goto(server.page_url(view="Attention"))
            wait_settled(page, 90_000)
            page.locator(f"{EXPLORER} [data-side=query]").first.wait_for(timeout=90_000)
            page.wait_for_selector(IDLE)
            tokens = explorer_tokens(page)  # drawn by the installed package's own ES module
            background = page.evaluate(
                "getComputedStyle(document.querySelector('[data-testid=stApp]')).backgroundColor"
            )
        finally:
            context.close()
    finally:
        server.stop()
    assert tokens[0] == "[CLS]" and tokens[-1] == "[SEP]" and len(tokens) > 2
    assert background == "rgb(255, 255, 255)"
    compiled = {path.name.split(".")[0] for path in (installed.site / "app").glob("__pycache__/*")}
    assert {"__init__", "runs"} <= compiled  # the server imported the installed app
