"""The page's own scripts (app/assets/page/*.js) as Streamlit will run them: every file, each in
its own block, and no text that makes st.html drop the script without a word."""

from __future__ import annotations

import re
from pathlib import Path

from app.streamlit_private import PAGE_SCRIPT

SCRIPTS = sorted((Path(__file__).resolve().parents[2] / "app" / "assets" / "page").glob("*.js"))


def test_every_script_runs_in_its_own_block() -> None:
    assert len(SCRIPTS) >= 2
    for path in SCRIPTS:
        assert f"{{\n{path.read_text(encoding='utf-8')}}}" in PAGE_SCRIPT, path.name


def test_no_tag_opening_that_st_html_would_drop_the_script_for() -> None:
    # st.html(..., unsafe_allow_javascript=True) renders nothing for a script that holds a tag's
    # opening such as "<b", even in a string; "<[" (a regular expression's) is kept out too, to
    # be safe. The scripts write "\x3c" for "<".
    assert re.search(r"<[A-Za-z/!\[]", PAGE_SCRIPT) is None
