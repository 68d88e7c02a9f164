"""README's "How to add a view", followed word for word in a copy of the app: a view module, its
one registry line (read from README, so the recipe cannot drift from the code), the one extract
command, and the page opened at the view with AppTest. Nothing else is edited."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
NAME, TITLE = "greeting", "Greeting"
SAID = "This view counts {count} tokens in the first sentence."
VIEW = f'''"""A view added by README's recipe: how many tokens the first sentence has."""

import streamlit as st

from app.i18n import _
from app.keys import Selection
from app.runs import Runs


def draw(runs: Runs, selection: Selection) -> None:
    st.markdown(_("{SAID}", count=len(runs.a.tokens[0])))
'''
OPEN = """
import json, os, sys
from streamlit.testing.v1 import AppTest
at = AppTest.from_file("app/main.py", default_timeout=180)
at.query_params["view"] = sys.argv[1]
at.run()
print(json.dumps({"exceptions": [e.value for e in at.exception],
                  "markdown": [m.value for m in at.markdown]}), flush=True)
os._exit(0)  # the page's background threads (a warm run) are not waited for at exit
"""


def recipe() -> str:
    """README's section "How to add a view"."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    return readme.split("## How to add a view", 1)[1].split("\n## ", 1)[0]


def registry_line() -> str:
    """The registry line README's recipe gives, for this view."""
    lines = re.findall(r"`(view\(.*?\))`", recipe())
    assert len(lines) == 1, f"README's recipe should give one registry line: {lines}"
    return lines[0].replace("NAME", NAME).replace("Title", TITLE)


def run(copy: Path, *argv: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(copy)}
    return subprocess.run(
        [sys.executable, *argv], cwd=copy, env=env, capture_output=True, text=True, timeout=600
    )


@pytest.mark.slow
def test_readme_s_recipe_adds_a_view(tmp_path: Path) -> None:
    copy = tmp_path / "copy"
    for folder in ("app", "encoder"):
        shutil.copytree(ROOT / folder, copy / folder, ignore=shutil.ignore_patterns("__pycache__"))
    # 1. its module
    (copy / "app" / "views" / f"{NAME}.py").write_text(VIEW, encoding="utf-8")
    # 2. one line in VIEWS, at the end of the navigation
    registry = copy / "app" / "registry.py"
    text = registry.read_text(encoding="utf-8")
    start = text.index("VIEWS: tuple[View, ...] = (")
    end = text.index("\n)\n", start)
    registry.write_text(f"{text[:end]}\n    {registry_line()},{text[end:]}", encoding="utf-8")
    # 3. the catalogues, by the one extract command
    extracted = run(copy, "-m", "app.i18n", "extract")
    assert extracted.returncode == 0, extracted.stderr
    for catalogue in ("app/i18n/server.pot", "app/i18n/locale/es/LC_MESSAGES/server.po"):
        assert f'msgid "{SAID}"' in (copy / catalogue).read_text(encoding="utf-8"), catalogue
        assert f'msgid "{TITLE}"' in (copy / catalogue).read_text(encoding="utf-8"), catalogue
    # the page opens at the new view, which draws from the run
    opened = run(copy, "-c", OPEN, TITLE)  # an old link names a view by its title
    assert opened.returncode == 0, opened.stderr[-3000:]
    page = json.loads(opened.stdout.strip().splitlines()[-1])
    assert page["exceptions"] == []
    said = [text for text in page["markdown"] if text.startswith("This view counts")]
    assert len(said) == 1, page["markdown"]
    count = int(re.search(r"counts (\d+) tokens", said[0]).group(1))
    assert count > 2  # [CLS], the words, [SEP] of the default sentence
