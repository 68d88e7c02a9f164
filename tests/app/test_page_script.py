"""The page's own script (the library's figure tools, then app/assets/page/*.js) as Streamlit
will run it: one block that runs once per browser page and parses, no name declared twice
across its files, and no text that makes st.html drop the script without a word."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest

from app.streamlit_private import PAGE_SCRIPT, PAGE_SCRIPT_FILES
from encoder.web import asset

TOP_LEVEL = re.compile(r"^(?:function|const|let|class)\s+([A-Za-z_$][\w$]*)", re.MULTILINE)


def test_every_file_is_in_the_one_guarded_block() -> None:
    assert len(PAGE_SCRIPT_FILES) >= 3
    assert PAGE_SCRIPT.startswith("if (!window.encoderExplorerPage) {")
    texts = [asset("shared.js"), asset("figure_tools.js")]
    texts += [p.read_text(encoding="utf-8") for p in PAGE_SCRIPT_FILES]
    for text in texts:
        assert text in PAGE_SCRIPT


def test_no_name_is_declared_twice_across_the_files() -> None:
    names = TOP_LEVEL.findall(PAGE_SCRIPT)
    twice = sorted({name for name in names if names.count(name) > 1})
    assert twice == []


@pytest.mark.skipif(shutil.which("node") is None, reason="needs node")
def test_the_script_parses_and_runs_its_guard_once(tmp_path) -> None:
    # run twice with a stand-in page: the second run must not declare or watch anything again
    stub = (
        "globalThis.window = globalThis; let watched = 0;"
        "globalThis.document = {body: {}, querySelectorAll: () => [], addEventListener() {}};"
        "globalThis.MutationObserver = class { observe() { watched += 1; } };"
        "globalThis.addEventListener = () => {}; globalThis.setTimeout = () => 0;"
        "globalThis.clearTimeout = () => {}; globalThis.location = {pathname: '/'};"
    )
    script = tmp_path / "page.js"
    twice = f"{stub}\n{PAGE_SCRIPT}\n{PAGE_SCRIPT}\nconsole.log(watched);"
    script.write_text(twice, encoding="utf-8")
    ran = subprocess.run(["node", str(script)], capture_output=True, text=True, timeout=30)
    assert ran.returncode == 0, ran.stderr
    watchers = len(re.findall(r"^when(?:Still|Changed)\(", PAGE_SCRIPT, re.MULTILINE))
    assert watchers >= 4 and ran.stdout.strip() == str(watchers)  # each file's watcher, once


def test_no_tag_opening_that_st_html_would_drop_the_script_for() -> None:
    # st.html(..., unsafe_allow_javascript=True) renders nothing for a script that holds a tag's
    # opening such as "<b", even in a string; "<[" (a regular expression's) is kept out too, to
    # be safe. The scripts write "\x3c" for "<".
    assert re.search(r"<[A-Za-z/!\[]", PAGE_SCRIPT) is None
