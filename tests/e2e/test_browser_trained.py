"""In a real browser: train the sidebar's architecture, choose the trained model, read it."""

from __future__ import annotations

import pytest

from encoder.tasks.tasks import example_sequence
from tests.e2e.harness import EXPLORER, open_view, type_text, wait_for_explorer, wait_settled

pytestmark = [pytest.mark.browser, pytest.mark.timeout(300)]

TINY = {"d_model": 32, "num_heads": 4, "num_layers": 1, "d_ff": 64}  # trains in seconds
TRAINING_TIMEOUT_MS = 240_000


def test_a_model_trained_here_is_a_source_every_view_reads(open_page):
    page, _ = open_page(view="Training", **TINY)
    steps = page.locator(".st-key-train_steps input")
    steps.fill("30")
    steps.press("Enter")
    wait_settled(page)
    page.locator(".st-key-train_start button").click()
    page.get_by_role("button", name="Open the trained model").wait_for(timeout=TRAINING_TIMEOUT_MS)
    wait_settled(page)

    # the sidebar offers it: choose it there, as a teacher would
    option = page.locator(".st-key-source [data-testid=stRadioOption]").filter(
        has_text="reverse, pre-norm 1 x 4, 30 steps"
    )
    option.click()
    page.wait_for_function(  # the text box gets an example of the model's task
        "text => document.querySelector('.st-key-text textarea').value === text",
        arg=example_sequence(8, 10),
    )
    wait_settled(page)
    said = page.locator("[data-testid=stSidebar]").get_by_text("This model's architecture:")
    assert "pre-norm, d_model 32, 4 heads" in said.inner_text()  # not a control
    assert page.locator(".st-key-num_heads").count() == 0

    open_view(page, "Attention")
    sequence = "9 8 7 6 5 4 3 2"
    type_text(page, sequence)
    wait_for_explorer(page, sequence.split())  # the model's own tokens, one per symbol
    page.locator(EXPLORER).get_by_role("button", name="Every head").click()
    tiles = page.locator(f"{EXPLORER} [data-role=tile]")
    tiles.first.wait_for()
    assert tiles.count() == 4  # 1 layer x 4 heads

    open_view(page, "Tokens")
    page.get_by_text("Sentence 1: 8 tokens").wait_for()
    page.get_by_text("own tokenizer: one token per symbol").wait_for()  # not WordPiece
    assert page.get_by_text("WordPiece").count() == 0

    type_text(page, "9 8 7 x 5 4 3 2")
    page.get_by_text("'x' is not a symbol this model knows").wait_for()
    assert page.locator("[data-testid=stException]").count() == 0


PROJECTOR = {"viewport": {"width": 1280, "height": 720}}
SCROLLER_JS = """() => {  // the element the page scrolls in, and where it is
    const main = document.querySelector("[data-testid=stMain]");
    let scroller = main;
    for (let e = main; e; e = e.parentElement) {
        const overflow = getComputedStyle(e).overflowY;
        if ((overflow === "auto" || overflow === "scroll") && e.scrollHeight > e.clientHeight) {
            scroller = e;
            break;
        }
    }
    return {top: scroller.scrollTop, height: scroller.scrollHeight, seen: scroller.clientHeight};
}"""


def test_the_trained_model_opens_at_the_top_of_the_attention_view(open_page):
    """Scrolled to the end of the results (where a teacher reads them) and "Open the trained
    model" pressed: the Attention view opens at its top, the explorer in sight, and stays there
    while the view draws (Streamlit's page keeps a page scrolled to its bottom at its bottom)."""
    page, _ = open_page(browsing=PROJECTOR, view="Training", **TINY)
    steps = page.locator(".st-key-train_steps input")
    steps.fill("30")
    steps.press("Enter")
    wait_settled(page)
    page.locator(".st-key-train_start button").click()
    opener = page.get_by_role("button", name="Open the trained model")
    opener.wait_for(timeout=TRAINING_TIMEOUT_MS)
    wait_settled(page)
    page.mouse.move(640, 400)
    for _ in range(40):  # to the end of the results, with the wheel, as a reader scrolls
        page.mouse.wheel(0, 400)
        page.wait_for_timeout(50)
    page.wait_for_timeout(800)
    at_end = page.evaluate(SCROLLER_JS)
    assert at_end["height"] > at_end["seen"]  # the results are longer than the screen
    assert at_end["top"] >= at_end["height"] - at_end["seen"] - 2  # at their end
    assert opener.bounding_box()["y"] < PROJECTOR["viewport"]["height"]  # the button in sight
    opener.click()
    page.wait_for_url(lambda url: "/attention" in url.lower(), timeout=30_000)
    wait_for_explorer(page, example_sequence(8, 10).split())
    wait_settled(page)
    page.wait_for_timeout(1500)  # Streamlit's stick-to-the-bottom check runs every few 100 ms
    where = page.evaluate(SCROLLER_JS)
    assert where["top"] == 0, where
    explorer = page.locator(EXPLORER).first.bounding_box()
    assert 0 <= explorer["y"] <= PROJECTOR["viewport"]["height"] - 200, explorer  # in sight
