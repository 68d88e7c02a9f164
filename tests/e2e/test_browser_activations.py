"""The Activations view in a real browser for a random ReLU model, a random GELU model and MiniLM:
every figure drawn, no error, and a screenshot of the whole view (in ENCODER_SHOTS_DIR when set,
else the test's temporary folder) to look at."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.e2e.harness import (
    DEEP_FIND_JS,
    FIGURE_DRAWN_JS,
    expected_tokens,
    figure,
    type_text,
    wait_settled,
)

pytestmark = [pytest.mark.browser, pytest.mark.timeout(180)]

# each tab (only the open one is drawn) and its figures
FIGURES = {
    "Feed-forward units": ("act_histogram", "act_top_units"),
    "The residual stream": ("act_residual",),
    "Token geometry across depth": ("act_cosine", "act_mean_cosine", "act_pca"),
}
SETUPS = {
    "relu": dict(activation="relu"),
    "gelu": dict(activation="gelu"),
    "minilm": dict(source="pretrained"),
}
# the top units' title (its figure's name) holds `part`
TOP_UNITS_TITLED_JS = f"""part => {{
  const box = document.querySelector(".st-key-act_top_units");
  const root = box && {DEEP_FIND_JS}(box, "[data-testid=top-units]");
  return !!root && (root.getAttribute("aria-label") || "").includes(part);
}}"""


@pytest.mark.parametrize("setup", SETUPS)
def test_activations_view_draws_every_figure(open_page, setup, tmp_path):
    page, problems = open_page(view="Activations", **SETUPS[setup])
    for tab, keys in FIGURES.items():
        page.get_by_role("tab", name=tab).click()
        for key in keys:
            page.wait_for_function(FIGURE_DRAWN_JS, arg=key, timeout=60_000)
        wait_settled(page)
        assert page.locator("[data-testid=stException]").count() == 0
        if tab == "Feed-forward units":
            page.wait_for_function(TOP_UNITS_TITLED_JS, arg="most active units")
    tokens = expected_tokens(page.locator(".st-key-text textarea").input_value())[0]
    pca = figure(page, "act_pca")
    assert pca["traces"] == 3 and f"{len(tokens)} tokens" in pca["title"]
    page.set_viewport_size({"width": 1400, "height": 4400})  # the whole view in one picture
    page.wait_for_timeout(1000)
    shots = Path(os.environ.get("ENCODER_SHOTS_DIR", tmp_path))
    page.screenshot(path=shots / f"activations-{setup}.png", timeout=120_000)
    assert problems.errors == []


def test_a_picked_token_stays_at_its_position_through_new_texts(open_page):
    """A selectbox's own state in the browser is its option's label ("2: quick"); a new text has
    other labels. The picked token stays a position: the view follows it, never an error."""
    page, problems = open_page(view="Activations", text="the quick brown fox")
    page.locator(".st-key-act_token input").click()
    page.get_by_role("option", name="2: quick", exact=True).click()
    page.wait_for_function(TOP_UNITS_TITLED_JS, arg="'quick' (2)")
    for text, token in (("a slow red dog runs", "slow"), ("one two three four five", "two")):
        type_text(page, text)
        page.wait_for_function(TOP_UNITS_TITLED_JS, arg=f"'{token}' (2)")
        assert page.locator("[data-testid=stException]").count() == 0, text
    assert problems.errors == []
