"""The Attention view of the real app on the attention explorer, driven through its DOM contract:
the keyboard alone reads the model's weights, looking sends nothing to the server, the settled
head reaches the URL and the metrics (a section computed once opened), compare mode's B − A, 502
tokens of MiniLM (a window of tokens in the lines view, the layer select, the rollout after the
last layer)."""

from __future__ import annotations

import re

import pytest

from encoder.inspect.rollout import trace_rollout
from tests.e2e.harness import (
    EXPLORER,
    EXPLORER_IN_JS,
    LOAD_TIMEOUT_MS,
    explorer_state,
    wait_for_explorer,
    wait_ready,
)
from tests.shared import SENTENCE

pytestmark = [pytest.mark.browser, pytest.mark.timeout(300)]

READOUT = f"{EXPLORER} [data-role=readout]"
WEIGHT = re.compile(r"([-+−]?\d\.\d{3})(?: \(pinned\))?$")  # B − A's with their sign


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
    return float(found.group(1).replace("−", "-"))


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
    assert text.startswith(f'layer 2, head 5: "it" attends most to "{tokens[best]}"'), text
    assert abs(readout_weight(page) - float(row[best])) <= 1e-3
    for mode in ("matrix", "heads", "lines"):
        page.locator(f"{EXPLORER} [data-role=mode][data-mode={mode}]").click()
        assert explorer_state(page)["mode"] == mode
    assert sent == []  # every look stayed in the browser
    page.wait_for_url(re.compile(r"layer=2.*head=5|head=5.*layer=2"), timeout=15_000)
    # the metrics are computed and sent only once their section is opened
    assert page.locator("[data-testid=stDataFrame]").count() == 0
    page.get_by_text("Every head's metrics", exact=False).click()
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
    assert text.startswith(f'layer 2, head 0 (B − A): "[CLS]" gains most on "{tokens[best]}"')
    assert abs(readout_weight(page) - float(row[best])) <= 1e-3


def window_of(page) -> tuple[int, int]:
    """The lines view's window of a long input: [start, end) of its tokens."""
    shown = page.locator(f"{EXPLORER} [data-role=window]")
    return int(shown.get_attribute("data-start")), int(shown.get_attribute("data-end"))


def test_502_tokens_of_minilm_draw_every_mode(open_page, minilm) -> None:
    text = " ".join(["word"] * 500)
    page, _ = open_page(view="Attention", source="pretrained", text=text)
    attention, tokens = minilm.attention_of(text)
    assert len(tokens) == 502
    page.locator(f"{EXPLORER} [data-role=window]").wait_for(timeout=120_000)
    start, end = window_of(page)
    assert start == 0 and 0 < end < 100  # a window, from the first token while none is chosen
    wait_for_explorer(page, tokens[start:end])
    page.locator(EXPLORER).focus()
    page.keyboard.press("ArrowUp")  # the last token: the window follows it
    start, end = window_of(page)
    assert end == 502 and explorer_state(page)["query"] == "501"
    assert page.locator(f"{EXPLORER} [data-side=query]").all_text_contents() == tokens[start:end]
    page.locator("[data-testid=explorer-layer]").select_option("4")
    assert explorer_state(page)["layer"] == "4"
    page.locator(f"{EXPLORER} [data-role=mode][data-mode=rollout]").click()
    message = page.locator(f"{EXPLORER} [data-role=message]").text_content()
    assert "Only the rollout after the last layer was sent for 502 tokens" in message
    rolled = trace_rollout(minilm.trace_of(text))[-1, 0, 501]  # [key]
    assert abs(readout_weight(page) - float(rolled.max())) <= 1e-3
    # the chosen head reaches Python, which sends it at full resolution: its cells' weights
    page.locator(f"{EXPLORER} [data-role=mode][data-mode=matrix]").click()
    page.wait_for_function(
        f"() => !{EXPLORER_IN_JS}(document).querySelector('[data-role=message]').textContent",
        timeout=60_000,
    )
    grid = page.locator(f"{EXPLORER} [data-role=matrix]")
    box = grid.bounding_box()
    assert abs(box["width"] - box["height"]) <= 1
    q, k = 10, 3
    grid.hover(position={"x": (k + 0.5) * box["width"] / 502, "y": (q + 0.5) * box["height"] / 502})
    assert abs(readout_weight(page) - float(attention[4, 0, q, k])) <= 1e-3
    page.locator(f"{EXPLORER} [data-role=mode][data-mode=heads]").click()
    assert page.locator(f"{EXPLORER} [data-role=tile]").count() == 6 * 12
