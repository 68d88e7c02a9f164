"""The attention explorer in the page (its Custom Components v2 host), driven through its DOM
contract: every mode, the keyboard alone, compare, nothing sent while looking, the readout's
weights (and what a head moves, and the rollout) equal to MiniLM's as the library computes them;
the layer select; square matrix cells with their labels beside them; text sizes and contrast in
normal and presenter (large text) mode; a local window's masked cells marked and read as such."""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from encoder.inspect.moves import norm_weighted_attention
from encoder.inspect.rollout import trace_rollout
from encoder.web.payload import SCALE, quantise
from tests.app.helpers import tokens_of
from tests.e2e.harness import LOAD_TIMEOUT_MS, PageProblems, StreamlitServer, wait_ready
from tests.shared import SENTENCE

pytestmark = pytest.mark.browser

EXPLORER = "[data-testid=attention-explorer]"
READOUT = "[data-role=readout]"
WEIGHT = re.compile(r"([-+−]?\d+\.\d{3})(?: \(pinned\))?$")  # B − A's with their sign


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
    return float(found.group(1).replace("−", "-"))


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
    assert text.startswith(f'layer 1, head 1: "it" attends most to "{tokens[best]}"'), text
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
    assert text.startswith(f'layer 4, head 7: "{tokens[q]}" → "{tokens[k]}"'), text
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
    assert text.startswith(f'layer 2, head 5 (B − A): "[CLS]" gains most on "{tokens[best]}"'), text
    assert abs(readout_weight(page) - float(row[best])) <= 1e-3
    assert sent == []


def test_tokens_that_look_like_html_are_drawn_as_text(explorer, minilm) -> None:
    text = "<img src=x onerror=alert(1)> שלום 😴 <b>bold</b>"
    page, _ = explorer(text=text)
    _, tokens = minilm.attention_of(text)
    assert page.locator(f"{EXPLORER} [data-side=query]").all_text_contents() == tokens
    assert page.locator(f"{EXPLORER} img, {EXPLORER} b").count() == 0


def pin_query(page, index: int) -> None:
    """Pin query token `index` with the keyboard (from no query chosen)."""
    page.locator(EXPLORER).focus()
    for _ in range(index + 1):
        page.keyboard.press("ArrowDown")
    page.keyboard.press("Enter")


def test_what_a_head_moves_and_the_rollout_are_the_librarys_and_the_layer_select_picks(
    explorer, minilm
) -> None:
    page, sent = explorer(text=SENTENCE)
    trace = minilm.trace_of(SENTENCE)
    tokens = minilm.batch(SENTENCE).tokens[0]
    it = tokens.index("it")
    page.locator("[data-testid=explorer-layer]").select_option("2")  # the layer, directly
    assert (state(page)["layer"], state(page)["head"]) == ("2", "0")
    page.locator("[data-role=mode][data-mode=moves]").click()
    pin_query(page, it)
    for _ in range(5):
        page.keyboard.press("ArrowRight")
    assert (state(page)["mode"], state(page)["layer"], state(page)["head"]) == ("moves", "2", "5")
    moved = norm_weighted_attention(trace, minilm.model)[2, 0, 5, it]  # [key]
    best = int(moved.argmax())
    text = page.locator(READOUT).text_content()
    assert text.startswith(f'layer 2, head 5 moves: "it" moves most from "{tokens[best]}"'), text
    assert abs(readout_weight(page) - float(moved[best])) <= 1e-3 * max(1.0, float(moved[best]))
    page.locator("[data-role=mode][data-mode=rollout]").click()
    page.keyboard.press("PageDown")  # layer 3
    rolled = trace_rollout(trace)[3, 0, it]  # [key]
    best = int(rolled.argmax())
    text = page.locator(READOUT).text_content()
    assert text.startswith(f'rollout after layer 3: "it" draws most on "{tokens[best]}"'), text
    assert abs(readout_weight(page) - float(rolled[best])) <= 1e-3
    assert page.locator("[data-testid=explorer-layer]").input_value() == "3"
    assert sent == []


# Every visible text of the explorer: its font size, and its contrast against the first opaque
# background behind it (WCAG's relative luminance).
TEXT_JS = r"""root => {
  const channel = c => {
    c /= 255;
    return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4;
  };
  const luminance = ([r, g, b]) => 0.2126 * channel(r) + 0.7152 * channel(g) + 0.0722 * channel(b);
  const rgba = text => text.match(/[\d.]+/g).map(Number);
  const background = node => {
    for (let at = node; at; at = at.parentElement || (at.getRootNode() || {}).host) {
      const colour = rgba(getComputedStyle(at).backgroundColor);
      if (colour.length === 3 || colour[3] > 0.5) return colour.slice(0, 3);
    }
    return [255, 255, 255];
  };
  const found = [];
  for (const node of root.querySelectorAll("*")) {
    const own = [...node.childNodes].some(c => c.nodeType === 3 && c.textContent.trim());
    const box = node.getBoundingClientRect();
    if (!own || box.width === 0 || box.height === 0) continue;
    const style = getComputedStyle(node);
    const [a, b] = [luminance(rgba(style.color)), luminance(background(node))];
    found.push({ text: node.textContent.slice(0, 30), px: parseFloat(style.fontSize),
      contrast: (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05) });
  }
  return found;
}"""


@pytest.mark.parametrize("large", [False, True], ids=["normal", "presenter"])
def test_every_modes_text_is_large_enough_with_contrast_and_the_matrix_is_square(
    explorer, minilm, large
) -> None:
    page, _ = explorer(text=SENTENCE, **({"large": 1} if large else {}))
    assert state(page)["large"] == str(large).lower()
    smallest = 16 if large else 12
    pin_query(page, 3)
    for mode in ("lines", "matrix", "heads", "moves", "rollout"):
        page.locator(f"[data-role=mode][data-mode={mode}]").click()
        texts = page.locator(EXPLORER).evaluate(TEXT_JS)
        assert texts, mode
        small = [t for t in texts if t["px"] < smallest]
        faint = [t for t in texts if t["contrast"] < 4.5]
        assert small == [] and faint == [], (mode, small[:3], faint[:3])
    page.locator("[data-role=mode][data-mode=matrix]").click()
    grid = page.locator("[data-role=matrix]").bounding_box()
    n = len(minilm.batch(SENTENCE).tokens[0])
    assert abs(grid["width"] - grid["height"]) <= 1 and grid["width"] >= 12 * n  # square cells
    rows = page.locator(f"{EXPLORER} [data-side=query]")
    keys = page.locator(f"{EXPLORER} [data-side=key]")
    assert rows.count() == keys.count() == n  # every real token labelled, nothing else
    first, last = rows.first.bounding_box(), rows.last.bounding_box()
    assert first["x"] + first["width"] <= grid["x"] + 1  # beside the cells, left
    assert (
        abs(first["y"] - grid["y"]) <= 1
        and abs(last["y"] + last["height"] - grid["y"] - grid["height"]) <= 1
    )
    top = keys.first.bounding_box()
    assert top["y"] + top["height"] <= grid["y"] + 1 and abs(top["x"] - grid["x"]) <= 1  # above


def test_a_local_windows_masked_cells_are_marked_and_read_as_outside(explorer) -> None:
    window = 4
    page, _ = explorer(text=SENTENCE, window=window)  # RoPE, local in layers 1 and 2
    n = len(tokens_of(SENTENCE))
    distance = np.abs(np.arange(n)[:, None] - np.arange(n)[None, :])
    masked = int((distance > window // 2).sum())  # the pairs a window of 4 masks, counted here
    page.locator("[data-role=mode][data-mode=matrix]").click()
    page.locator("[data-role=layer]").select_option("1")
    grid = page.locator("[data-role=matrix]")
    assert (grid.get_attribute("data-window"), grid.get_attribute("data-masked")) == (
        str(window),
        str(masked),
    )
    scale = page.locator("[data-role=scale]").text_content()
    assert f"Grey: the {masked} cells outside layer 1's local window of 4" in scale
    pixel = "(node, [q, k]) => [...node.getContext('2d').getImageData(k, q, 1, 1).data]"
    assert grid.evaluate(pixel, [0, n - 1])[:3] == [218, 218, 218]  # grey, not a weight's colour
    assert grid.evaluate(pixel, [3, 3])[:3] != [218, 218, 218]
    box = grid.bounding_box()

    def point(q: int, k: int) -> str:
        grid.hover(position={"x": (k + 0.5) * box["width"] / n, "y": (q + 0.5) * box["height"] / n})
        return page.locator(READOUT).text_content()

    assert point(0, n - 1).endswith("outside the window (masked)")
    assert WEIGHT.search(point(3, 4))  # inside the window: its weight
    page.locator("[data-role=layer]").select_option("0")  # layer 0 is global
    assert (grid.get_attribute("data-window"), grid.get_attribute("data-masked")) == ("0", "0")
    assert "Grey" not in page.locator("[data-role=scale]").text_content()
    assert not point(0, n - 1).endswith("outside the window (masked)")


def test_the_explorer_is_a_figure_named_by_minilms_numbers_and_saves_its_look(
    explorer, minilm
) -> None:
    page, _ = explorer(text=SENTENCE)
    attention, tokens = minilm.attention_of(SENTENCE)
    it = tokens.index("it")
    page.locator(EXPLORER).focus()
    for _ in range(13):  # layer 1, head 1
        page.keyboard.press("ArrowRight")
    pin_query(page, it)
    figure = page.locator(f"{EXPLORER} [data-role=figure]")
    assert figure.get_attribute("role") == "figure"
    page.wait_for_function(
        "node => node.getAttribute('aria-label').includes('(pinned)')",
        arg=figure.element_handle(),
    )
    label = figure.get_attribute("aria-label")
    head = quantise(attention[1, 1].numpy()) / SCALE  # the weights as the payload sends them
    best = head.argmax(axis=1)  # each query's top key
    chosen = np.bincount(best, minlength=len(tokens))
    found = re.fullmatch(
        r'Layer 1, head 1 of A: "it" \(pinned\) gives (\d\.\d{3}) to "(.*)"; (\d+) of (\d+) '
        r'tokens puts? most weight on "(.*)"\.',
        label,
    )
    assert found, label
    assert found.group(2) == tokens[best[it]]
    assert abs(float(found.group(1)) - head[it, best[it]]) <= 1e-4 + 5e-4
    assert (int(found.group(3)), int(found.group(4)), found.group(5)) == (
        chosen.max(),
        len(tokens),
        tokens[chosen.argmax()],
    )
    page.get_by_test_id("figure-save").press("Enter")  # the CSV of the look, by keyboard
    with page.expect_download() as saving:
        page.locator("[role=menuitem][data-format=csv]").press("Enter")
    rows = list(csv.reader(io.StringIO(Path(saving.value.path()).read_text(encoding="utf-8"))))
    assert [row[0] for row in rows[1:]] == [f"{i} {token}" for i, token in enumerate(tokens)]
    saved = np.array([[float(cell) for cell in row[1:]] for row in rows[1:]])
    assert np.allclose(saved, attention[1, 1].numpy(), rtol=5e-3, atol=1e-4)
