"""The Attention view of the real app on the attention explorer, driven through its DOM contract:
the keyboard alone reads the model's weights, looking sends nothing to the server, the settled
head reaches the URL, compare mode's B − A, 502 tokens of MiniLM."""

from __future__ import annotations

import re

import pytest

from tests.e2e.harness import (
    EXPLORER,
    LOAD_TIMEOUT_MS,
    explorer_state,
    wait_for_explorer,
    wait_ready,
)
from tests.shared import SENTENCE

pytestmark = [pytest.mark.browser, pytest.mark.timeout(300)]

READOUT = f"{EXPLORER} [data-role=readout]"
WEIGHT = re.compile(r"(-?\d\.\d{3})(?: \(pinned\))?$")


def watched(page) -> list:
    """The websocket frames the page sends from now on."""
    sent: list = []
    page.on("websocket", lambda ws: ws.on("framesent", lambda frame: sent.append(frame)))
    page.reload()
    wait_ready(page, LOAD_TIMEOUT_MS)
    return sent


def readout_weight(page) -> float:
    text = page.locator(READOUT).text_content()
    found = WEIGHT.search(text)
    assert found, text
    return float(found.group(1))


def test_the_keyboard_reads_minilms_weights_sends_nothing_and_the_url_follows(
    open_page, minilm
) -> None:
    page, _ = open_page(view="Attention", source="pretrained", text=SENTENCE)
    sent = watched(page)
    attention, tokens = minilm.attention_of(SENTENCE)
    wait_for_explorer(page, tokens)
    page.wait_for_timeout(500)
    sent.clear()
    page.locator(EXPLORER).focus()
    for _ in range(12 * 2 + 5):  # layer 2, head 5
        page.keyboard.press("ArrowRight")
    it = tokens.index("it")
    for _ in range(it + 1):
        page.keyboard.press("ArrowDown")
    page.keyboard.press("Enter")
    state = explorer_state(page)
    assert (state["layer"], state["head"], state["query"], state["pinned"]) == (
        "2",
        "5",
        str(it),
        "true",
    )
    row = attention[2, 5, it]
    best = int(row.argmax())
    text = page.locator(READOUT).text_content()
    assert text.startswith(f'layer 2 head 5: "it" attends most to "{tokens[best]}"'), text
    assert abs(readout_weight(page) - float(row[best])) <= 1e-3
    for mode in ("matrix", "heads", "lines"):
        page.locator(f"{EXPLORER} [data-role=mode][data-mode={mode}]").click()
        assert explorer_state(page)["mode"] == mode
    assert sent == []  # every look stayed in the browser
    page.wait_for_url(re.compile(r"layer=2.*head=5|head=5.*layer=2"), timeout=15_000)
    # the settled head reaches the session: the metrics table's first row is layer 2 head 5
    page.wait_for_function(
        "() => document.querySelector('[data-testid=stDataFrame]') !== null", timeout=30_000
    )


def test_compare_mode_draws_b_minus_a_from_one_payload(open_page, minilm) -> None:
    page, _ = open_page(
        view="Attention", source="pretrained", text=SENTENCE, compare="1", b_ablate="1.3"
    )
    a, tokens = minilm.attention_of(SENTENCE)
    b, _ = minilm.attention_of(SENTENCE, ablate=((1, 3),))
    wait_for_explorer(page, tokens)
    page.locator(f"{EXPLORER} [data-role=setup][data-setup=B-A]").click()
    assert explorer_state(page)["setup"] == "B-A"
    page.locator(EXPLORER).focus()
    for _ in range(12 * 2):  # layer 2 head 0: after the head switched off
        page.keyboard.press("ArrowRight")
    page.keyboard.press("ArrowDown")
    row = (b - a)[2, 0, 0]
    best = int(row.argmax())
    text = page.locator(READOUT).text_content()
    assert text.startswith(f'layer 2 head 0 (B − A): "[CLS]" gains most on "{tokens[best]}"')
    assert abs(readout_weight(page) - float(row[best])) <= 1e-3


def test_502_tokens_of_minilm_draw_every_mode(open_page, minilm) -> None:
    text = " ".join(["word"] * 500)
    page, _ = open_page(view="Attention", source="pretrained", text=text)
    attention, tokens = minilm.attention_of(text)
    assert len(tokens) == 502
    wait_for_explorer(page, tokens, timeout_ms=120_000)
    page.locator(f"{EXPLORER} [data-role=mode][data-mode=matrix]").click()
    grid = page.locator(f"{EXPLORER} [data-role=matrix]")
    box = grid.bounding_box()
    q, k = 10, 3
    grid.hover(position={"x": (k + 0.5) * box["width"] / 502, "y": (q + 0.5) * box["height"] / 502})
    assert abs(readout_weight(page) - float(attention[0, 0, q, k])) <= 1e-3
    page.locator(f"{EXPLORER} [data-role=mode][data-mode=heads]").click()
    assert page.locator(f"{EXPLORER} [data-role=tile]").count() == 6 * 12
