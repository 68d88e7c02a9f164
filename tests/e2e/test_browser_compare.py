"""Compare mode in a real browser: every view for each headline pair, A's and B's figures drawn,
no console error, and, with ENCODER_SHOTS_DIR set, a screenshot of the whole view there to look
at (a picture 4,000 px high of each view and pair, which no one looks at in a temporary folder)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.e2e.harness import FIGURE_DRAWN_JS, KEYS_STEP, LOADED_JS, open_step, open_view

pytestmark = [pytest.mark.browser, pytest.mark.timeout(600)]

PAIRS = {
    "pre-post": dict(compare="1", b_norm="post"),
    "relu-gelu": dict(compare="1", b_activation="relu"),
    "head-off": dict(compare="1", source="pretrained", b_ablate="1.3"),
    "random-trained": dict(compare="1", source="pretrained", b_source="random"),
}
# each view: a chart of setup A and its twin for B ("" for the Export view: no chart)
VIEWS = {
    "Tokens": "",
    "Attention": "",  # one explorer holds A and B; its setup titles say B is there
    "Attention steps": "step_keys",
    "LayerNorm": "layernorm",
    "Activations": "act_histogram",  # its first tab
    "Shapes": "block_diagram",
    "Export": "",
}
B_SHOWN = {"Export": "with a column setup"}  # what says B is there; else B's column title "B ·"
DRAWN_JS = f"keys => keys.every({FIGURE_DRAWN_JS})"  # each key's chart drawn


@pytest.mark.parametrize("pair", PAIRS)
def test_every_view_draws_both_setups_in_compare_mode(open_page, pair):
    page, _ = open_page(view="Tokens", **PAIRS[pair])  # the fixture checks the console
    shots = os.environ.get("ENCODER_SHOTS_DIR")
    for view, chart in VIEWS.items():
        page.set_viewport_size({"width": 1400, "height": 1000})
        open_view(page, view, 120_000)
        if view == "Attention steps":
            open_step(page, KEYS_STEP, 120_000)
        if chart:
            page.wait_for_function(DRAWN_JS, arg=[chart, f"{chart}_b"], timeout=120_000)
        page.wait_for_function(LOADED_JS, timeout=60_000)
        # B is there (Tokens and Export have no chart to wait for: this waits for the view too)
        page.get_by_text(B_SHOWN.get(view, "B ·"), exact=False).first.wait_for(timeout=120_000)
        assert page.locator("[data-testid=stException]").count() == 0, view
        if shots:
            page.set_viewport_size({"width": 1400, "height": 4000})  # the whole view, one picture
            page.wait_for_timeout(800)
            name = view.lower().replace(" ", "-")
            page.screenshot(path=Path(shots) / f"compare-{pair}-{name}.png", timeout=120_000)
