"""The attention explorer in the page (its Custom Components v2 host), driven through its DOM
contract: every mode, the keyboard alone, compare, nothing sent while looking, the readout's
weights equal to MiniLM's."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest

from tests.e2e.harness import LOAD_TIMEOUT_MS, PageProblems, StreamlitServer, wait_ready
from tests.shared import SENTENCE

pytestmark = pytest.mark.browser

EXPLORER = "[data-testid=attention-explorer]"
READOUT = "[data-role=readout]"
WEIGHT = re.compile(r"(-?\d\.\d{3})$")


@pytest.fixture(scope="module")
def explorer_server(browser) -> Iterator[StreamlitServer]:
    running = StreamlitServer("tests/e2e/explorer_page.py")
    try:
        yield running
    finally:
        running.stop()


@pytest.fixture
def explorer(browser, explorer_server):
    """explorer(**query) -> (page, sent): the test page drawn, and the list of websocket
    frames the page sends from then on."""
    contexts, seen = [], []

    def opener(**query):
        context = browser.new_context(viewport={"width": 1400, "height": 900})
        contexts.append(context)
        page = context.new_page()
        page.set_default_timeout(30_000)
        seen.append(PageProblems(page))
        sent: list = []
        page.on("websocket", lambda ws: ws.on("framesent", lambda frame: sent.append(frame)))
        page.goto(explorer_server.page_url(**query))
        wait_ready(page, LOAD_TIMEOUT_MS)
        page.locator(EXPLORER).wait_for()
        sent.clear()
        return page, sent

    yield opener
    for context in contexts:
        context.close()
    for problems in seen:
        assert problems.errors == [] and problems.dialogs == []


def state(page) -> dict:
    return page.locator(EXPLORER).evaluate("node => ({...node.dataset})")


def readout_weight(page) -> float:
    text = page.locator(READOUT).text_content()
    found = WEIGHT.search(text)
    assert found, text
    return float(found.group(1))


def test_the_keyboard_alone_reads_minilms_weights_and_sends_nothing(explorer, minilm) -> None:
    page, sent = explorer(text=SENTENCE)
    attention, tokens = minilm.attention_of(SENTENCE)
    page.locator(EXPLORER).focus()
    for _ in range(13):  # past layer 0's 12 heads: layer 1, head 1
        page.keyboard.press("ArrowRight")
    it = tokens.index("it")
    for _ in range(it + 1):
        page.keyboard.press("ArrowDown")
    chosen = state(page)
    assert (chosen["layer"], chosen["head"], chosen["query"]) == ("1", "1", str(it))
    row = attention[1, 1, it]
    best = int(row.argmax())
    text = page.locator(READOUT).text_content()
    assert text.startswith(f'layer 1 head 1: "it" attends most to "{tokens[best]}"'), text
    assert abs(readout_weight(page) - float(row[best])) <= 1e-3
    page.keyboard.press("Enter")
    assert state(page)["pinned"] == "true"
    page.keyboard.press("ArrowDown")
    assert state(page)["query"] == str(it + 1)
    assert sent == []  # every look stayed in the browser
    # the selection settles: one report to Python, and the URL follows
    page.wait_for_function(
        "() => [...document.querySelectorAll('[data-testid=stCaptionContainer]')]"
        ".some(c => c.textContent.includes(\"'layer': 1, 'head': 1\"))",
        timeout=15_000,
    )
    assert "layer=1" in page.url and "head=1" in page.url


def test_every_mode_draws_and_the_matrix_readout_is_the_models(explorer, minilm) -> None:
    page, sent = explorer(text=SENTENCE)
    attention, tokens = minilm.attention_of(SENTENCE)
    queries = page.locator(f"{EXPLORER} [data-side=query]")
    assert queries.all_text_contents() == tokens
    page.locator("[data-role=chip][data-head='3']").click()
    assert page.locator("[data-role=chip][aria-pressed=true]").count() == 2
    page.locator("[data-role=mode][data-mode=heads]").click()
    assert page.locator("[data-role=tile]").count() == 6 * 12
    page.locator("[data-role=tile][data-layer='4'][data-head='7']").click()
    assert (state(page)["mode"], state(page)["layer"], state(page)["head"]) == ("matrix", "4", "7")
    grid = page.locator("[data-role=matrix]")
    box = grid.bounding_box()
    n = len(tokens)
    q, k = 2, 5
    grid.hover(position={"x": (k + 0.5) * box["width"] / n, "y": (q + 0.5) * box["height"] / n})
    text = page.locator(READOUT).text_content()
    assert text.startswith(f'layer 4 head 7: "{tokens[q]}" → "{tokens[k]}"'), text
    assert abs(readout_weight(page) - float(attention[4, 7, q, k])) <= 1e-3
    assert sent == []


def test_compare_draws_b_minus_a_from_both_payloads(explorer, minilm) -> None:
    page, sent = explorer(text=SENTENCE, compare=1)
    a, tokens = minilm.attention_of(SENTENCE)
    b, _ = minilm.attention_of(SENTENCE, ablate=((0, 0), (1, 3)))
    page.locator("[data-role=setup][data-setup=B-A]").click()
    assert state(page)["setup"] == "B-A"
    page.locator(EXPLORER).focus()
    for _ in range(12 * 2 + 5):  # layer 2 head 5: downstream of the heads switched off
        page.keyboard.press("ArrowRight")
    page.keyboard.press("ArrowDown")
    row = (b - a)[2, 5, 0]
    best = int(row.argmax())
    text = page.locator(READOUT).text_content()
    assert text.startswith(f'layer 2 head 5 (B − A): "[CLS]" gains most on "{tokens[best]}"'), text
    assert abs(readout_weight(page) - float(row[best])) <= 1e-3
    assert sent == []


def test_tokens_that_look_like_html_are_drawn_as_text(explorer, minilm) -> None:
    text = "<img src=x onerror=alert(1)> שלום 😴 <b>bold</b>"
    page, _ = explorer(text=text)
    _, tokens = minilm.attention_of(text)
    assert page.locator(f"{EXPLORER} [data-side=query]").all_text_contents() == tokens
    assert page.locator(f"{EXPLORER} img, {EXPLORER} b").count() == 0
