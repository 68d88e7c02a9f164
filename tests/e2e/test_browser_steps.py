"""The Attention steps view and a head-ablation link in a real browser: drawn, no console errors."""

from __future__ import annotations

from urllib.parse import parse_qs, urlparse

import pytest

from tests.e2e.harness import PROJECTOR, expected_tokens, open_step
from tests.shared import SENTENCE

pytestmark = [pytest.mark.browser, pytest.mark.timeout(180)]

STEP_CHARTS = [
    "step_input",
    "step_wq",
    "step_q",
    "step_keys",
    "step_values",
    "step_scaling",
    "step_weighted",
    "step_z",
    "step_concat",
    "step_attn_out",
    "step_residual",
]
ABLATION_CHARTS = [
    "ablation_cosine",
    "ablation_output",
    "ablation_difference",
    "ablation_head_difference",
]
# The drawn y tick labels of a chart, as the browser shows them.
Y_TICKS_JS = """key => [...document.querySelectorAll(`.st-key-${key} g.ytick text`)]
  .map(t => t.textContent)"""


# Each table of the page: its columns' names, how wide its columns are together and how wide its
# grid shows them (past that, the columns hide behind a sideways scroll), and its box's right
# edge against the window's.
TABLES_JS = """() => [...document.querySelectorAll("[data-testid=stDataFrame]")].map(table => {
  const grid = table.querySelector(".dvn-scroller");
  return {columns: [...table.querySelectorAll("[role=columnheader]")].map(h => h.textContent),
          together: grid.scrollWidth, shown: grid.clientWidth,
          right: table.getBoundingClientRect().right, window: window.innerWidth};
})"""


def wait_for_charts(page, keys: list[str]) -> None:
    for key in keys:
        page.wait_for_selector(f".st-key-{key} .js-plotly-plot .main-svg", timeout=60_000)


def open_every_step(page) -> None:
    """Click each closed step's expander open, one at a time, as a reader would."""
    for index in range(8):
        open_step(page, f"step_open_{index}")


def test_steps_view_opens_from_a_link_with_every_step_drawn(open_page):
    page, _ = open_page(
        text=SENTENCE, view="Attention steps", step_layer=1, step_head=2, step_query=10
    )
    open_every_step(page)
    wait_for_charts(page, STEP_CHARTS)
    assert page.locator("[data-testid=stException]").count() == 0
    tokens = expected_tokens(SENTENCE)[0]
    assert page.evaluate(Y_TICKS_JS, "step_keys") == [f"{j} {t}" for j, t in enumerate(tokens)]
    heading = page.locator("[data-testid=stMain] h2").first.inner_text()
    assert heading.startswith("Layer 1, head 2: how query 10 “it” attends")
    table = page.locator("[data-testid=stDataFrame]").first
    assert table.is_visible()
    query = parse_qs(urlparse(page.url).query)
    assert (query["step_layer"], query["step_head"], query["step_query"]) == (["1"], ["2"], ["10"])


def test_hostile_text_in_the_steps_view_stays_text(open_page):
    text = "<img src=x onerror=alert(1)> <b>bold</b>"
    page, problems = open_page(text=text, view="Attention steps", step_query=2)
    open_every_step(page)
    wait_for_charts(page, STEP_CHARTS)
    tokens = expected_tokens(text)[0]
    assert page.evaluate(Y_TICKS_JS, "step_values") == [f"{j} {t}" for j, t in enumerate(tokens)]
    page.wait_for_timeout(300)  # give any injected handler the chance to fire
    assert problems.dialogs == []
    assert page.locator("img[src=x]").count() == 0
    assert page.locator("[data-testid=stMain] b:has-text('bold')").count() == 0


def test_an_ablation_link_draws_the_comparison(open_page):
    page, _ = open_page(text=SENTENCE, ablate="0.2,1.3")
    wait_for_charts(page, ABLATION_CHARTS)
    assert page.locator("[data-testid=stException]").count() == 0
    assert page.locator(".st-key-ablate input").input_value() == "0.2,1.3"
    assert parse_qs(urlparse(page.url).query)["ablate"] == ["0.2,1.3"]
    assert page.locator("[data-testid=stMetric]").count() == 2  # random weights: no embedding


def test_compare_mode_shows_each_setups_weight_column_at_a_projectors_width(open_page):
    # the two setups' tables stood side by side, each half the page wide: cut after q_dot_k, the
    # weight column (the answer) behind a sideways scroll
    page, _ = open_page(
        {"viewport": PROJECTOR}, view="Attention steps", source="pretrained", compare=1
    )
    tables = page.evaluate(TABLES_JS)
    steps = [table for table in tables if "q_dot_k" in table["columns"]]
    assert len(steps) == 2, tables  # A's and B's
    assert all("weight" in table["columns"] for table in steps)
    for table in tables:  # every column, the weight column among them, inside what shows
        assert table["together"] <= table["shown"] + 1, table
        assert table["right"] <= table["window"], table
