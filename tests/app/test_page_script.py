"""The page's own script (app/assets/page/*.js and the library's modules they import, joined by
encoder.web.bundle) as Streamlit will run it: one block that runs once per browser page and
parses, and no text that makes st.html drop the script without a word."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest

from app.streamlit_private import PAGE_SCRIPT, PAGE_SCRIPT_FILES

JOINED = re.compile(r"^// ---- (\S+)$", re.MULTILINE)  # a file's place in the joined script


def test_every_file_is_in_the_one_guarded_block() -> None:
    assert len(PAGE_SCRIPT_FILES) >= 3
    assert PAGE_SCRIPT.startswith("if (!window.encoderExplorerPage) {")
    joined = JOINED.findall(PAGE_SCRIPT)
    files = {path.name for path in PAGE_SCRIPT_FILES} | {"shared.js", "figure_tools.js"}
    assert sorted(joined) == sorted(files | {"index.js"})  # each once, and the entry


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
