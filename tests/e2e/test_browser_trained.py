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
