"""The Cost view in a real browser: what the shapes tell is drawn at once, with a progress bar,
and the measured numbers appear without a click once the background measurement is done; a new
session on the same architecture finds them at once."""

from __future__ import annotations

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.timeout(240)]

# an architecture of its own (seed 23), so that no other test has measured it, large enough that
# its measurement takes seconds
SMALL = {"view": "Cost", "d_model": 128, "num_heads": 4, "num_layers": 4, "d_ff": 512, "seed": 23}
DRAWN_JS = """key => {
  const plot = document.querySelector(`.st-key-${key} .js-plotly-plot`);
  return !!(plot && plot._fullData && plot._fullData.length);
}"""


def test_cost_draws_at_once_then_shows_the_measured_numbers_by_itself(open_page):
    page, _ = open_page(**SMALL)
    page.wait_for_function(DRAWN_JS, arg="cost_flops", timeout=30_000)
    progress = page.get_by_test_id("stProgress")
    assert "in the background" in progress.inner_text()
    assert page.locator(".st-key-cost_operations").count() == 0
    # no click: the fragment polls the measurement and the page shows its numbers
    page.wait_for_function(DRAWN_JS, arg="cost_operations", timeout=180_000)
    assert progress.count() == 0
    sentence = page.get_by_text("A forward pass without hooks of", exact=False)
    assert "status line's traced forward pass" in sentence.inner_text()
    assert page.locator("[data-testid=stException]").count() == 0
    again, _ = open_page(**SMALL)  # a new session: remembered, drawn in its first run
    assert again.locator(".st-key-cost_operations .js-plotly-plot").count() == 1
    assert again.get_by_test_id("stProgress").count() == 0
