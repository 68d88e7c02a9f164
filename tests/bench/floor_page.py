"""The floor: the app's own page and views, drawn from precomputed random numbers, with no model.

`streamlit run tests/bench/floor_page.py`, then `?view=Attention&d_model=512&num_heads=8&...`: it
is app/main.py's page, sidebar and views exactly, but each view draws a stand-in for the run
(tests/bench/stand_in.py: the text's tokens and random arrays of a trace's shapes; no model, no
forward pass). So what this page costs is the views' own work (tables, figures) plus what
Streamlit and the browser need to draw them; whatever the app takes above it is the model: the
forward pass, tokenizing, caching. tests/bench/page_speed.py measures both in one run; the URL's
`token_counts` (e.g. "31,32,33") names the texts to come, whose arrays are made ahead.
"""

from __future__ import annotations

import sys
from pathlib import Path

import streamlit as st

ROOT = str(Path(__file__).resolve().parents[2])
if ROOT not in sys.path:  # `app` importable; streamlit runs this file again on every rerun
    sys.path.insert(0, ROOT)

from app.heap import freeze_startup_heap  # noqa: E402
from app.main import main  # noqa: E402
from tests.bench import stand_in  # noqa: E402

if __name__ == "__main__":
    freeze_startup_heap()  # as the server at its start (app.heap.frozen_at_start), but in a run
    if "token_counts" in st.query_params:
        stand_in.plan(st.query_params["token_counts"])
    main(make_run=stand_in.floor_run)
