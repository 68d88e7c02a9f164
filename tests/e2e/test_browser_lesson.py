"""The lesson at a projector's size: every step in presenter mode at 1280 x 720, screenshotted.

The screenshots land in a pytest temporary folder (printed), to be looked at; the test checks
what it can: each step's title, the sidebar folded away, the step's text and first figure
starting on the first screen, no error on the page or in the console.
"""

from __future__ import annotations

from urllib.parse import parse_qs, urlparse

import pytest

from app.lesson.steps import TITLES
from tests.e2e.harness import PROJECTOR, wait_ready

pytestmark = [pytest.mark.browser, pytest.mark.timeout(300)]

EXPLORED = {"One query's attention": "lines", "Heads differ": "heads"}  # step: explorer's view
TOP_OF = """selector => {
  const found = document.querySelector(selector);
  return found ? found.getBoundingClientRect().top : null;
}"""


def test_every_step_in_presenter_mode_at_1280x720(open_page, tmp_path_factory) -> None:
    folder = tmp_path_factory.mktemp("lesson_screens")
    page, _ = open_page({"viewport": PROJECTOR}, 60_000, present=1)  # the lesson on MiniLM
    assert page.locator("[data-testid=stSidebar]").get_attribute("data-collapsed") == "true"
    for number, title in enumerate(TITLES, 1):
        heading = f"{number}. {title}"
        page.wait_for_function(
            "text => [...document.querySelectorAll('h2')].some(h => h.innerText === text)",
            arg=heading,
        )
        wait_ready(page)
        skip = page.locator("[data-testid=stMain]").get_by_role("button", name="Skip")
        asked = skip.count() > 0
        if asked:  # a step that asks first: its figures come with the answer, below it
            page.screenshot(path=folder / f"step_{number:02d}_question.png")
            skip.click()
            skip.wait_for(state="detached")  # the click was taken: the reveal replaces it
            wait_ready(page)
        page.wait_for_timeout(400)  # plotly finishes its layout
        page.screenshot(path=folder / f"step_{number:02d}.png")
        assert page.locator("[data-testid=stException]").count() == 0, heading
        alerts = page.locator("[data-testid=stAlert]").all_inner_texts()
        assert [a for a in alerts if "You skipped" not in a] == [], heading  # but the reveal
        text_top = page.evaluate(TOP_OF, "[data-testid=stMain] [data-testid=stMarkdown] p")
        assert text_top is not None and text_top < PROJECTOR["height"] / 2, heading
        figure_top = page.evaluate(TOP_OF, "[data-testid=stMain] .js-plotly-plot")
        # the figures in the first half of the screen; below the reveal, on the first screen
        fold = PROJECTOR["height"] if asked else PROJECTOR["height"] / 2
        assert figure_top is None or figure_top < fold, heading
        if title in EXPLORED:  # drawn by the explorer, opened on the step's own view
            root = page.locator("[data-testid=attention-explorer]")
            assert root.get_attribute("data-mode") == EXPLORED[title], heading
            assert root.bounding_box()["y"] < fold, heading
            if title == "One query's attention":  # "it" pinned, its weights shown
                assert root.get_attribute("data-pinned") == "true", heading
                url = parse_qs(urlparse(page.url).query)  # the step's head is not the view's:
                untouched = (url.get("layer", ["0"]), url.get("head", ["0"]))  # a default: not in
                assert untouched == (["0"], ["0"]), heading  # the link
        if number < len(TITLES):
            page.locator(".st-key-lesson_next button").click()
    assert f"lesson={len(TITLES)}" in page.url and "present=1" in page.url
    print(f"\nscreenshots of every step: {folder}")
